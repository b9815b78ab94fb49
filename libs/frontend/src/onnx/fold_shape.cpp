// Symbolic folding of shape computations. Exporters compute the target of a
// Reshape or Expand from Shape(x) with Gather, Concat, Unsqueeze, Slice and
// integer arithmetic; here those nodes are evaluated on small integer vectors
// whose elements are dimension expressions (constants or expressions of the
// symbolic dimensions), so that `Reshape(x, Concat(Shape(x)[0], [-1]))` on an
// input of shape [n, 4, 4] becomes `reshape(x, shape = [n, 16])`.
#include "importer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"

namespace mlcc::frontend::onnx_import {

namespace {

using ir::PrimExpr;
using Elems = std::vector<PrimExpr>;

constexpr int64_t kMaxElems = 64;

bool allConst(const Elems& e, std::vector<int64_t>* out) {
  out->clear();
  for (const auto& x : e) {
    int64_t c;
    if (!ir::asConstInt(x, &c)) return false;
    out->push_back(c);
  }
  return true;
}

ValuePtr makeSym(NodeCtx& ctx, Elems elems, bool scalar, ir::DType dtype, size_t out = 0) {
  auto v = std::make_shared<Value>();
  v->name = ctx.outName(out);
  std::vector<int64_t> shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(elems.size()));
  v->type = ir::Type::tensor(dtype, shape);
  std::vector<int64_t> c;
  if (allConst(elems, &c)) {
    ir::Tensor t = ir::Tensor::zeros(dtype, shape);
    for (size_t i = 0; i < c.size(); ++i) {
      if (dtype == ir::DType::i64)
        t.mutableData<int64_t>()[i] = c[i];
      else
        t.set(static_cast<int64_t>(i), static_cast<double>(c[i]));
    }
    v->constant = std::move(t);
  }
  v->sym = std::move(elems);
  return v;
}

bool isScalar(const ValuePtr& v) { return v->type.rank() == 0; }

// Elementwise integer arithmetic with broadcasting of one-element operands.
// Mod: the sign of the divisor (Python's %), or of the dividend with fmod (C's %).
std::optional<Elems> binary(const std::string& op, const Elems& a, const Elems& b, bool fmod) {
  size_t n = std::max(a.size(), b.size());
  if ((a.size() != n && a.size() != 1) || (b.size() != n && b.size() != 1)) return std::nullopt;
  Elems out;
  for (size_t i = 0; i < n; ++i) {
    const PrimExpr& x = a[a.size() == 1 ? 0 : i];
    const PrimExpr& y = b[b.size() == 1 ? 0 : i];
    int64_t cx, cy;
    bool cc = ir::asConstInt(x, &cx) && ir::asConstInt(y, &cy);
    if (op == "Add")
      out.push_back(ops::dimAdd(x, y));
    else if (op == "Sub")
      out.push_back(ops::dimSub(x, y));
    else if (op == "Mul")
      out.push_back(ops::dimMul(x, y));
    else if (op == "Div") {
      if (cc) {
        if (cy == 0) return std::nullopt;
        out.push_back(ir::makeInt(cx / cy));  // truncation, as ONNX integer Div
      } else {
        out.push_back(ops::dimFloorDiv(x, y));  // dimensions are non-negative
      }
    } else if (op == "Min" || op == "Max") {
      if (cc)
        out.push_back(ir::makeInt(op == "Min" ? std::min(cx, cy) : std::max(cx, cy)));
      else if (ops::dimEqual(x, y))
        out.push_back(x);
      else
        return std::nullopt;
    } else if (op == "Mod") {
      if (!cc || cy == 0) return std::nullopt;
      int64_t m = cx % cy;
      if (!fmod && m != 0 && ((m < 0) != (cy < 0))) m += cy;
      out.push_back(ir::makeInt(m));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::optional<Elems> symElements(const ValuePtr& v) {
  if (!v) return std::nullopt;
  if (v->sym) return v->sym;
  if (v->constant && ir::isInt(v->constant->dtype()) && v->constant->rank() <= 1 &&
      v->constant->numel() <= kMaxElems) {
    Elems e;
    for (int64_t x : intElements(*v->constant)) e.push_back(ir::makeInt(x));
    return e;
  }
  return std::nullopt;
}

std::optional<std::vector<ValuePtr>> foldShapeNode(NodeCtx& ctx) {
  const std::string& op = ctx.node.op_type();
  if (op == "Shape") {
    const ir::Type& t = ctx.in(0)->type;
    int64_t rank = static_cast<int64_t>(t.rank());
    int64_t start = ctx.attrInt("start", 0), end = ctx.attrInt("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    Elems e;
    for (int64_t i = start; i < end; ++i) e.push_back(t.shape[static_cast<size_t>(i)]);
    return std::vector<ValuePtr>{makeSym(ctx, e, false, ir::DType::i64)};
  }
  if (op == "Size") {
    PrimExpr n = ir::makeInt(1);
    for (const auto& d : ctx.in(0)->type.shape) n = ops::dimMul(n, d);
    return std::vector<ValuePtr>{makeSym(ctx, {n}, true, ir::DType::i64)};
  }
  static const std::set<std::string> kFoldable = {"Gather", "Concat", "Unsqueeze", "Squeeze", "Slice", "Cast",
                                                  "Add",    "Sub",    "Mul",       "Div",     "Mod",   "Min",
                                                  "Max",    "Equal",  "Where",     "Reshape", "Neg"};
  if (!kFoldable.count(op)) return std::nullopt;
  // Every present input must be a small integer vector with known elements
  // (Where's condition: a constant bool vector).
  std::vector<Elems> el(ctx.numInputs());
  bool any_sym = false;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) continue;
    const ValuePtr& v = ctx.inputs[i];
    if (op == "Where" && i == 0) {
      if (!v->constant || v->constant->dtype() != ir::DType::boolean || v->constant->rank() > 1)
        return std::nullopt;
      continue;
    }
    if (op == "Gather" && i == 0 && v->type.rank() > 1) return std::nullopt;
    auto e = symElements(v);
    if (!e) return std::nullopt;
    if (v->sym) any_sym = true;
    el[i] = std::move(*e);
  }
  // All-constant nodes with an ops.md equivalent are left to the converters
  // (folded by computeOp), except the pure shape ones handled here.
  (void)any_sym;
  ir::DType dtype = ctx.in(0)->type.dtype;
  // The data of Gather and Concat folded here is a vector: axis 0 (or -1).
  if ((op == "Gather" || op == "Concat") && ctx.attrInt("axis", 0) != 0 && ctx.attrInt("axis", 0) != -1)
    return std::nullopt;
  if (op == "Gather") {
    auto idx = ctx.maybeConstInts(1);
    if (!idx) return std::nullopt;
    const Elems& data = el[0];
    Elems out;
    for (int64_t i : *idx) {
      int64_t k = i < 0 ? i + static_cast<int64_t>(data.size()) : i;
      if (k < 0 || k >= static_cast<int64_t>(data.size()))
        ctx.fail("index " + std::to_string(i) + " out of range");
      out.push_back(data[static_cast<size_t>(k)]);
    }
    return std::vector<ValuePtr>{makeSym(ctx, out, isScalar(ctx.in(1)), dtype)};
  }
  if (op == "Concat") {
    Elems out;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      if (!ctx.hasInput(i) || isScalar(ctx.inputs[i])) return std::nullopt;
      out.insert(out.end(), el[i].begin(), el[i].end());
    }
    return std::vector<ValuePtr>{makeSym(ctx, out, false, dtype)};
  }
  if (op == "Unsqueeze") {
    if (!isScalar(ctx.in(0))) return std::nullopt;
    if (ctx.opset < 13) {  // axes as an attribute: a scalar takes [0] (or [-1])
      const auto axes = ctx.attrInts("axes");
      if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) return std::nullopt;
    }
    return std::vector<ValuePtr>{makeSym(ctx, el[0], false, dtype)};
  }
  if (op == "Squeeze") {
    if (isScalar(ctx.in(0)) || el[0].size() != 1) return std::nullopt;
    return std::vector<ValuePtr>{makeSym(ctx, el[0], true, dtype)};
  }
  if (op == "Reshape") {
    auto shape = ctx.maybeConstInts(1);
    if (!shape || shape->size() > 1) return std::nullopt;
    if (shape->empty()) {
      if (el[0].size() != 1) return std::nullopt;
      return std::vector<ValuePtr>{makeSym(ctx, el[0], true, dtype)};
    }
    return std::vector<ValuePtr>{makeSym(ctx, el[0], false, dtype)};
  }
  if (op == "Cast") {
    ctx.ignoreAttrs({"saturate"});  // float8 targets only
    int to = static_cast<int>(ctx.attrInt("to", 0));
    if (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32) return std::nullopt;
    return std::vector<ValuePtr>{makeSym(ctx, el[0], isScalar(ctx.in(0)), dtypeFromOnnx(to, "Cast"))};
  }
  if (op == "Neg") {
    Elems out;
    for (const auto& x : el[0]) out.push_back(ops::dimSub(ir::makeInt(0), x));
    return std::vector<ValuePtr>{makeSym(ctx, out, isScalar(ctx.in(0)), dtype)};
  }
  if (op == "Slice") {
    if (isScalar(ctx.in(0))) return std::nullopt;
    std::vector<int64_t> starts, ends, axes, steps;
    if (ctx.opset < 10) {
      starts = ctx.attrInts("starts");
      ends = ctx.attrInts("ends");
      axes = ctx.attrInts("axes", {0});
    } else {
      auto s = ctx.maybeConstInts(1), e = ctx.maybeConstInts(2);
      if (!s || !e) return std::nullopt;
      starts = *s;
      ends = *e;
      if (ctx.hasInput(3)) {
        auto a = ctx.maybeConstInts(3);
        if (!a) return std::nullopt;
        axes = *a;
      }
      if (ctx.hasInput(4)) {
        auto st = ctx.maybeConstInts(4);
        if (!st) return std::nullopt;
        steps = *st;
      }
    }
    if (starts.size() != 1 || ends.size() != 1) return std::nullopt;
    if (!axes.empty() && axes[0] != 0 && axes[0] != -1) return std::nullopt;
    int64_t step = steps.empty() ? 1 : steps[0];
    if (step == 0) ctx.fail("slice step 0");
    int64_t n = static_cast<int64_t>(el[0].size());
    int64_t b = starts[0], e = ends[0];
    if (b < 0) b += n;
    if (e < 0) e += n;
    Elems out;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      for (int64_t i = b; i < e; i += step) out.push_back(el[0][static_cast<size_t>(i)]);
    } else {
      b = std::clamp<int64_t>(b, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      for (int64_t i = b; i > e; i += step) out.push_back(el[0][static_cast<size_t>(i)]);
    }
    return std::vector<ValuePtr>{makeSym(ctx, out, false, dtype)};
  }
  if (op == "Equal") {
    if (ctx.numInputs() != 2) return std::nullopt;
    const Elems &a = el[0], &b = el[1];
    size_t n = std::max(a.size(), b.size());
    if ((a.size() != n && a.size() != 1) || (b.size() != n && b.size() != 1)) return std::nullopt;
    std::vector<int64_t> shape;
    if (!(isScalar(ctx.in(0)) && isScalar(ctx.in(1)))) shape.push_back(static_cast<int64_t>(n));
    ir::Tensor t = ir::Tensor::zeros(ir::DType::boolean, shape);
    for (size_t i = 0; i < n; ++i) {
      const PrimExpr& x = a[a.size() == 1 ? 0 : i];
      const PrimExpr& y = b[b.size() == 1 ? 0 : i];
      int64_t cx, cy;
      bool eq;
      if (ir::asConstInt(x, &cx) && ir::asConstInt(y, &cy))
        eq = cx == cy;
      else if (ops::dimEqual(x, y))
        eq = true;
      else if (ir::asConstInt(y, &cy) && cy < 0)
        eq = false;  // a dimension is never negative
      else if (ir::asConstInt(x, &cx) && cx < 0)
        eq = false;
      else
        return std::nullopt;
      t.set(static_cast<int64_t>(i), eq ? 1.0 : 0.0);
    }
    return std::vector<ValuePtr>{ctx.im.constant(std::move(t), ctx.outName())};
  }
  if (op == "Where") {
    if (ctx.numInputs() != 3) return std::nullopt;
    const ir::Tensor& c = *ctx.in(0)->constant;
    size_t n = std::max({static_cast<size_t>(c.numel()), el[1].size(), el[2].size()});
    auto pick = [&](const Elems& e, size_t i) -> const PrimExpr* {
      if (e.size() == 1) return &e[0];
      if (e.size() == n) return &e[i];
      return nullptr;
    };
    Elems out;
    for (size_t i = 0; i < n; ++i) {
      bool cond = c.at(c.numel() == 1 ? 0 : static_cast<int64_t>(i)) != 0;
      const PrimExpr* x = pick(cond ? el[1] : el[2], i);
      if (!x || (c.numel() != 1 && static_cast<size_t>(c.numel()) != n)) return std::nullopt;
      out.push_back(*x);
    }
    bool scalar = c.rank() == 0 && isScalar(ctx.in(1)) && isScalar(ctx.in(2));
    return std::vector<ValuePtr>{makeSym(ctx, out, scalar, ctx.in(1)->type.dtype)};
  }
  // Binary arithmetic.
  if (ctx.numInputs() != 2 || !ctx.hasInput(1)) return std::nullopt;
  if (ctx.in(0)->type.dtype != ctx.in(1)->type.dtype) return std::nullopt;
  auto r = binary(op, el[0], el[1], op == "Mod" && ctx.attrInt("fmod", 0) != 0);
  if (!r) return std::nullopt;
  return std::vector<ValuePtr>{makeSym(ctx, *r, isScalar(ctx.in(0)) && isScalar(ctx.in(1)), dtype)};
}

}  // namespace mlcc::frontend::onnx_import
