// The linalg op family: matmul (numpy semantics), dense (x · wᵀ) and
// dense_pack (dense with its weight packed in panels of `b` rows, TVM's
// "NK{b}n": wp[N / b, K, b], wp[j / b, k, j % b] = w[j, k]; convert-layout
// makes it from a dense or matmul with a constant weight), and the blocked
// f32 GEMM shared with the convolutions (nn_util.h).
#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>

#include "legalize_util_nn.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/dtype_storage.h"
#include "mlcc/ir/te.h"
#include "mlcc/ops/layout.h"
#include "mlcc/support/checked_math.h"
#include "nn_util.h"
#include "op_families.h"

namespace mlcc::ops {

using ir::DType;
using ir::Tensor;
using ir::Type;

namespace nn {

namespace {

constexpr int kMR = 6;  // rows of the micro-kernel's C tile
constexpr int kNR = 8;  // columns: two 4-float vectors
constexpr int64_t kKC = 256;
constexpr int64_t kMC = 96;
constexpr int64_t kNC = 2048;

// A 4-float vector (GCC/Clang vector extension): SSE on any x86-64, NEON on
// arm64, so the micro-kernel's accumulators stay in registers without
// depending on auto-vectorization.
typedef float v4f __attribute__((vector_size(16), aligned(4)));

inline v4f load4(const float* p) {
  v4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// acc[MR][NR] = A panel (kc x MR, k-major) · B panel (kc x NR, k-major), then
// C[:mr, :nr] = (overwrite ? 0 : C) + acc.
void microKernel(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* __restrict c,
                 int64_t ldc, int mr, int nr, bool overwrite) {
  v4f acc[kMR][2];
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = v4f{0, 0, 0, 0};
  for (int64_t k = 0; k < kc; ++k) {
    v4f b0 = load4(bp + k * kNR), b1 = load4(bp + k * kNR + 4);
    const float* a = ap + k * kMR;
    for (int r = 0; r < kMR; ++r) {
      v4f av = v4f{a[r], a[r], a[r], a[r]};
      acc[r][0] += av * b0;
      acc[r][1] += av * b1;
    }
  }
  float tile[kMR][kNR];
  std::memcpy(tile, acc, sizeof tile);
  for (int r = 0; r < mr; ++r) {
    float* crow = c + r * ldc;
    if (overwrite) {
      for (int j = 0; j < nr; ++j) crow[j] = tile[r][j];
    } else {
      for (int j = 0; j < nr; ++j) crow[j] += tile[r][j];
    }
  }
}

}  // namespace

void sgemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
           int64_t b_rs, int64_t b_cs, float* c, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, 0.0f);
    return;
  }
  std::vector<float> bpack(static_cast<size_t>(kKC * (std::min(N, kNC) + kNR)));
  std::vector<float> apack(static_cast<size_t>(kKC * (kMC + kMR)));
  for (int64_t jc = 0; jc < N; jc += kNC) {
    int64_t nc = std::min(kNC, N - jc);
    for (int64_t pc = 0; pc < K; pc += kKC) {
      int64_t kc = std::min(kKC, K - pc);
      bool overwrite = pc == 0 && !accumulate;
      // Pack B[pc:pc+kc, jc:jc+nc] into kNR-wide panels, zero-padded.
      for (int64_t jr = 0; jr < nc; jr += kNR) {
        float* dst = bpack.data() + (jr / kNR) * kc * kNR;
        int64_t nr = std::min<int64_t>(kNR, nc - jr);
        for (int64_t k = 0; k < kc; ++k) {
          const float* src = b + (pc + k) * b_rs + (jc + jr) * b_cs;
          float* d = dst + k * kNR;
          if (b_cs == 1) {
            for (int64_t j = 0; j < nr; ++j) d[j] = src[j];
          } else {
            for (int64_t j = 0; j < nr; ++j) d[j] = src[j * b_cs];
          }
          for (int64_t j = nr; j < kNR; ++j) d[j] = 0.0f;
        }
      }
      for (int64_t ic = 0; ic < M; ic += kMC) {
        int64_t mc = std::min(kMC, M - ic);
        // Pack A[ic:ic+mc, pc:pc+kc] into kMR-tall panels, zero-padded.
        for (int64_t ir = 0; ir < mc; ir += kMR) {
          float* dst = apack.data() + (ir / kMR) * kc * kMR;
          int64_t mr = std::min<int64_t>(kMR, mc - ir);
          for (int64_t r = 0; r < kMR; ++r) {
            if (r < mr) {
              const float* src = a + (ic + ir + r) * a_rs + pc * a_cs;
              for (int64_t k = 0; k < kc; ++k) dst[k * kMR + r] = src[k * a_cs];
            } else {
              for (int64_t k = 0; k < kc; ++k) dst[k * kMR + r] = 0.0f;
            }
          }
        }
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          const float* bp = bpack.data() + (jr / kNR) * kc * kNR;
          int nr = static_cast<int>(std::min<int64_t>(kNR, nc - jr));
          for (int64_t ir = 0; ir < mc; ir += kMR) {
            const float* ap = apack.data() + (ir / kMR) * kc * kMR;
            int mr = static_cast<int>(std::min<int64_t>(kMR, mc - ir));
            microKernel(kc, ap, bp, c + (ic + ir) * ldc + jc + jr, ldc, mr, nr, overwrite);
          }
        }
      }
    }
  }
}

}  // namespace nn

namespace {

using nn::fail;

void requireNum(const Type& t, const char* op, const char* what) {
  if (t.dtype == DType::boolean) fail(op, std::string(what) + " must be a numeric tensor, not bool");
}

// ---- matmul -----------------------------------------------------------------

Type inferMatmul(const std::vector<Type>& inputs, const ir::Attrs&) {
  const char* op = "matmul";
  const Type& a = nn::operand(inputs, 0, op, -1, "a");
  const Type& b = nn::operand(inputs, 1, op, -1, "b");
  requireNum(a, op, "a");
  nn::requireSameDType(a, b, op);
  if (a.rank() == 0 || b.rank() == 0) fail(op, "operands must have rank >= 1, not a scalar");
  const auto& ka = a.shape.back();
  const auto& kb = b.rank() == 1 ? b.shape[0] : b.shape[b.rank() - 2];
  if (!dimEqual(ka, kb))
    fail(op, "a has " + nn::dimStr(ka) + " columns but b has " + nn::dimStr(kb) + " rows (" +
                 ir::printType(a) + " x " + ir::printType(b) + ")");
  Shape abatch(a.shape.begin(), a.shape.end() - std::min<size_t>(a.rank(), 2));
  Shape bbatch(b.shape.begin(), b.shape.end() - std::min<size_t>(b.rank(), 2));
  Shape out = broadcastShapes(abatch, bbatch, op);
  if (a.rank() >= 2) out.push_back(a.shape[a.rank() - 2]);
  if (b.rank() >= 2) out.push_back(b.shape.back());
  return Type::tensor(a.dtype, std::move(out));
}

// The broadcast batch loop of matmul: for each output batch, the offsets (in
// matrices) of the a and b operands.
struct BatchPlan {
  int64_t count = 1;
  std::vector<int64_t> a_index, b_index;
};

BatchPlan planBatches(const std::vector<int64_t>& abatch, const std::vector<int64_t>& bbatch) {
  size_t rank = std::max(abatch.size(), bbatch.size());
  std::vector<int64_t> ad(rank, 1), bd(rank, 1), od(rank);
  std::copy(abatch.begin(), abatch.end(), ad.begin() + (rank - abatch.size()));
  std::copy(bbatch.begin(), bbatch.end(), bd.begin() + (rank - bbatch.size()));
  std::vector<int64_t> as(rank), bs(rank);
  int64_t sa = 1, sb = 1;
  for (size_t i = rank; i-- > 0;) {
    od[i] = std::max(ad[i], bd[i]);
    as[i] = ad[i] == 1 ? 0 : sa;
    bs[i] = bd[i] == 1 ? 0 : sb;
    sa *= ad[i];
    sb *= bd[i];
  }
  BatchPlan plan;
  plan.count = elementCount(od);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t n = 0; n < plan.count; ++n) {
    int64_t ao = 0, bo = 0;
    for (size_t i = 0; i < rank; ++i) {
      ao += idx[i] * as[i];
      bo += idx[i] * bs[i];
    }
    plan.a_index.push_back(ao);
    plan.b_index.push_back(bo);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < od[i]) break;
      idx[i] = 0;
    }
  }
  return plan;
}

// C = A * B computed in the operands' own dtype: integers accumulated modulo
// 2^64 (unsigned, as integer MatMul wraps, without signed overflow), f64 in
// double, each in k order (as the loop nest of the legalization).
template <class T>
void exactGemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t a_rs, int64_t a_cs, const T* b,
               int64_t b_rs, int64_t b_cs, T* c) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
  auto widen = [](T v) -> Acc {
    if constexpr (std::is_floating_point_v<T>)
      return v;
    else
      return static_cast<uint64_t>(static_cast<int64_t>(v));
  };
  std::vector<Acc> row(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), Acc{0});
    for (int64_t k = 0; k < K; ++k) {
      const Acc av = widen(a[i * a_rs + k * a_cs]);
      const T* brow = b + k * b_rs;
      for (int64_t j = 0; j < N; ++j) row[j] += av * widen(brow[j * b_cs]);
    }
    for (int64_t j = 0; j < N; ++j) c[i * N + j] = static_cast<T>(row[j]);
  }
}

// out[batch] = A[batch] · B[batch] for every batch of `plan`, with the given
// per-matrix element strides; dispatches on the dtype.
void batchedGemm(const Tensor& ta, const Tensor& tb, Tensor& out, const BatchPlan& plan, int64_t M, int64_t N,
                 int64_t K, int64_t a_rs, int64_t a_cs, int64_t b_rs, int64_t b_cs, int64_t a_mat,
                 int64_t b_mat) {
  DType dt = ta.dtype();
  int64_t c_mat = M * N;
  auto runExact = [&](auto tag) {
    using T = decltype(tag);
    const T* a = ta.data<T>();
    const T* b = tb.data<T>();
    T* c = out.mutableData<T>();
    for (int64_t n = 0; n < plan.count; ++n)
      exactGemm<T>(M, N, K, a + plan.a_index[n] * a_mat, a_rs, a_cs, b + plan.b_index[n] * b_mat, b_rs, b_cs,
                   c + n * c_mat);
  };
  if (ir::isInt(dt) || dt == DType::f64) return ir::withStorageType(dt, runExact);
  std::vector<float> sa, sb;
  const float* a = nn::f32Data(ta, sa);
  const float* b = nn::f32Data(tb, sb);
  std::vector<float> tmp;
  float* c;
  if (dt == DType::f32) {
    c = out.mutableData<float>();
  } else {
    tmp.resize(static_cast<size_t>(out.numel()));
    c = tmp.data();
  }
  for (int64_t n = 0; n < plan.count; ++n)
    nn::sgemm(M, N, K, a + plan.a_index[n] * a_mat, a_rs, a_cs, b + plan.b_index[n] * b_mat, b_rs, b_cs,
              c + n * c_mat, N, false);
  if (dt != DType::f32) out = nn::fromF32(dt, out.shape(), tmp.data());
}

std::vector<Tensor> computeMatmul(const std::vector<Tensor>& inputs, const ir::Attrs&) {
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  const auto& as = a.shape();
  const auto& bs = b.shape();
  int64_t K = as.back();
  int64_t M = as.size() >= 2 ? as[as.size() - 2] : 1;
  int64_t N = bs.size() >= 2 ? bs.back() : 1;
  std::vector<int64_t> abatch(as.begin(), as.end() - std::min<size_t>(as.size(), 2));
  std::vector<int64_t> bbatch(bs.begin(), bs.end() - std::min<size_t>(bs.size(), 2));
  BatchPlan plan = planBatches(abatch, bbatch);
  size_t rank = std::max(abatch.size(), bbatch.size());
  std::vector<int64_t> oshape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i + abatch.size() >= rank ? abatch[i + abatch.size() - rank] : 1;
    int64_t y = i + bbatch.size() >= rank ? bbatch[i + bbatch.size() - rank] : 1;
    oshape[i] = std::max(x, y);
    if (x == 0 || y == 0) oshape[i] = 0;
  }
  if (as.size() >= 2) oshape.push_back(M);
  if (bs.size() >= 2) oshape.push_back(N);
  Tensor out = Tensor::zeros(a.dtype(), oshape);
  if (out.numel() == 0) return {out};
  // b 1-D: B[k, 0] = b[k].
  int64_t b_rs = bs.size() >= 2 ? N : 1;
  batchedGemm(a, b, out, plan, M, N, K, K, 1, b_rs, 1, M * K, K * N);
  return {out};
}

int64_t flopsMatmul(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  if (inputs.empty() || !inputs[0].isTensor() || inputs[0].shape.empty()) return 0;
  int64_t k = staticCount({inputs[0].shape.back()});
  return flopsProduct(2, staticCount(output.shape), k);
}

// out[batch..., m, n] = sum over k of a[batch..., m, k] * b[batch..., k, n]
// with numpy's 1-D promotion (a [K]: no m axis; b [K]: no n axis) and batch
// broadcasting (an operand's batch dimension 1 is read at index 0). One
// reduce stage over k; f16/bf16 accumulate in f32 and a cast stage rounds,
// integers accumulate (wrapping) in their own dtype, as the kernel does.
ir::PrimFunc legalizeMatmul(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  using namespace ir::build;
  const Type& at = inputs[0];
  const Type& bt = inputs[1];
  ir::te::FuncBuilder fb("matmul");
  ir::Buffer a = fb.input("a", at), b = fb.input("b", bt);
  DType acc = nnlegal::accDType(output.dtype);
  size_t ra = at.rank(), rb = bt.rank(), ro = output.rank();
  size_t obatch = ro - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);
  // The operand's batch indices: its batch dims align with the output's last ones.
  auto batchIndices = [&](const Type& t, const ir::te::Indices& i) {
    std::vector<ir::PrimExpr> idx;
    size_t nb = t.rank() - 2;
    for (size_t d = 0; d < nb; ++d) {
      if (isConstDim(t.shape[d], 1))
        idx.push_back(dimConst(0));
      else
        idx.push_back(i[obatch - nb + d]);
    }
    return idx;
  };
  ir::Buffer y = fb.reduce("matmul", output.shape, acc, {at.shape.back()}, ir::te::ReduceOp::Sum,
                           [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             std::vector<ir::PrimExpr> ai, bi;
                             if (ra == 1) {
                               ai = {r[0]};
                             } else {
                               ai = batchIndices(at, i);
                               ai.push_back(i[obatch]);
                               ai.push_back(r[0]);
                             }
                             if (rb == 1) {
                               bi = {r[0]};
                             } else {
                               bi = batchIndices(bt, i);
                               bi.push_back(r[0]);
                               bi.push_back(i[obatch + (ra >= 2 ? 1 : 0)]);
                             }
                             return nnlegal::castTo(acc, load(a, ai)) * nnlegal::castTo(acc, load(b, bi));
                           });
  return fb.build({nnlegal::castStage(fb, "matmul_cast", y, output.dtype)});
}

// ---- dense ------------------------------------------------------------------

// The checks dense and dense_pack share: x (numeric, rank >= 1) and a weight
// of `weight_rank` and x's dtype. Returns x.
const Type& denseInput(const std::vector<Type>& inputs, const char* op, int weight_rank,
                       const char* weight_what) {
  const Type& x = nn::operand(inputs, 0, op, -1, "x");
  const Type& w = nn::operand(inputs, 1, op, weight_rank, weight_what);
  requireNum(x, op, "x");
  nn::requireSameDType(x, w, op);
  if (x.rank() == 0) fail(op, "x must have rank >= 1, not a scalar");
  return x;
}

Type inferDense(const std::vector<Type>& inputs, const ir::Attrs&) {
  const char* op = "dense";
  const Type& x = denseInput(inputs, op, 2, "the weight");
  const Type& w = inputs[1];
  if (!dimEqual(x.shape.back(), w.shape[1]))
    fail(op, "x has " + nn::dimStr(x.shape.back()) + " features but the weight expects " +
                 nn::dimStr(w.shape[1]) + " (" + ir::printType(x) + " x " + ir::printType(w) +
                 " transposed)");
  Shape out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(w.shape[0]);
  return Type::tensor(x.dtype, std::move(out));
}

std::vector<Tensor> computeDense(const std::vector<Tensor>& inputs, const ir::Attrs&) {
  const Tensor& x = inputs[0];
  const Tensor& w = inputs[1];
  int64_t K = x.shape().back();
  int64_t N = w.shape()[0];
  std::vector<int64_t> oshape(x.shape().begin(), x.shape().end() - 1);
  int64_t M = elementCount(oshape);
  oshape.push_back(N);
  Tensor out = Tensor::zeros(x.dtype(), oshape);
  if (out.numel() == 0) return {out};
  BatchPlan one;
  one.a_index = {0};
  one.b_index = {0};
  // B[k, j] = w[j, k].
  batchedGemm(x, w, out, one, M, N, K, K, 1, 1, K, 0, 0);
  return {out};
}

int64_t flopsDense(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  if (inputs.size() < 2 || !inputs[1].isTensor() || inputs[1].rank() != 2) return 0;
  return flopsProduct(2, staticCount(output.shape), staticCount({inputs[1].shape[1]}));
}

// out[..., j] = sum over k of x[..., k] * w[weight_index(j, k)]: one reduce
// stage over k, in a function and block named `op` (dense, dense_pack).
using WeightIndex = std::function<std::vector<ir::PrimExpr>(const ir::PrimExpr& j, const ir::PrimExpr& k)>;
ir::PrimFunc legalizeDenseLike(const std::string& op, const std::string& weight_name,
                               const std::vector<Type>& inputs, const Type& output,
                               const WeightIndex& weight_index) {
  using namespace ir::build;
  ir::te::FuncBuilder fb(op);
  ir::Buffer x = fb.input("x", inputs[0]), w = fb.input(weight_name, inputs[1]);
  DType acc = nnlegal::accDType(output.dtype);
  size_t ro = output.rank();
  ir::Buffer y = fb.reduce(op, output.shape, acc, {inputs[0].shape.back()}, ir::te::ReduceOp::Sum,
                           [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             std::vector<ir::PrimExpr> xi(i.begin(), i.end() - 1);
                             xi.push_back(r[0]);
                             return nnlegal::castTo(acc, load(x, xi)) *
                                    nnlegal::castTo(acc, load(w, weight_index(i[ro - 1], r[0])));
                           });
  return fb.build({nnlegal::castStage(fb, op + "_cast", y, output.dtype)});
}

// out[..., j] = sum over k of x[..., k] * w[j, k].
ir::PrimFunc legalizeDense(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  return legalizeDenseLike("dense", "w", inputs, output, [](const ir::PrimExpr& j, const ir::PrimExpr& k) {
    return std::vector{j, k};
  });
}

// ---- dense_pack ---------------------------------------------------------------

Type inferDensePack(const std::vector<Type>& inputs, const ir::Attrs&) {
  const char* op = "dense_pack";
  const Type& x = denseInput(inputs, op, 3, "the packed weight");
  const Type& wp = inputs[1];
  if (!dimEqual(x.shape.back(), wp.shape[1]))
    fail(op, "x has " + nn::dimStr(x.shape.back()) + " features but the packed weight " + ir::printType(wp) +
                 " expects " + nn::dimStr(wp.shape[1]));
  int64_t panels = 0, rows = 0;
  if (!ir::asConstInt(wp.shape[0], &panels) || !ir::asConstInt(wp.shape[2], &rows))
    fail(op, "the packed weight " + ir::printType(wp) + " needs constant panel dimensions (N / b and b)");
  Shape out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(ir::makeInt(panels * rows));
  return Type::tensor(x.dtype, std::move(out));
}

std::vector<Tensor> computeDensePack(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor w = relayout(inputs[1], "NK" + std::to_string(inputs[1].shape()[2]) + "n", "NK");
  return computeDense({inputs[0], w}, attrs);
}

int64_t flopsDensePack(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  if (inputs.size() < 2 || !inputs[1].isTensor() || inputs[1].rank() != 3) return 0;
  return flopsProduct(2, staticCount(output.shape), staticCount({inputs[1].shape[1]}));
}

// out[..., j] = sum over k of x[..., k] * wp[j / b, k, j % b].
ir::PrimFunc legalizeDensePack(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  using namespace ir::build;
  const ir::PrimExpr b = inputs[1].shape[2];
  return legalizeDenseLike("dense_pack", "wp", inputs, output,
                           [&](const ir::PrimExpr& j, const ir::PrimExpr& k) {
                             return std::vector{j / b, k, j % b};
                           });
}

}  // namespace

void registerLinalgOps(std::vector<OpDef>& ops) {
  ops.push_back({"matmul",
                 2,
                 2,
                 OpPattern::OutEwiseFusable,
                 {},
                 inferMatmul,
                 computeMatmul,
                 flopsMatmul,
                 legalizeMatmul});
  ops.back().f64 = true;  // exactGemm and a double accumulator (accDType)
  ops.push_back(
      {"dense", 2, 2, OpPattern::OutEwiseFusable, {}, inferDense, computeDense, flopsDense, legalizeDense});
  ops.back().f64 = true;
  ops.push_back({"dense_pack",
                 2,
                 2,
                 OpPattern::OutEwiseFusable,
                 {},
                 inferDensePack,
                 computeDensePack,
                 flopsDensePack,
                 legalizeDensePack});
}

}  // namespace mlcc::ops
