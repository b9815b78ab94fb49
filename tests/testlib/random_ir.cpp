// The random module generator (see random_ir.h).
//
// Prim funcs are made first, then graph sub-functions, then @main, whose
// parameters are shaped after the inputs of the functions it calls (prim
// symbolic dimensions are replaced by @main's own). Inside prim funcs the
// rules a verifier checks are kept: loop extents and block domains are i64,
// block bindings and predicates use only what is visible outside the block
// (the loops since the enclosing block and that block's iteration
// variables), expressions, regions and init inside a block use its own
// iteration variables, loops nested in it, symbolic dimensions and the
// buffers of the function and of enclosing blocks (a block's regions never
// name its own allocations), constant indices are
// within constant bounds, and integer division only divides by positive
// literals.
#include "random_ir.h"

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/intrinsics.h"

namespace mlcc::test {

using namespace mlcc::ir;

namespace {

// A deterministic random source: mt19937_64 with explicit range reduction
// (std::uniform_int_distribution differs between standard libraries).
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(rng_() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[static_cast<size_t>(uniform(0, static_cast<int64_t>(xs.size()) - 1))];
  }
  DType dtype() { return kAllDTypes[uniform(0, std::size(kAllDTypes) - 1)]; }
  DType nonBoolDType() {
    DType t = dtype();
    while (t == DType::boolean) t = dtype();
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

// Values exact in f16 and bf16, as doubles and as the two formats' bits.
struct HalfValue {
  double value;
  uint16_t f16, bf16;
};
const std::vector<HalfValue> kHalfValues = {
    {0.0, 0x0000, 0x0000},
    {-0.0, 0x8000, 0x8000},
    {1.0, 0x3C00, 0x3F80},
    {-2.5, 0xC100, 0xC020},
    {0.5, 0x3800, 0x3F00},
    {0.25, 0x3400, 0x3E80},
    {1024.0, 0x6400, 0x4480},
    {3.140625, 0x4248, 0x4049},
    {std::numeric_limits<double>::infinity(), 0x7C00, 0x7F80},
    {-std::numeric_limits<double>::infinity(), 0xFC00, 0xFF80},
    {std::numeric_limits<double>::quiet_NaN(), 0x7E00, 0x7FC0},
};
const std::vector<float> kF32Values = {0.0f,
                                       -0.0f,
                                       1.0f,
                                       -2.5f,
                                       0.1f,
                                       1e-07f,
                                       3.4028235e+38f,
                                       -1e10f,
                                       42.0f,
                                       0.75f,
                                       std::numeric_limits<float>::infinity(),
                                       -std::numeric_limits<float>::infinity(),
                                       std::numeric_limits<float>::quiet_NaN()};

int64_t randomInt(Random& r, DType t) {
  switch (t) {
    case DType::boolean: return r.uniform(0, 1);
    case DType::i8: return r.chance(0.2) ? r.pick<int64_t>({-128, 127}) : r.uniform(-20, 20);
    case DType::i32: return r.chance(0.2) ? r.pick<int64_t>({-2147483647, 2147483647}) : r.uniform(-100, 100);
    case DType::u8: return r.chance(0.2) ? r.pick<int64_t>({0, 255}) : r.uniform(0, 40);
    case DType::i16: return r.chance(0.2) ? r.pick<int64_t>({-32768, 32767}) : r.uniform(-100, 100);
    case DType::u16: return r.chance(0.2) ? r.pick<int64_t>({0, 65535}) : r.uniform(0, 200);
    case DType::u32: return r.chance(0.2) ? r.pick<int64_t>({0, 4294967295}) : r.uniform(0, 1000);
    default:
      return r.chance(0.2) ? r.pick<int64_t>({-(int64_t{1} << 40), int64_t{1} << 52}) : r.uniform(-100, 100);
  }
}

// f64 values: doubles no float holds, and the f32 values.
const std::vector<double> kF64Values = {0.1, 1.0000000000000002, 1e300, -1e-300, 4.9e-324};

double randomFloat(Random& r, DType t) {
  if (t == DType::f32) return r.pick(kF32Values);
  if (t == DType::f64) return r.chance(0.5) ? r.pick(kF64Values) : static_cast<double>(r.pick(kF32Values));
  return r.pick(kHalfValues).value;
}

PrimExpr randomLiteral(Random& r, DType t) {
  if (isFloat(t)) return makeFloat(randomFloat(r, t), t);
  return makeInt(randomInt(r, t), t);
}

// The little-endian bytes of one random element of dtype `t`.
void appendElement(Random& r, DType t, std::vector<uint8_t>& out) {
  uint64_t bits;
  if (t == DType::f32)
    bits = std::bit_cast<uint32_t>(r.pick(kF32Values));
  else if (t == DType::f64)
    bits = std::bit_cast<uint64_t>(randomFloat(r, t));
  else if (t == DType::f16 || t == DType::bf16) {
    const HalfValue& h = r.pick(kHalfValues);
    bits = t == DType::f16 ? h.f16 : h.bf16;
  } else
    bits = static_cast<uint64_t>(randomInt(r, t));
  for (int i = 0; i < dtypeBytes(t); ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

const std::vector<std::string> kThreadTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                              "threadIdx.y", "threadIdx.z", "vthread"};

// ---------------------------------------------------------------------------
// Prim funcs

struct Loop {
  Var var;
  PrimExpr extent;
};

// What a statement or expression may refer to.
struct PrimScope {
  std::vector<Loop> loops;      // loops (and iteration variables of the enclosing block) a binding may use
  std::vector<Var> index_vars;  // i64 variables expressions may use
  std::vector<Buffer> buffers;
  bool in_block = false;
};

class PrimGen {
 public:
  PrimGen(Random& r, const RandomIrOptions& opts) : r_(r), opts_(opts) {}

  PrimFunc make(std::string name) {
    PrimFunc f;
    f.name = std::move(name);
    if (r_.chance(0.5)) sym_ = makeVar(r_.pick<std::string>({"n", "m", "batch", "n"}));
    int inputs = static_cast<int>(r_.uniform(1, 3));
    for (int k = 0; k <= inputs; ++k) {
      bool first = k == 0;
      f.params.push_back(makeBuffer(bufferName(), r_.dtype(), shape(first && sym_ ? 1 : 0)));
    }
    for (int k = r_.uniform(0, 2); k > 0; --k)
      f.allocs.push_back(makeBuffer(bufferName(), r_.dtype(), shape(0), randomScope()));
    PrimScope scope;
    scope.buffers = f.params;
    scope.buffers.insert(scope.buffers.end(), f.allocs.begin(), f.allocs.end());
    if (sym_) scope.index_vars.push_back(sym_);
    f.body = stmts(scope, opts_.max_stmt_depth);
    if (r_.chance(0.3)) f.attrs["tir_noalias"] = true;
    if (r_.chance(0.3)) f.attrs["global_symbol"] = f.name;
    if (r_.chance(opts_.trace_chance)) f.trace = trace();
    return f;
  }

 private:
  std::string bufferName() { return r_.pick<std::string>({"A", "B", "C", "x", "y", "A", "onnx::Gemm_0"}); }
  StorageScope randomScope() { return static_cast<StorageScope>(r_.uniform(0, 2)); }

  PrimExpr extent() {
    if (sym_ && r_.chance(0.25)) return sym_;
    return makeInt(r_.uniform(1, 4));
  }
  // A random shape of rank 0..3; the first `sym_dims` dims are the symbolic variable.
  std::vector<PrimExpr> shape(int sym_dims) {
    std::vector<PrimExpr> dims;
    for (int k = 0; k < sym_dims; ++k) dims.push_back(sym_);
    for (int64_t k = r_.uniform(0, 3 - sym_dims); k > 0; --k) dims.push_back(extent());
    return dims;
  }

  Stmt stmts(const PrimScope& scope, int depth) {
    std::vector<Stmt> out;
    for (int64_t k = r_.uniform(1, 3); k > 0; --k) out.push_back(stmt(scope, depth));
    return makeSeq(std::move(out));
  }

  Stmt stmt(const PrimScope& scope, int depth) {
    if (depth <= 0) return store(scope);
    switch (r_.uniform(0, 5)) {
      case 0:
      case 1: return loop(scope, depth);
      case 2:
      case 3: return block(scope, depth);
      case 4: return ifStmt(scope, depth);
      default: return store(scope);
    }
  }

  Stmt loop(const PrimScope& scope, int depth) {
    Var v = makeVar(r_.pick<std::string>({"i", "j", "k", "i", "ax0"}));
    PrimExpr ext = extent();
    auto kind = static_cast<LoopKind>(r_.uniform(0, 4));
    std::string tag = kind == LoopKind::thread_binding ? r_.pick(kThreadTags) : "";
    Attrs attrs;
    if (r_.chance(0.2)) attrs["pragma_auto_unroll_max_step"] = r_.pick<int64_t>({16, 64, 512});
    if (r_.chance(0.2)) attrs["pragma_unroll_explicit"] = r_.chance(0.5);
    PrimScope inner = scope;
    inner.loops.push_back({v, ext});
    inner.index_vars.push_back(v);
    return makeFor(v, ext, stmts(inner, depth - 1), kind, tag, attrs);
  }

  Stmt block(const PrimScope& scope, int depth) {
    PrimScope inner = scope;
    inner.loops.clear();
    inner.index_vars.clear();
    if (sym_) inner.index_vars.push_back(sym_);
    inner.in_block = true;

    std::vector<IterVar> ivs;
    bool has_reduce = false;
    for (int64_t k = r_.uniform(0, 3); k > 0; --k) {
      IterVar iv{makeVar(r_.pick<std::string>({"vi", "vj", "vk", "v"})), nullptr, IterKind::spatial, nullptr};
      iv.kind = static_cast<IterKind>(r_.chance(0.6) ? 0 : r_.uniform(1, 2));
      has_reduce |= iv.kind == IterKind::reduce;
      int64_t e1, e2;
      if (scope.loops.size() >= 2 && r_.chance(0.3) && asConstInt(scope.loops[0].extent, &e1) &&
          asConstInt(scope.loops[1].extent, &e2)) {
        // A fused binding: %a * e2 + %b over the domain e1 * e2.
        iv.extent = makeInt(e1 * e2);
        iv.binding = build::operator+(build::operator*(scope.loops[0].var, e2), scope.loops[1].var);
      } else if (!scope.loops.empty() && r_.chance(0.8)) {
        const Loop& l = r_.pick(scope.loops);
        iv.extent = l.extent;
        iv.binding = l.var;
      } else {
        iv.extent = makeInt(1);
        iv.binding = makeInt(0);
      }
      inner.index_vars.push_back(iv.var);
      ivs.push_back(std::move(iv));
    }

    std::vector<Buffer> allocs;
    if (r_.chance(0.3)) allocs.push_back(makeBuffer(bufferName(), r_.dtype(), shape(0), randomScope()));
    inner.buffers.insert(inner.buffers.end(), allocs.begin(), allocs.end());

    // Nested blocks may bind their iteration variables to this block's.
    for (const IterVar& iv : ivs) inner.loops.push_back({iv.var, iv.extent});

    Stmt body = stmts(inner, depth - 1);
    Stmt init = has_reduce && r_.chance(0.7) ? store(inner) : nullptr;
    // The predicate, like the bindings, is evaluated outside the block: it
    // sees the enclosing loops, not the block's iteration variables or
    // allocations.
    PrimExpr predicate = r_.chance(0.3) ? expr(scope, DType::boolean, 2) : nullptr;

    // Regions name buffers from outside the block, never its own allocations.
    std::vector<BufferRegion> reads, writes;
    for (const Buffer& b : scope.buffers)
      if (r_.chance(0.3)) reads.push_back(region(inner, b));
    writes.push_back(region(inner, r_.pick(scope.buffers)));

    Attrs attrs;
    if (r_.chance(0.2)) attrs["tiling_structure"] = "SSRSRS";
    std::string name =
        r_.pick<std::string>({"compute", "matmul", "T_add", "C"}) + "_" + std::to_string(block_names_.size());
    block_names_.push_back(name);
    return makeBlock(name, std::move(ivs), std::move(reads), std::move(writes), body, init, predicate,
                     std::move(allocs), std::move(attrs));
  }

  BufferRegion region(const PrimScope& scope, const Buffer& b) {
    if (r_.chance(0.4)) return build::whole(b);
    BufferRegion out{b, {}};
    for (const auto& dim : b->shape) {
      PrimExpr min = index(scope, dim);
      out.region.push_back(Range{min, r_.chance(0.5) ? makeInt(1) : makeInt(r_.uniform(1, 2))});
    }
    return out;
  }

  Stmt ifStmt(const PrimScope& scope, int depth) {
    PrimExpr cond = expr(scope, DType::boolean, 2);
    Stmt then_case = stmts(scope, depth - 1);
    Stmt else_case = r_.chance(0.5) ? stmts(scope, depth - 1) : nullptr;
    return makeIf(cond, then_case, else_case);
  }

  Stmt store(const PrimScope& scope) {
    const Buffer& b = r_.pick(scope.buffers);
    return makeStore(b, indices(scope, b), expr(scope, b->dtype, opts_.max_expr_depth));
  }

  std::vector<PrimExpr> indices(const PrimScope& scope, const Buffer& b) {
    std::vector<PrimExpr> out;
    for (const auto& dim : b->shape) out.push_back(index(scope, dim));
    return out;
  }

  // An index into a dimension, always in bounds: a constant below a
  // constant bound (0 for a symbolic one), or `e % dim` for an expression e
  // of the variables in scope.
  PrimExpr index(const PrimScope& scope, const PrimExpr& dim) {
    int64_t bound = 1;
    asConstInt(dim, &bound);
    if (scope.index_vars.empty() || r_.chance(0.25)) return makeInt(r_.uniform(0, bound - 1));
    using namespace build;
    PrimExpr v = r_.pick(scope.index_vars);
    switch (r_.uniform(0, 3)) {
      case 0: v = v + makeInt(-1); break;
      case 1: v = v * 2 + 1; break;
      case 2: v = build::maximum(v, r_.pick(scope.index_vars)); break;
      default: break;
    }
    return v % dim;
  }

  PrimExpr leaf(const PrimScope& scope, DType t) {
    std::vector<Buffer> loadable;
    for (const auto& b : scope.buffers)
      if (b->dtype == t) loadable.push_back(b);
    int64_t choice = r_.uniform(0, 3);
    if (choice == 0 && !loadable.empty()) {
      const Buffer& b = r_.pick(loadable);
      return makeLoad(b, indices(scope, b));
    }
    if (choice == 1 && !scope.index_vars.empty()) {
      PrimExpr v = r_.pick(scope.index_vars);
      return t == DType::i64 ? v : makeCast(t, v);
    }
    if (t == DType::boolean) return makeBool(r_.chance(0.5));
    return randomLiteral(r_, t);
  }

  PrimExpr expr(const PrimScope& scope, DType t, int depth) {
    if (depth <= 0 || r_.chance(0.25)) return leaf(scope, t);
    auto sub = [&](DType st) { return expr(scope, st, depth - 1); };
    if (t == DType::boolean) {
      switch (r_.uniform(0, 4)) {
        case 0: {
          DType operand = r_.nonBoolDType();
          auto op = static_cast<BinaryOp>(r_.uniform(int(BinaryOp::EQ), int(BinaryOp::GE)));
          return makeBinary(op, sub(operand), sub(operand));
        }
        case 1: return makeBinary(r_.chance(0.5) ? BinaryOp::And : BinaryOp::Or, sub(t), sub(t));
        case 2: return makeUnary(UnaryOp::Not, sub(t));
        case 3: {
          DType f = r_.pick<DType>({DType::f32, DType::f16, DType::bf16});
          return makeCall(r_.chance(0.5) ? "isnan" : "isinf", {sub(f)});
        }
        default: return makeSelect(sub(DType::boolean), sub(t), sub(t));
      }
    }
    switch (r_.uniform(0, 5)) {
      case 0: {
        auto op = static_cast<BinaryOp>(r_.uniform(int(BinaryOp::Add), int(BinaryOp::Max)));
        if (isInt(t) && (op == BinaryOp::Div || op == BinaryOp::Mod))
          return makeBinary(op, sub(t), makeInt(r_.uniform(1, 7), t));
        return makeBinary(op, sub(t), sub(t));
      }
      case 1: return makeUnary(UnaryOp::Neg, sub(t));
      case 2: return makeSelect(sub(DType::boolean), sub(t), sub(t));
      case 3: return makeCast(t, sub(r_.dtype()));
      case 4: return intrinsic(t, sub);
      default: return makeBinary(r_.chance(0.5) ? BinaryOp::Min : BinaryOp::Max, sub(t), sub(t));
    }
  }

  template <class Sub>
  PrimExpr intrinsic(DType t, Sub&& sub) {
    std::vector<IntrinsicInfo> candidates;
    for (const auto& info : allIntrinsics())
      if (info.result == IntrinsicResult::SameAsArg && intrinsicAccepts(info, t)) candidates.push_back(info);
    const IntrinsicInfo& info = r_.pick(candidates);
    std::vector<PrimExpr> args;
    for (int k = 0; k < info.arity; ++k) args.push_back(sub(t));
    return makeCall(std::string(info.name), std::move(args));
  }

  // A plausible schedule trace over this function's blocks.
  Trace trace() {
    Trace t;
    int next = 0;
    auto fresh = [&](const char* prefix) { return prefix + std::to_string(next++); };
    auto inst = [&](std::string name, std::vector<AttrValue> inputs, Attrs attrs,
                    std::vector<std::string> outputs, std::optional<AttrValue> decision = std::nullopt) {
      t.insts.push_back(TraceInst{std::move(name), std::move(inputs), std::move(attrs), outputs, decision});
      return outputs;
    };
    std::string block_name = block_names_.empty() ? "root" : r_.pick(block_names_);
    std::string b = inst("get_block", {block_name}, {}, {fresh("b")})[0];
    auto loops = inst("get_loops", {TraceRef{b}}, {}, {fresh("l"), fresh("l")});
    int64_t inner = r_.pick<int64_t>({2, 4, 8});
    auto factors = inst("sample_perfect_tile", {TraceRef{loops[1]}}, {{"n", 2}, {"max_innermost_factor", 16}},
                        {fresh("v"), fresh("v")}, AttrValue::ints({r_.uniform(1, 8), inner}));
    auto split =
        inst("split", {TraceRef{loops[1]}, AttrValue::List{TraceRef{factors[0]}, TraceRef{factors[1]}}}, {},
             {fresh("l"), fresh("l")});
    inst(r_.pick<std::string>({"vectorize", "parallel", "unroll"}), {TraceRef{split[1]}}, {}, {});
    if (r_.chance(0.5)) {
      auto c = inst("sample_categorical", {AttrValue::ints({0, 16, 64}), AttrValue::List{0.25, 0.5, 0.25}},
                    {}, {fresh("v")}, AttrValue(r_.uniform(0, 2)));
      inst("annotate", {TraceRef{b}},
           {{"ann_key", "meta_schedule.unroll_explicit"}, {"ann_val", TraceRef{c[0]}}}, {});
    }
    if (r_.chance(0.3)) inst("bind", {TraceRef{loops[0]}, r_.pick(kThreadTags)}, {}, {});
    return t;
  }

  Random& r_;
  const RandomIrOptions& opts_;
  Var sym_;  // the function's symbolic dimension, if any
  std::vector<std::string> block_names_;
};

// ---------------------------------------------------------------------------
// Graph functions

const std::vector<std::string> kUnaryOps = {"relu", "exp", "negative", "sigmoid", "tanh"};
const std::vector<std::string> kBinaryOps = {"add", "subtract", "multiply", "maximum"};

class GraphGen {
 public:
  explicit GraphGen(Random& r) : r_(r) {}

  // A small sub-function (fused group) over constant shapes.
  GraphFunc subFunction(std::string name) {
    GraphFunc f;
    f.name = std::move(name);
    vars_.clear();
    for (int64_t k = r_.uniform(1, 2); k > 0; --k)
      f.params.push_back(makeGraphVar(r_.pick<std::string>({"p", "q", "p"}), randomTensorType(false)));
    BindingBlock block;
    GraphVar last = f.params[0];
    for (int64_t k = r_.uniform(1, 2); k > 0; --k) last = bind(block, opBinding(last));
    f.blocks.push_back(std::move(block));
    f.ret = {last};
    f.ret_type = last->type;
    f.attrs["primitive"] = true;
    if (r_.chance(0.3)) f.attrs["codegen"] = "cublas";
    return f;
  }

  // @main: calls each prim func and sub-function once, plus one binding of
  // each other value kind (with some chance), spread over several blocks.
  GraphFunc main(const std::vector<const PrimFunc*>& prims, const std::vector<const GraphFunc*>& subs) {
    GraphFunc f;
    f.name = "main";
    vars_.clear();
    std::vector<GraphValue> calls;
    std::vector<Type> call_types;
    for (const PrimFunc* p : prims) {
      GraphValue v = graphValue(ValueKind::CallTir, p->name);
      for (size_t k = 0; k + 1 < p->params.size(); ++k) v.args.push_back(param(f, bufferType(p->params[k])));
      calls.push_back(std::move(v));
      call_types.push_back(bufferType(p->params.back()));
    }
    for (const GraphFunc* s : subs) {
      GraphValue v = graphValue(ValueKind::CallGraph, s->name);
      for (const auto& p : s->params) v.args.push_back(param(f, p->type));
      calls.push_back(std::move(v));
      call_types.push_back(s->ret_type);
    }
    if (f.params.empty() || r_.chance(0.5)) param(f, randomTensorType(true));
    for (const auto& p : f.params) vars_.push_back(p);

    int nblocks = static_cast<int>(r_.uniform(1, 3));
    std::vector<BindingBlock> blocks(nblocks);
    for (auto& b : blocks) b.dataflow = r_.chance(0.6);
    // Blocks fill in order, so a binding may use anything bound before it.
    int current = 0;
    auto someBlock = [&]() -> BindingBlock& {
      if (current + 1 < nblocks && r_.chance(0.4)) ++current;
      return blocks[current];
    };
    for (size_t k = 0; k < calls.size(); ++k) {
      calls[k].attrs = r_.chance(0.2) ? Attrs{{"tag", "tir"}} : Attrs{};
      bind(someBlock(), std::move(calls[k]), call_types[k]);
    }
    for (int kind = 0; kind < 6; ++kind)
      if (r_.chance(0.7)) bindOther(someBlock(), kind);
    for (auto& b : blocks)
      if (!b.bindings.empty()) f.blocks.push_back(std::move(b));

    if (r_.chance(0.3) && vars_.size() >= 2) {
      f.ret_is_tuple = true;
      f.ret = {r_.pick(vars_), r_.pick(vars_)};
      f.ret_type = Type::tuple({f.ret[0]->type, f.ret[1]->type});
    } else {
      f.ret = {vars_.back()};
      f.ret_type = vars_.back()->type;
    }
    if (r_.chance(0.5)) f.attrs["entry"] = true;
    return f;
  }

  std::vector<std::string> weights;  // weight tensors named by constants

 private:
  GraphVar param(GraphFunc& f, Type t) {
    f.params.push_back(
        makeGraphVar(r_.pick<std::string>({"x", "w", "inp", "x", "onnx::input"}), std::move(t)));
    return f.params.back();
  }

  // A prim func buffer's type, with prim symbolic dims replaced by @main's.
  Type bufferType(const Buffer& b) {
    std::vector<PrimExpr> dims;
    for (const auto& d : b->shape) {
      if (const auto* v = d->as<VarNode>()) {
        auto [it, fresh] = sym_.try_emplace(v, nullptr);
        if (fresh) main_syms_.push_back(it->second = makeVar(v->name));
        dims.push_back(it->second);
      } else {
        dims.push_back(d);
      }
    }
    return Type::tensor(b->dtype, std::move(dims));
  }

  Type randomTensorType(bool allow_sym) {
    std::vector<PrimExpr> dims;
    for (int64_t k = r_.uniform(0, 2); k > 0; --k) {
      if (allow_sym && !main_syms_.empty() && r_.chance(0.3))
        dims.push_back(main_syms_.front());
      else
        dims.push_back(makeInt(r_.uniform(1, 3)));
    }
    return Type::tensor(r_.dtype(), std::move(dims));
  }

  std::vector<GraphVar> tensorVars() const {
    std::vector<GraphVar> out;
    for (const auto& v : vars_)
      if (v->type.isTensor()) out.push_back(v);
    return out;
  }

  GraphVar bind(BindingBlock& block, GraphValue value, Type type) {
    GraphVar v = makeGraphVar(r_.pick<std::string>({"0", "1", "h", "y", "lv", "h", "t.1"}), std::move(type));
    block.bindings.push_back({v, std::move(value)});
    vars_.push_back(v);
    return v;
  }
  GraphVar bind(BindingBlock& block, std::pair<GraphValue, Type> vt) {
    return bind(block, std::move(vt.first), std::move(vt.second));
  }

  // An elementwise op on `a` (unary, or binary with itself).
  std::pair<GraphValue, Type> opBinding(const GraphVar& a) {
    GraphValue v = graphValue(ValueKind::Op);
    if (r_.chance(0.5)) {
      v.callee = r_.pick(kUnaryOps);
      v.args = {a};
    } else {
      v.callee = r_.pick(kBinaryOps);
      v.args = {a, a};
    }
    return {std::move(v), a->type};
  }

  // Attributes of every AttrValue kind.
  Attrs randomAttrs(bool with_trace_ref) {
    Attrs a;
    if (r_.chance(0.5)) a["axis"] = r_.uniform(-3, 3);
    if (r_.chance(0.5)) a["keepdims"] = r_.chance(0.5);
    if (r_.chance(0.5)) a["alpha"] = randomFloat(r_, DType::f32);
    if (r_.chance(0.5)) a["mode"] = r_.pick<std::string>({"constant", "with \"quote\"\n", ""});
    if (r_.chance(0.5))
      a["pads"] = AttrValue::List{AttrValue::ints({0, 1}), AttrValue::ints({}), AttrValue(2.5)};
    if (r_.chance(0.5)) {
      PrimExpr e = main_syms_.empty() ? makeInt(r_.uniform(-5, 5), DType::i32)
                                      : build::operator*(PrimExpr(main_syms_.front()), 4);
      a["dim"] = AttrValue(e);
    }
    if (with_trace_ref && r_.chance(0.3)) a["ref"] = TraceRef{"v0"};
    return a;
  }

  void bindOther(BindingBlock& block, int kind) {
    std::vector<GraphVar> tensors = tensorVars();
    switch (kind) {
      case 0: {  // alias
        const GraphVar& a = r_.pick(vars_);
        bind(block, graphValue(ValueKind::Alias, "", {a}), a->type);
        break;
      }
      case 1: {  // weight constant
        GraphValue v = graphValue(ValueKind::Const);
        v.weight = "layer" + std::to_string(weights.size()) + ".weight";
        weights.push_back(v.weight);
        bind(block, std::move(v), randomTensorType(false));
        break;
      }
      case 2: {  // inline constant
        Type t = randomTensorType(false);
        int64_t count = 1;
        for (const auto& d : t.shape) count *= d->as<IntImmNode>()->value;
        GraphValue v = graphValue(ValueKind::Const);
        v.is_inline = true;
        for (int64_t k = 0; k < count; ++k) appendElement(r_, t.dtype, v.data);
        bind(block, std::move(v), std::move(t));
        break;
      }
      case 3: {  // tuple, then an item of it
        GraphValue v = graphValue(ValueKind::Tuple);
        std::vector<Type> fields;
        for (int64_t k = r_.uniform(0, 3); k > 0; --k) {
          v.args.push_back(r_.pick(vars_));
          fields.push_back(v.args.back()->type);
        }
        GraphVar tuple = bind(block, std::move(v), Type::tuple(fields));
        if (!fields.empty()) {
          GraphValue get = graphValue(ValueKind::TupleGet, "", {tuple});
          get.index = r_.uniform(0, static_cast<int64_t>(fields.size()) - 1);
          bind(block, std::move(get), fields[get.index]);
        }
        break;
      }
      case 4: {  // op with attributes
        auto [v, t] = opBinding(r_.pick(tensors));
        v.attrs = randomAttrs(false);
        bind(block, std::move(v), std::move(t));
        break;
      }
      case 5: {  // library kernel
        GraphValue v =
            graphValue(ValueKind::CallExtern, r_.pick<std::string>({"blas.dense", "cublas.matmul"}));
        v.args = {r_.pick(tensors), r_.pick(vars_)};
        v.attrs = randomAttrs(true);
        Type t = randomTensorType(true);
        if (!main_syms_.empty() && r_.chance(0.5))  // a dimension that is a symbolic expression
          t.shape.push_back(build::operator*(PrimExpr(main_syms_.front()), 4));
        bind(block, std::move(v), std::move(t));
        break;
      }
    }
  }

  Random& r_;
  std::map<const VarNode*, Var> sym_;  // prim symbolic var -> @main's (lookup only)
  std::vector<Var> main_syms_;         // @main's symbolic vars, in order made
  std::vector<GraphVar> vars_;         // in scope, in binding order
};

}  // namespace

GraphValue graphValue(ValueKind kind, std::string callee, std::vector<GraphVar> args) {
  GraphValue v;
  v.kind = kind;
  v.callee = std::move(callee);
  v.args = std::move(args);
  return v;
}

Module randomModule(uint64_t seed, const RandomIrOptions& opts) {
  Random r(seed);
  Module m;
  std::vector<PrimFunc> prims;
  for (int64_t k = r.uniform(1, std::max(1, opts.max_prim_funcs)); k > 0; --k)
    prims.push_back(PrimGen(r, opts).make("prim_" + std::to_string(prims.size())));
  GraphGen graphs(r);
  std::vector<GraphFunc> subs;
  for (int64_t k = r.uniform(0, opts.max_sub_graphs); k > 0; --k)
    subs.push_back(graphs.subFunction("fused_" + std::to_string(subs.size())));

  std::vector<const PrimFunc*> called_prims;
  for (const auto& p : prims)
    if (r.chance(0.8)) called_prims.push_back(&p);
  std::vector<const GraphFunc*> called_subs;
  for (const auto& s : subs) called_subs.push_back(&s);
  GraphFunc main = graphs.main(called_prims, called_subs);

  if (!graphs.weights.empty() || r.chance(0.3)) {
    m.weight_files.push_back("model.safetensors");
    if (r.chance(0.3)) m.weight_files.push_back("extra weights/more.safetensors");
  }
  m.functions.push_back(std::move(main));
  for (auto& s : subs) m.functions.push_back(std::move(s));
  for (auto& p : prims) m.functions.push_back(std::move(p));
  return m;
}

}  // namespace mlcc::test
