// The reference interpreter: executes any stage of a module. Graph functions
// run binding by binding (ops through the reference kernels of libs/ops,
// call_tir into interpreted prim funcs, calls of graph sub-functions); prim
// funcs are compiled once into a tree of closures over a flat slot array and
// run serially (every loop kind, thread-bound loops included), with every
// buffer access bounds-checked. Errors are mlcc::Error, never UB.
//
//   mlcc::interp::Interpreter in(module);
//   auto outs = in.run("main", {{"x", x}});   // -> {{"y", tensor}, ...}
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::interp {

struct NamedTensor {
  std::string name;
  ir::Tensor tensor;
};

// One input of an entry function: its name, dtype and shape (dimensions as
// expressions: constants or symbolic variables such as `n`).
struct InputSpec {
  std::string name;
  ir::DType dtype;
  std::vector<ir::PrimExpr> shape;
};

class CompiledPrimFunc;

class Interpreter {
 public:
  // `module` must outlive the interpreter. Weights files are opened on the
  // first constant that needs them.
  explicit Interpreter(const ir::Module& module);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // The entry a tool runs by default: @main, else the only graph function
  // with attribute entry = true, else the module's only function. Throws
  // mlcc::Error listing the functions when there is none.
  std::string defaultEntry() const;

  // The inputs of function `entry` (graph: its parameters; prim func: the
  // buffers it reads, or does not write).
  std::vector<InputSpec> inputs(const std::string& entry) const;

  // Runs function `entry` on inputs given by name (each exactly once; a
  // wrong dtype or shape is an error naming the input; symbolic dimensions
  // bind from the input shapes). Returns the outputs in order, named after
  // the returned variables (a graph function) or the buffers written (a
  // prim func, whose written buffers start as the given input or zeros).
  std::vector<NamedTensor> run(const std::string& entry, const std::vector<NamedTensor>& inputs);

  // Whether parameter `name` of prim func `prim` is written (an output; when
  // it is also read it is an optional input of run(), zero-filled if absent).
  bool isWrittenParam(const std::string& prim, const std::string& name);

  // Runs prim func `name` in destination-passing style on `args` (its
  // parameters in order; outputs are written in place). Symbolic dimensions
  // bind from the argument shapes.
  void runPrim(const std::string& name, const std::vector<ir::Tensor*>& args);

  // Compiles (once) and returns prim func `name`.
  const CompiledPrimFunc& compiled(const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Random tensors for inputs: floats normal(0, 1), integers uniform in
// [0, 10), bools fair; deterministic in `seed` and the input's position.
ir::Tensor randomTensor(ir::DType dtype, const std::vector<int64_t>& shape, uint64_t seed);

// The random tensor of input number `index` for a run's `seed` (mlcc-run
// --seed, mlcc-pipeline verify --seed): the same for an IR file and the
// model.so compiled from it.
ir::Tensor randomInput(ir::DType dtype, const std::vector<int64_t>& shape, uint64_t seed, size_t index);

// An input's shape with each symbolic dimension's size from `dims` (1 when
// it has none there). Throws mlcc::Error for a dimension that is an
// expression (its size cannot be chosen).
std::vector<int64_t> concreteShape(const InputSpec& spec, const std::map<std::string, int64_t>& dims);

}  // namespace mlcc::interp
