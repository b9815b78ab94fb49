// Tensor expressions to prim funcs (see te.h).
#include "mlcc/ir/te.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir::te {

namespace {

// Exact equality of index expressions: the same variables (by node), the
// same structure; selects, loads and calls count as different (ir::sameExpr
// would compare them too, which would change the regions legalize writes).
bool sameIndexExpr(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case ExprKind::IntImm: return a->as<IntImmNode>()->value == b->as<IntImmNode>()->value;
    case ExprKind::FloatImm: return a->as<FloatImmNode>()->value == b->as<FloatImmNode>()->value;
    case ExprKind::Var: return false;  // distinct nodes
    case ExprKind::Binary: {
      auto *x = a->as<BinaryNode>(), *y = b->as<BinaryNode>();
      return x->op == y->op && sameIndexExpr(x->a, y->a) && sameIndexExpr(x->b, y->b);
    }
    case ExprKind::Unary: {
      auto *x = a->as<UnaryNode>(), *y = b->as<UnaryNode>();
      return x->op == y->op && sameIndexExpr(x->a, y->a);
    }
    case ExprKind::Cast: return sameIndexExpr(a->as<CastNode>()->value, b->as<CastNode>()->value);
    default: return false;  // conservatively different
  }
}

// Collects every load of `e` (including loads inside load indices).
void collectLoads(const PrimExpr& e, std::vector<const LoadNode*>& out) {
  if (!e) return;
  if (const auto* l = e->as<LoadNode>()) out.push_back(l);
  forEachChild(e, [&](const PrimExpr& x) { collectLoads(x, out); });
}

// Read regions of one block instance: a point where every load of a buffer
// uses the same indices, else the whole buffer. `skip` (the block's own
// output in a reduction) is left out.
std::vector<BufferRegion> readRegions(const std::vector<PrimExpr>& values, const Buffer& skip) {
  std::vector<const LoadNode*> loads;
  for (const auto& v : values) collectLoads(v, loads);
  std::vector<BufferRegion> regions;
  std::vector<const LoadNode*> first;
  for (const LoadNode* l : loads) {
    if (l->buffer == skip) continue;
    auto it = std::find_if(regions.begin(), regions.end(),
                           [&](const BufferRegion& r) { return r.buffer == l->buffer; });
    if (it == regions.end()) {
      regions.push_back(build::point(l->buffer, l->indices));
      first.push_back(l);
      continue;
    }
    const LoadNode* f = first[it - regions.begin()];
    bool same = f->indices.size() == l->indices.size();
    for (size_t i = 0; same && i < l->indices.size(); ++i) same = sameIndexExpr(f->indices[i], l->indices[i]);
    if (!same) *it = build::whole(l->buffer);
  }
  return regions;
}

std::vector<Var> makeVars(const std::string& prefix, size_t n) {
  std::vector<Var> vars;
  for (size_t i = 0; i < n; ++i) vars.push_back(makeVar(prefix + std::to_string(i)));
  return vars;
}

}  // namespace

PrimExpr constant(DType dtype, double v) {
  if (isFloat(dtype)) return makeFloat(v, dtype);
  if (dtype == DType::boolean) return makeBool(v != 0);
  return makeInt(static_cast<int64_t>(v), dtype);
}

PrimExpr reduceIdentity(ReduceOp op, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (op) {
    case ReduceOp::Sum: return constant(dtype, 0);
    case ReduceOp::Prod: return constant(dtype, 1);
    case ReduceOp::Max: return isInt(dtype) ? makeInt(intMin(dtype), dtype) : constant(dtype, -inf);
    case ReduceOp::Min: return isInt(dtype) ? makeInt(intMax(dtype), dtype) : constant(dtype, inf);
  }
  return nullptr;
}

PrimExpr guardedLoad(const Buffer& buffer, const std::vector<PrimExpr>& indices, const PrimExpr& in_bounds,
                     const PrimExpr& fallback) {
  using namespace build;
  std::vector<PrimExpr> clamped;
  for (size_t d = 0; d < indices.size(); ++d)
    clamped.push_back(maximum(minimum(indices[d], buffer->shape[d] - 1), 0));
  return makeSelect(in_bounds, makeLoad(buffer, clamped), fallback);
}

FuncBuilder::FuncBuilder(std::string func_name) : name_(std::move(func_name)) {}

std::string FuncBuilder::uniqueName(const std::string& base) {
  std::string name = base;
  for (int k = 1; std::find(used_names_.begin(), used_names_.end(), name) != used_names_.end(); ++k)
    name = base + "_" + std::to_string(k);
  used_names_.push_back(name);
  return name;
}

Buffer FuncBuilder::input(const std::string& name, const Type& type) {
  if (!type.isTensor()) throw Error("te: input '" + name + "' of @" + name_ + " must be a tensor");
  Buffer b = makeBuffer(uniqueName(name), type.dtype, type.shape);
  inputs_.push_back(b);
  return b;
}

Buffer FuncBuilder::compute(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype,
                            const ComputeFn& f) {
  return reduce(name, shape, dtype, {}, ReduceOp::Sum,
                [&](const Indices& i, const Indices&) { return f(i); });
}

Buffer FuncBuilder::reduce(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype,
                           const std::vector<PrimExpr>& reduce_extents, ReduceOp op, const ReduceFn& f,
                           PrimExpr init) {
  const std::string block_name = uniqueName(name);
  Buffer out = makeBuffer(block_name, dtype, shape);
  buffers_.push_back(out);
  std::vector<Var> loops = makeVars("i", shape.size()), iters = makeVars("v", shape.size());
  std::vector<Var> rloops = makeVars("k", reduce_extents.size()),
                   riters = makeVars("vk", reduce_extents.size());
  std::vector<IterVar> iter_vars;
  for (size_t d = 0; d < shape.size(); ++d)
    iter_vars.push_back({iters[d], shape[d], IterKind::spatial, loops[d]});
  for (size_t d = 0; d < reduce_extents.size(); ++d)
    iter_vars.push_back({riters[d], reduce_extents[d], IterKind::reduce, rloops[d]});
  loops.insert(loops.end(), rloops.begin(), rloops.end());
  PrimExpr value = f(iters, riters);
  if (!value) throw Error("te: stage '" + name + "' of @" + name_ + " has no value");
  if (value->dtype != dtype)
    throw Error("te: stage '" + name + "' of @" + name_ + " computes " +
                std::string(dtypeName(value->dtype)) + " but is declared " + std::string(dtypeName(dtype)));
  std::optional<ReduceOp> reduction;
  if (!reduce_extents.empty()) {
    reduction = op;
    if (!init) init = reduceIdentity(op, dtype);
  }
  addStage(block_name, out, {iters.begin(), iters.end()}, std::move(iter_vars), std::move(loops), value, init,
           reduction);
  return out;
}

Buffer FuncBuilder::buffer(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype) {
  Buffer b = makeBuffer(uniqueName(name), dtype, shape);
  buffers_.push_back(b);
  return b;
}

void FuncBuilder::update(const std::string& name, const Buffer& buffer, const std::vector<PrimExpr>& domain,
                         const std::function<std::vector<PrimExpr>(const Indices& spatial)>& index,
                         const ComputeFn& f) {
  if (std::find(buffers_.begin(), buffers_.end(), buffer) == buffers_.end())
    throw Error("te: stage '" + name + "' of @" + name_ + " updates a buffer the builder did not make");
  std::vector<Var> loops = makeVars("i", domain.size()), iters = makeVars("v", domain.size());
  std::vector<IterVar> iter_vars;
  for (size_t d = 0; d < domain.size(); ++d)
    iter_vars.push_back({iters[d], domain[d], IterKind::spatial, loops[d]});
  PrimExpr value = f(iters);
  if (!value || value->dtype != buffer->dtype)
    throw Error("te: stage '" + name + "' of @" + name_ + " does not compute the " +
                std::string(dtypeName(buffer->dtype)) + " its buffer holds");
  std::vector<PrimExpr> idx = index(iters);
  if (idx.size() != buffer->shape.size())
    throw Error("te: stage '" + name + "' of @" + name_ + " indexes its buffer with the wrong rank");
  addStage(uniqueName(name), buffer, std::move(idx), std::move(iter_vars), std::move(loops), value, nullptr,
           std::nullopt);
}

void FuncBuilder::addStage(const std::string& block_name, const Buffer& out, std::vector<PrimExpr> out_idx,
                           std::vector<IterVar> iter_vars, std::vector<Var> loops, PrimExpr value,
                           PrimExpr init, std::optional<ReduceOp> op) {
  if (scan_) {  // bind the step as an opaque iteration variable, first
    Var vt = makeVar("vt");
    iter_vars.insert(iter_vars.begin(), IterVar{vt, scan_->extent, IterKind::opaque, scan_->loop});
    std::unordered_map<const VarNode*, PrimExpr> step{{scan_->placeholder.get(), vt}};
    value = substitute(value, step);
    if (init) init = substitute(init, step);
    for (auto& i : out_idx) i = substitute(i, step);
  }
  Stmt body, init_stmt;
  if (!op) {
    body = makeStore(out, out_idx, value);
  } else {
    PrimExpr acc = makeLoad(out, out_idx);
    PrimExpr combined;
    switch (*op) {
      case ReduceOp::Sum: combined = makeBinary(BinaryOp::Add, acc, value); break;
      case ReduceOp::Prod: combined = makeBinary(BinaryOp::Mul, acc, value); break;
      case ReduceOp::Max: combined = makeBinary(BinaryOp::Max, acc, value); break;
      case ReduceOp::Min: combined = makeBinary(BinaryOp::Min, acc, value); break;
    }
    body = makeStore(out, out_idx, combined);
    init_stmt = makeStore(out, out_idx, init);
  }
  // Read regions of the whole block: the body's loads, and the init's.
  Stmt nest = makeBlock(block_name, iter_vars, readRegions({value, init}, op ? out : Buffer()),
                        {build::point(out, out_idx)}, body, init_stmt);
  const size_t first = scan_ ? 1 : 0;
  for (size_t d = loops.size(); d-- > 0;) nest = makeFor(loops[d], iter_vars[d + first].extent, nest);
  if (scan_)
    scan_->nests.push_back(nest);
  else
    nests_.push_back(nest);
}

Var FuncBuilder::beginScan(const std::string& name, const PrimExpr& extent) {
  if (scan_) throw Error("te: scan '" + name + "' of @" + name_ + " is nested in another");
  scan_ = Scan{makeVar(name), makeVar(name), extent, {}};
  return scan_->placeholder;
}

void FuncBuilder::endScan() {
  if (!scan_) throw Error("te: endScan() of @" + name_ + " without beginScan()");
  nests_.push_back(makeFor(scan_->loop, scan_->extent, makeSeq(std::move(scan_->nests))));
  scan_.reset();
}

PrimFunc FuncBuilder::build(const std::vector<Buffer>& outputs) {
  if (scan_) throw Error("te: @" + name_ + " has a scan that was not ended");
  PrimFunc f;
  f.name = name_;
  f.params = inputs_;
  for (const auto& o : outputs) {
    if (std::find(buffers_.begin(), buffers_.end(), o) == buffers_.end())
      throw Error("te: output '" + o->name + "' of @" + name_ + " is not computed by a stage");
    f.params.push_back(o);
  }
  for (const auto& b : buffers_)
    if (std::find(outputs.begin(), outputs.end(), b) == outputs.end()) f.allocs.push_back(b);
  f.body = makeSeq(nests_);
  return f;
}

}  // namespace mlcc::ir::te
