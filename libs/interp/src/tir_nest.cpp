// Loop nests with strength-reduced indices. A perfect nest of For loops
// whose extents are affine in outer variables, ending in a leaf (a Store, or
// a Block with affine bindings, no allocations and only Seq/If/Store inside)
// compiles to an SNest. Each leaf access whose indices are affine becomes a
// cursor: a slot holding its byte offset, advanced by a per-loop constant as
// the loops step, so no index is computed per element. Block variables are
// advanced the same way instead of evaluating their bindings.
//
// Bounds: on entry the nest evaluates its extents and checks, for every
// cursor access and dimension, the minimum and maximum of the (affine) index
// over the whole iteration box, exactly (128-bit). When all lie in bounds
// the nest runs unchecked; otherwise it runs its fallback, the ordinary
// per-element closure tree, which reports the first out-of-bounds access as
// before. Accesses with non-affine indices keep their per-element checks.
// Evaluation order and arithmetic are those of the fallback, so results are
// bit-identical.
#include <cstring>

#include "mlcc/ir/float_bits.h"
#include "mlcc/support/diagnostic.h"
#include "tir_compile.h"

namespace mlcc::interp::tir {

using ir::DType;

namespace {

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

// ---- loads and stores through cursors ----
template <DType T>
struct FLoadCur final : FExpr {
  FLoadCur(int buf, int slot) : buf(buf), slot(slot) {}
  double eval(Frame& f) const override { return loadFloat<T>(f.bufs[buf].base + f.slots[slot]); }
  int buf, slot;
};
template <class T>
struct ILoadCur final : IExpr {
  ILoadCur(int buf, int slot) : buf(buf), slot(slot) {}
  int64_t eval(Frame& f) const override {
    T v;
    std::memcpy(&v, f.bufs[buf].base + f.slots[slot], sizeof(T));
    if constexpr (std::is_same_v<T, bool>) return v ? 1 : 0;
    return static_cast<int64_t>(v);
  }
  int buf, slot;
};
template <DType T>
struct SStoreFCur final : SNode {
  SStoreFCur(int buf, int slot, FPtr v) : buf(buf), slot(slot), value(std::move(v)) {}
  void exec(Frame& f) const override { storeFloat<T>(f.bufs[buf].base + f.slots[slot], value->eval(f)); }
  int buf, slot;
  FPtr value;
};
template <class T>
struct SStoreICur final : SNode {
  SStoreICur(int buf, int slot, IPtr v) : buf(buf), slot(slot), value(std::move(v)) {}
  void exec(Frame& f) const override {
    T x = static_cast<T>(value->eval(f));  // values are already wrapped to the dtype
    std::memcpy(f.bufs[buf].base + f.slots[slot], &x, sizeof(T));
  }
  int buf, slot;
  IPtr value;
};

// D = A + B * C in f32, all through cursors (the reduction step of matmul
// and convolution): one node instead of five.
struct SMacF32 final : SNode {
  int d_buf, d_slot, a_buf, a_slot, b_buf, b_slot, c_buf, c_slot;
  void exec(Frame& f) const override {
    float a, b, c;
    std::memcpy(&a, f.bufs[a_buf].base + f.slots[a_slot], 4);
    std::memcpy(&b, f.bufs[b_buf].base + f.slots[b_slot], 4);
    std::memcpy(&c, f.bufs[c_buf].base + f.slots[c_slot], 4);
    const float r = a + b * c;
    std::memcpy(f.bufs[d_buf].base + f.slots[d_slot], &r, 4);
  }
};

// The leaf block of a nest: its variables are kept current by the nest.
struct SLeafBlock final : SNode {
  void exec(Frame& f) const override {
    if (predicate && !predicate->eval(f)) return;
    if (init) {
      bool first = true;
      for (int s : reduce_slots) first = first && f.slots[s] == 0;
      if (first) init->exec(f);
    }
    body->exec(f);
  }
  IPtr predicate;
  std::vector<int> reduce_slots;
  SPtr init, body;
};

struct SNest final : SNode {
  struct Var {  // a block variable: slot = binding, affine in the loops
    int slot;
    Affine binding;
    std::vector<int64_t> coef;  // per loop
  };
  struct Access {
    int buf, slot, elem_bytes;
    std::vector<Affine> idx;                 // per dimension
    std::vector<std::vector<int64_t>> coef;  // [dimension][loop]
  };
  struct Step {  // per iteration of a loop: slots[slot] += delta
    int slot;
    int64_t delta;
  };

  void exec(Frame& f) const override {
    for (const auto& inv : invariants) f.slots[inv.slot] = inv.expr->eval(f);
    const size_t nl = loop_slots.size();
    int64_t n[kMaxLoops];
    for (size_t l = 0; l < nl; ++l) {
      n[l] = extents[l].eval(f.slots);
      if (n[l] <= 0) return;  // the leaf never runs
    }
    // The origin: every loop variable 0.
    for (int s : loop_slots) f.slots[s] = 0;
    for (const auto& v : vars) f.slots[v.slot] = v.binding.eval(f.slots);
    Step steps[kMaxSteps];
    size_t begin[kMaxLoops + 1];
    size_t ns = 0;
    int64_t origin[kMaxAccesses];
    for (size_t a = 0; a < accesses.size(); ++a) {
      const Access& ac = accesses[a];
      const BufRt& b = f.bufs[ac.buf];
      uint64_t off = 0;
      for (size_t d = 0; d < ac.idx.size(); ++d) {
        const int64_t o = ac.idx[d].eval(f.slots);
        __int128 lo = o, hi = o;
        for (size_t l = 0; l < nl; ++l) {
          const __int128 span = static_cast<__int128>(ac.coef[d][l]) * (n[l] - 1);
          if (__builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) return slow->exec(f);
        }
        if (lo < 0 || hi >= b.shape[d]) return slow->exec(f);
        off += u(o) * u(b.strides[d]);
      }
      origin[a] = static_cast<int64_t>(off * u(ac.elem_bytes));
    }
    for (size_t l = 0; l < nl; ++l) {
      begin[l] = ns;
      for (const auto& v : vars)
        if (v.coef[l]) steps[ns++] = {v.slot, v.coef[l]};
      for (const auto& ac : accesses) {
        uint64_t stride = 0;
        for (size_t d = 0; d < ac.idx.size(); ++d) stride += u(ac.coef[d][l]) * u(f.bufs[ac.buf].strides[d]);
        if (stride) steps[ns++] = {ac.slot, static_cast<int64_t>(stride * u(ac.elem_bytes))};
      }
    }
    begin[nl] = ns;
    for (size_t a = 0; a < accesses.size(); ++a) f.slots[accesses[a].slot] = origin[a];
    run(f, 0, n, steps, begin);
  }

  void run(Frame& f, size_t l, const int64_t* n, const Step* steps, const size_t* begin) const {
    const int s = loop_slots[l];
    const Step* sb = steps + begin[l];
    const Step* se = steps + begin[l + 1];
    int64_t* slots = f.slots;
    if (l + 1 == loop_slots.size()) {
      for (int64_t i = 0; i < n[l]; ++i) {
        slots[s] = i;
        leaf->exec(f);
        for (const Step* p = sb; p != se; ++p)
          slots[p->slot] = static_cast<int64_t>(u(slots[p->slot]) + u(p->delta));
      }
    } else {
      for (int64_t i = 0; i < n[l]; ++i) {
        slots[s] = i;
        run(f, l + 1, n, steps, begin);
        for (const Step* p = sb; p != se; ++p)
          slots[p->slot] = static_cast<int64_t>(u(slots[p->slot]) + u(p->delta));
      }
    }
    for (const Step* p = sb; p != se; ++p)  // rewind
      slots[p->slot] = static_cast<int64_t>(u(slots[p->slot]) - u(p->delta) * u(n[l]));
  }

  static constexpr size_t kMaxLoops = 16, kMaxVars = 32, kMaxAccesses = 32;
  static constexpr size_t kMaxSteps = kMaxLoops * (kMaxVars + kMaxAccesses);
  std::vector<Compiler::Invariant> invariants;  // computed on entry
  std::vector<int> loop_slots;
  std::vector<Affine> extents;
  std::vector<Var> vars;
  std::vector<Access> accesses;
  SPtr leaf, slow;
};

// Whether `s` holds only Seq, If and Store statements.
bool simpleBody(const ir::Stmt& s) {
  if (!s) return true;
  switch (s->kind) {
    case ir::StmtKind::Store: return true;
    case ir::StmtKind::Seq:
      for (const auto& x : s->as<ir::SeqNode>()->stmts)
        if (!simpleBody(x)) return false;
      return true;
    case ir::StmtKind::If: {
      auto* i = s->as<ir::IfNode>();
      return simpleBody(i->then_case) && simpleBody(i->else_case);
    }
    default: return false;
  }
}

bool sameAffine(const Affine& a, const Affine& b) { return a.c == b.c && a.terms == b.terms; }

// The coefficients of `a` per loop, block variables expanded through their
// bindings; false when `a` uses a variable of the nest it cannot expand.
std::vector<int64_t> loopCoefs(const Affine& a, const std::vector<int>& loops,
                               const std::vector<SNest::Var>& vars) {
  std::vector<int64_t> coef(loops.size(), 0);
  for (const auto& [s, k] : a.terms) {
    for (size_t l = 0; l < loops.size(); ++l)
      if (loops[l] == s) coef[l] = static_cast<int64_t>(u(coef[l]) + u(k));
    for (const auto& v : vars)
      if (v.slot == s)
        for (size_t l = 0; l < loops.size(); ++l)
          coef[l] = static_cast<int64_t>(u(coef[l]) + u(k) * u(v.coef[l]));
  }
  return coef;
}

}  // namespace

int Compiler::cursor(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices) {
  if (!scope) return -1;
  NestAccess acc{bufferId(buf), {}, -1};
  for (const auto& i : indices) {
    Affine a;
    if (!affine(i, a, 1)) return -1;
    acc.idx.push_back(std::move(a));
  }
  for (const auto& o : scope->accesses) {
    if (o.buf != acc.buf || o.idx.size() != acc.idx.size()) continue;
    bool same = true;
    for (size_t d = 0; d < acc.idx.size(); ++d) same = same && sameAffine(o.idx[d], acc.idx[d]);
    if (same) return o.slot;
  }
  if (scope->accesses.size() >= SNest::kMaxAccesses) return -1;
  acc.slot = newSlot();
  scope->accesses.push_back(std::move(acc));
  return scope->accesses.back().slot;
}

FPtr Compiler::cursorFloatLoad(DType t, int buf, int slot) {
  switch (t) {
    case DType::f32: return std::make_unique<FLoadCur<DType::f32>>(buf, slot);
    case DType::f16: return std::make_unique<FLoadCur<DType::f16>>(buf, slot);
    case DType::bf16: return std::make_unique<FLoadCur<DType::bf16>>(buf, slot);
    case DType::f64: return std::make_unique<FLoadCur<DType::f64>>(buf, slot);
    default: throw Error("float load from an integer buffer");
  }
}

IPtr Compiler::cursorIntLoad(DType t, int buf, int slot) {
  return withIntStorage(t, "load",
                        [&](auto e) -> IPtr { return std::make_unique<ILoadCur<decltype(e)>>(buf, slot); });
}

SPtr Compiler::cursorStore(DType t, int buf, int slot, const ir::PrimExpr& value) {
  // D = A + B * C in f32 with every access a cursor: the fused node.
  if (t == DType::f32 && value->dtype == DType::f32)
    if (auto* add = value->as<ir::BinaryNode>(); add && add->op == ir::BinaryOp::Add) {
      auto* la = add->a->as<ir::LoadNode>();
      auto* mul = add->b->as<ir::BinaryNode>();
      auto* lb = mul && mul->op == ir::BinaryOp::Mul ? mul->a->as<ir::LoadNode>() : nullptr;
      auto* lc = mul && mul->op == ir::BinaryOp::Mul ? mul->b->as<ir::LoadNode>() : nullptr;
      if (la && lb && lc && la->buffer->dtype == DType::f32 && lb->buffer->dtype == DType::f32 &&
          lc->buffer->dtype == DType::f32) {
        int sa = cursor(la->buffer, la->indices), sb = cursor(lb->buffer, lb->indices),
            sc = cursor(lc->buffer, lc->indices);
        if (sa >= 0 && sb >= 0 && sc >= 0) {
          auto n = std::make_unique<SMacF32>();
          n->d_buf = buf, n->d_slot = slot;
          n->a_buf = bufferId(la->buffer), n->a_slot = sa;
          n->b_buf = bufferId(lb->buffer), n->b_slot = sb;
          n->c_buf = bufferId(lc->buffer), n->c_slot = sc;
          return n;
        }
      }
    }
  switch (t) {
    case DType::f32: return std::make_unique<SStoreFCur<DType::f32>>(buf, slot, floatExpr(value));
    case DType::f16: return std::make_unique<SStoreFCur<DType::f16>>(buf, slot, floatExpr(value));
    case DType::bf16: return std::make_unique<SStoreFCur<DType::bf16>>(buf, slot, floatExpr(value));
    case DType::f64: return std::make_unique<SStoreFCur<DType::f64>>(buf, slot, floatExpr(value));
    default:
      return withIntStorage(t, "store", [&](auto e) -> SPtr {
        return std::make_unique<SStoreICur<decltype(e)>>(buf, slot, intExpr(value));
      });
  }
}

SPtr Compiler::nest(const ir::Stmt& s) {
  std::vector<const ir::ForNode*> loops;
  ir::Stmt leaf = s;
  while (leaf && leaf->kind == ir::StmtKind::For) {
    loops.push_back(leaf->as<ir::ForNode>());
    leaf = loops.back()->body;
  }
  if (loops.size() > SNest::kMaxLoops || !leaf) return nullptr;
  const ir::BlockNode* block = nullptr;
  if (leaf->kind == ir::StmtKind::Block) {
    block = leaf->as<ir::BlockNode>();
    if (!block->alloc_buffers.empty() || !simpleBody(block->init) || !simpleBody(block->body)) return nullptr;
  } else if (leaf->kind != ir::StmtKind::Store) {
    return nullptr;
  }

  if (block && block->iter_vars.size() > SNest::kMaxVars) return nullptr;
  auto n = std::make_unique<SNest>();
  for (const auto* f : loops) n->loop_slots.push_back(varSlot(f->loop_var));
  InvariantSink sink;
  sink.varying = n->loop_slots;
  if (block)
    for (const auto& iv : block->iter_vars) sink.varying.push_back(varSlot(iv.var));
  struct SinkGuard {
    Compiler& c;
    InvariantSink* saved;
    ~SinkGuard() { c.invariants = saved; }
  } guard{*this, invariants};
  invariants = &sink;
  auto inNest = [&](const Affine& a) {
    for (const auto& [slot, k] : a.terms)
      for (int l : n->loop_slots)
        if (l == slot) return true;
    return false;
  };
  for (const auto* f : loops) {
    Affine a;
    if (!affine(f->extent, a, 1) || inNest(a)) return nullptr;
    n->extents.push_back(std::move(a));
  }
  if (block) {
    for (const auto& iv : block->iter_vars) {
      SNest::Var v;
      v.slot = varSlot(iv.var);
      if (!affine(iv.binding, v.binding, 1)) return nullptr;
      for (int l : n->loop_slots)
        if (l == v.slot) return nullptr;
      for (const auto& iv2 : block->iter_vars)  // bindings see the outer scope only
        for (const auto& [slot, k] : v.binding.terms)
          if (slot == varSlot(iv2.var)) return nullptr;
      v.coef = loopCoefs(v.binding, n->loop_slots, {});
      n->vars.push_back(std::move(v));
    }
  }

  no_nests = true;  // the fallback: per-element closures
  invariants = nullptr;
  try {
    n->slow = stmt(s);
  } catch (...) {
    no_nests = false;
    throw;
  }
  no_nests = false;
  invariants = &sink;

  NestScope sc;
  scope = &sc;
  try {
    if (block) {
      auto lb = std::make_unique<SLeafBlock>();
      for (const auto& iv : block->iter_vars)
        if (iv.kind == ir::IterKind::reduce) lb->reduce_slots.push_back(varSlot(iv.var));
      if (block->predicate) lb->predicate = intExpr(block->predicate);
      if (block->init) lb->init = stmt(block->init);
      lb->body = stmt(block->body);
      n->leaf = std::move(lb);
    } else {
      n->leaf = stmt(leaf);
    }
  } catch (...) {
    scope = nullptr;
    throw;
  }
  scope = nullptr;
  if (sc.accesses.empty()) return nullptr;  // nothing to strength-reduce
  n->invariants = std::move(sink.list);
  for (auto& a : sc.accesses) {
    SNest::Access ac;
    ac.buf = a.buf;
    ac.slot = a.slot;
    ac.elem_bytes = static_cast<int>(ir::dtypeBytes(buffers[a.buf].dtype));
    for (const auto& d : a.idx) ac.coef.push_back(loopCoefs(d, n->loop_slots, n->vars));
    ac.idx = std::move(a.idx);
    n->accesses.push_back(std::move(ac));
  }
  return n;
}

}  // namespace mlcc::interp::tir
