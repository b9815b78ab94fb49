// Feature extraction for the cost model (features.h). One walk over the
// prim func keeps the enclosing loops and the bindings of the enclosing
// blocks' iteration variables; at each store it describes the store's loop
// nest, its arithmetic and its memory accesses (the store and every load,
// index loads included). Index expressions are analysed two ways: a linear
// coefficient of the innermost loop variable (the stride of the access in
// elements), and interval arithmetic over the loops below a level (the
// region an access touches while those loops run, hence the footprint of
// each loop level in cache lines). Everything is computed in doubles from
// the IR as it is: nothing is simplified, nothing throws, symbolic extents
// count as 1 and anything the analysis does not understand is "strided" or
// "the whole dimension".
#include "mlcc/tune/features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "mlcc/ir/summary.h"

namespace mlcc::tune {

namespace {

using namespace ir;

// Footprints are reported for this many loop levels, from the inside out.
constexpr int kLevels = 6;
// Reuse (operations per byte) for this many innermost levels.
constexpr int kReuseLevels = 3;
constexpr double kCacheLineBytes = 64;
constexpr double kHuge = 1e30;
// Deeper expressions or statements than this are not analysed (treated as
// unknown): fuzzed IR may nest arbitrarily.
constexpr int kMaxDepth = 256;
// Expression nodes visited per store, at most (bindings are followed
// without memoization: blocks nested in blocks whose bindings use the outer
// block's variables twice would otherwise take exponential time).
constexpr int64_t kStoreBudget = 1 << 20;

// Per-store features. `count` features are summed (or maxed) raw and then
// reported as log2(1 + x); `value` features are reported as they are.
enum class Scale { count, value };

// clang-format off
#define MLCC_STORE_FEATURES(X)                                                                     \
  /* arithmetic of the stored value, times the store's trip count */                               \
  X(float_add, count) X(float_mul, count) X(float_div, count) X(float_math, count)                 \
  X(int_ops, count) X(trips, count)                                                                \
  /* the loop nest */                                                                              \
  X(loops, value) X(parallel_extent, count) X(vectorized_extent, count) X(unrolled_extent, count)  \
  X(serial_extent, count) X(inner_extent, count) X(inner_serial, value) X(inner_parallel, value)   \
  X(inner_vectorized, value) X(inner_unrolled, value)                                              \
  X(outer_extent, count) X(outer_serial, value) X(outer_parallel, value) X(outer_vectorized, value) \
  X(outer_unrolled, value) X(vector_lanes_used, value)                                             \
  X(vector_tail, value) X(auto_unroll, count)                                                      \
  /* the parallel split over the cores */                                                          \
  X(parallel_per_core, count) X(parallel_idle, value) X(parallel_work, count)                      \
  /* memory: strides of the innermost loop variable, bytes, footprints per level */                \
  X(loads, value) X(load_unit, value) X(load_none, value) X(load_strided, value)                   \
  X(store_unit, value) X(store_none, value) X(store_strided, value) X(local_accesses, value)        \
  X(bytes_accessed, count) X(bytes_touched, count)                                                 \
  X(footprint_1, count) X(footprint_2, count) X(footprint_3, count) X(footprint_4, count)          \
  X(footprint_5, count) X(footprint_6, count)                                                      \
  X(fits_l1, value) X(fits_l2, value) X(fits_l3, value)                                            \
  X(traffic_l1, count) X(traffic_l2, count) X(traffic_l3, count)                                   \
  X(reuse_1, count) X(reuse_2, count) X(reuse_3, count) X(intensity, count)                        \
  /* reuse across a loop the access does not depend on: the accumulator tile of the store */      \
  X(acc_tile_bytes, count) X(acc_in_registers, value) X(acc_reuse, count)                          \
  X(load_reuse_bytes, count) X(load_reuse_l1, value) X(load_no_reuse, value)                       \
  /* the kind of store */                                                                          \
  X(init, value) X(accumulate, value)
// clang-format on

enum StoreFeature : int {
#define MLCC_ENUM(name, scale) k_##name,
  MLCC_STORE_FEATURES(MLCC_ENUM)
#undef MLCC_ENUM
      kStoreFeatures
};

constexpr std::array<Scale, kStoreFeatures> kScales = {
#define MLCC_SCALE(name, scale) Scale::scale,
    MLCC_STORE_FEATURES(MLCC_SCALE)
#undef MLCC_SCALE
};

const char* const kStoreNames[kStoreFeatures] = {
#define MLCC_NAME(name, scale) #name,
    MLCC_STORE_FEATURES(MLCC_NAME)
#undef MLCC_NAME
};

// Features of the whole function, after the aggregated ones.
const char* const kFuncNames[] = {"func.flops", "func.blocks", "func.stores", "func.loops"};
constexpr int kFuncFeatures = sizeof(kFuncNames) / sizeof(kFuncNames[0]);

using StoreVector = std::array<double, kStoreFeatures>;

double log2p(double x) { return std::log2(1.0 + std::clamp(x, 0.0, kHuge)); }
double finite(double x) { return std::isfinite(x) ? x : (std::isnan(x) ? 0.0 : std::copysign(kHuge, x)); }

// An integer interval; unknown bounds are infinite.
struct Interval {
  double lo = 0, hi = 0;
  static Interval unknown() {
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  bool known() const { return std::isfinite(lo) && std::isfinite(hi); }
  bool constant() const { return known() && lo == hi; }
};

Interval join(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

struct Loop {
  const VarNode* var;
  double extent;  // >= 0; symbolic: 1
  LoopKind kind;
  double auto_unroll;  // pragma_auto_unroll_max_step, 0 when absent
};

// One buffer access: the store or a load.
struct Access {
  const BufferNode* buffer;
  const std::vector<PrimExpr>* indices;
};

double constExtent(const PrimExpr& e) {
  int64_t v = 1;
  if (!e || !asConstInt(e, &v)) return 1;
  return std::max<double>(0, static_cast<double>(v));
}

double autoUnrollOf(const Attrs& attrs) {
  auto it = attrs.find("pragma_auto_unroll_max_step");
  if (it == attrs.end()) return 0;
  if (it->second.isInt()) return std::max<double>(0, static_cast<double>(it->second.asInt()));
  if (it->second.isExpr()) return constExtent(it->second.asExpr());
  return 0;
}

struct Ops {
  double add = 0, mul = 0, div = 0, math = 0, int_ops = 0;
  double total() const { return add + mul + div + math + int_ops; }
};

class Extractor {
 public:
  explicit Extractor(const target::CpuInfo& cpu) : cpu_(cpu) {
    cores_ = std::max(1, cpu.cores);
    l1_ = cpu.l1d_cache_bytes > 0 ? static_cast<double>(cpu.l1d_cache_bytes) : 32.0 * 1024;
    l2_ = cpu.l2_cache_bytes > 0 ? static_cast<double>(cpu.l2_cache_bytes) : 1024.0 * 1024;
    l3_ = cpu.l3_cache_bytes > 0 ? static_cast<double>(cpu.l3_cache_bytes) : 8.0 * 1024 * 1024;
  }

  void walk(const Stmt& s, int depth) {
    if (!s || depth > kMaxDepth) return;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        ++num_loops_;
        if (!f->loop_var) {
          walk(f->body, depth + 1);
          return;
        }
        const VarNode* v = f->loop_var.get();
        std::optional<size_t> shadowed;  // (a loop of the same variable around it: invalid, but walked)
        if (auto it = loop_pos_.find(v); it != loop_pos_.end()) shadowed = it->second;
        loop_pos_[v] = loops_.size();
        loops_.push_back({v, constExtent(f->extent), f->loop_kind, autoUnrollOf(f->attrs)});
        walk(f->body, depth + 1);
        loops_.pop_back();
        if (shadowed)
          loop_pos_[v] = *shadowed;
        else
          loop_pos_.erase(v);
        return;
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        ++num_blocks_;
        for (const auto& iv : b->iter_vars)
          if (iv.var && iv.binding) bindings_[iv.var.get()] = iv.binding.get();
        blocks_.push_back(b);
        const bool outer_init = in_init_;
        in_init_ = true;
        walk(b->init, depth + 1);
        in_init_ = false;
        walk(b->body, depth + 1);
        in_init_ = outer_init;
        blocks_.pop_back();
        return;
      }
      case StmtKind::Store: visitStore(*s->as<StoreNode>()); return;
      case StmtKind::Seq:
        for (const auto& c : s->as<SeqNode>()->stmts) walk(c, depth + 1);
        return;
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        walk(i->then_case, depth + 1);
        walk(i->else_case, depth + 1);
        return;
      }
    }
  }

  std::vector<float> finish(const PrimFunc& f) const {
    std::vector<float> out;
    out.reserve(2 * kStoreFeatures + kFuncFeatures);
    for (int i = 0; i < kStoreFeatures; ++i) {
      double sum = 0, max = 0;
      for (const auto& s : stores_) {
        sum += s[i];
        max = std::max(max, s[i]);
      }
      if (kScales[i] == Scale::count) {
        sum = log2p(sum);
        max = log2p(max);
      }
      out.push_back(static_cast<float>(finite(sum)));
      out.push_back(static_cast<float>(finite(max)));
    }
    out.push_back(static_cast<float>(log2p(static_cast<double>(primFuncFlops(f)))));
    out.push_back(static_cast<float>(num_blocks_));
    out.push_back(static_cast<float>(stores_.size()));
    out.push_back(static_cast<float>(num_loops_));
    return out;
  }

 private:
  // --- expressions ---------------------------------------------------------

  // Counts one expression node against the store's budget.
  bool spend() const { return --budget_ >= 0; }

  const ExprNode* bindingOf(const VarNode* v) const {
    auto it = bindings_.find(v);
    return it == bindings_.end() ? nullptr : it->second;
  }

  // The coefficient of loop variable `v` in `e` when `e` is linear in it
  // (block variables through their bindings), nullopt when it is not.
  std::optional<double> coef(const ExprNode* e, const VarNode* v, int depth) const {
    if (!e) return 0.0;
    if (depth > kMaxDepth || !spend()) return std::nullopt;
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm: return 0.0;
      case ExprKind::Var: {
        const auto* var = e->as<VarNode>();
        if (var == v) return 1.0;
        if (const ExprNode* b = bindingOf(var)) return coef(b, v, depth + 1);
        return 0.0;
      }
      case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        auto ca = coef(b->a.get(), v, depth + 1);
        auto cb = coef(b->b.get(), v, depth + 1);
        int64_t c = 0;
        switch (b->op) {
          case BinaryOp::Add:
            if (ca && cb) return *ca + *cb;
            return std::nullopt;
          case BinaryOp::Sub:
            if (ca && cb) return *ca - *cb;
            return std::nullopt;
          case BinaryOp::Mul:
            if (ca && cb && *ca == 0 && *cb == 0) return 0.0;
            if (cb && b->a && asConstInt(b->a, &c)) return static_cast<double>(c) * *cb;
            if (ca && b->b && asConstInt(b->b, &c)) return *ca * static_cast<double>(c);
            return std::nullopt;
          case BinaryOp::Div:
            if (!ca || !cb) return std::nullopt;
            if (*ca == 0 && *cb == 0) return 0.0;
            if (*cb != 0 || !b->b || !asConstInt(b->b, &c) || c == 0) return std::nullopt;
            if (std::fmod(*ca, static_cast<double>(c)) == 0) return *ca / static_cast<double>(c);
            // x / 8 with x stepping by 1: mostly the same element.
            if (std::abs(*ca) < std::abs(static_cast<double>(c))) return 0.0;
            return std::nullopt;
          case BinaryOp::Mod:
            if (!ca || !cb) return std::nullopt;
            if (*ca == 0 && *cb == 0) return 0.0;
            if (*cb != 0 || !b->b || !asConstInt(b->b, &c) || c == 0) return std::nullopt;
            if (std::fmod(*ca, static_cast<double>(c)) == 0) return 0.0;
            // x % 8 with x stepping by 1: mostly steps by 1.
            if (std::abs(*ca) < std::abs(static_cast<double>(c))) return *ca;
            return std::nullopt;
          default:
            if (ca && cb && *ca == 0 && *cb == 0) return 0.0;
            if (ca && cb && *ca == *cb && (b->op == BinaryOp::Min || b->op == BinaryOp::Max)) return *ca;
            return std::nullopt;
        }
      }
      case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        auto c = coef(u->a.get(), v, depth + 1);
        if (!c) return std::nullopt;
        return u->op == UnaryOp::Neg ? -*c : (*c == 0 ? 0.0 : std::optional<double>{});
      }
      case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        auto cc = coef(s->cond.get(), v, depth + 1);
        auto ct = coef(s->true_value.get(), v, depth + 1);
        auto cf = coef(s->false_value.get(), v, depth + 1);
        if (cc && ct && cf && *cc == 0 && *ct == *cf) return *ct;
        return std::nullopt;
      }
      case ExprKind::Cast: return coef(e->as<CastNode>()->value.get(), v, depth + 1);
      case ExprKind::Load: {
        for (const auto& i : e->as<LoadNode>()->indices) {
          auto c = coef(i.get(), v, depth + 1);
          if (!c || *c != 0) return std::nullopt;
        }
        return 0.0;
      }
      case ExprKind::Call: {
        for (const auto& a : e->as<CallNode>()->args) {
          auto c = coef(a.get(), v, depth + 1);
          if (!c || *c != 0) return std::nullopt;
        }
        return 0.0;
      }
    }
    return std::nullopt;
  }

  // The values `e` takes while the loops at positions >= first_varying run
  // (the outer loops at 0; shape variables at 0).
  Interval range(const ExprNode* e, size_t first_varying, int depth) const {
    if (!e || depth > kMaxDepth || !spend()) return Interval::unknown();
    switch (e->kind) {
      case ExprKind::IntImm: {
        double v = static_cast<double>(e->as<IntImmNode>()->value);
        return {v, v};
      }
      case ExprKind::FloatImm: {
        double v = e->as<FloatImmNode>()->value;
        if (!std::isfinite(v)) return Interval::unknown();
        return {v, v};
      }
      case ExprKind::Var: {
        const auto* var = e->as<VarNode>();
        if (auto it = loop_pos_.find(var); it != loop_pos_.end()) {
          if (it->second < first_varying) return {0, 0};
          return {0, std::max(0.0, loops_[it->second].extent - 1)};
        }
        if (const ExprNode* b = bindingOf(var)) return range(b, first_varying, depth + 1);
        return {0, 0};
      }
      case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        if (isComparison(b->op) || b->op == BinaryOp::And || b->op == BinaryOp::Or) return {0, 1};
        Interval x = range(b->a.get(), first_varying, depth + 1);
        Interval y = range(b->b.get(), first_varying, depth + 1);
        switch (b->op) {
          case BinaryOp::Add:
            if (!x.known() || !y.known()) return Interval::unknown();
            return {x.lo + y.lo, x.hi + y.hi};
          case BinaryOp::Sub:
            if (!x.known() || !y.known()) return Interval::unknown();
            return {x.lo - y.hi, x.hi - y.lo};
          case BinaryOp::Mul: {
            if ((x.constant() && x.lo == 0) || (y.constant() && y.lo == 0)) return {0, 0};
            if (!x.known() || !y.known()) return Interval::unknown();
            double p[] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
            return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
          }
          case BinaryOp::Div: {
            if (!y.constant() || y.lo == 0 || !x.known()) return Interval::unknown();
            double a = std::floor(x.lo / y.lo), c = std::floor(x.hi / y.lo);
            return {std::min(a, c), std::max(a, c)};
          }
          case BinaryOp::Mod: {
            if (!y.constant() || y.lo == 0) return Interval::unknown();
            const double m = y.lo;
            const Interval whole = m > 0 ? Interval{0, m - 1} : Interval{m + 1, 0};
            if (!x.known() || std::floor(x.lo / m) != std::floor(x.hi / m)) return whole;
            const double base = m * std::floor(x.lo / m);
            return {x.lo - base, x.hi - base};
          }
          case BinaryOp::Min: return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
          case BinaryOp::Max: return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
          default: return Interval::unknown();
        }
      }
      case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        if (u->op == UnaryOp::Not) return {0, 1};
        Interval x = range(u->a.get(), first_varying, depth + 1);
        return {-x.hi, -x.lo};
      }
      case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        return join(range(s->true_value.get(), first_varying, depth + 1),
                    range(s->false_value.get(), first_varying, depth + 1));
      }
      case ExprKind::Cast: {
        if (e->dtype == DType::boolean) return {0, 1};
        return range(e->as<CastNode>()->value.get(), first_varying, depth + 1);
      }
      case ExprKind::Load:
      case ExprKind::Call: return Interval::unknown();
    }
    return Interval::unknown();
  }

  // Arithmetic of a stored value (not the index arithmetic of its loads),
  // and every load in it (index loads included).
  void scanValue(const ExprNode* e, Ops& ops, std::vector<Access>& loads, int depth) const {
    if (!e || depth > kMaxDepth || !spend()) return;
    switch (e->kind) {
      case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        const bool fl = b->a && isFloat(b->a->dtype);
        switch (b->op) {
          case BinaryOp::Add:
          case BinaryOp::Sub: (fl ? ops.add : ops.int_ops) += 1; break;
          case BinaryOp::Mul: (fl ? ops.mul : ops.int_ops) += 1; break;
          case BinaryOp::Div:
          case BinaryOp::Mod: (fl ? ops.div : ops.int_ops) += 1; break;
          case BinaryOp::And:
          case BinaryOp::Or: break;
          default: (fl ? ops.math : ops.int_ops) += 1; break;
        }
        scanValue(b->a.get(), ops, loads, depth + 1);
        scanValue(b->b.get(), ops, loads, depth + 1);
        return;
      }
      case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        if (u->op == UnaryOp::Neg) (isFloat(e->dtype) ? ops.add : ops.int_ops) += 1;
        scanValue(u->a.get(), ops, loads, depth + 1);
        return;
      }
      case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        (isFloat(e->dtype) ? ops.math : ops.int_ops) += 1;
        scanValue(s->cond.get(), ops, loads, depth + 1);
        scanValue(s->true_value.get(), ops, loads, depth + 1);
        scanValue(s->false_value.get(), ops, loads, depth + 1);
        return;
      }
      case ExprKind::Cast: scanValue(e->as<CastNode>()->value.get(), ops, loads, depth + 1); return;
      case ExprKind::Call: {
        const auto* c = e->as<CallNode>();
        (isFloat(e->dtype) ? ops.math : ops.int_ops) += 1;
        for (const auto& a : c->args) scanValue(a.get(), ops, loads, depth + 1);
        return;
      }
      case ExprKind::Load: {
        const auto* l = e->as<LoadNode>();
        if (l->buffer) loads.push_back({l->buffer.get(), &l->indices});
        Ops ignored;  // index arithmetic is not counted
        for (const auto& i : l->indices) scanValue(i.get(), ignored, loads, depth + 1);
        return;
      }
      default: return;
    }
  }

  // --- accesses ----------------------------------------------------------

  enum class Stride { none, unit, strided };

  Stride strideOf(const Access& a) const {
    if (loops_.empty()) return Stride::none;
    const VarNode* v = loops_.back().var;
    const auto& shape = a.buffer->shape;
    const auto& idx = *a.indices;
    double flat = 0, row = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      auto c = coef(idx[d].get(), v, 0);
      if (!c) return Stride::strided;
      flat += *c * row;
      row *= d < shape.size() ? std::max(1.0, constExtent(shape[d])) : 1.0;
    }
    if (flat == 0) return Stride::none;
    return std::abs(flat) == 1 ? Stride::unit : Stride::strided;
  }

  // The boxes the accesses touch while the loops at positions >= first
  // run, one per buffer (accesses of one buffer joined).
  using Boxes = std::vector<std::pair<const BufferNode*, std::vector<Interval>>>;
  Boxes boxes(const std::vector<Access>& accesses, size_t first) const {
    Boxes out;
    for (const auto& a : accesses) {
      std::vector<Interval> box;
      for (const auto& i : *a.indices) box.push_back(range(i.get(), first, 0));
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == a.buffer; });
      if (it == out.end()) {
        out.emplace_back(a.buffer, std::move(box));
      } else {
        for (size_t d = 0; d < box.size() && d < it->second.size(); ++d)
          it->second[d] = join(it->second[d], box[d]);
      }
    }
    return out;
  }

  // The number of values an interval covers along dimension `d` of `b`,
  // at most the dimension's size when that is constant.
  static double span(const BufferNode* b, size_t d, const Interval& iv) {
    double cap = kHuge;
    if (d < b->shape.size()) {
      int64_t n = 0;
      if (b->shape[d] && asConstInt(b->shape[d], &n)) cap = std::max<double>(1, static_cast<double>(n));
    }
    if (!iv.known()) return cap == kHuge ? 1 : cap;
    return std::clamp(iv.hi - iv.lo + 1, 1.0, cap);
  }

  // Distinct bytes of the boxes, and the bytes of the cache lines they
  // touch (each row of the innermost dimension rounded up to lines).
  static std::pair<double, double> bytesOf(const Boxes& bx) {
    double bytes = 0, lines = 0;
    for (const auto& [buf, box] : bx) {
      const double elem = dtypeBytes(buf->dtype);
      double rows = 1, inner = 1;
      for (size_t d = 0; d < box.size(); ++d) {
        const double s = span(buf, d, box[d]);
        if (d + 1 == box.size())
          inner = s;
        else
          rows = std::min(kHuge, rows * s);
      }
      bytes += std::min(kHuge, rows * inner * elem);
      lines += std::min(kHuge, rows * std::ceil(inner * elem / kCacheLineBytes) * kCacheLineBytes);
    }
    return {std::min(bytes, kHuge), std::min(lines, kHuge)};
  }

  // The loop positions a binding's value depends on (through nested
  // bindings).
  void loopsIn(const ExprNode* e, std::unordered_set<size_t>& out, int depth) const {
    if (!e || depth > kMaxDepth || !spend()) return;
    switch (e->kind) {
      case ExprKind::Var: {
        const auto* var = e->as<VarNode>();
        if (auto it = loop_pos_.find(var); it != loop_pos_.end()) out.insert(it->second);
        if (const ExprNode* b = bindingOf(var)) loopsIn(b, out, depth + 1);
        return;
      }
      case ExprKind::Binary:
        loopsIn(e->as<BinaryNode>()->a.get(), out, depth + 1);
        loopsIn(e->as<BinaryNode>()->b.get(), out, depth + 1);
        return;
      case ExprKind::Unary: loopsIn(e->as<UnaryNode>()->a.get(), out, depth + 1); return;
      case ExprKind::Select:
        loopsIn(e->as<SelectNode>()->cond.get(), out, depth + 1);
        loopsIn(e->as<SelectNode>()->true_value.get(), out, depth + 1);
        loopsIn(e->as<SelectNode>()->false_value.get(), out, depth + 1);
        return;
      case ExprKind::Cast: loopsIn(e->as<CastNode>()->value.get(), out, depth + 1); return;
      case ExprKind::Load:
        for (const auto& i : e->as<LoadNode>()->indices) loopsIn(i.get(), out, depth + 1);
        return;
      case ExprKind::Call:
        for (const auto& a : e->as<CallNode>()->args) loopsIn(a.get(), out, depth + 1);
        return;
      default: return;
    }
  }

  // --- stores ------------------------------------------------------------

  void visitStore(const StoreNode& s) {
    if (!s.buffer) return;
    budget_ = kStoreBudget;
    StoreVector f{};
    const size_t n = loops_.size();

    // The trip count; an init runs once per iteration of the spatial loops.
    std::unordered_set<size_t> reduce_loops;
    if (in_init_ && !blocks_.empty())
      for (const auto& iv : blocks_.back()->iter_vars)
        if (iv.kind == IterKind::reduce && iv.binding) loopsIn(iv.binding.get(), reduce_loops, 0);
    double trips = 1;
    for (size_t i = 0; i < n; ++i)
      if (!reduce_loops.count(i)) trips = std::min(kHuge, trips * loops_[i].extent);

    Ops ops;
    std::vector<Access> loads;
    scanValue(s.value.get(), ops, loads, 0);
    for (const auto& i : s.indices) {
      Ops ignored;
      scanValue(i.get(), ignored, loads, 0);
    }
    f[k_float_add] = ops.add * trips;
    f[k_float_mul] = ops.mul * trips;
    f[k_float_div] = ops.div * trips;
    f[k_float_math] = ops.math * trips;
    f[k_int_ops] = ops.int_ops * trips;
    f[k_trips] = trips;

    // The loop nest (per loop kind: the product of its loops' extents, 0
    // when there are none).
    double par = 1, vec = 1, unr = 1, ser = 1, auto_unroll = 0;
    auto has = [&](LoopKind k) {
      return std::any_of(loops_.begin(), loops_.end(), [&](const Loop& l) { return l.kind == k; });
    };
    for (size_t i = 0; i < n; ++i) {
      const Loop& l = loops_[i];
      switch (l.kind) {
        case LoopKind::parallel:
        case LoopKind::thread_binding: par = std::min(kHuge, par * l.extent); break;
        case LoopKind::vectorized: vec = std::min(kHuge, vec * l.extent); break;
        case LoopKind::unrolled: unr = std::min(kHuge, unr * l.extent); break;
        case LoopKind::serial: ser = std::min(kHuge, ser * l.extent); break;
      }
      auto_unroll = std::max(auto_unroll, l.auto_unroll);
    }
    f[k_loops] = static_cast<double>(n);
    f[k_parallel_extent] = has(LoopKind::parallel) || has(LoopKind::thread_binding) ? par : 0;
    f[k_vectorized_extent] = has(LoopKind::vectorized) ? vec : 0;
    f[k_unrolled_extent] = has(LoopKind::unrolled) ? unr : 0;
    f[k_serial_extent] = has(LoopKind::serial) ? ser : 0;
    f[k_auto_unroll] = auto_unroll;
    if (n > 0) {
      const Loop& inner = loops_.back();
      f[k_inner_extent] = inner.extent;
      f[k_inner_serial] = inner.kind == LoopKind::serial;
      f[k_inner_parallel] = inner.kind == LoopKind::parallel || inner.kind == LoopKind::thread_binding;
      f[k_inner_vectorized] = inner.kind == LoopKind::vectorized;
      f[k_inner_unrolled] = inner.kind == LoopKind::unrolled;
    }
    if (n > 1) {  // the loop around the innermost one
      const Loop& outer = loops_[n - 2];
      f[k_outer_extent] = outer.extent;
      f[k_outer_serial] = outer.kind == LoopKind::serial;
      f[k_outer_parallel] = outer.kind == LoopKind::parallel || outer.kind == LoopKind::thread_binding;
      f[k_outer_vectorized] = outer.kind == LoopKind::vectorized;
      f[k_outer_unrolled] = outer.kind == LoopKind::unrolled;
    }
    if (has(LoopKind::vectorized)) {
      const double lanes = std::max(1.0, cpu_.vector_bits / (8.0 * dtypeBytes(s.buffer->dtype)));
      f[k_vector_lanes_used] = std::min(vec, lanes) / lanes;
      f[k_vector_tail] = std::fmod(vec, lanes) != 0;
    }

    // The parallel split: iterations per core, the share of the cores idle
    // in the last round, the work of one parallel iteration.
    const double cores = cores_;
    const double rounds = std::ceil(std::max(1.0, par) / cores);
    f[k_parallel_per_core] = par / cores;
    f[k_parallel_idle] = 1.0 - std::max(1.0, par) / (rounds * cores);
    f[k_parallel_work] = trips / std::max(1.0, par);

    // Memory accesses.
    std::vector<Access> accesses = loads;
    accesses.push_back({s.buffer.get(), &s.indices});
    f[k_loads] = static_cast<double>(loads.size());
    for (const auto& a : loads) {
      switch (strideOf(a)) {
        case Stride::unit: f[k_load_unit] += 1; break;
        case Stride::none: f[k_load_none] += 1; break;
        case Stride::strided: f[k_load_strided] += 1; break;
      }
    }
    switch (strideOf(accesses.back())) {
      case Stride::unit: f[k_store_unit] = 1; break;
      case Stride::none: f[k_store_none] = 1; break;
      case Stride::strided: f[k_store_strided] = 1; break;
    }
    double accessed = 0;
    for (const auto& a : accesses) {
      if (a.buffer->scope != StorageScope::global) f[k_local_accesses] += 1;
      accessed += dtypeBytes(a.buffer->dtype);
      if (a.buffer == s.buffer.get() && a.indices != &s.indices) f[k_accumulate] = 1;
    }
    f[k_bytes_accessed] = std::min(kHuge, accessed * trips);
    f[k_init] = in_init_;

    // Footprints per level: level k has the k innermost loops running.
    std::vector<double> lines(n + 1), inner_trips(n + 1, 1.0);
    for (size_t k = 0; k <= n; ++k) {
      auto [bytes, line_bytes] = bytesOf(boxes(accesses, n - k));
      lines[k] = line_bytes;
      if (k == n) f[k_bytes_touched] = bytes;
      if (k > 0) inner_trips[k] = std::min(kHuge, inner_trips[k - 1] * loops_[n - k].extent);
    }
    for (int k = 1; k <= kLevels; ++k) f[k_footprint_1 + k - 1] = lines[std::min<size_t>(k, n)];
    const double caches[3] = {l1_, l2_, l3_};
    for (int c = 0; c < 3; ++c) {
      size_t fit = 0;
      while (fit < n && lines[fit + 1] <= caches[c]) ++fit;
      f[k_fits_l1 + c] = static_cast<double>(fit);
      const double outer = inner_trips[fit] > 0 ? trips / inner_trips[fit] : 0;
      f[k_traffic_l1 + c] = std::min(kHuge, lines[fit] * outer);
    }
    const double per_iter = ops.total();
    for (int k = 1; k <= kReuseLevels; ++k) {
      const size_t lv = std::min<size_t>(k, n);
      f[k_reuse_1 + k - 1] = lines[lv] > 0 ? per_iter * inner_trips[lv] / lines[lv] : 0;
    }
    f[k_intensity] = f[k_bytes_touched] > 0 ? per_iter * trips / f[k_bytes_touched] : 0;

    // Reuse: the innermost loop (of extent > 1) an access does not depend
    // on revisits what the loops inside it touched. For the store that is
    // its accumulator tile (registers when small enough); for a load, the
    // distance between reuses is what every access touches in between.
    const double vector_bytes = std::max(16, cpu_.vector_bits / 8);
    const double register_bytes = (cpu_.vector_bits >= 512 ? 32 : 16) * vector_bytes;
    double worst_load_reuse = 0;
    for (size_t a = 0; a < accesses.size(); ++a) {
      std::unordered_set<size_t> deps;
      for (const auto& i : *accesses[a].indices) loopsIn(i.get(), deps, 0);
      std::optional<size_t> r;
      for (size_t p = n; p-- > 0;)
        if (!deps.count(p) && loops_[p].extent > 1) {
          r = p;
          break;
        }
      const bool is_store = a + 1 == accesses.size();
      if (!r) {
        if (!is_store) f[k_load_no_reuse] += 1;
        continue;
      }
      if (is_store) {
        const double tile = bytesOf(boxes({accesses[a]}, *r + 1)).first;
        f[k_acc_tile_bytes] = tile;
        f[k_acc_in_registers] = tile <= register_bytes;
        double reuse = 1;
        for (size_t p = *r + 1; p-- > 0 && !deps.count(p);) reuse = std::min(kHuge, reuse * loops_[p].extent);
        f[k_acc_reuse] = reuse;
      } else {
        const double distance = lines[n - *r - 1];
        worst_load_reuse = std::max(worst_load_reuse, distance);
        if (distance <= l1_) f[k_load_reuse_l1] += 1;
      }
    }
    f[k_load_reuse_bytes] = worst_load_reuse;

    for (double& x : f) x = finite(x);
    stores_.push_back(f);
  }

  const target::CpuInfo& cpu_;
  int cores_ = 1;
  double l1_ = 0, l2_ = 0, l3_ = 0;
  std::vector<Loop> loops_;
  std::unordered_map<const VarNode*, size_t> loop_pos_;
  std::unordered_map<const VarNode*, const ExprNode*> bindings_;
  std::vector<const BlockNode*> blocks_;
  bool in_init_ = false;
  mutable int64_t budget_ = kStoreBudget;
  int64_t num_blocks_ = 0, num_loops_ = 0;
  std::vector<StoreVector> stores_;
};

}  // namespace

const std::vector<std::string>& featureNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int i = 0; i < kStoreFeatures; ++i) {
      n.push_back(std::string("sum.") + kStoreNames[i]);
      n.push_back(std::string("max.") + kStoreNames[i]);
    }
    for (const char* f : kFuncNames) n.push_back(f);
    return n;
  }();
  return names;
}

std::vector<float> extractFeatures(const ir::PrimFunc& f, const target::CpuInfo& cpu) {
  try {
    Extractor x(cpu);
    x.walk(f.body, 0);
    return x.finish(f);
  } catch (...) {
    // Nothing above throws but allocation failure; a vector of zeros
    // keeps the promise of never throwing.
    return std::vector<float>(featureNames().size(), 0.0f);
  }
}

}  // namespace mlcc::tune
