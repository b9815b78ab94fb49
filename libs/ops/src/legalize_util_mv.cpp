// Helpers of the data movement legalizations (see legalize_util_mv.h).
#include "legalize_util_mv.h"

#include "mlcc/ir/builder.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ops::legal_mv {

namespace {
bool constOf(const PrimExpr& e, int64_t* v) { return ir::asConstInt(e, v); }
bool isConst(const PrimExpr& e, int64_t value) {
  int64_t v;
  return constOf(e, &v) && v == value;
}
}  // namespace

PrimExpr idx(int64_t v) { return ir::makeInt(v); }

PrimExpr minOf(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return idx(x < y ? x : y);
  return ir::makeBinary(ir::BinaryOp::Min, a, b);
}

PrimExpr maxOf(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return idx(x > y ? x : y);
  return ir::makeBinary(ir::BinaryOp::Max, a, b);
}

int64_t constValue(const PrimExpr& e) {
  int64_t v;
  if (!constOf(e, &v)) throw Error("legalize: expected a constant, not " + ir::printExpr(e));
  return v;
}

PrimExpr add(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return idx(x + y);
  if (isConst(a, 0)) return b;
  if (isConst(b, 0)) return a;
  return ir::makeBinary(ir::BinaryOp::Add, a, b);
}

PrimExpr sub(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return idx(x - y);
  if (isConst(b, 0)) return a;
  return ir::makeBinary(ir::BinaryOp::Sub, a, b);
}

PrimExpr mul(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return idx(x * y);
  if (isConst(a, 0) || isConst(b, 0)) return idx(0);
  if (isConst(a, 1)) return b;
  if (isConst(b, 1)) return a;
  return ir::makeBinary(ir::BinaryOp::Mul, a, b);
}

PrimExpr floorDiv(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y) && y != 0) return idx(mlcc::floorDiv(x, y));
  if (isConst(b, 1)) return a;
  return ir::makeBinary(ir::BinaryOp::Div, a, b);
}

PrimExpr floorMod(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y) && y != 0) return idx(mlcc::floorMod(x, y));
  if (isConst(b, 1)) return idx(0);
  return ir::makeBinary(ir::BinaryOp::Mod, a, b);
}

std::vector<PrimExpr> exprs(const ir::te::Indices& vars) { return {vars.begin(), vars.end()}; }

PrimExpr flatten(const std::vector<PrimExpr>& index, const std::vector<PrimExpr>& shape) {
  PrimExpr linear = idx(0);
  for (size_t d = 0; d < index.size(); ++d) linear = add(mul(linear, shape[d]), index[d]);
  return linear;
}

std::vector<PrimExpr> unflatten(const PrimExpr& linear, const std::vector<PrimExpr>& shape) {
  std::vector<PrimExpr> out(shape.size());
  PrimExpr rest = linear;
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == 0) {
      out[d] = rest;
    } else {
      out[d] = floorMod(rest, shape[d]);
      rest = floorDiv(rest, shape[d]);
    }
  }
  return out;
}

PrimExpr clampIndex(const PrimExpr& e, const PrimExpr& extent) {
  int64_t n;
  if (constOf(extent, &n) && n == 1) return idx(0);
  return maxOf(minOf(e, sub(extent, idx(1))), idx(0));
}

PrimExpr wrappedIndex(PrimExpr v, const PrimExpr& extent) {
  if (v->dtype != ir::DType::i64) v = ir::makeCast(ir::DType::i64, v);
  return clampIndex(ir::makeSelect(lt(v, idx(0)), add(v, extent), v), extent);
}

bool hasZeroDim(const std::vector<PrimExpr>& shape) {
  for (const auto& d : shape)
    if (isConst(d, 0)) return true;
  return false;
}

ir::PrimFunc singleStage(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Type& output,
                         const MoveFn& value) {
  if (hasZeroDim(output.shape)) {  // no element: no loop (the verifier rejects loops of extent 0)
    ir::PrimFunc f;
    f.name = op;
    for (size_t k = 0; k < inputs.size(); ++k)
      f.params.push_back(
          ir::makeBuffer(k == 0 ? "x" : "x" + std::to_string(k), inputs[k].dtype, inputs[k].shape));
    f.params.push_back(ir::makeBuffer(op, output.dtype, output.shape));
    f.body = ir::makeSeq({});
    return f;
  }
  ir::te::FuncBuilder fb(op);
  std::vector<ir::Buffer> in;
  for (size_t k = 0; k < inputs.size(); ++k)
    in.push_back(fb.input(k == 0 ? "x" : "x" + std::to_string(k), inputs[k]));
  ir::Buffer out = fb.compute(op, output.shape, output.dtype,
                              [&](const ir::te::Indices& i) { return value(in, exprs(i)); });
  return fb.build({out});
}

}  // namespace mlcc::ops::legal_mv
