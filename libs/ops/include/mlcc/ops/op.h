// The op registry: for each graph op (artifacts_schema/ops.md), its operand
// count, attributes, op pattern kind (for fusion), type inference, FLOP count
// and reference kernel.
//
// Ops are registered by explicit calls from registry.cpp (one register
// function per family file: elementwise.cpp, reduce.cpp, nn.cpp, ...), not by
// static initializers, so that linking the static library never drops them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/graph.h"
#include "mlcc/ir/op_type_info.h"
#include "mlcc/ir/stmt.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::ops {

// TVM's op pattern kinds, ordered from most to least fusable.
enum class OpPattern : uint8_t {
  Elementwise,      // out[i] = f(in[i])
  Broadcast,        // elementwise with numpy broadcasting
  Injective,        // each output element reads some input elements (reshape, transpose, ...)
  Reduction,        // sum, max, mean, ...
  OutEwiseFusable,  // matmul, conv2d: may take elementwise consumers
  Opaque            // no fusion
};
const char* patternName(OpPattern p);

enum class AttrKind : uint8_t { Int, Float, Bool, Str, Ints, Floats, Dims };
const char* attrKindName(AttrKind k);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<ir::AttrValue> default_value;  // nullopt: required unless `optional`
  bool optional = false;                       // may be absent with no default (clip's min/max)
};

// Concrete types of the operands, attributes -> the result type.
using InferFn = std::function<ir::Type(const std::vector<ir::Type>& inputs, const ir::Attrs& attrs)>;
// Concrete operands -> results (one tensor, or one per tuple field).
using ComputeFn =
    std::function<std::vector<ir::Tensor>(const std::vector<ir::Tensor>& inputs, const ir::Attrs& attrs)>;
// Arithmetic operations of one call, from static operand/result types
// (symbolic dimensions count as 1).
using FlopsFn = std::function<int64_t(const std::vector<ir::Type>& inputs, const ir::Type& output,
                                      const ir::Attrs& attrs)>;

// The op's TensorIR compute definition (legalization), built with ir::te:
// a prim func whose parameters are one buffer per operand, in order, then
// one per result (a tuple result gives several), computing the op for the
// given operand and result types (symbolic dimensions stay symbolic). Its
// blocks are named after the op. Throws mlcc::Error("op 'x': ... is not
// supported yet") for attribute combinations it cannot lower.
using LegalizeFn = std::function<ir::PrimFunc(const std::vector<ir::Type>& inputs, const ir::Type& output,
                                              const ir::Attrs& attrs)>;
// An elementwise unary op's value for one f32 element, as TensorIR (what its
// legalization computes per element), for ops that compose it (recurrence).
using ScalarExprFn = std::function<ir::PrimExpr(const ir::Attrs& attrs, const ir::PrimExpr& x)>;

struct OpDef {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  OpPattern pattern = OpPattern::Opaque;
  std::vector<AttrSpec> attrs;
  InferFn infer;
  ComputeFn compute;
  FlopsFn flops;        // null: one operation per output element
  LegalizeFn legalize;  // null: the op cannot be lowered to TensorIR yet
  // Whether the reference kernel and the legalization compute f64 operands
  // in double. Any other op refuses an f64 operand or result (inference says
  // "op 'x' does not support f64 yet"), so that nothing computes f64 in f32.
  bool f64 = false;
  ScalarExprFn scalar = nullptr;  // unary elementwise ops only (null elsewhere)
};

// Registry lookup. find() returns nullptr for an unknown op.
const OpDef* findOp(std::string_view name);
std::vector<const OpDef*> allOps();  // sorted by name

// Checks `attrs` against the op's specs (unknown names, wrong kinds, missing
// required ones) and returns them with defaults filled in. Throws
// mlcc::Error("op 'conv2d': attribute 'groups' must be an int").
ir::Attrs normalizeAttrs(const OpDef& op, const ir::Attrs& attrs);

// Type inference of an op call: checks the operand count and attributes,
// then runs the op's InferFn. Throws mlcc::Error naming the op.
ir::Type inferOpType(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs);

// Runs the reference kernel of an op on concrete tensors (after the same
// checks as inferOpType on their concrete types).
std::vector<ir::Tensor> computeOp(const std::string& op, const std::vector<ir::Tensor>& inputs,
                                  const ir::Attrs& attrs);

// The TensorIR compute definition of an op call (after the same checks as
// inferOpType, with defaults filled in), as a prim func named `func_name`.
// Throws mlcc::Error("op 'x' cannot be lowered to TensorIR yet") when the
// op has none.
ir::PrimFunc legalizeOp(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs,
                        const std::string& func_name);

// The op registry as libs/ir sees it (op_type_info.h), for ir::verifyModule
// and ir::summarizeModule: an op binding's declared type must equal the
// type inferOpType gives; FLOPs from the op's count.
const ir::OpTypeInfo& opTypeInfo();

// Attribute accessors for kernels (attrs already normalized, so present).
int64_t attrInt(const ir::Attrs& attrs, const std::string& name);
double attrFloat(const ir::Attrs& attrs, const std::string& name);  // accepts ints too
bool attrBool(const ir::Attrs& attrs, const std::string& name);
const std::string& attrStr(const ir::Attrs& attrs, const std::string& name);
std::vector<int64_t> attrInts(const ir::Attrs& attrs, const std::string& name);
std::vector<double> attrFloats(const ir::Attrs& attrs, const std::string& name);
bool hasAttr(const ir::Attrs& attrs, const std::string& name);

// Normalizes a possibly negative axis for a tensor of `rank`; throws when out of range.
int64_t normalizeAxis(int64_t axis, int64_t rank, const char* op);

}  // namespace mlcc::ops
