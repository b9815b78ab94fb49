// Rule "matmul" (llvm): a function with one matmul-like block (dense,
// matmul, batch_matmul, conv2d) and injective blocks around it (padding,
// bias, activation, residual add).
//
// The anchor gets TVM's CPU multi-level tiling "SSRSRS": every spatial loop
// is split into 4 levels (S0 S1 S2 S3) and every reduce loop into 2 (R0 R1),
// ordered S0.. S1.. R0.. S2.. R1.. S3..:
//   - S3 is the register tile: a vector of the output's innermost dimension
//     (the target's vector width, or the whole dimension when it is at
//     most two vectors and not a multiple of one) times up to 8 rows (16 for a
//     vector of half a register; 12 for two vectors a row where 8 does not
//     divide the rows) of a dimension that
//     indexes the other operand (C[i, j] += A[i, k] * B[j, k]: rows of i,
//     a vector of j), the row loop unrolled (outside the column blocks
//     and the vector), the vector loop vectorized;
//   - S2 = 1 (the accumulators of the register tile stay in registers over
//     the whole reduction); R1: the small reduce loops (kh, kw) whole, large
//     ones by up to 16; where the weight read over R1 by a register tile
//     is larger than L1, R1 is cut to half of L1 and the rows that share the
//     weight go to S2 (each chunk read from L1 by all of them);
//   - S0 takes enough iterations for the cores (num_cores * 2, at least
//     kMinOuterTiles), from one dimension when one has that many (no index
//     division in the parallel loop), else from the outer dimensions; fused
//     and parallel. One dimension's iterations that split unevenly over the
//     cores (7 on 2) take a factor of a later dimension (7 x 2) unless an
//     input is padded. S1 the rest of the tile.
// The sizes are recorded as sample_perfect_tile decisions (a tuner can
// mutate them). Intermediate injective stages are inlined, except padding
// (llvm_common.h, isPadding), which is computed under the innermost S0 loop
// (the part of the padded input each parallel tile reads, right before it);
// the remaining epilogue is computed under the last S1 loop outside R0
// (right after its tile is reduced, while it is in cache) and vectorized; the
// reduction's init is decomposed out and vectorized where
// decompose_reduction allows it (right before each register tile's
// reduction where R0 is 1 and a pass ahead of it would not stay in L1).
// Extents that are symbolic or 1 are not split (they stay in S0).
// Only divisors are used, so no predicates appear.
// Where the vector's operand is a plain matrix (B of a matmul, the weight
// of a dense) reused over enough rows, it is packed into panels of one
// vector (packVectorOperand) and the tiling blocks for the caches instead:
// R1 a reduction block (kPackedReduceBlock), S2 a block of rows (outer)
// and the panels of that reduction block that fit in a quarter of L2
// (inner; llvm_common.h, packedCacheBlocks), and the rows' S1 moves inside
// R0: S0 S1 R0 S1(rows) S2 R1 S3. One register tile's rows (8 rows of
// the block, 8 KiB) stay in L1 while the block's panels stream past them
// from L2, and the panels stay in L2 while every row block sweeps them:
// GotoBLAS's order (its micro-panel of the broadcast operand in L1, the
// vector operand's block in L2, the rows' blocks inside the reduction's).
// A small-batch dense layer (llvm_common.h, smallBatchMatmul) gets the
// GEMV rule's rfactor schedule instead (llvm_gemv.cpp).
#include <algorithm>
#include <set>

#include "../tree.h"
#include "llvm_common.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule::cpu {

using namespace ir;
using namespace ir::build;

namespace {

using Extent = std::optional<int64_t>;

// The most register tiles along the rows' dimension that share an
// L1-blocked chunk of the weight (see l1_tiles below).
constexpr int64_t kMaxRowCacheBlock = 4;

struct Dim {
  LoopRV loop;
  std::optional<int64_t> extent;
  std::vector<LoopRV> parts;  // the tile levels; empty when not split
};

// A read of a padded intermediate with stride s >= 2 along the vector's
// iteration variable (a stride-2 convolution reads pad[.., ow * 2 + kw])
// would cost a gather per vector. Re-indexing the padding buffer by
// [.., w] -> [.., w % s, w / s] makes it unit-stride (pad[.., kw % 2, ow +
// kw / 2]); the padding block writes the new layout. compute_at cannot
// place the re-indexed padding per tile any more, so it is computed on its
// own first. ResNet-18 (1 thread): the 7x7 stem 18 -> 68 GFLOPS, the
// stride-2 3x3 convolutions 21 -> 45, the model 85 -> 69 ms.
void deinterleaveStridedPadding(Schedule& sch, const BlockRV& blk, size_t vec_iter) {
  const BlockNode& b = blockNode(sch, blk);
  const BlockInfo info = analyzeBlock(b);
  // Not for a depthwise convolution (a GEMV here): with few FLOPs per
  // input element, the padding computed on its own (it can no longer be
  // computed per tile) costs more than the gathers (MobileNetV2: 19 -> 29 ms).
  if (info.kind != BlockKind::MatmulLike) return;
  std::set<const BufferNode*> padded;
  forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
    if (isPadding(x))
      for (const auto& w : writeBuffers(x)) padded.insert(w.get());
  });
  std::vector<std::pair<Buffer, int64_t>> strided;
  for (const LoadNode* load : {info.a, info.b}) {
    if (!load || !padded.count(load->buffer.get()) || load->indices.empty()) continue;
    const auto s = stepAlong(load->indices.back(), b.iter_vars.at(vec_iter).var);
    if (s && *s >= 2 && *s <= 4) strided.emplace_back(load->buffer, *s);
  }
  for (const auto& [buffer, s] : strided) {
    std::vector<Var> from;
    std::vector<PrimExpr> to;
    for (size_t d = 0; d < buffer->shape.size(); ++d) from.push_back(makeVar("d" + std::to_string(d)));
    for (size_t d = 0; d + 1 < from.size(); ++d) to.push_back(from[d]);
    to.push_back(from.back() % s);
    to.push_back(from.back() / s);
    attempt([&] { sch.transformLayout(blk, buffer->name, from, to); });
  }
}

// The operand of a matmul-like block that its vector's iteration variable
// indexes (and the other operand does not), with the spatial variables
// that index it; null when there is no such one.
struct VectorOperand {
  const LoadNode* load = nullptr;
  const std::vector<bool>* uses = nullptr;  // parallel to info.spatial
};
VectorOperand vectorOperand(const BlockInfo& info, size_t vec_iter) {
  if (info.kind != BlockKind::MatmulLike) return {};
  const size_t vpos = spatialPosition(info, vec_iter);
  if (vpos == info.spatial.size() || info.a_uses[vpos] == info.b_uses[vpos]) return {};
  return info.a_uses[vpos] ? VectorOperand{info.a, &info.a_uses} : VectorOperand{info.b, &info.b_uses};
}

// The operand the register tile's vector indexes (B of C[i, j] += A[i, k]
// * B[k, j], W of a dense's A[i, k] * W[j, k]) repacked as panels of one
// vector, [.., j / vf, k, j % vf] (GotoBLAS's packed B, TVM's dense_pack):
// the register tile then reads one contiguous panel along the reduction,
// where unpacked it reads one vector per row of B, N * 4 bytes apart (at
// 1024 columns every row falls in the same L1 set, and the prefetcher
// sees one line per 4 KiB page), and a dense's W[j, k] would be a gather.
// Only for an operand indexed by plain iteration variables, one of them
// the reduction's, reused over at least kMinPackReuse rows of the other
// operand (the copy is made on every call), and, when its rows are already
// contiguous along the vector, not already one panel wide and larger than
// kMinPackBytes. A parameter is copied by a new block at the start of the
// function (scheduled here: vectorized along the panel, parallel); an
// intermediate is rewritten in place. `vf` is the target's vector lanes.
// Returns the copy block's name ("" for an intermediate), or nullopt when it
// did not pack.
std::optional<std::string> packVectorOperand(Schedule& sch, const BlockRV& blk, size_t vec_iter, int64_t vf,
                                             const target::Target& target) {
  const BlockNode& b = blockNode(sch, blk);
  const BlockInfo info = analyzeBlock(b);
  const VectorOperand vo = info.reduce.size() == 1 ? vectorOperand(info, vec_iter) : VectorOperand{};
  if (!vo.load) return std::nullopt;
  const LoadNode* operand = vo.load;
  const std::vector<bool>& uses = *vo.uses;
  // Each index a distinct plain iteration variable; where the vector's and
  // the reduction's are.
  std::vector<size_t> iter_of_dim;
  for (const auto& idx : operand->indices) {
    const auto* v = idx->as<VarNode>();
    size_t it = 0;
    while (it < b.iter_vars.size() && b.iter_vars[it].var.get() != v) ++it;
    if (!v || it == b.iter_vars.size() ||
        std::find(iter_of_dim.begin(), iter_of_dim.end(), it) != iter_of_dim.end())
      return std::nullopt;
    iter_of_dim.push_back(it);
  }
  const size_t rank = iter_of_dim.size();
  const size_t vec_dim = std::find(iter_of_dim.begin(), iter_of_dim.end(), vec_iter) - iter_of_dim.begin();
  const size_t red_dim =
      std::find(iter_of_dim.begin(), iter_of_dim.end(), info.reduce[0]) - iter_of_dim.begin();
  if (vec_dim == rank || red_dim == rank) return std::nullopt;
  int64_t reuse = 1, elements = 1, extent = 0;
  for (size_t p = 0; p < info.spatial.size(); ++p)
    if (!uses[p]) {
      if (!asConstInt(b.iter_vars[info.spatial[p]].extent, &extent)) return std::nullopt;
      reuse *= extent;
    }
  for (const auto& d : operand->buffer->shape) {
    if (!asConstInt(d, &extent)) return std::nullopt;
    elements *= extent;
  }
  if (reuse < kMinPackReuse) return std::nullopt;
  if (vec_dim + 1 == rank) {
    asConstInt(operand->buffer->shape.back(), &extent);
    if (extent == vf || elements * dtypeBytes(operand->buffer->dtype) < kMinPackBytes) return std::nullopt;
  }
  // [.., j / vf (before the reduction's dimension), .., k, .., j % vf]
  std::vector<Var> from;
  std::vector<PrimExpr> to;
  for (size_t d = 0; d < rank; ++d) from.push_back(makeVar("d" + std::to_string(d)));
  for (size_t d = 0; d < rank; ++d) {
    if (d == red_dim) to.push_back(from[vec_dim] / vf);
    if (d != vec_dim) to.push_back(from[d]);
  }
  to.push_back(from[vec_dim] % vf);
  const Buffer buffer = operand->buffer;
  const auto& params = sch.func().params;
  const bool param = std::find(params.begin(), params.end(), buffer) != params.end();
  if (!attempt([&] { sch.transformLayout(blk, buffer->name, from, to); })) return std::nullopt;
  if (!param) return "";
  // The copy: its loops are the operand's dimensions in order; the
  // vector's split by vf goes innermost and is vectorized.
  const std::string copy_name = buffer->name + "_layout";
  BlockRV copy = sch.getBlock(copy_name);
  std::vector<LoopRV> loops = sch.getLoops(copy);
  if (loops.size() != rank) return copy_name;
  int64_t panels = 0;
  asConstInt(buffer->shape[vec_dim], &panels);
  auto parts = tileLoop(sch, loops[vec_dim], {panels / vf, vf});
  loops[vec_dim] = parts[0];
  loops.push_back(parts[1]);
  sch.reorder(loops);
  sch.vectorize(parts[1]);
  parallelizeLoops(sch, {loops[0]}, elements, WorkUnit::Elements, target);
  return copy_name;
}

// Whether the operand the vector indexes is already in panels of one
// vector (dense_pack's wp[j / vf, k, j % vf], packed by convert-layout at
// compile time): then the tiling blocks for the caches as for one packed
// here.
bool readsPanels(const BlockNode& b, size_t vec_iter, int64_t vf) {
  const BlockInfo info = analyzeBlock(b);
  const LoadNode* operand = info.reduce.size() == 1 ? vectorOperand(info, vec_iter).load : nullptr;
  if (!operand) return false;
  const VarNode* v = b.iter_vars[vec_iter].var.get();
  auto is = [&](const PrimExpr& e, BinaryOp op) {
    const auto* x = e->as<BinaryNode>();
    int64_t c = 0;
    return x && x->op == op && x->a.get() == v && asConstInt(x->b, &c) && c == vf;
  };
  return !operand->indices.empty() && is(operand->indices.back(), BinaryOp::Mod) &&
         std::any_of(operand->indices.begin(), operand->indices.end(),
                     [&](const PrimExpr& e) { return is(e, BinaryOp::Div); });
}

int64_t productOrUnknown(const std::vector<Dim>& dims) {
  int64_t p = 1;
  for (const auto& d : dims) {
    if (!d.extent) return -1;
    p *= *d.extent;
  }
  return p;
}

// The vector: the output's innermost dimension, and its width (the
// target's vector lanes, or the whole dimension when it is at most two
// vectors and not a multiple of one); nullopt when there is none.
std::optional<std::pair<size_t, int64_t>> vectorDimension(const BlockNode& b,
                                                          const std::vector<Extent>& extents,
                                                          const target::Target& target) {
  auto inner = innermostOutputIter(b);
  if (!inner || !extents[*inner]) return std::nullopt;
  const int64_t extent = *extents[*inner];
  const int64_t lanes = vectorLanes(target, b.writes.at(0).buffer->dtype);
  int64_t vf = vectorFactor(extent, lanes);
  // An extent of at most two vectors that the vector does not divide
  // (28 = 16 + 12) is a vector whole: the emitter unrolls such a register
  // tile and the SLP vectorizer covers it with 16 + 8 + 4 lanes (ResNet's
  // 28x28 convolutions: 24 -> 83 GFLOPS over two tiles of 14).
  if (extent % lanes != 0 && extent <= 2 * lanes) vf = extent;
  if (vf <= 1) return std::nullopt;
  return std::pair{*inner, vf};
}

// The most rows of a register tile. A vector of half a register or less (a
// power of two: one register per row) takes twice the rows, exactly
// (ResNet's 56-wide convolutions, vectors of 8 of 16 lanes: 66 -> 73
// GFLOPS; 12 rows of 24 channels ran MobileNetV2's 1x1 convolutions at
// half the speed of 8); other vectors take several registers per row (7
// lanes: 4 + 2 + 1), where more rows spill.
int64_t maxRegisterRows(int64_t vf, int64_t lanes) {
  const bool half_vector = (vf & (vf - 1)) == 0 && vf * 2 <= lanes;
  return half_vector ? 2 * kMaxRegisterRows : kMaxRegisterRows;
}

// The dimensions the register tile's rows may take, innermost first: those
// indexing only the operand the vector's does not (or, when both operands
// are indexed by the vector's, only one of them), of constant extent.
std::vector<size_t> rowCandidates(const BlockInfo& info, const std::vector<Extent>& extents, size_t vec) {
  const size_t vpos = spatialPosition(info, vec);
  const bool va = info.a_uses[vpos], vb = info.b_uses[vpos];
  std::vector<size_t> out;
  for (size_t p = info.spatial.size(); p-- > 0;) {
    size_t d = info.spatial[p];
    if (d == vec || !extents[d]) continue;
    // The vector's dimension indexes one operand: rows index only the
    // other (C[i, j] += A[i, k] * B[k, j]). It indexes both (a depthwise
    // convolution in NCHW[x]c: out[.., w, c] += x[.., w + kw, c] *
    // k[.., kw, c]): rows index only one, sharing the other's vector.
    if (va != vb ? (info.a_uses[p] != vb || info.b_uses[p] != va) : info.a_uses[p] == info.b_uses[p])
      continue;
    out.push_back(d);
  }
  return out;
}

// Rows that no divisor of at least kMinRegisterRows tiles (a prime output
// width: Inception's 17 and 71; a matmul's 197 rows) would leave the
// register tile one row (or two or three) of vectors: too few accumulators
// to hide the FMAs' latency, each weight vector loaded for one FMA
// (Inception-v3's 17 x 17 convolutions: 31 GFLOPS). The innermost row
// candidate is then padded (pad_einsum) to the nearest multiple of a row
// count from kMinRegisterRows to kMaxRegisterRows (the fewest padded rows,
// then the most rows), when that adds at most an eighth.
bool padRowsForRegisterTile(Schedule& sch, const std::string& anchor, const target::Target& target) {
  // Read from the function, not through the schedule: nothing is recorded
  // in the trace unless the rows are padded.
  const BlockNode& b = *findBlock(sch.func().body, anchor)->target()->as<BlockNode>();
  const BlockInfo info = analyzeBlock(b);
  if (info.kind != BlockKind::MatmulLike) return false;
  std::vector<Extent> extents;  // of the loops too (simpleNest)
  for (const auto& iv : b.iter_vars) {
    int64_t e;
    extents.push_back(asConstInt(iv.extent, &e) ? Extent(e) : std::nullopt);
  }
  auto v = vectorDimension(b, extents, target);
  if (!v) return false;
  const int64_t max_rows = maxRegisterRows(v->second, vectorLanes(target, b.writes.at(0).buffer->dtype));
  const std::vector<size_t> candidates = rowCandidates(info, extents, v->first);
  if (candidates.empty()) return false;
  for (size_t d : candidates)
    if (largestDivisorAtMost(*extents[d], max_rows) >= kMinRegisterRows) return false;
  const size_t d = candidates.front();
  const int64_t extent = *extents[d];
  if (extent <= max_rows) return false;
  auto padded_to = [&](int64_t rows) { return (extent + rows - 1) / rows * rows; };
  int64_t best = kMaxRegisterRows;
  for (int64_t rows = kMaxRegisterRows; rows >= kMinRegisterRows; --rows)
    if (padded_to(rows) < padded_to(best)) best = rows;
  if ((padded_to(best) - extent) * 8 > extent) return false;
  std::vector<int64_t> factors(extents.size(), 1);
  factors[d] = best;
  if (!attempt([&] { sch.padEinsum(sch.getBlock(anchor), factors); })) return false;
  // The copies of the inputs it reads are its padding now (their own
  // padding, if any, inlined into them); the crop is inlined into the
  // epilogue where there is one.
  std::vector<std::string> keep{anchor};
  const BlockNode& padded = *findBlock(sch.func().body, anchor)->target()->as<BlockNode>();
  forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
    if (!isPadding(x) || analyzeBlock(x).kind != BlockKind::Injective) return;
    for (const auto& w : writeBuffers(x))
      for (const auto& r : padded.reads)
        if (r.buffer == w) keep.push_back(x.name);
  });
  inlineInjectiveBlocks(sch, keep);
  return true;
}

}  // namespace

bool scheduleTiledAnchor(Schedule& sch, const std::string& anchor, const target::Target& target) {
  std::vector<std::string> keep{anchor};
  for (const Stage& st : stagesOf(sch.func()))
    if (st.padding) keep.push_back(st.name);
  inlineInjectiveBlocks(sch, keep);
  BlockRV blk = sch.getBlock(anchor);
  if (!simpleNest(sch, blk)) return false;
  if (padRowsForRegisterTile(sch, anchor, target)) blk = sch.getBlock(anchor);
  std::optional<std::string> pack_copy;  // the copy block of a packed operand
  if (auto inner = innermostOutputIter(blockNode(sch, blk))) {
    deinterleaveStridedPadding(sch, blk, *inner);
    const BlockNode& b = blockNode(sch, blk);
    const int64_t lanes = vectorLanes(target, b.writes.at(0).buffer->dtype);
    if (int64_t e = 0; asConstInt(b.iter_vars[*inner].extent, &e) && e % lanes == 0)
      pack_copy = readsPanels(b, *inner, lanes) ? std::optional<std::string>("")
                                                : packVectorOperand(sch, blk, *inner, lanes, target);
  }
  const bool packed = pack_copy.has_value();
  auto loops = sch.getLoops(blk);
  const BlockNode& b = blockNode(sch, blk);
  const BlockInfo info = analyzeBlock(b);
  if (info.kind != BlockKind::MatmulLike && info.kind != BlockKind::Gemv) return false;
  const BufferNode* a_buffer = info.a->buffer.get();  // (the loads die with the tiling)
  const BufferNode* b_buffer = info.b->buffer.get();
  std::vector<Dim> dims;
  for (const auto& l : loops) dims.push_back({l, constExtent(sch, l), {}});

  std::optional<size_t> vec, row;
  int64_t vf = 1, rf = 1;
  std::vector<Extent> extents;
  for (const Dim& d : dims) extents.push_back(d.extent);
  if (auto v = vectorDimension(b, extents, target)) std::tie(vec, vf) = *v;
  // Packed, with 32 vector registers (AVX-512): two vectors per row of the
  // register tile (8 x 2 = 16 accumulators; two panel loads and eight
  // broadcasts per sixteen FMAs): 1024^3 GEMM 110 -> 140 GFLOPS on one
  // Xeon core; four vectors spill.
  const int64_t vregs =
      packed && vec && target.vector_bits >= 512 && (*dims[*vec].extent / vf) % 2 == 0 ? 2 : 1;
  const int64_t max_rows = maxRegisterRows(vf, vectorLanes(target, b.writes.at(0).buffer->dtype));
  if (vec) {
    for (size_t d : rowCandidates(info, extents, *vec)) {
      int64_t f = largestDivisorAtMost(*dims[d].extent, max_rows);
      if (f > kMaxRegisterRows && f < max_rows) f = largestDivisorAtMost(*dims[d].extent, kMaxRegisterRows);
      // Two vectors a row where 8 does not divide the rows: up to 12 rows
      // (24 accumulators, two panel vectors and a broadcast in 32 registers)
      // rather than fewer than 8 (Whisper's attention over 1500 tokens had 6
      // rows: its attention-times-values matmul -22%, its dense layers with
      // their bias epilogues -7% together).
      if (vregs == 2 && f < kMaxRegisterRows)
        f = std::max(f, largestDivisorAtMost(*dims[d].extent, kMaxAccumulators / 2));
      if (f > 1) {
        row = d;
        rf = f;
        break;
      }
    }
  }
  const int64_t work = productOrUnknown(dims);

  // Tile sizes. S0 takes enough iterations for the cores: from a single
  // dimension when one has enough (the outermost such; the parallel loop
  // then needs no index division), else from the outer dimensions first.
  const int64_t wanted =
      std::max(static_cast<int64_t>(target.num_cores) * kParallelChunksPerCore, kMinOuterTiles);
  // Where the rows and vectors make few accumulators (a convolution row of
  // 7: 7 x 1 vectors, too few for the two FMA pipes of a Xeon core to hide
  // their latency), a dimension indexing only the vector's operand (the
  // output-channel blocks of a convolution in NCHW[x]c) joins the register
  // tile: its cf iterations share the rows' broadcasts.
  std::optional<size_t> col;
  int64_t cf = 1;
  // (Only with one register per vector: a vector of 28 lanes takes three.)
  if (vec && row && target.vector_bits >= 512 && (vf & (vf - 1)) == 0 && rf * vregs < kMinAccumulators) {
    const size_t vpos = spatialPosition(info, *vec);
    for (size_t p = info.spatial.size(); p-- > 0;) {
      const size_t d = info.spatial[p];
      if (d == *vec || d == *row || !dims[d].extent || info.a_uses[p] != info.a_uses[vpos] ||
          info.b_uses[p] != info.b_uses[vpos] || info.a_uses[p] == info.b_uses[p])
        continue;
      const int64_t f = largestDivisorAtMost(*dims[d].extent, kMaxAccumulators / (rf * vregs));
      if (f > 1) {
        col = d;
        cf = f;
        break;
      }
    }
  }
  auto rest = [&](size_t d) {
    return *dims[d].extent / (d == vec ? vf * vregs : d == row ? rf : d == col ? cf : 1);
  };
  // Packed, with more columns than rows and more panels than L2 holds
  // (ViT-B/16's dense layers: [200, 768] x [768, 3072], 9 MiB of panels),
  // the parallel tiles split the columns: each tile then reads its own part
  // of the panels once, and all of the rows; split by rows, every tile
  // would read all the panels again from memory. ViT-B/16 at 224^2 (1
  // thread) 280 -> 221 ms, 2 threads 156 -> 120 (ONNX Runtime 227 and 113).
  // Panels that L2 holds are read again from there: split by rows, a
  // BERT-style encoder's 256-wide layers (0.8-1 MiB of panels) ran 5%
  // faster at 2 threads.
  std::optional<size_t> single;
  const bool panels_past_l2 =
      packed && vec && row && !info.reduce.empty() && dims[info.reduce[0]].extent &&
      *dims[*vec].extent * *dims[info.reduce[0]].extent * dtypeBytes(b.writes.at(0).buffer->dtype) >
          l2Bytes(target);
  if (panels_past_l2 && *dims[*vec].extent > *dims[*row].extent && rest(*vec) >= wanted) single = vec;
  for (size_t d : info.spatial)
    if (!single && dims[d].extent && rest(d) >= wanted) single = d;
  // R1: the small reduce loops whole, large ones by kMaxInnerReduce; a
  // packed operand's reduction by kPackedReduceBlock.
  auto inner_reduce = [&](size_t d) {
    const int64_t limit = packed ? kPackedReduceBlock : kMaxInnerReduce;
    return *dims[d].extent <= limit ? *dims[d].extent : largestDivisorAtMost(*dims[d].extent, limit);
  };
  const int64_t element_bytes = dtypeBytes(b.writes.at(0).buffer->dtype);
  // Unpacked, with the vector's operand indexed by the vector (and the
  // third dimension) but not by the rows (a convolution's weight): where
  // the weight the register tile reads over R1 is larger than L1, R1 is cut
  // to half of L1 (the outer reduce loops first), and the spatial
  // dimensions that do not index the weight (a convolution's output rows)
  // go inside R0 (S2) as far as their register tiles' accumulators fit in a
  // quarter of L1: each chunk of the weight is then read from L1 by all of
  // them instead of from L2 by one. ResNet-18's 7 x 7 stage-4 convolutions
  // (295 KiB over R1: 16 input-channel blocks x 3 x 3 x 16 lanes x 2
  // vectors) 116-118 -> 142-146 GFLOPS on one Xeon core (48 KiB L1).
  std::vector<int64_t> r1_extent(dims.size(), 1);
  for (size_t d : info.reduce)
    if (dims[d].extent) r1_extent[d] = inner_reduce(d);
  // Not where 512-bit FMAs issue as two halves (Zen 4): at half the FLOPs
  // a cycle of an AVX-512 Xeon core, the weight streams from L2 fast
  // enough, and the chunks' extra passes over the register tiles only cost
  // (one Zen 4 core, 32 KiB of L1, without the blocking: ResNet-18 -6%,
  // Inception-v3 -6%, GoogLeNet -6%, MobileNetV2 -3.5%).
  const std::vector<bool>* weight_uses =  // parallel to info.spatial
      !packed && vec && target.cpu.l1d_cache_bytes > 0 && !target.cpu.split_512bit_fma
          ? vectorOperand(info, *vec).uses
          : nullptr;
  bool l1_blocked = false;
  if (weight_uses && (!row || !(*weight_uses)[spatialPosition(info, *row)])) {
    auto chunk = [&] {
      int64_t bytes = vf * vregs * cf * element_bytes;
      for (size_t d : info.reduce) bytes *= r1_extent[d];
      return bytes;
    };
    const int64_t limit = target.cpu.l1d_cache_bytes / 2;
    for (size_t d : info.reduce) {
      if (chunk() <= (l1_blocked ? limit : target.cpu.l1d_cache_bytes)) break;
      if (!dims[d].extent || r1_extent[d] <= 1) continue;
      const int64_t others = chunk() / r1_extent[d];
      r1_extent[d] = largestDivisorAtMost(*dims[d].extent, std::max<int64_t>(1, limit / others));
      l1_blocked = true;
    }
  }
  int64_t l1_tiles = std::max<int64_t>(
      1, l1_blocked ? target.cpu.l1d_cache_bytes / 4 / (rf * vf * vregs * cf * element_bytes) : 1);
  // Of those register tiles, up to kMaxRowCacheBlock go along the rows'
  // dimension first where it has at least twice as many tiles (a wide
  // convolution's output columns: the tiles then read one longer run of
  // each input row, 4 x 8 + 2 columns, rather than 8 runs of 10 from as
  // many rows), the rest to the outer dimensions; otherwise the rows'
  // dimension takes what the outer ones leave. A 3x3 convolution 128 ->
  // 128 channels at 128 x 128, 1 thread: 8 rows x 1 tile 139-145 GFLOPS,
  // 2 x 4 tiles 163-172 (at 64 x 64: 162 -> 171). (At 28 x 28, ResNet-18's
  // 4 tiles of 7 columns, 2 x 4 tiles ran the model 24 -> 37 ms: 7 x 1
  // stays.)
  int64_t row_tiles = 1;
  if (l1_blocked && row && !(*weight_uses)[spatialPosition(info, *row)] && dims[*row].extent &&
      rest(*row) >= 2 * kMaxRowCacheBlock) {
    row_tiles = largestDivisorAtMost(rest(*row), std::min(kMaxRowCacheBlock, l1_tiles));
    l1_tiles /= row_tiles;
  }
  // S2, packed: the panels of one reduction block that fit in L2, and a
  // block of rows; L1-blocked (above): the register tiles that share a
  // chunk of the weight; otherwise 1.
  auto cache_block = [&](size_t d, int64_t iters) -> int64_t {
    if (l1_blocked) {
      if (d == vec || d == col || (*weight_uses)[spatialPosition(info, d)]) return 1;
      if (row_tiles > 1 && d == *row) return largestDivisorAtMost(iters, row_tiles);
      const int64_t s2 = largestDivisorAtMost(iters, l1_tiles);
      l1_tiles /= s2;
      return s2;
    }
    if (!packed || info.reduce.empty() || !dims[info.reduce[0]].extent) return 1;
    const PackedCacheBlocks blocks = packedCacheBlocks(target);
    const int64_t row_bytes = inner_reduce(info.reduce[0]) * element_bytes;  // of the other operand
    const int64_t panel_bytes = row_bytes * vf;
    if (d == vec)
      return largestDivisorAtMost(iters, std::max<int64_t>(1, blocks.panel_bytes / (panel_bytes * vregs)));
    if (d == row)
      return largestDivisorAtMost(iters, std::max<int64_t>(1, blocks.row_bytes / (row_bytes * rf)));
    return 1;
  };
  int64_t parallel_iters = 1;
  std::vector<int64_t> s0_factor(dims.size(), 1);
  // A single dimension's parallel iterations that the cores do not divide
  // (7 output-channel blocks: 4 + 3 on 2 cores) take a factor of a later
  // dimension that evens them out (7 x 2 row halves: 7 + 7), where the
  // largest share is more than 5% above the mean and no input is padded
  // (each parallel tile would pad its part again, with its halo).
  const int64_t cores = std::max(1, target.num_cores);
  auto unbalanced = [&](int64_t iters) { return (iters + cores - 1) / cores * cores * 20 > iters * 21; };
  bool padded_input = false;
  for (const Stage& st : stagesOf(sch.func())) padded_input |= st.padding;
  for (size_t d : info.spatial) {
    Dim& dim = dims[d];
    if (!dim.extent || *dim.extent <= 1) continue;
    int64_t s0 = 1;
    if (single ? d == *single : parallel_iters < wanted)
      s0 = smallestDivisorAtLeast(rest(d), (wanted + parallel_iters - 1) / parallel_iters);
    else if (single && parallel_iters > 1 && unbalanced(parallel_iters) && !padded_input && d != vec &&
             d != col)
      for (int64_t f = 2; f <= rest(d) && s0 == 1; ++f)
        if (rest(d) % f == 0 && !unbalanced(parallel_iters * f)) s0 = f;
    parallel_iters *= s0;
    s0_factor[d] = s0;
    const int64_t s2 = cache_block(d, rest(d) / s0);
    if (d == vec && vregs > 1)
      dim.parts = tileLoop(sch, dim.loop, {s0, rest(d) / s0 / s2, s2, vregs, vf});
    else
      dim.parts = tileLoop(sch, dim.loop, {s0, rest(d) / s0 / s2, s2, *dim.extent / rest(d)});
  }
  // Packed, the reduction block's loop is unrolled by kPackedReduceUnroll
  // under the register tile's loops: four steps of the tile per iteration
  // (the loop's counter and branch no longer share the FMA ports every 16
  // FMAs).
  std::optional<LoopRV> reduce_unrolled;
  for (size_t d : info.reduce) {
    Dim& dim = dims[d];
    if (!dim.extent || *dim.extent <= 1) continue;
    const int64_t r1 = r1_extent[d];
    if (packed && info.reduce.size() == 1 && r1 > kPackedReduceUnroll && r1 % kPackedReduceUnroll == 0) {
      dim.parts = tileLoop(sch, dim.loop, {*dim.extent / r1, r1 / kPackedReduceUnroll, kPackedReduceUnroll});
      reduce_unrolled = dim.parts[2];
    } else {
      dim.parts = tileLoop(sch, dim.loop, {*dim.extent / r1, r1});
    }
  }

  // The column blocks of the register tile go outside its rows (each
  // weight vector loaded once, LLVM keeping the rows' broadcasts live across
  // the cf vectors) unless those rf broadcasts, the rf x cf accumulators
  // and a weight vector exceed the 32 registers; then inside the rows, next
  // to the vector (a row's broadcast used by the cf vectors at once). 8 x 3
  // spilled a register per step: GoogLeNet's 3x3 64 -> 192 at 56 x 56, 4.31
  // -> 4.14 ms a call (medians of 8 alternating rounds). With room (8 x 2),
  // inside ran an R(2+1)D convolution 41.1 -> 44.3 ms (its accumulators'
  // addresses were spilled instead).
  const bool col_inside_rows = col && rf * cf + rf + 1 > kVectorRegisters;
  // Packed, the rows' S1 goes inside R0 (row_blocks): one reduction
  // block's panels stay in L2 while every row block of the parallel tile
  // sweeps them (GotoBLAS's jc, pc, ic order) instead of coming again from
  // memory for each row block.
  std::vector<LoopRV> s0, s1, r0, row_blocks, s2, r1, s3;
  for (size_t d : info.spatial) {
    const Dim& dim = dims[d];
    if (dim.parts.empty()) {
      s0.push_back(dim.loop);
      continue;
    }
    s0.push_back(dim.parts[0]);
    (packed && d == row ? row_blocks : s1).push_back(dim.parts[1]);
    if (!(packed && d == row)) s2.push_back(dim.parts[2]);
    if (d != vec && d != row && !(d == col && col_inside_rows)) s3.push_back(dim.parts[3]);
  }
  // Packed: the rows' S2 outside the panels' (a register tile's rows stay
  // in L1 while the block's panels stream past them from L2).
  if (packed && row) s2.insert(s2.begin(), dims[*row].parts[2]);
  if (row) s3.push_back(dims[*row].parts[3]);
  if (col && col_inside_rows) s3.push_back(dims[*col].parts[3]);
  if (vec) s3.insert(s3.end(), dims[*vec].parts.begin() + 3, dims[*vec].parts.end());
  for (size_t d : info.reduce) {
    const Dim& dim = dims[d];
    r0.push_back(dim.parts.empty() ? dim.loop : dim.parts[0]);
    if (!dim.parts.empty()) r1.push_back(dim.parts[1]);
  }
  if (reduce_unrolled) r1.push_back(*reduce_unrolled);
  std::vector<LoopRV> order;
  for (const auto* level : {&s0, &s1, &r0, &row_blocks, &s2, &r1, &s3})
    order.insert(order.end(), level->begin(), level->end());
  if (order.size() > 1) sch.reorder(order);

  // Padding goes under the innermost S0 loop (right before it is read)
  // only when each parallel iteration pads its own part: every dimension
  // with S0 iterations indexes the padded operand (a split of the output
  // channels would have all iterations pad the same input). The epilogue
  // goes under the last S1 loop outside R0, where each tile is done.
  auto pad_per_tile = [&](const std::string& pad) {
    if (s0.empty()) return false;
    std::set<const BufferNode*> written;
    forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
      if (x.name == pad)
        for (const auto& w : writeBuffers(x)) written.insert(w.get());
    });
    for (size_t p = 0; p < info.spatial.size(); ++p) {
      const Dim& dim = dims[info.spatial[p]];
      const bool parallel_part = dim.extent ? s0_factor[info.spatial[p]] > 1 : true;
      if (parallel_part && !(written.count(a_buffer) && info.a_uses[p]) &&
          !(written.count(b_buffer) && info.b_uses[p]))
        return false;
    }
    return true;
  };
  std::optional<LoopRV> tile = !s1.empty()   ? std::optional(s1.back())
                               : !s0.empty() ? std::optional(s0.back())
                                             : std::nullopt;
  bool after_anchor = false;
  for (const Stage& st : stagesOf(sch.func())) {
    if (pack_copy && st.name == *pack_copy) continue;  // scheduled by packVectorOperand
    if (st.name == anchor) {
      after_anchor = true;
      continue;
    }
    BlockRV e = sch.getBlock(st.name);
    if (!after_anchor && st.padding && pad_per_tile(st.name) && attempt([&] { sch.computeAt(e, s0.back()); }))
      vectorizeInnermost(sch, e);
    else if (after_anchor && tile && st.info.kind == BlockKind::Injective &&
             attempt([&] { sch.reverseComputeAt(e, *tile); }))
      vectorizeInnermost(sch, e);
    else
      scheduleStandalone(sch, e, st, target);
  }

  parallelizeLoops(sch, s0, work, WorkUnit::MultiplyAdds, target);
  // decompose_reduction refuses while the epilogue sits under the loop the
  // init would go before (llvm_common.h, decomposeReduction): then the init
  // stays in the block. An init ahead of a one-block reduction that would
  // not stay in L1 zeroes each register tile right before its reduction.
  const int64_t l1 = target.cpu.l1d_cache_bytes > 0 ? target.cpu.l1d_cache_bytes : 32 * 1024;
  if (auto init = decomposeReduction(sch, blk, l1)) vectorizeInnermost(sch, *init);
  if (vec) sch.vectorize(dims[*vec].parts.back());
  if (vregs > 1) sch.unroll(dims[*vec].parts[3]);
  if (row) sch.unroll(dims[*row].parts[3]);
  if (col) sch.unroll(dims[*col].parts[3]);
  if (reduce_unrolled) sch.unroll(*reduce_unrolled);
  return true;
}

bool applyMatmulRule(Schedule& sch, const target::Target& target) {
  std::optional<std::string> anchor;
  for (const Stage& st : stagesOf(sch.func())) {
    if (st.info.kind == BlockKind::MatmulLike) {
      if (anchor) return false;
      anchor = st.name;
    } else if (st.info.kind != BlockKind::Injective) {
      return false;
    }
  }
  if (!anchor) return false;
  bool small_batch = false;
  forEachBlock(sch.func().body, [&](const BlockNode& b, const StmtPath&) {
    if (b.name == *anchor) small_batch = smallBatchMatmul(b, analyzeBlock(b));
  });
  if (small_batch) {
    Schedule trial(sch.func());
    bool applied = false;
    if (attempt([&] { applied = scheduleRfactorGemv(trial, *anchor, target); }) && applied) {
      sch = std::move(trial);
      return true;
    }
  }
  return scheduleTiledAnchor(sch, *anchor, target);
}

}  // namespace mlcc::schedule::cpu
