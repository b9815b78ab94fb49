// Graph functions (the Relax-like level): typed SSA bindings in binding
// blocks, in A-normal form. Every argument of a call is a variable; every
// value is named by exactly one binding or parameter. A `dataflow` block
// holds only side-effect-free bindings, which passes may reorder or remove.
//
//   graph @main(%x: f32[n, 784]) -> f32[n, 10] {
//     dataflow {
//       %w: f32[256, 784] = const "fc1.weight"
//       %h: f32[n, 256] = matmul(%x, %w, transpose_b = true)
//       %y: f32[n, 256] = call_tir @fused_add_relu(%h, %b)
//     }
//     return %y
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/expr.h"

namespace mlcc::ir {

// The type of a graph value: a tensor (dtype + shape, whose dimensions are
// i64 PrimExprs: constants or expressions of symbolic Vars) or a tuple.
struct Type {
  enum class Kind : uint8_t { Tensor, Tuple };
  Kind kind = Kind::Tensor;
  DType dtype = DType::f32;
  std::vector<PrimExpr> shape;  // Tensor; empty: a scalar (rank 0)
  std::vector<Type> fields;     // Tuple

  static Type tensor(DType t, std::vector<PrimExpr> shape);
  static Type tensor(DType t, const std::vector<int64_t>& shape);
  static Type tuple(std::vector<Type> fields);
  bool isTensor() const { return kind == Kind::Tensor; }
  bool isTuple() const { return kind == Kind::Tuple; }
  size_t rank() const { return shape.size(); }
};

struct GraphVarNode {
  GraphVarNode(std::string n, Type t) : name(std::move(n)), type(std::move(t)) {}
  const std::string name;  // for printing; identity is the node
  const Type type;
};
using GraphVar = std::shared_ptr<const GraphVarNode>;
GraphVar makeGraphVar(std::string name, Type type);

enum class ValueKind : uint8_t {
  Alias,       // %b = %a
  Const,       // const "weight.name" (weights file) or const [1.0, 2.0] (inline)
  Tuple,       // (%a, %b)
  TupleGet,    // %t[1]
  Op,          // matmul(%a, %b, transpose_b = true): an op of the op registry
  CallTir,     // call_tir @prim(%a, %b): outputs are the binding's type
  CallExtern,  // call_extern "blas.dense_bias"(%a, %b, alpha = 1.0)
  CallGraph    // call @fused_0(%a, %b): a graph sub-function of the module
};
const char* valueKindName(ValueKind k);

// The right-hand side of a binding. Which fields are meaningful depends on
// `kind` (see the comments).
struct GraphValue {
  ValueKind kind = ValueKind::Alias;
  std::string callee;          // Op: op name; CallTir/CallGraph: function name; CallExtern: symbol
  std::vector<GraphVar> args;  // Alias (1), Tuple fields, TupleGet (1), calls
  Attrs attrs;                 // calls' keyword arguments (Op, CallTir, CallExtern, CallGraph only)
  int64_t index = 0;           // TupleGet
  std::string weight;          // Const from a weights file: the tensor's name
  bool is_inline = false;      // Const: inline data instead of a weights tensor
  std::vector<uint8_t> data;   // inline Const: little-endian elements, row-major,
                               // dtype and shape from the binding's type
};

struct Binding {
  GraphVar var;
  GraphValue value;
};

// A run of bindings. Only dataflow blocks are delimited: consecutive
// non-dataflow blocks mean the same as one (the text prints them as one and
// structural equality treats them as one), and an empty one means nothing.
struct BindingBlock {
  bool dataflow = true;
  std::vector<Binding> bindings;
};

struct GraphFunc {
  std::string name;
  std::vector<GraphVar> params;
  Type ret_type;
  std::vector<BindingBlock> blocks;
  std::vector<GraphVar> ret;  // the returned variable(s)
  bool ret_is_tuple = false;  // `return (%a, %b)` rather than `return %a`
  Attrs attrs;                // e.g. primitive = true, codegen = "cublas"
};

}  // namespace mlcc::ir
