// Tensor intrinsics: what `tensorize` may replace a tile of a loop nest with
// (TVM's TensorIntrin). An intrinsic is a prim func, its description, named
// after the C function that implements it, with the library defining that
// function in its attributes; an IR file holds any number of them:
//
//   prim @mylib_axpy16(%a: f32[16], %b: f32[16], %c: f32[16]) attrs(library = "libaxpy.so") {
//     for %i in 0..16 {
//       block "axpy" (%v = spatial(16, %i)) {
//         reads(%a[%v], %b[%v]) writes(%c[%v])
//         %c[%v] = %c[%v] + %a[%v] * %b[%v]
//       }
//     }
//   }
//
// The description is a perfect loop nest around one block with one store:
// its parameters are inputs, then the one output (the stored buffer). The
// C function has the signature of include/mlcc/extern.h
// (mlcc_tensor_intrin_fn) and computes what the body does on strided tiles.
//
// Intrinsics live in a process-wide registry (as TVM's): mlcc-schedule
// --intrinsics FILE loads them before it applies a script; a trace that
// tensorizes replays wherever the same intrinsics are loaded.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

struct TensorIntrin {
  ir::PrimFunc desc;    // named after the C function
  std::string library;  // absolute path of the file defining it
};

// Registers every prim func of the IR file at `path` (each verified; its
// `library` attribute relative to the file's directory unless absolute).
// Returns their names. Throws mlcc::Error located in the file for a
// description that is not a perfect nest around one block with one store,
// a missing library attribute, or a name registered before with another
// description.
std::vector<std::string> loadTensorIntrinsics(const std::string& path);

// The registered intrinsic named `name`, or null.
const TensorIntrin* findTensorIntrin(const std::string& name);
// The names registered so far, sorted (for messages).
std::vector<std::string> tensorIntrinNames();

// The extern declarations (kind tensor_intrin) of the intrinsics that blocks
// of `f` call (the blocks `tensorize` marked with the `tensor_intrin`
// attribute), for the module that holds f: the interpreter and codegen find
// the library and the parameter types there. Throws mlcc::Error for an
// intrinsic that is not registered.
std::vector<ir::ExternFunc> tensorIntrinDecls(const ir::PrimFunc& f);

// Adds to `m` the declarations of the intrinsics its prim funcs call that it
// does not declare yet (an existing declaration must be the same).
void declareTensorIntrinsics(ir::Module& m);

}  // namespace mlcc::schedule
