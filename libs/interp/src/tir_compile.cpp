// Compilation of TensorIR statements into closures, and calls of a compiled
// prim func: symbolic dimensions bind from the argument shapes, buffers
// resolve to base pointer + shape + strides, allocations are zeroed per call
// (function level) or per block execution (block level). Loops of every
// kind, thread-bound ones included, run serially in order.
#include "tir_compile.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "mlcc/ir/entry.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::interp {
namespace tir {

using ir::DType;

namespace {

struct SFor final : SNode {
  SFor(int slot, IPtr extent, SPtr body) : slot(slot), extent(std::move(extent)), body(std::move(body)) {}
  void exec(Frame& f) const override {
    const int64_t n = extent->eval(f);
    for (int64_t i = 0; i < n; ++i) {
      f.slots[slot] = i;
      body->exec(f);
    }
  }
  int slot;
  IPtr extent;
  SPtr body;
};
struct SSeq final : SNode {
  void exec(Frame& f) const override {
    for (const auto& s : stmts) s->exec(f);
  }
  std::vector<SPtr> stmts;
};
struct SNop final : SNode {
  void exec(Frame&) const override {}
};
struct SIf final : SNode {
  SIf(IPtr c, SPtr t, SPtr e) : cond(std::move(c)), then_s(std::move(t)), else_s(std::move(e)) {}
  void exec(Frame& f) const override {
    if (cond->eval(f))
      then_s->exec(f);
    else if (else_s)
      else_s->exec(f);
  }
  IPtr cond;
  SPtr then_s, else_s;
};

template <DType T>
struct SStoreF final : SNode {
  SStoreF(Index idx, FPtr v) : idx(std::move(idx)), value(std::move(v)) {}
  void exec(Frame& f) const override {
    const double v = value->eval(f);
    storeFloat<T>(f.bufs[idx.buf].base + idx.offset(f) * static_cast<int64_t>(ir::dtypeBytes(T)), v);
  }
  Index idx;
  FPtr value;
};
template <class T>
struct SStoreI final : SNode {
  SStoreI(Index idx, IPtr v) : idx(std::move(idx)), value(std::move(v)) {}
  void exec(Frame& f) const override {
    const int64_t v = value->eval(f);
    const int64_t off = idx.offset(f);
    T x = static_cast<T>(v);  // values are already wrapped to the dtype
    std::memcpy(f.bufs[idx.buf].base + off * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
  }
  Index idx;
  IPtr value;
};

}  // namespace

// Allocates buffer `id` (zeroed) for the lifetime of `storage`/`dims`.
void allocateBuffer(Frame& f, int id, const Compiler& c, std::vector<int64_t>& dims,
                    std::unique_ptr<std::byte[]>& storage) {
  const auto& shape = c.buffer_shapes[id];
  const size_t nd = shape.size();
  dims.assign(2 * nd, 0);
  int64_t n = 1;
  for (size_t d = nd; d-- > 0;) {
    int64_t v = shape[d]->eval(f);
    if (v < 0) throw Error("buffer %" + c.buffers[id].name + " has a negative dimension");
    dims[d] = v;
    dims[nd + d] = n;
    n *= v;
  }
  const size_t bytes = static_cast<size_t>(n) * ir::dtypeBytes(c.buffers[id].dtype);
  storage = std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes);  // value-initialized: zero
  f.bufs[id] = BufRt{storage.get(), dims.data(), dims.data() + nd};
}

namespace {

struct SBlock final : SNode {
  void exec(Frame& f) const override {
    for (const auto& b : bindings) f.slots[b.slot] = b.expr ? b.expr->eval(f) : b.aff.eval(f.slots);
    if (predicate && !predicate->eval(f)) return;
    if (!allocs.empty()) return execWithAllocs(f);
    run(f);
  }
  void execWithAllocs(Frame& f) const {
    std::vector<std::vector<int64_t>> dims(allocs.size());
    std::vector<std::unique_ptr<std::byte[]>> storage(allocs.size());
    for (size_t i = 0; i < allocs.size(); ++i) allocateBuffer(f, allocs[i], *compiler, dims[i], storage[i]);
    run(f);
  }
  void run(Frame& f) const {
    if (init) {
      bool first = true;
      for (int s : reduce_slots) first = first && f.slots[s] == 0;
      if (first) init->exec(f);
    }
    body->exec(f);
  }
  struct Bind {
    int slot;
    Affine aff;  // when expr is null
    IPtr expr;
  };
  std::vector<Bind> bindings;
  IPtr predicate;
  std::vector<int> reduce_slots;
  std::vector<int> allocs;
  const Compiler* compiler = nullptr;
  SPtr init, body;
};

// A block that tensorize marked: the routine called on its regions (its
// reads, then its write; the tile of each buffer from the region's corner
// over the region's constant extents, with the buffer's strides).
struct STensorIntrin final : SNode {
  struct Arg {
    int buf;
    std::vector<IPtr> min;
    std::vector<int64_t> shape;
    int32_t dtype;
    size_t bytes;
  };
  void exec(Frame& f) const override {
    std::vector<mlcc_extern_region> regions(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      const BufRt& b = f.bufs[a.buf];
      int64_t offset = 0;
      for (size_t d = 0; d < a.min.size(); ++d) {
        const int64_t m = a.min[d]->eval(f);
        if (m < 0 || m + a.shape[d] > b.shape[d])
          throw Error("block \"" + block + "\": the tile of %" + compiler->buffers[a.buf].name + " for " +
                      name + " is out of bounds in dimension " + std::to_string(d) + " ([" +
                      std::to_string(m) + ", " + std::to_string(m + a.shape[d]) + ") of " +
                      std::to_string(b.shape[d]) + ")");
        offset += m * b.strides[d];
      }
      regions[i] = {b.base + offset * static_cast<int64_t>(a.bytes), a.shape.data(), b.strides,
                    static_cast<int32_t>(a.shape.size()), a.dtype};
    }
    fn(regions.data(), static_cast<int32_t>(regions.size()));
  }
  std::string name, block;
  mlcc_tensor_intrin_fn fn = nullptr;
  std::vector<Arg> args;
  const Compiler* compiler = nullptr;
};

}  // namespace

SPtr Compiler::tensorIntrinCall(const ir::BlockNode& b, const std::string& name) {
  if (!tensor_intrin)
    throw Error("block \"" + b.name + "\" calls tensor intrinsic \"" + name +
                "\", which nothing here can run");
  if (!b.iter_vars.empty() || b.predicate || b.init || !b.alloc_buffers.empty() || b.writes.size() != 1)
    throw Error("block \"" + b.name + "\" calls tensor intrinsic \"" + name +
                "\" but is not a block tensorize made (opaque, one write region)");
  auto call = std::make_unique<STensorIntrin>();
  call->name = name;
  call->block = b.name;
  call->fn = tensor_intrin(name);
  call->compiler = this;
  std::vector<ir::BufferRegion> regions = b.reads;
  regions.push_back(b.writes[0]);
  for (const auto& r : regions) {
    STensorIntrin::Arg a;
    a.buf = bufferId(r.buffer);
    a.dtype = ir::dtypeAbiCode(r.buffer->dtype);
    a.bytes = ir::dtypeBytes(r.buffer->dtype);
    for (const auto& range : r.region) {
      int64_t extent;
      if (!ir::asConstInt(range.extent, &extent))
        throw Error("block \"" + b.name + "\": the tile of %" + r.buffer->name + " has a symbolic extent");
      a.min.push_back(intExpr(range.min));
      a.shape.push_back(extent);
    }
    call->args.push_back(std::move(a));
  }
  return call;
}

SPtr Compiler::stmt(const ir::Stmt& s) {
  if (!s) return std::make_unique<SNop>();
  switch (s->kind) {
    case ir::StmtKind::For: {
      if (!no_nests)
        if (SPtr n = nest(s)) return n;
      auto* f = s->as<ir::ForNode>();
      IPtr extent = intExpr(f->extent);
      int slot = varSlot(f->loop_var);
      return std::make_unique<SFor>(slot, std::move(extent), stmt(f->body));
    }
    case ir::StmtKind::Seq: {
      auto seq = std::make_unique<SSeq>();
      for (const auto& x : s->as<ir::SeqNode>()->stmts) seq->stmts.push_back(stmt(x));
      return seq;
    }
    case ir::StmtKind::If: {
      auto* i = s->as<ir::IfNode>();
      return std::make_unique<SIf>(intExpr(i->cond), stmt(i->then_case),
                                   i->else_case ? stmt(i->else_case) : nullptr);
    }
    case ir::StmtKind::Store: {
      auto* st = s->as<ir::StoreNode>();
      if (int cs = cursor(st->buffer, st->indices); cs >= 0)
        return cursorStore(st->buffer->dtype, bufferId(st->buffer), cs, st->value);
      Index idx = index(st->buffer, st->indices);
      switch (st->buffer->dtype) {
        case DType::f32: return std::make_unique<SStoreF<DType::f32>>(std::move(idx), floatExpr(st->value));
        case DType::f16: return std::make_unique<SStoreF<DType::f16>>(std::move(idx), floatExpr(st->value));
        case DType::bf16: return std::make_unique<SStoreF<DType::bf16>>(std::move(idx), floatExpr(st->value));
        case DType::f64: return std::make_unique<SStoreF<DType::f64>>(std::move(idx), floatExpr(st->value));
        default:
          return withIntStorage(st->buffer->dtype, "store", [&](auto e) -> SPtr {
            return std::make_unique<SStoreI<decltype(e)>>(std::move(idx), intExpr(st->value));
          });
      }
    }
    case ir::StmtKind::Block: {
      auto* b = s->as<ir::BlockNode>();
      if (auto it = b->attrs.find("tensor_intrin"); it != b->attrs.end() && it->second.isString())
        return tensorIntrinCall(*b, it->second.asString());
      auto blk = std::make_unique<SBlock>();
      std::vector<SBlock::Bind> values(b->iter_vars.size());
      for (size_t i = 0; i < b->iter_vars.size(); ++i)  // in the outer scope
        if (!affine(b->iter_vars[i].binding, values[i].aff, 1))
          values[i].expr = intExpr(b->iter_vars[i].binding);
      for (size_t i = 0; i < b->iter_vars.size(); ++i) {
        values[i].slot = varSlot(b->iter_vars[i].var);
        blk->bindings.push_back(std::move(values[i]));
        if (b->iter_vars[i].kind == ir::IterKind::reduce)
          blk->reduce_slots.push_back(blk->bindings.back().slot);
      }
      if (b->predicate) blk->predicate = intExpr(b->predicate);
      for (const auto& a : b->alloc_buffers) blk->allocs.push_back(bufferId(a));
      blk->compiler = this;
      if (b->init) blk->init = stmt(b->init);
      blk->body = stmt(b->body);
      return blk;
    }
  }
  throw Error("unsupported statement");
}

}  // namespace tir

namespace {

std::string shapeText(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
std::string typeText(const ir::BufferNode& b) {
  std::string r = std::string(ir::dtypeName(b.dtype)) + "[";
  for (size_t i = 0; i < b.shape.size(); ++i) r += (i ? ", " : "") + ir::printExpr(b.shape[i]);
  return r + "]";
}

void collectVars(const ir::PrimExpr& e, std::vector<const ir::VarNode*>& out) {
  if (auto* v = e->as<ir::VarNode>()) {
    out.push_back(v);
  } else if (auto* b = e->as<ir::BinaryNode>()) {
    collectVars(b->a, out);
    collectVars(b->b, out);
  } else if (auto* u = e->as<ir::UnaryNode>()) {
    collectVars(u->a, out);
  } else if (auto* s = e->as<ir::SelectNode>()) {
    collectVars(s->cond, out);
    collectVars(s->true_value, out);
    collectVars(s->false_value, out);
  } else if (auto* c = e->as<ir::CastNode>()) {
    collectVars(c->value, out);
  } else if (auto* c = e->as<ir::CallNode>()) {
    for (const auto& a : c->args) collectVars(a, out);
  }
}

}  // namespace

std::unique_ptr<CompiledPrimFunc> CompiledPrimFunc::compile(
    const ir::PrimFunc& f, std::function<mlcc_tensor_intrin_fn(const std::string& name)> tensor_intrin) {
  auto cf = std::make_unique<CompiledPrimFunc>();
  cf->func_ = &f;
  cf->c_.tensor_intrin = std::move(tensor_intrin);
  try {
    // Symbolic variables: the whole-dimension vars of the parameters' shapes.
    for (const auto& p : f.params)
      for (const auto& d : p->shape)
        if (auto* v = d->as<ir::VarNode>())
          if (!cf->c_.slots.count(v)) cf->c_.slots.emplace(v, cf->c_.newSlot());
    for (const auto& p : f.params) cf->c_.bufferId(p);
    for (const auto& a : f.allocs) cf->alloc_ids_.push_back(cf->c_.bufferId(a));
    cf->body_ = cf->c_.stmt(f.body);
  } catch (const Error& e) {
    throw Error("prim func @" + f.name + ": " + e.message());
  }
  for (const ir::ParamUse& u : ir::paramUses(f)) {
    cf->read_.push_back(u.read);
    cf->written_.push_back(u.written);
  }
  return cf;
}

void CompiledPrimFunc::bindShapes(const std::vector<const std::vector<int64_t>*>& known,
                                  std::vector<int64_t>& slots, std::vector<char>& bound) const {
  const auto& params = func_->params;
  if (known.size() != params.size())
    throw Error("expects " + std::to_string(params.size()) + " arguments, got " +
                std::to_string(known.size()));
  auto mismatch = [&](size_t i) {
    return Error("argument %" + params[i]->name + ": expected " + typeText(*params[i]) + ", got shape " +
                 shapeText(*known[i]));
  };
  for (size_t i = 0; i < params.size(); ++i) {
    if (!known[i]) continue;
    const auto& shape = params[i]->shape;
    if (shape.size() != known[i]->size()) throw mismatch(i);
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t actual = (*known[i])[d];
      int64_t c;
      if (auto* v = shape[d]->as<ir::VarNode>()) {
        int slot = c_.slots.at(v);
        if (!bound[slot]) {
          slots[slot] = actual;
          bound[slot] = 1;
        } else if (slots[slot] != actual) {
          throw Error("argument %" + params[i]->name + ": dimension " + std::to_string(d) + " is " +
                      std::to_string(actual) + " but '" + v->name + "' is " + std::to_string(slots[slot]));
        }
      } else if (ir::asConstInt(shape[d], &c) && c != actual) {
        throw mismatch(i);
      }
    }
  }
  // Other expressions: check once every symbolic variable is bound.
  tir::Frame frame{slots.data(), nullptr};
  for (size_t i = 0; i < params.size(); ++i) {
    if (!known[i]) continue;
    const auto& shape = params[i]->shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d]->as<ir::VarNode>()) continue;
      std::vector<const ir::VarNode*> vars;
      collectVars(shape[d], vars);
      for (auto* v : vars)
        if (!bound[c_.slots.at(v)])
          throw Error("argument %" + params[i]->name + ": symbolic dimension '" + v->name +
                      "' is not bound by any argument");
      if (c_.buffer_shapes[i][d]->eval(frame) != (*known[i])[d]) throw mismatch(i);
    }
  }
}

std::vector<std::vector<int64_t>> CompiledPrimFunc::paramShapes(
    const std::vector<const std::vector<int64_t>*>& known) const {
  try {
    std::vector<int64_t> slots(c_.num_slots, 0);
    std::vector<char> bound(c_.num_slots, 0);
    bindShapes(known, slots, bound);
    tir::Frame frame{slots.data(), nullptr};
    std::vector<std::vector<int64_t>> out;
    for (size_t i = 0; i < func_->params.size(); ++i) {
      if (known[i]) {
        out.push_back(*known[i]);
        continue;
      }
      std::vector<const ir::VarNode*> vars;
      for (const auto& d : func_->params[i]->shape) collectVars(d, vars);
      for (auto* v : vars)
        if (!bound[c_.slots.at(v)])
          throw Error("the shape of %" + func_->params[i]->name + " depends on '" + v->name +
                      "', which no argument binds");
      std::vector<int64_t> s;
      for (const auto& d : c_.buffer_shapes[i]) s.push_back(d->eval(frame));
      out.push_back(std::move(s));
    }
    return out;
  } catch (const Error& e) {
    throw Error("prim func @" + func_->name + ": " + e.message());
  }
}

void CompiledPrimFunc::run(const std::vector<ir::Tensor*>& args) const {
  const auto& params = func_->params;
  try {
    std::vector<const std::vector<int64_t>*> known;
    for (size_t i = 0; i < args.size(); ++i) known.push_back(&args[i]->shape());
    std::vector<int64_t> slots(c_.num_slots, 0);
    std::vector<char> bound(c_.num_slots, 0);
    bindShapes(known, slots, bound);
    std::vector<tir::BufRt> bufs(c_.buffers.size());
    tir::Frame frame{slots.data(), bufs.data()};
    std::vector<std::vector<int64_t>> dims(params.size() + alloc_ids_.size());
    for (size_t i = 0; i < params.size(); ++i) {
      ir::Tensor& t = *args[i];
      if (t.dtype() != params[i]->dtype)
        throw Error("argument %" + params[i]->name + ": expected " + typeText(*params[i]) + ", got dtype " +
                    std::string(ir::dtypeName(t.dtype())));
      if (t.isView() && written_[i]) t = t.clone();  // never write through a read-only view
      const size_t nd = t.shape().size();
      dims[i].assign(2 * nd, 0);
      int64_t n = 1;
      for (size_t d = nd; d-- > 0;) {
        dims[i][d] = t.shape()[d];
        dims[i][nd + d] = n;
        n *= t.shape()[d];
      }
      bufs[i] = tir::BufRt{const_cast<std::byte*>(t.bytes()), dims[i].data(), dims[i].data() + nd};
    }
    std::vector<std::unique_ptr<std::byte[]>> storage(alloc_ids_.size());
    for (size_t a = 0; a < alloc_ids_.size(); ++a)
      tir::allocateBuffer(frame, alloc_ids_[a], c_, dims[params.size() + a], storage[a]);
    body_->exec(frame);
  } catch (const Error& e) {
    throw Error("prim func @" + func_->name + ": " + e.message());
  }
}

}  // namespace mlcc::interp
