// convert-layout: puts convolutions into the blocked channel layout (TVM's
// AlterOpLayout/ConvertLayout for x86's conv2d_NCHWc) and keeps the
// elementwise ops between them there, so that a chain of convolutions and
// their bias, activation and residual adds converts only at its edges:
//   - y = conv2d(x, w) (f32, NCHW shapes static but for a symbolic batch
//     (batchDims); grouped with blocks that
//     divide each group's channels: depthwise, or RegNet's 8-channel groups;
//     not one to fewer than 8 channels over rows of a vector or more)
//     becomes yb = conv2d_nchwc(xb, wb) with xb = x in NCHW{ib}c (or the
//     blocked value x already has), wb = layout_transform(w, OIHW ->
//     OIHW{ib}i{ob}o) (a constant weight: fold-constants packs it at compile
//     time), and y = layout_transform(yb, NCHW{ob}c -> NCHW) for the uses
//     that still want NCHW;
//   - y = conv2d_transpose(x, w) without dilation (each of its stride x
//     stride output phases a plain convolution with kernel / stride taps,
//     the kernel padded with zero taps to a multiple of the stride) becomes
//     one conv2d to O * s * s channels (grouped as it was), blocked as
//     above, and a depth-to-space of its result, the padding cut
//     (convertTransposedConv);
//   - max/avg and global pools of a blocked value pool it blocked (their
//     `layout` attribute), sum/mean/max/min over its H and W reduce it
//     blocked (convertReduce), a pad of its H and W pads it blocked; a concat
//     along the channels of blocked values
//     (each part's channels a multiple of the block) concatenates blocks;
//   - z = op(a, ...) of pattern elementwise/broadcast whose result has the
//     NCHW shape of an operand that has a blocked value computes in that
//     blocked layout when every other operand can follow: a blocked value of
//     the same block, an NCHW tensor of the result's shape (transformed), a
//     per-channel [C, 1, 1] / [1, C, 1, 1] tensor (transformed: a constant
//     bias folds), or a tensor of ones' shape (broadcasts as it is).
//   - y = dense(x, w) with a constant weight w [N, K], or y = matmul(x, w)
//     with a constant 2-D w [K, N] (or [1, .., K, N] where x has as many
//     dimensions: an einsum's product without batch axes), f32, over at least kMinPackRows rows of
//     x (static) and N at least `block` (padded with zero columns to a
//     multiple of it, the extra columns dropped), becomes y = dense_pack(x, wp)
//     with wp = layout_transform(w, NK (or KN) -> NK{block}n): the weight
//     in panels of one vector that the matmul rule's register tile reads
//     contiguously, packed at compile time by fold-constants (the rule
//     would otherwise pack it on every call: the BERT-style encoder of the
//     wider bench models, 1 thread, 6.2 -> 5.6 ms, min of 6 alternating
//     medians). One row stays as it is (the GEMV rule reads the weight
//     as it is, contiguous along k); from 2 rows on the matmul rule tiles
//     the output, whose vector would otherwise read an unpacked [N, K]
//     weight with a stride (a gather: the Transformer's 16-token
//     out-projection, 64 x 64, ran at 4 GFLOPS), and a small batch reuses
//     each packed vector over its rows where the GEMV rule's rfactor
//     schedule adds up vector partial sums per output (an LSTM step,
//     [4, 128] x [128, 512]: 43 GFLOPS unpacked, 107 packed, 1 thread).
//   - a dense_pack over rows that the matmul rule cannot tile by at least
//     half of its 8 register rows (a prime count: ViT's 197 tokens) gets
//     its rows padded with zeros to a multiple of 8, and a matmul of two
//     values (attention's scores and context) its rows and its columns
//     (padded to a multiple of `block`, the vector; also columns that only
//     a vector of no power of two divides: paddedColumns) likewise; a
//     strided_slice drops the padding's products (see paddedExtent).
// The block of C channels is the largest divisor of C up to `block` (the
// vector lanes), or the largest power-of-two divisor when it is at least
// half of that (24 -> 8, 3 -> 3). A convolution's channels that such a
// block would cut into narrow vectors (more than `block` of them, and a
// multiple of `block` at most a quarter more: 40 -> 48, 88 -> 96, 248 ->
// 256; 24 stays in blocks of 8), or that it would cut into blocks of an
// odd lane count when a multiple of `block` at most twice as many holds
// them (9 -> 16, 21 -> 32: ESPCN's last convolution to 9 channels ran on
// 9-lane vectors at 20 GFLOPS), are padded with zero channels to that
// multiple instead: a pad before the transform into the blocked layout,
// zero weights and biases for them (folded), a strided_slice after the
// transform back. MNASNet 1.3's 1 x 1 convolution 1488 -> 248 on 7 x 7
// ran on 8-lane vectors at 44-68 GFLOPS (the model, 1 thread, 10.5 -> 9.1
// ms). The padded channels hold zeros after a convolution; the ops allowed
// to follow one in the blocked layout (padSafe) keep them finite, so that
// the next convolution's zero weights cancel them (0 * NaN would not); a
// concat of padded values converts back. The conversions back to NCHW
// that nothing reads are removed; other values left unused (the NCHW
// weights, biases) are for dead-code-elimination. Assumes the module
// verifies; the result verifies and computes the same (tests run both
// through the interpreter).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "../pass_registry.h"
#include "mlcc/ops/layout.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

struct Stats {
  int convs = 0, ops = 0, dense = 0, padded = 0;
};

// Rows of a dense/matmul operand from which its constant weight is packed
// (a weight that is not constant keeps the rules' rfactor schedule up to
// kMaxRfactorBatch rows, llvm_common.h).
constexpr int64_t kMinPackRows = 2;
// Convolutions with fewer output channels than this stay in NCHW where
// their rows are at least a vector long (convertConv).
constexpr int64_t kFewOutputChannels = 8;
// The register rows of the matmul rule's tile of a dense_pack
// (kMaxRegisterRows, schedule/src/rules/llvm_common.h).
constexpr int64_t kRegisterRows = 8;

int64_t channelBlock(int64_t channels, int64_t max_block) {
  int64_t d = 1;
  for (int64_t f = std::min(channels, max_block); f >= 1; --f)
    if (channels % f == 0) {
      d = f;
      break;
    }
  int64_t p = 1;
  while (channels % (p * 2) == 0 && p * 2 <= max_block) p *= 2;
  return (d & (d - 1)) != 0 && p * 2 >= d ? p : d;
}

int64_t roundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// `channels` padded to a multiple of `max_block` where the block would
// otherwise be narrower (see the header), else `channels`.
int64_t paddedChannels(int64_t channels, int64_t max_block) {
  const int64_t padded = roundUp(channels, max_block), block = channelBlock(channels, max_block);
  if (block >= max_block) return channels;
  const bool odd_lanes = (block & (block - 1)) != 0;  // 9, 7 lanes: vectors LLVM splits or masks
  const bool pad = (channels > max_block && padded * 4 <= channels * 5) ||
                   (odd_lanes && channels * 2 > max_block && padded <= channels * 2);
  return pad ? padded : channels;
}

// Elementwise ops that keep padded channels finite: on the zeros (or
// finite values) of padded channels, and per-channel operands padded with
// zeros, they give finite values. `divide` only by an operand that is not
// per channel (a scalar).
bool padSafe(const std::string& op) {
  static const std::set<std::string> safe = {
      "add",        "subtract", "multiply", "maximum",      "minimum",    "ewise_fma", "relu",
      "leaky_relu", "clip",     "sigmoid",  "hard_sigmoid", "hard_swish", "silu",      "tanh",
      "gelu",       "elu",      "selu",     "abs",          "negative",   "softsign"};
  return safe.count(op) > 0;
}

bool staticDims(const ir::Type& t, std::vector<int64_t>* dims) {
  return t.isTensor() && ops::staticShape(t.shape, dims);
}

class LayoutConverter {
 public:
  LayoutConverter(int64_t max_block, Stats& stats) : max_block_(max_block), stats_(stats) {}

  // staticDims, where a symbolic batch (a first dimension that is a
  // variable: a model exported with a dynamic batch axis) counts as static:
  // it reads as a negative number, the same for the same variable. Blocking
  // only needs the channels and the image static; the blocked ops and their
  // transforms keep the batch's expression (their types are inferred). A
  // dynamic-batch ShuffleNet had stayed in NCHW, 4x slower.
  bool batchDims(const ir::Type& t, std::vector<int64_t>* dims) {
    if (!t.isTensor() || t.shape.empty()) return staticDims(t, dims);
    const auto* batch = t.shape[0]->as<ir::VarNode>();
    std::vector<ir::PrimExpr> rest(t.shape.begin() + (batch ? 1 : 0), t.shape.end());
    if (!ops::staticShape(rest, dims)) return false;
    if (batch) {
      auto [it, added] = batch_ids_.try_emplace(batch, -1 - static_cast<int64_t>(batch_ids_.size()));
      dims->insert(dims->begin(), it->second);
    }
    return true;
  }

  void run(ir::GraphFunc& f) {
    for (auto& block : f.blocks) {
      std::vector<ir::Binding> out;
      transformed_.clear();
      for (auto& b : block.bindings) {
        out_ = &out;
        if (b.value.kind == ir::ValueKind::Const) constants_.insert(b.var.get());
        if (!convertConv(b) && !convertTransposedConv(b) && !convertPool(b) && !convertPad(b) &&
            !convertConcat(b) && !convertElementwise(b) && !convertReduce(b) && !packDenseWeight(b) &&
            !padMatmul(b))
          out.push_back(std::move(b));
      }
      block.bindings = std::move(out);
    }
    dropUnusedConversionsBack(f);
  }

 private:
  struct Blocked {
    ir::GraphVar var;  // the value in NCHW{block}c
    int64_t block;
  };

  // Appends `var` = op(args, attrs) (attributes normalized); a null `var`
  // becomes a new one named `name` of the inferred type. Returns the var.
  ir::GraphVar emit(ir::GraphVar var, const std::string& name, const std::string& op,
                    std::vector<ir::GraphVar> args, const ir::Attrs& attrs) {
    std::vector<ir::Type> types;
    for (const auto& a : args) types.push_back(a->type);
    ir::Binding nb;
    nb.value.kind = ir::ValueKind::Op;
    nb.value.callee = op;
    nb.value.attrs = ops::normalizeAttrs(*ops::findOp(op), attrs);
    nb.value.args = std::move(args);
    nb.var = var ? std::move(var) : ir::makeGraphVar(name, ops::inferOpType(op, types, nb.value.attrs));
    out_->push_back(nb);
    return nb.var;
  }
  ir::GraphVar emit(const std::string& name, const std::string& op, std::vector<ir::GraphVar> args,
                    const ir::Attrs& attrs) {
    return emit(nullptr, name, op, std::move(args), attrs);
  }

  static ir::Attrs layouts(const std::string& from, const std::string& to) {
    return {{"src_layout", ir::AttrValue(from)}, {"dst_layout", ir::AttrValue(to)}};
  }

  // strided_slice attributes keeping the first ends[i] elements of axes[i]
  // (dropping the padding added after them).
  static ir::Attrs keepLeading(const std::vector<int64_t>& axes, const std::vector<int64_t>& ends) {
    return {{"axes", ir::AttrValue::ints(axes)},
            {"begin", ir::AttrValue::ints(std::vector<int64_t>(axes.size(), 0))},
            {"end", ir::AttrValue::ints(ends)}};
  }

  // One layout_transform per value and layout in a block: a constant
  // weight that several ops use (an unrolled recurrence's weights, tied
  // weights) is packed once, not once per use.
  ir::GraphVar transform(const ir::GraphVar& x, const std::string& from, const std::string& to,
                         const std::string& name) {
    ir::GraphVar& known = transformed_[{x.get(), from + "->" + to}];
    if (!known) known = emit(name, "layout_transform", {x}, layouts(from, to));
    return known;
  }

  // `x` (of rank `rank`) with zeros appended along `axis` up to `extent`
  // (itself when it has that many), once per value, axis and extent.
  ir::GraphVar padTo(const ir::GraphVar& x, size_t rank, size_t axis, int64_t extent,
                     const std::string& name) {
    std::vector<int64_t> xs;
    if (!batchDims(x->type, &xs) || xs.size() != rank || xs[axis] < 0)  // (< 0: a symbolic batch)
      throw Error("convert-layout: padding " + x->name + " needs a shape of rank " + std::to_string(rank) +
                  " static along axis " + std::to_string(axis));
    if (xs[axis] == extent) return x;
    ir::GraphVar& known =
        transformed_[{x.get(), "pad" + std::to_string(axis) + ":" + std::to_string(extent)}];
    if (!known) known = padAxis(x, rank, axis, extent - xs[axis], name);
    return known;
  }

  // The name of the blocked form of `v`: "<v>_nchw16c".
  static std::string blockedName(const ir::GraphVar& v, int64_t block) {
    return v->name + "_nchw" + std::to_string(block) + "c";
  }

  // x (NCHW) in NCHW{block}c: its blocked value, or a new transform (after
  // zero channels up to a multiple of the block).
  ir::GraphVar blockedInput(const ir::GraphVar& x, int64_t block) {
    auto it = blocked_.find(x.get());
    if (it != blocked_.end() && it->second.block == block) return it->second.var;
    std::vector<int64_t> xs;
    const bool known = batchDims(x->type, &xs) && xs.size() == 4;
    const ir::GraphVar xp = known ? padTo(x, 4, 1, roundUp(xs[1], block), x->name + "_padded_channels") : x;
    return transform(xp, "NCHW", ops::nchwcLayout(block), blockedName(x, block));
  }

  // `b` now computed in NCHW{block}c as op(args, attrs): appends that
  // binding and `b`'s var as its transform back to NCHW (for the uses that
  // want NCHW; padded channels dropped by a strided_slice), and records the
  // blocked value.
  void finish(const ir::Binding& b, int64_t block, const std::string& op, std::vector<ir::GraphVar> args,
              const ir::Attrs& attrs) {
    const ir::GraphVar yb = emit(blockedName(b.var, block), op, std::move(args), attrs);
    std::vector<int64_t> ys;
    if (batchDims(b.var->type, &ys) && ys.size() == 4 && ys[1] % block != 0) {
      const ir::GraphVar yp = emit(b.var->name + "_padded_channels", "layout_transform", {yb},
                                   layouts(ops::nchwcLayout(block), "NCHW"));
      emit(b.var, "", "strided_slice", {yp}, keepLeading({1}, {ys[1]}));
      back_.insert(yp.get());
    } else {
      emit(b.var, "", "layout_transform", {yb}, layouts(ops::nchwcLayout(block), "NCHW"));
    }
    back_.insert(b.var.get());
    blocked_[b.var.get()] = {yb, block};
  }

  bool convertConv(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "conv2d" || v.args.size() != 2) return false;
    std::vector<int64_t> xs, ws, ys;
    if (!batchDims(v.args[0]->type, &xs) || !staticDims(v.args[1]->type, &ws) || !batchDims(b.var->type, &ys))
      return false;
    if (xs.size() != 4 || ws.size() != 4 || b.var->type.dtype != ir::DType::f32) return false;
    const int64_t groups = ops::attrInt(ops::normalizeAttrs(*ops::findOp("conv2d"), v.attrs), "groups"),
                  channels = xs[1], out_channels = ws[0];
    const bool depthwise = groups > 1 && groups == channels && out_channels == channels && ws[1] == 1;
    if (groups < 1 || channels % groups != 0 || out_channels % groups != 0) return false;
    // Grouped (not depthwise): blocks that divide each group's channels.
    const int64_t group_in = channels / groups, group_out = out_channels / groups;
    // A few output channels (an image's 3) over rows of at least a vector:
    // the NCHW conv2d vectorizes along the rows instead of over 3 lanes
    // (a style-transfer network's last 9 x 9 convolution to RGB at 224 x
    // 224, 1 thread: 53 -> 5.1 ms).
    if (groups == 1 && out_channels < kFewOutputChannels && ys[3] >= max_block_) return false;
    // Groups of 1 and depthwise may pad their channels (see the header): a
    // depthwise convolution its input's (its vectors run along them), a
    // convolution of groups 1 its outputs (an input that is not blocked yet
    // keeps its channels: they are the reduction, read one at a time), and
    // both the padded input of a blocked value.
    const bool may_pad = depthwise || groups == 1;
    auto known = blocked_.find(v.args[0].get());
    int64_t ib = known != blocked_.end() && (may_pad || group_in % known->second.block == 0)
                     ? known->second.block
                     : channelBlock(depthwise ? paddedChannels(channels, max_block_) : group_in, max_block_);
    int64_t ob = depthwise     ? ib
                 : groups == 1 ? channelBlock(paddedChannels(out_channels, max_block_), max_block_)
                               : channelBlock(group_out, max_block_);
    if (!depthwise && groups > 1 && (ib < 2 || ob < 2)) return false;  // a group narrower than a block pair
    const ir::GraphVar xb = blockedInput(v.args[0], ib);
    const std::string wl = "OIHW" + std::to_string(depthwise ? 1 : ib) + "i" + std::to_string(ob) + "o";
    ir::GraphVar w = v.args[1];
    ir::Attrs attrs = v.attrs;
    if (may_pad) {  // zero weights for the padded channels (none where the blocks divide them)
      const int64_t padded_in = roundUp(channels, ib);
      w = padTo(w, 4, 0, depthwise ? padded_in : roundUp(out_channels, ob), w->name + "_padded_out");
      if (!depthwise) w = padTo(w, 4, 1, padded_in, v.args[1]->name + "_padded_in");
      if (depthwise) attrs["groups"] = ir::AttrValue(padded_in);
    }
    const ir::GraphVar wb = transform(w, "OIHW", wl, v.args[1]->name + "_" + wl);
    finish(b, ob, "conv2d_nchwc", {xb, wb}, attrs);
    ++stats_.convs;
    return true;
  }

  // y = conv2d_transpose(x, w) (U-Net's 2 x 2 / 2, DCGAN's 4 x 4 / 2,
  // ENet's 3 x 3 / 2 with output padding, depthwise ones), no dilation:
  // output row u = s q + r (before the padding is cut) takes the taps k =
  // s j + r, from input rows q - j, so each of the s x s phases (r, r') is a
  // plain convolution of x with the m x m taps (m = k / s) of its phase,
  // flipped: one conv2d to O * s * s channels with the op's groups (the
  // weight [C, O/g, k, k] as [g O/g s s, C/g, m, m], folded; blocked as
  // every conv2d) over x padded by m - 1, then a
  // depth-to-space of its result ([N, O, s, s, Q, Q'] -> [N, O, Q, s, Q', s])
  // and the padding cut. The op's own legalization visits all k x k taps
  // for every output and skips all but (k / s)^2 (U-Net's 256 -> 128 of 16
  // x 16, 1 thread, 14.6 ms; DCGAN's generator 24x ONNX Runtime).
  bool convertTransposedConv(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "conv2d_transpose" || v.args.size() != 2) return false;
    std::vector<int64_t> xs, ws, ys;
    if (!staticDims(v.args[0]->type, &xs) || !staticDims(v.args[1]->type, &ws) ||
        !staticDims(b.var->type, &ys) || xs.size() != 4 || ws.size() != 4 ||
        b.var->type.dtype != ir::DType::f32)
      return false;
    const ir::Attrs a = ops::normalizeAttrs(*ops::findOp("conv2d_transpose"), v.attrs);
    const std::vector<int64_t> strides = ops::attrInts(a, "strides"), pads = ops::attrInts(a, "padding"),
                               dilation = ops::attrInts(a, "dilation");
    // Weight [C, O / g, k, k]: o output channels per group, O = g * o in all.
    const int64_t g = ops::attrInt(a, "groups"), c = ws[0], o = ws[1], sh = strides[0], sw = strides[1];
    if (dilation != std::vector<int64_t>{1, 1} || g < 1 || c % g != 0) return false;
    const int64_t mh = roundUp(ws[2], sh) / sh, mw = roundUp(ws[3], sw) / sw, n = xs[0], qh = xs[2] + mh - 1,
                  qw = xs[3] + mw - 1;
    // The output (padding cut, output padding added) within the phases' rows.
    if (pads[0] + ys[2] > qh * sh || pads[1] + ys[3] > qw * sw) return false;
    const std::string name = b.var->name;
    auto shape = [](std::vector<int64_t> dims) { return ir::Attrs{{"shape", ir::AttrValue::ints(dims)}}; };
    auto axes = [](std::vector<int64_t> dims) { return ir::Attrs{{"axes", ir::AttrValue::ints(dims)}}; };
    // A kernel that the stride does not divide gets zero taps at its end (3
    // x 3 / 2 as 4 x 4 / 2: every phase has 2 x 2 taps): they add nothing to
    // the outputs it had, and reach only rows past them, which are cut.
    const ir::GraphVar w = padTo(padTo(v.args[1], 4, 2, mh * sh, v.args[1]->name + "_whole_phases_h"), 4, 3,
                                 mw * sw, v.args[1]->name + "_whole_phases");
    ir::GraphVar w2 = emit(w->name + "_phases", "reshape", {w}, shape({g, c / g, o, mh, sh, mw, sw}));
    if (mh > 1 || mw > 1)
      w2 = emit(w->name + "_flipped", "strided_slice", {w2},
                {{"axes", ir::AttrValue::ints({3, 5})},
                 {"begin", ir::AttrValue::ints({mh - 1, mw - 1})},
                 {"end", ir::AttrValue::ints({-mh - 1, -mw - 1})},
                 {"strides", ir::AttrValue::ints({-1, -1})}});
    // [g, o, s, s, C / g, m, m]: each group's outputs (and their phases) together.
    ir::GraphVar w3 = emit(w->name + "_phases_out", "permute_dims", {w2}, axes({0, 2, 4, 6, 1, 3, 5}));
    ir::GraphVar w4 = emit(w->name + "_as_conv", "reshape", {w3}, shape({g * o * sh * sw, c / g, mh, mw}));
    ir::Binding conv;
    conv.var = ir::makeGraphVar(
        name + "_phases",
        ir::Type::tensor(ir::DType::f32, {b.var->type.shape[0], ops::dimConst(g * o * sh * sw),
                                          ops::dimConst(qh), ops::dimConst(qw)}));
    conv.value.kind = ir::ValueKind::Op;
    conv.value.callee = "conv2d";
    conv.value.args = {v.args[0], w4};
    if (mh > 1 || mw > 1) conv.value.attrs["padding"] = ir::AttrValue::ints({mh - 1, mw - 1, mh - 1, mw - 1});
    if (g > 1) conv.value.attrs["groups"] = ir::AttrValue(g);
    if (!convertConv(conv)) out_->push_back(conv);
    ir::GraphVar y2 = emit(name + "_phases_split", "reshape", {conv.var}, shape({n, g * o, sh, sw, qh, qw}));
    ir::GraphVar y3 = emit(name + "_interleaved", "permute_dims", {y2}, axes({0, 1, 4, 2, 5, 3}));
    if (pads[0] == 0 && pads[1] == 0 && ys[2] == qh * sh && ys[3] == qw * sw) {
      emit(b.var, "", "reshape", {y3}, shape({n, g * o, qh * sh, qw * sw}));
    } else {
      ir::GraphVar full = emit(name + "_uncut", "reshape", {y3}, shape({n, g * o, qh * sh, qw * sw}));
      emit(b.var, "", "strided_slice", {full},
           {{"axes", ir::AttrValue::ints({2, 3})},
            {"begin", ir::AttrValue::ints({pads[0], pads[1]})},
            {"end", ir::AttrValue::ints({pads[0] + ys[2], pads[1] + ys[3]})}});
    }
    ++stats_.convs;
    return true;
  }

  // dense / 2-D matmul with a constant weight -> dense_pack (see the header).
  bool packDenseWeight(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || (v.callee != "dense" && v.callee != "matmul") || v.args.size() != 2)
      return false;
    const ir::GraphVar& x = v.args[0];
    ir::GraphVar w = v.args[1];
    std::vector<int64_t> xs, ws;
    // x's rows may be symbolic (a dynamic batch: xs has -1 there); then the
    // weight is packed whatever their number at run time and they are not
    // padded. Unpacked, the vector read the [N, K] weight with a stride (a
    // dynamic-batch MobileNetV2's classifier at batch 4: 2.4 ms, 2 GFLOPS).
    const bool symbolic_rows = !staticDims(x->type, &xs) && rowsSymbolic(x->type, &xs);
    if (!constants_.count(w.get()) || xs.empty() || !staticDims(w->type, &ws) || ws.size() < 2 ||
        xs.size() < (v.callee == "matmul" ? 2u : 1u) || b.var->type.dtype != ir::DType::f32 ||
        w->type.dtype != ir::DType::f32)
      return false;
    // A matmul's weight with unit batch dimensions ([1, K, N]: an einsum's
    // product without batch axes) broadcasts over x's batch as [K, N] does,
    // when x has at least as many dimensions (the result's shape is x's).
    if (ws.size() > 2) {
      if (v.callee != "matmul" || xs.size() < ws.size() ||
          std::any_of(ws.begin(), ws.end() - 2, [](int64_t d) { return d != 1; }))
        return false;
      ws = {ws[ws.size() - 2], ws.back()};
      ir::GraphVar& known = transformed_[{w.get(), "matrix"}];
      if (!known) known = emit(w->name + "_matrix", "reshape", {w}, {{"shape", ir::AttrValue::ints(ws)}});
      w = known;
    }
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < xs.size(); ++i) rows *= xs[i];
    const std::string from = v.callee == "dense" ? "NK" : "KN";
    const int64_t n = v.callee == "dense" ? ws[0] : ws[1];
    if ((!symbolic_rows && rows < kMinPackRows) || max_block_ < 2 || (n % max_block_ != 0 && n < max_block_))
      return false;
    // Columns that the vector does not divide (a classifier's 1000) get
    // zero columns up to a multiple of it: 16-lane panels instead of 8-lane
    // vectors read from the unpacked weight (a 64-token GPT head, [64, 384]
    // x [384, 1000], 1 thread: 1.68 -> 0.47 ms; the model 9.5 -> 8.4 ms).
    const int64_t padded_n = roundUp(n, max_block_);
    const std::string packed = "NK" + std::to_string(max_block_) + "n";
    const ir::GraphVar wp =
        transform(padTo(w, 2, from == "NK" ? 0 : 1, padded_n, w->name + "_padded_columns"), from, packed,
                  w->name + "_" + packed);
    const int64_t padded = symbolic_rows ? rows : paddedRows(rows);
    const std::string name = b.var->name;
    if (padded == rows && padded_n == n) {
      emit(b.var, "", "dense_pack", {x, wp}, {});
    } else if (padded == rows) {  // the product's extra columns dropped
      const int64_t last = static_cast<int64_t>(xs.size()) - 1;
      ir::GraphVar yp = emit(name + "_padded", "dense_pack", {x, wp}, {});
      emit(b.var, "", "strided_slice", {yp}, keepLeading({last}, {n}));
      ++stats_.padded;
    } else {
      // x as [rows, K] padded with zero rows, the product's extra rows (and
      // columns) dropped.
      const int64_t k = xs.back();
      ir::GraphVar x2 =
          xs.size() == 2 ? x
                         : emit(name + "_rows", "reshape", {x}, {{"shape", ir::AttrValue::ints({rows, k})}});
      ir::GraphVar xp = padAxis(x2, 2, 0, padded - rows, name + "_padded_rows");
      ir::GraphVar yp = emit(name + "_padded", "dense_pack", {xp, wp}, {});
      const ir::Attrs keep = keepLeading({0, 1}, {rows, n});
      if (xs.size() == 2) {
        emit(b.var, "", "strided_slice", {yp}, keep);
      } else {
        ir::GraphVar y2 = emit(name + "_rows_out", "strided_slice", {yp}, keep);
        std::vector<int64_t> shape(xs.begin(), xs.end() - 1);
        shape.push_back(n);
        emit(b.var, "", "reshape", {y2}, {{"shape", ir::AttrValue::ints(shape)}});
      }
      ++stats_.padded;
    }
    ++stats_.dense;
    return true;
  }

  // The extent a matmul computes for `extent` rows (tile kRegisterRows) or
  // columns (tile: the vector lanes): `extent` when the matmul rule can
  // tile it by at least half a tile (a divisor from tile / 2 up to tile, or
  // an extent within one tile), else the next multiple of the tile (zeros
  // added, their products dropped) when the best tile would be 1 or the
  // padding adds at most a quarter (9 rows stay, tiled by 3, rather than
  // compute 16). Without it a prime extent, as ViT's 197 tokens (17 at
  // 64x64), tiles one row at a time, reading each weight panel once per row
  // ([17, 768] x [768, 2304] took 1.49 ms, [24, 768] 0.75 ms; [197, ...]
  // 17.3 ms, [200, ...] 6.8 ms, 1 thread), and 197 columns get no vector at
  // all (ViT-B/16's attention scores, [12, 197, 64] x [12, 64, 197], ran at
  // 3.6 GFLOPS, padded at 100).
  static int64_t largestDivisorAtMost(int64_t extent, int64_t tile) {
    for (int64_t d = tile; d > 1; --d)
      if (extent % d == 0) return d;
    return 1;
  }
  static int64_t paddedExtent(int64_t extent, int64_t tile) {
    if (extent <= tile) return extent;
    const int64_t best = largestDivisorAtMost(extent, tile);
    if (best * 2 >= tile) return extent;
    const int64_t padded = roundUp(extent, tile);
    return best == 1 || (padded - extent) * 4 <= extent ? padded : extent;
  }
  static int64_t paddedRows(int64_t rows) { return paddedExtent(rows, kRegisterRows); }
  // The dimensions of a tensor whose last one is static, -1 for each other
  // one that is not (a dynamic batch, or `batch * 17` after a flattening
  // reshape).
  static bool rowsSymbolic(const ir::Type& t, std::vector<int64_t>* dims) {
    dims->clear();
    int64_t last = 0;
    if (!t.isTensor() || t.shape.empty() || !ir::asConstInt(t.shape.back(), &last)) return false;
    for (size_t i = 0; i + 1 < t.shape.size(); ++i) {
      int64_t d = 0;
      dims->push_back(ir::asConstInt(t.shape[i], &d) ? d : -1);
    }
    dims->push_back(last);
    return true;
  }
  // Columns (the matmul rule's vector of `lanes`): as paddedExtent, and an
  // extent of more than two vectors whose best divisor is no power of two
  // is padded to a multiple of the vector when that adds at most a quarter:
  // 1500 = 100 x 15 took 15-lane vectors, which the register tile runs as
  // 8 + 4 + 2 + 1 lanes (a Whisper-style encoder's attention scores, [6,
  // 1500, 64] x [6, 64, 1500], 1 thread: 32 -> 13.5 ms a call, the crop of
  // the padded result 6.7 ms).
  static int64_t paddedColumns(int64_t cols, int64_t lanes) {
    const int64_t padded = paddedExtent(cols, lanes);
    if (padded != cols || cols <= 2 * lanes) return padded;
    const int64_t best = largestDivisorAtMost(cols, lanes);
    const int64_t up = roundUp(cols, lanes);
    return (best & (best - 1)) != 0 && (up - cols) * 4 <= cols ? up : cols;
  }

  // `t` (of rank `rank`) with `by` zeros appended along `axis` (itself when
  // `by` is 0).
  ir::GraphVar padAxis(const ir::GraphVar& t, size_t rank, size_t axis, int64_t by, const std::string& name) {
    if (by == 0) return t;
    std::vector<int64_t> widths(2 * rank, 0);
    widths[rank + axis] = by;
    return emit(name, "pad", {t}, {{"pad_width", ir::AttrValue::ints(widths)}});
  }

  // z = matmul(x, y) of values (no constant operand: those are packed
  // above), f32 and static, whose rows or columns tile badly (paddedExtent):
  // x's rows and y's columns padded with zeros, the product's extra rows
  // and columns dropped.
  bool padMatmul(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "matmul" || v.args.size() != 2 || !v.attrs.empty())
      return false;
    const ir::GraphVar &x = v.args[0], &y = v.args[1];
    std::vector<int64_t> xs, ys, zs;
    if (!staticDims(x->type, &xs) || !staticDims(y->type, &ys) || !staticDims(b.var->type, &zs) ||
        xs.size() < 2 || ys.size() < 2 || b.var->type.dtype != ir::DType::f32 ||
        x->type.dtype != ir::DType::f32 || y->type.dtype != ir::DType::f32 || max_block_ < 2)
      return false;
    const int64_t rows = xs[xs.size() - 2], cols = ys.back();
    // (Columns of fewer rows than a register tile stay: a GEMV's vector is
    // along its reduction.)
    const int64_t prows = paddedRows(rows), pcols = rows >= kRegisterRows ? paddedColumns(cols, max_block_)
                                                                          : paddedExtent(cols, max_block_);
    if (prows == rows && pcols == cols) return false;
    const std::string& name = b.var->name;
    ir::GraphVar xp = padAxis(x, xs.size(), xs.size() - 2, prows - rows, name + "_padded_rows");
    ir::GraphVar yp = padAxis(y, ys.size(), ys.size() - 1, pcols - cols, name + "_padded_columns");
    ir::GraphVar zp = emit(name + "_padded", "matmul", {xp, yp}, {});
    const int64_t r = static_cast<int64_t>(zs.size());
    emit(b.var, "", "strided_slice", {zp}, keepLeading({r - 2, r - 1}, {rows, cols}));
    ++stats_.padded;
    return true;
  }

  // sum/mean/max/min of a blocked value over its spatial axes (H, W)
  // reduces it blocked, keeping the reduced axes (the blocked result of an
  // NCHW one); without keepdims they are dropped after the transform back
  // (a reshape). PointNet's max over its points had gone back to NCHW
  // first: 12 of its 27 ms.
  bool convertReduce(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || !isAxesReduction(v.callee) || v.args.size() != 1 ||
        !ops::hasAttr(v.attrs, "axes"))
      return false;
    auto it = blocked_.find(v.args[0].get());
    std::vector<int64_t> xs, ys;
    if (it == blocked_.end() || !staticDims(v.args[0]->type, &xs) || !staticDims(b.var->type, &ys) ||
        xs.size() != 4)
      return false;
    std::vector<int64_t> axes = ops::attrInts(v.attrs, "axes");
    if (axes.empty()) return false;
    for (int64_t& a : axes) {
      if (a < 0) a += 4;
      if (a != 2 && a != 3) return false;
    }
    const ir::Attrs attrs = {{"axes", ir::AttrValue::ints(axes)}, {"keepdims", ir::AttrValue(true)}};
    const int64_t block = it->second.block;
    if (ops::hasAttr(v.attrs, "keepdims") && ops::attrBool(v.attrs, "keepdims")) {
      finish(b, block, v.callee, {it->second.var}, attrs);
    } else {
      ir::Binding kept;
      std::vector<ir::PrimExpr> shape = v.args[0]->type.shape;
      for (int64_t a : axes) shape[static_cast<size_t>(a)] = ir::makeInt(1);
      kept.var = ir::makeGraphVar(b.var->name + "_kept", ir::Type::tensor(b.var->type.dtype, shape));
      finish(kept, block, v.callee, {it->second.var}, attrs);
      emit(b.var, "", "reshape", {kept.var}, {{"shape", ir::AttrValue::ints(ys)}});
    }
    ++stats_.ops;
    return true;
  }

  // A pool of a blocked value pools it in its layout (the pool ops'
  // `layout` attribute).
  bool convertPool(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    static const std::set<std::string> pools = {"max_pool2d", "avg_pool2d", "global_avg_pool2d",
                                                "global_max_pool2d"};
    if (v.kind != ir::ValueKind::Op || !pools.count(v.callee) || v.args.size() != 1 ||
        v.attrs.count("layout"))
      return false;
    auto it = blocked_.find(v.args[0].get());
    if (it == blocked_.end()) return false;
    const int64_t block = it->second.block;
    ir::Attrs attrs = v.attrs;
    attrs["layout"] = ir::AttrValue(ops::nchwcLayout(block));
    finish(b, block, v.callee, {it->second.var}, attrs);
    ++stats_.ops;
    return true;
  }

  // A pad of a blocked value along H and W only (Inception-v3's explicit
  // Pad before its 3 x 3 average pools) pads it in its layout: pad_width
  // gains a 0 for the block's axis (each axis pads on its own, whatever
  // the mode). Inception-v3 (299^2, 1 thread): its four pool branches had
  // converted to NCHW and back, pooling along a 17-wide W (the pads and
  // pools 9 -> 1.5 ms).
  bool convertPad(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "pad" || v.args.size() != 1) return false;
    auto it = blocked_.find(v.args[0].get());
    std::vector<int64_t> xs;
    if (it == blocked_.end() || !batchDims(v.args[0]->type, &xs) || xs.size() != 4) return false;
    const std::vector<int64_t> pads = ops::attrInts(v.attrs, "pad_width");
    if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5]) return false;
    const int64_t block = it->second.block;
    ir::Attrs attrs = v.attrs;
    attrs["pad_width"] = ir::AttrValue::ints({0, 0, pads[2], pads[3], 0, 0, 0, pads[6], pads[7], 0});
    finish(b, block, "pad", {it->second.var}, attrs);
    ++stats_.ops;
    return true;
  }

  // A concat along the channels of blocked values concatenates their
  // blocks (each part's channels are a multiple of the block); parts
  // without a blocked value of that block are transformed.
  bool convertConcat(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "concat" || v.args.empty()) return false;
    std::vector<int64_t> ys;
    if (!staticDims(b.var->type, &ys) || ys.size() != 4) return false;
    const int64_t axis = ops::attrInt(v.attrs, "axis");
    if (axis != 1 && axis != -3) return false;
    std::optional<int64_t> block;
    for (const auto& a : v.args)
      if (auto it = blocked_.find(a.get()); it != blocked_.end() && !block) block = it->second.block;
    if (!block) return false;
    for (const auto& a : v.args) {
      std::vector<int64_t> as;
      if (!staticDims(a->type, &as) || as.size() != 4 || as[1] % *block != 0) return false;
    }
    std::vector<ir::GraphVar> args;
    for (const auto& a : v.args) args.push_back(blockedInput(a, *block));
    ir::Attrs attrs = v.attrs;
    attrs["axis"] = ir::AttrValue(int64_t{1});
    finish(b, *block, "concat", std::move(args), attrs);
    ++stats_.ops;
    return true;
  }

  bool convertElementwise(ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op) return false;
    const ops::OpDef* def = ops::findOp(v.callee);
    if (!def || (def->pattern != ops::OpPattern::Elementwise && def->pattern != ops::OpPattern::Broadcast))
      return false;
    std::vector<int64_t> ys;
    if (!batchDims(b.var->type, &ys) || ys.size() != 4) return false;
    std::optional<int64_t> block;
    for (const auto& a : v.args) {
      auto it = blocked_.find(a.get());
      std::vector<int64_t> as;
      if (it != blocked_.end() && batchDims(a->type, &as) && as == ys) {
        block = it->second.block;
        break;
      }
    }
    if (!block) return false;
    const bool padded_channels = ys[1] % *block != 0;
    if (padded_channels && !padSafe(v.callee) && v.callee != "divide") return false;
    // Plan every operand before emitting anything.
    enum class Use { Blocked, Transform, PerChannel3, PerChannel4, AsIs };
    std::vector<Use> uses;
    for (const auto& a : v.args) {
      std::vector<int64_t> as;
      if (!batchDims(a->type, &as)) return false;
      auto it = blocked_.find(a.get());
      bool ones = true;
      for (int64_t d : as) ones = ones && d == 1;
      if (as == ys)
        uses.push_back(it != blocked_.end() && it->second.block == *block ? Use::Blocked : Use::Transform);
      else if (ones)
        uses.push_back(Use::AsIs);
      else if (as == std::vector<int64_t>{ys[1], 1, 1})
        uses.push_back(Use::PerChannel3);
      else if (as == std::vector<int64_t>{1, ys[1], 1, 1})
        uses.push_back(Use::PerChannel4);
      else
        return false;
    }
    // A division of padded channels only by a scalar (never 0 / 0 there).
    if (padded_channels && v.callee == "divide" && (uses.size() != 2 || uses[1] != Use::AsIs)) return false;
    const int64_t channels = roundUp(ys[1], *block);
    std::vector<ir::GraphVar> args;
    for (size_t i = 0; i < v.args.size(); ++i) {
      const ir::GraphVar& a = v.args[i];
      const std::string name = blockedName(a, *block);
      switch (uses[i]) {
        case Use::Blocked: args.push_back(blocked_.at(a.get()).var); break;
        case Use::Transform: args.push_back(blockedInput(a, *block)); break;
        case Use::PerChannel3:
          args.push_back(transform(padTo(a, 3, 0, channels, a->name + "_padded_channels"), "CHW",
                                   "CHW" + std::to_string(*block) + "c", name));
          break;
        case Use::PerChannel4:
          args.push_back(transform(padTo(a, 4, 1, channels, a->name + "_padded_channels"), "NCHW",
                                   ops::nchwcLayout(*block), name));
          break;
        case Use::AsIs: args.push_back(a); break;
      }
    }
    finish(b, *block, v.callee, std::move(args), v.attrs);
    ++stats_.ops;
    return true;
  }

  // The conversions back to NCHW that nothing reads (inside a chain) go
  // now: a dead one would keep fuse-ops from fusing the convolution with
  // its epilogue (its result would have two consumers).
  void dropUnusedConversionsBack(ir::GraphFunc& f) {
    // Backwards, so that a padded transform back goes with its unused slice.
    std::set<const ir::GraphVarNode*> used;
    for (const auto& r : f.ret) used.insert(r.get());
    for (auto block = f.blocks.rbegin(); block != f.blocks.rend(); ++block) {
      std::vector<ir::Binding> kept;
      for (auto it = block->bindings.rbegin(); it != block->bindings.rend(); ++it) {
        if (back_.count(it->var.get()) && !used.count(it->var.get())) continue;
        for (const auto& a : it->value.args) used.insert(a.get());
        kept.push_back(std::move(*it));
      }
      block->bindings.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
    }
  }

  int64_t max_block_;
  std::unordered_map<const ir::VarNode*, int64_t> batch_ids_;  // batchDims
  Stats& stats_;
  std::set<const ir::GraphVarNode*> back_;       // the conversions back to NCHW
  std::set<const ir::GraphVarNode*> constants_;  // vars bound to constants
  std::vector<ir::Binding>* out_ = nullptr;
  std::map<const ir::GraphVarNode*, Blocked> blocked_;  // NCHW value -> its blocked value
  // (value, "FROM->TO") -> its layout_transform in the current block.
  std::map<std::pair<const ir::GraphVarNode*, std::string>, ir::GraphVar> transformed_;
};

}  // namespace

PassInfo makeConvertLayoutPass() {
  PassInfo p;
  p.name = "convert-layout";
  p.summary =
      "Put conv2d (groups 1, depthwise, or groups of whole channel blocks) and the elementwise ops, pools "
      "and concats between convolutions "
      "into the blocked channel layout NCHW[x]c (conv2d_nchwc, packed weights via layout_transform), and "
      "dense/matmul with constant weights over 2+ rows into dense_pack (weights in panels NK[x]n); matmul "
      "rows or columns that tile badly padded with zeros, and channel counts that the vector does not divide "
      "padded to whole vector blocks; conv2d_transpose as one conv2d over its stride x stride phases and a "
      "depth-to-space";
  p.options = {{"block", OptionKind::Int, "16",
                "The largest channel block (the vector lanes: 16 for AVX-512 f32, 8 for AVX2)"}};
  p.run = [](ir::Module& m, const PassOptions& opts, PassContext&) -> std::string {
    const int64_t block = opts.getInt("block");
    if (block < 1) throw Error("block must be >= 1, not " + std::to_string(block));
    Stats stats;
    for (auto& fn : m.functions) {
      auto* g = std::get_if<ir::GraphFunc>(&fn);
      if (!g || g->attrs.count("primitive")) continue;
      LayoutConverter(block, stats).run(*g);
    }
    if (!stats.convs && !stats.dense && !stats.padded) return "";
    return "converted " + std::to_string(stats.convs) + " conv2d(s) and " + std::to_string(stats.ops) +
           " op(s) between them (elementwise, pools, concats) to NCHW[x]c, packed the weights of " +
           std::to_string(stats.dense) + " dense/matmul(s) to NK[x]n" +
           (stats.padded
                ? ", padded " + std::to_string(stats.padded) + " matmul(s) whose rows or columns tile badly"
                : std::string());
  };
  return p;
}

}  // namespace mlcc::transform
