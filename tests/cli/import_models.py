#!/usr/bin/python3
"""Small ONNX models for tests/cli/import.sh, one per op form, made with
onnx.helper. For model NAME in OUT: NAME.onnx (input `x`, output `y`),
NAME.in.npy / NAME.out.npy (numpy reference) when it is run, NAME.expect
(regexes the imported IR must contain). err_*.onnx are error cases."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
F = TensorProto.FLOAT


def save(name, nodes, x, y_shape, y, opset=13, inits=(), expect=(), x_shape=None, x_type=F, ml=False):
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", x_type, x_shape if x_shape is not None else list(x.shape))],
        [helper.make_tensor_value_info("y", F, y_shape)],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("ai.onnx.ml", 5)] if ml else [])
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
    if x is not None:
        np.save(os.path.join(out, name + ".in.npy"), x)
        np.save(os.path.join(out, name + ".out.npy"), np.asarray(y, dtype=np.float32))
    with open(os.path.join(out, name + ".expect"), "w") as f:
        f.write("".join(e + "\n" for e in expect))


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


N = helper.make_node
x = r(3, 4)
a, c = r(4, 5), r(5)
a = r(3, 5)
save("gemm_trans_alpha", [N("Gemm", ["x", "a", "c"], ["y"], transA=1, alpha=0.5, beta=2.0)], x, [4, 5],
     0.5 * (x.T @ a) + 2.0 * c, inits=[("a", a), ("c", c)], expect=["permute_dims", "matmul", "multiply"])
w = r(5, 4)
save("gemm_dense", [N("Gemm", ["x", "w", "c"], ["y"], transB=1)], x, [3, 5], x @ w.T + c,
     inits=[("w", w), ("c", c)], expect=["dense("])

# Einsum: x and the initializers as operands, against np.einsum. Batched
# matmul, implicit output, ellipsis, attention scores, a total sum, an outer
# product, three operands, a transpose, a bilinear form (sums and
# contractions), diagonals (a trace, a batched one, one inside a contraction).
for k, (eq, shapes) in enumerate([("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
                                  ("...ij,...jk->...ik", [(2, 2, 3, 4), (2, 2, 4, 3)]),
                                  ("bhqd,bhkd->bhqk", [(1, 2, 5, 4), (1, 2, 6, 4)]), ("ij->", [(3, 4)]),
                                  ("i,j->ij", [(3,), (4,)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
                                  ("ijk->kji", [(2, 3, 4)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
                                  ("ij,ij->i", [(3, 4), (3, 4)]), ("ii->i", [(4, 4)]), ("bii->bi", [(2, 3, 3)]),
                                  ("ii", [(5, 5)]), ("iji,jk->ik", [(3, 2, 3), (2, 4)])]):
    ops = [r(*sh) for sh in shapes]
    names = ["x"] + [f"e{i}" for i in range(1, len(ops))]
    want = np.einsum(eq, *ops)
    save(f"einsum_{k}", [N("Einsum", names, ["y"], equation=eq)], ops[0], list(want.shape), want,
         inits=list(zip(names[1:], ops[1:])), opset=12)

x = r(2, 3, 4)
e = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(1, keepdims=True))
save("softmax_opset11_axis1", [N("Softmax", ["x"], ["y"], axis=1)], x, [2, 3, 4],
     (e / e.sum(1, keepdims=True)).reshape(2, 3, 4), opset=11, expect=["reshape", "softmax"])
ex = np.exp(x - x.max(1, keepdims=True))
save("softmax_opset13_axis1", [N("Softmax", ["x"], ["y"], axis=1)], x, [2, 3, 4], ex / ex.sum(1, keepdims=True),
     expect=["softmax(%x, axis = 1)"])
save("reduce_mean_opset18", [N("ReduceMean", ["x", "ax"], ["y"], keepdims=0)], x, [2, 4], x.mean(1), opset=18,
     inits=[("ax", np.array([1], np.int64))], expect=["mean(%x, axes = \\[1\\]"])
save("reduce_sum_opset11", [N("ReduceSum", ["x"], ["y"], axes=[0, 2])], x, [1, 3, 1],
     x.sum((0, 2), keepdims=True), opset=11, expect=["sum(%x, axes = \\[0, 2\\], keepdims = true)"])
save("reduce_l2", [N("ReduceL2", ["x"], ["y"], axes=[2], keepdims=0)], x, [2, 3], np.sqrt((x * x).sum(2)),
     opset=13, expect=["sqrt"])
xl = x * 300  # exp overflows f32 past 88: computed around the max
save("reduce_log_sum_exp_large", [N("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=0)], xl, [2, 4],
     xl.max(1) + np.log(np.exp(xl - xl.max(1, keepdims=True)).sum(1)), opset=13, expect=["max("])
save("split_opset11", [N("Split", ["x"], ["p", "q"], axis=2, split=[1, 3]), N("Concat", ["q", "p"], ["y"], axis=2)],
     x, [2, 3, 4], np.concatenate([x[:, :, 1:], x[:, :, :1]], 2), opset=11, expect=["split(", "concat("])
save("split_opset13", [N("Split", ["x", "s"], ["p", "q"], axis=1), N("Concat", ["q", "p"], ["y"], axis=1)],
     x, [2, 3, 4], np.concatenate([x[:, 2:], x[:, :2]], 1), inits=[("s", np.array([2, 1], np.int64))])
save("unsqueeze_squeeze_opset11", [N("Unsqueeze", ["x"], ["u"], axes=[0, 3]), N("Squeeze", ["u"], ["y"], axes=[0])],
     x, [2, 3, 1, 4], x[:, :, None, :], opset=11, expect=["expand_dims", "squeeze"])
save("unsqueeze_squeeze_opset13", [N("Unsqueeze", ["x", "a"], ["u"]), N("Squeeze", ["u", "b"], ["y"])],
     x, [2, 3, 4, 1], x[..., None], inits=[("a", np.array([0, -1], np.int64)), ("b", np.array([0], np.int64))])
save("clip_opset11_max_only", [N("Clip", ["x", "", "hi"], ["y"])], x, [2, 3, 4], np.minimum(x, 0.5), opset=11,
     inits=[("hi", np.array(0.5, np.float32))], expect=["clip(%x, max = 0.5)"])
save("clip_opset10_attrs", [N("Clip", ["x"], ["y"], min=-0.5, max=0.25)], x, [2, 3, 4], np.clip(x, -0.5, 0.25),
     opset=10, expect=["clip"])
x4 = r(1, 2, 5, 5)
save("pad_reflect", [N("Pad", ["x", "p"], ["y"], mode="reflect")], x4, [1, 2, 7, 9],
     np.pad(x4, ((0, 0), (0, 0), (1, 1), (2, 2)), mode="reflect"),
     inits=[("p", np.array([0, 0, 1, 2, 0, 0, 1, 2], np.int64))], expect=["pad("])


def conv_ref(x, w, b, stride, pads, group=1):
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, cin, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    og = o // group
    for g in range(group):
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * cg:(g + 1) * cg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                y[:, g * og:(g + 1) * og, i, j] = np.einsum("nchw,ochw->no", patch, w[g * og:(g + 1) * og])
    return y + b.reshape(1, -1, 1, 1)


wc, bc = r(3, 2, 3, 3), r(3)
# SAME_UPPER, stride 2 on 5x5: out 3, total pad 2 -> [1, 1]
save("conv_same_upper_bias", [N("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], x4,
     [1, 3, 3, 3], conv_ref(x4, wc, bc, 2, [1, 1, 1, 1]), inits=[("w", wc), ("b", bc)],
     expect=["conv2d(.*padding = \\[1, 1, 1, 1\\]", "add("])
wg = r(2, 1, 3, 3)
save("conv_grouped_pads", [N("Conv", ["x", "w"], ["y"], group=2, pads=[0, 1, 2, 1])], x4, [1, 2, 5, 5],
     conv_ref(x4, wg, np.zeros(2, np.float32), 1, [0, 1, 2, 1], group=2), inits=[("w", wg)], expect=["groups = 2"])
def conv3d_ref(x, w, b, strides, dil, pads, group=1):
    """A direct 3-D convolution: pads [d0, h0, w0, d1, h1, w1]."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[3]), (pads[1], pads[4]), (pads[2], pads[5])))
    o, cg, *k = w.shape
    og = o // group
    out = [(x.shape[2 + a] - (k[a] - 1) * dil[a] - 1) // strides[a] + 1 for a in range(3)]
    y = np.zeros((x.shape[0], o, *out), np.float64)
    for g in range(group):
        for idx in np.ndindex(*out):
            sl = tuple(slice(idx[a] * strides[a], idx[a] * strides[a] + (k[a] - 1) * dil[a] + 1, dil[a]) for a in range(3))
            patch = x[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            y[(slice(None), slice(g * og, (g + 1) * og)) + idx] = np.einsum("ncdhw,ocdhw->no", patch, w[g * og:(g + 1) * og])
    return y + b.reshape(1, -1, 1, 1, 1)


# Conv 3-D (as one conv2d whose input channels hold the depth taps):
# SAME_UPPER with a depth stride and dilation, two groups, a bias.
x5, w5, b5 = r(2, 4, 5, 6, 4), r(6, 2, 3, 2, 3), r(6)
# depth: out ceil(5 / 2) = 3, span (3 - 1) * 2 + 1 = 5, total pad 4 -> [2, 2]; height: 6, span 2 -> [0, 1];
# width: 4, span 3 -> [1, 1]
save("conv3d_same_grouped", [N("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER", strides=[2, 1, 1],
                               dilations=[2, 1, 1], group=2)], x5, [2, 6, 3, 6, 4],
     conv3d_ref(x5, w5, b5, [2, 1, 1], [2, 1, 1], [2, 0, 1, 2, 1, 1], group=2), inits=[("w", w5), ("b", b5)],
     expect=["conv2d(.*groups = 2", "strided_slice("])
# A window along the depth only (KD x 1 x 1): a conv2d over [N, C, D, H * W] with a KD x 1 kernel, its
# depth stride, dilation and padding as the conv2d's along H (no stacked taps).
wd5 = r(6, 2, 3, 1, 1)
# depth: padded 5 + 3 = 8, span 5, stride 2 -> 2
save("conv3d_depth_only", [N("Conv", ["x", "w", "b"], ["y"], strides=[2, 1, 1], dilations=[2, 1, 1],
                             pads=[2, 0, 0, 1, 0, 0], group=2)], x5, [2, 6, 2, 6, 4],
     conv3d_ref(x5, wd5, b5, [2, 1, 1], [2, 1, 1], [2, 0, 0, 1, 0, 0], group=2), inits=[("w", wd5), ("b", b5)],
     expect=["conv2d(.*dilation = \\[2, 1\\].*padding = \\[2, 0, 1, 0\\].*strides = \\[2, 1\\]"])
# A depth window larger than the padded depth: refused.
save("err_conv3d_depth_window", [N("Conv", ["x", "w"], ["y"])], x5, [2, 6, 1, 5, 2],
     None, inits=[("w", r(6, 4, 7, 2, 3))])
def conv_transpose3d_ref(x, w, strides, dil, pads, out_pad, group=1):
    """A direct 3-D transposed convolution (each input element scattered
    through the kernel): pads [d0, h0, w0, d1, h1, w1]."""
    n, c, *size = x.shape
    cg, og, k = c // group, w.shape[1], w.shape[2:]
    full = [strides[a] * (size[a] - 1) + out_pad[a] + (k[a] - 1) * dil[a] + 1 for a in range(3)]
    y = np.zeros((n, og * group, *full), np.float64)
    for g in range(group):
        xs, ws = x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg]
        for t in np.ndindex(*k):
            sl = tuple(slice(t[a] * dil[a], t[a] * dil[a] + strides[a] * (size[a] - 1) + 1, strides[a]) for a in range(3))
            y[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum("ncdhw,co->nodhw", xs, ws[(slice(None), slice(None)) + t])
    return y[(slice(None), slice(None)) + tuple(slice(pads[a], full[a] - pads[3 + a]) for a in range(3))]


# ConvTranspose 3-D (a conv2d_transpose per depth tap): output_shape with
# SAME_LOWER (pads from the requested shape: depth total (5 - 1) * 2 + 2 + 1
# - 9 = 2 -> [1, 1]; height (6 - 1) + 2 - 6 = 1 -> [1, 0]; width (4 - 1) * 3 + 3 - 11 = 1
# -> [1, 0]), strides, a depth dilation, two groups.
wt5 = r(4, 3, 2, 2, 3)
save("convtranspose3d_output_shape", [N("ConvTranspose", ["x", "w"], ["y"], strides=[2, 1, 3], dilations=[2, 1, 1],
                                        output_shape=[9, 6, 11], auto_pad="SAME_LOWER", group=2)], x5, [2, 6, 9, 6, 11],
     conv_transpose3d_ref(x5, wt5, [2, 1, 3], [2, 1, 1], [1, 1, 1, 1, 0, 0], [0, 0, 0], group=2),
     inits=[("w", wt5)], expect=["conv2d_transpose(.*groups = 2"])
# A 3-D ConvTranspose whose depth padding cuts away every output depth.
save("err_convtranspose3d_depth_pads", [N("ConvTranspose", ["x", "w"], ["y"], pads=[4, 0, 0, 4, 0, 0])], x5,
     [2, 3, 1, 4, 4], None, inits=[("w", r(4, 3, 2, 2, 2))])
# Fuzz finding: an output_shape of INT64_MIN overflowed the padding's sum (UB).
save("err_convtranspose_output_shape", [N("ConvTranspose", ["x", "w"], ["y"], output_shape=[4, -2**63])], x4,
     [1, 3, 4, 4], None, inits=[("w", r(2, 3, 2, 2))])

save("maxpool_pads", [N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], x4,
     [1, 2, 3, 3],
     np.array([[[[np.pad(x4[0, c], 1, constant_values=-np.inf)[2 * i:2 * i + 3, 2 * j:2 * j + 3].max()
                  for j in range(3)] for i in range(3)] for c in range(2)]]), expect=["max_pool2d"])
# Issue 12: every attribute and input is honoured or refused. AveragePool's
# dilations were once dropped (wrong shape and values); Dropout in training
# mode ran as the identity; an attribute no converter reads is an error.
x7 = r(1, 2, 7, 7)
x34 = r(3, 4)
save("avgpool_dilations", [N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], strides=[1, 1])],
     x7, [1, 2, 5, 5],
     np.array([[[[x7[0, c, i:i + 3:2, j:j + 3:2].mean() for j in range(5)] for i in range(5)] for c in range(2)]]),
     expect=["avg_pool2d.*dilation = \\[2, 2\\]"])
save("dropout_inference", [N("Dropout", ["x", "ratio", "mode"], ["y"], seed=3)], x34, [3, 4], x34, opset=13,
     inits=[("ratio", np.array(0.5, np.float32)), ("mode", np.array(False))])
save("err_dropout_training", [N("Dropout", ["x", "ratio", "mode"], ["y"])], x34, [3, 4], x34, opset=13,
     inits=[("ratio", np.array(0.5, np.float32)), ("mode", np.array(True))])
# Opset 6: Relu meant then what it means now, Add (no numpy broadcasting then) did not.
save("relu_opset6", [N("Relu", ["x"], ["y"])], x34, [3, 4], np.maximum(x34, 0), opset=6)
save("err_einsum_broadcast", [N("Einsum", ["x", "w"], ["y"], equation="...ij,...jk->...ik")], r(2, 3, 4), [2, 3, 5],
     np.zeros((2, 3, 5)), opset=12, inits=[("w", r(4, 5))])
save("err_opset6_add", [N("Add", ["x", "x"], ["y"])], x34, [3, 4], x34 + x34, opset=6)
save("err_unknown_attribute", [N("Relu", ["x"], ["y"], alpha=0.5)], x34, [3, 4], np.maximum(x34, 0))
save("err_unread_input", [N("Shape", ["x"], ["s"]), N("Reshape", ["x", "s", "x"], ["y"])], x34, [3, 4], x34)
# Mod with fmod = 1 on a shape computation (folded at import): C's remainder.
# n = [-3, -3]; fmod: n % [6, 5] = [-3, -3], + [9, 5] = [6, 2] (floor mod would give [12, 7]).
save("mod_fmod_folded", [N("Shape", ["x"], ["s"]), N("Sub", ["z", "s"], ["n"]), N("Mod", ["n", "d"], ["m"], fmod=1),
                         N("Add", ["m", "a"], ["q"]), N("Reshape", ["x", "q"], ["y"])],
     x34, [6, 2], x34.reshape(6, 2), inits=[("z", np.array([0, 1], np.int64)), ("d", np.array([6, 5], np.int64)),
                                        ("a", np.array([9, 5], np.int64))])
save("resize_nearest_x2", [N("Resize", ["x", "", "s"], ["y"], mode="nearest")], x4, [1, 2, 10, 10],
     x4.repeat(2, 2).repeat(2, 3), inits=[("s", np.array([1, 1, 2, 2], np.float32))], expect=["resize2d"])
# Dynamic batch: Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds to [n, 16].
xd = r(2, 4, 4)
save("reshape_symbolic", [
    N("Shape", ["x"], ["s"]), N("Gather", ["s", "i0"], ["b"], axis=0), N("Unsqueeze", ["b", "ax"], ["bu"]),
    N("Concat", ["bu", "m1"], ["shape"], axis=0), N("Reshape", ["x", "shape"], ["y"])], xd, ["n", 16],
    xd.reshape(2, 16), x_shape=["n", 4, 4],
    inits=[("i0", np.array(0, np.int64)), ("ax", np.array([0], np.int64)), ("m1", np.array([-1], np.int64))],
    expect=["x: f32\\[n, 4, 4\\]", "reshape(%x, shape = \\[n, 16\\])"])
sl = r(4)
save("activations", [
    N("PRelu", ["x", "sl"], ["a"]), N("LeakyRelu", ["a"], ["b"], alpha=0.1), N("HardSigmoid", ["b"], ["c"]),
    N("HardSwish", ["c"], ["d"]), N("Identity", ["d"], ["y"])], x, [2, 3, 4],
    (lambda c: c * np.clip(c / 6 + 0.5, 0, 1))(np.clip(0.2 * np.where(
        (lambda a: a)(np.where(x > 0, x, x * sl)) < 0, 0.1 * np.where(x > 0, x, x * sl),
        np.where(x > 0, x, x * sl)) + 0.5, 0, 1)), opset=14, inits=[("sl", sl)],
    expect=["leaky_relu(.*alpha = 0.1)", "hard_sigmoid", "hard_swish"])
save("gather_slice_expand_tile", [
    N("Gather", ["x", "idx"], ["g"], axis=2), N("Slice", ["g", "st", "en", "axs", "stp"], ["s"]),
    N("Expand", ["s", "es"], ["e"]), N("Tile", ["e", "rep"], ["y"])], x, [2, 6, 2],
    np.tile(np.broadcast_to(x[:, :, [3, 0]][:, ::-1][:, 0:3:2][:, :, :], (2, 2, 2)), (1, 3, 1)), opset=13,
    inits=[("idx", np.array([3, 0], np.int64)), ("st", np.array([-1], np.int64)), ("en", np.array([-100], np.int64)),
           ("axs", np.array([1], np.int64)), ("stp", np.array([-2], np.int64)), ("es", np.array([2, 1, 1], np.int64)),
           ("rep", np.array([1, 3, 1], np.int64))], expect=["take", "strided_slice", "tile"])
g_, b_ = r(4), r(4)
mu = x.mean(-1, keepdims=True)
var = ((x - mu) ** 2).mean(-1, keepdims=True)
save("layernorm_opset17", [N("LayerNormalization", ["x", "g", "b"], ["y"], epsilon=1e-5)], x, [2, 3, 4],
     (x - mu) / np.sqrt(var + 1e-5) * g_ + b_, opset=17, inits=[("g", g_), ("b", b_)], expect=["layer_norm"])
sc, bb, mm, vv = r(2), r(2), r(2), np.abs(r(2)) + 0.5
save("batchnorm", [N("BatchNormalization", ["x", "sc", "bb", "mm", "vv"], ["y"])], x4, [1, 2, 5, 5],
     (x4 - mm.reshape(1, 2, 1, 1)) / np.sqrt(vv.reshape(1, 2, 1, 1) + 1e-5) * sc.reshape(1, 2, 1, 1)
     + bb.reshape(1, 2, 1, 1), inits=[("sc", sc), ("bb", bb), ("mm", mm), ("vv", vv)], expect=["batch_norm"])
save("constant_pow_where", [
    N("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2.0, np.float32))),
    N("Pow", ["x", "two"], ["p"]), N("Greater", ["x", "zero"], ["m"]), N("Where", ["m", "p", "x"], ["y"])],
    x, [2, 3, 4], np.where(x > 0, x ** 2, x), inits=[("zero", np.array(0.0, np.float32))],
    expect=["power", "greater", "where"])
save("flatten_transpose", [N("Transpose", ["x"], ["t"], perm=[2, 0, 1]), N("Flatten", ["t"], ["y"], axis=1)], x,
     [4, 6], x.transpose(2, 0, 1).reshape(4, 6), expect=["permute_dims", "reshape"])

# Ops lowered to other ops: Trilu (mask + where), EyeLike (a constant),
# DepthToSpace/SpaceToDepth (reshape + permute_dims + reshape), Celu (elu).
xt = r(2, 3, 5)
save("trilu_lower_k", [N("Trilu", ["x", "k"], ["y"], upper=0)], xt, [2, 3, 5], np.tril(xt, 1), opset=14,
     inits=[("k", np.array(1, np.int64))], expect=["where"])
save("trilu_upper_eyelike", [N("Trilu", ["x"], ["u"]), N("EyeLike", ["e0"], ["e"], k=-1),
                             N("Add", ["u", "e"], ["y"])], xt[0], [3, 5], np.triu(xt[0]) + np.eye(3, 5, -1),
     opset=14, inits=[("e0", np.zeros((3, 5), np.float32))], expect=["where"])
xd = r(1, 8, 2, 3)
def d2s(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)
save("depth_to_space_dcr", [N("DepthToSpace", ["x"], ["y"], blocksize=2)], xd, [1, 2, 4, 6], d2s(xd, 2, "DCR"),
     expect=["permute_dims"])
save("depth_to_space_crd", [N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], xd, [1, 2, 4, 6],
     d2s(xd, 2, "CRD"))
xs = r(1, 2, 4, 6)
save("space_to_depth", [N("SpaceToDepth", ["x"], ["y"], blocksize=2)], xs, [1, 8, 2, 3],
     xs.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3))
save("celu", [N("Celu", ["x"], ["y"], alpha=0.5)], x, [2, 3, 4],
     np.maximum(x, 0) + np.minimum(0, 0.5 * (np.exp(x / 0.5) - 1)), opset=12, expect=["elu"])
# A Split of a constant folds, so the shape arithmetic on its parts does too.
save("split_constant_shape", [N("Split", ["sh", "s"], ["a", "b"]), N("Concat", ["b", "a"], ["t"], axis=0),
                              N("Reshape", ["x", "t"], ["y"])], x, [4, 6], x.reshape(4, 6),
     inits=[("sh", np.array([6, 4], np.int64)), ("s", np.array([1, 1], np.int64))], expect=["reshape"])

# Errors: unsupported ops listed all at once.
g = helper.make_graph(
    [N("StringNormalizer", ["x"], ["a"], name="sn_a"), N("StringNormalizer", ["x"], ["b"], name="sn_b"),
     N("NonMaxSuppression", ["x", "x"], ["c"], name="nms_a"), N("Foo", ["x"], ["d"], name="foo_a", domain="com.example"),
     N("Relu", ["x"], ["y"], name="relu")], "unsupported",
    [helper.make_tensor_value_info("x", F, [3, 4])], [helper.make_tensor_value_info("y", F, [3, 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])
onnx.save(m, os.path.join(out, "err_unsupported.onnx"))
g = helper.make_graph([N("NonZero", ["x"], ["y"])], "nonzero_runtime", [helper.make_tensor_value_info("x", F, [3, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, os.path.join(out, "err_nonzero_runtime.onnx"))


def external(name, location, write):
    wt = r(3, 4)
    t = numpy_helper.from_array(wt, "w")
    if write:
        with open(os.path.join(out, location), "wb") as f:
            f.write(b"\0" * 16 + wt.tobytes())
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "16"), ("length", str(wt.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([N("Add", ["x", "w"], ["y"])], name, [helper.make_tensor_value_info("x", F, [3, 4])],
                          [helper.make_tensor_value_info("y", F, [3, 4])], initializer=[t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
    return wt


xe = r(3, 4)
we = external("external", "external.bin", True)
np.save(os.path.join(out, "external.in.npy"), xe)
np.save(os.path.join(out, "external.out.npy"), xe + we)
external("err_external_missing", "missing.bin", False)
# External data must lie in the model's directory (issue 12: these were read
# and copied into the weights file). import.sh links err_external_symlink's
# file to one outside.
external("err_external_traversal", "../outside.bin", True)
external("err_external_absolute", os.path.abspath(os.path.join(out, "..", "outside_abs.bin")), True)
external("err_external_symlink", "link.bin", False)

# An integer input that must be known at import (ReduceSum's axes): bound
# with --bind. bind_*.npy are the values import.sh binds.
g = helper.make_graph([N("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], "bind_reduce_axes",
                      [helper.make_tensor_value_info("x", F, [3, 4]),
                       helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                      [helper.make_tensor_value_info("y", F, [3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "err_bind_reduce_axes.onnx"))
np.save(os.path.join(out, "bind_axes.npy"), np.array([1], np.int64))
np.save(os.path.join(out, "bind_axes_i32.npy"), np.array([1], np.int32))
np.save(os.path.join(out, "bind_axes_2.npy"), np.array([0, 1], np.int64))
np.save(os.path.join(out, "bind_x.npy"), x34)
np.save(os.path.join(out, "bind_y.npy"), x34.sum(1))

# Normalizations and pooling composed of other ops, against numpy.
xg = r(2, 6, 3, 3)
g3 = xg.reshape(2, 3, -1)
gn = ((g3 - g3.mean(2, keepdims=True)) / np.sqrt(g3.var(2, keepdims=True) + 1e-5)).reshape(xg.shape)
sg, bg = r(3), r(3)  # opset 18: one scale and bias per group
save("group_norm_opset18", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)], xg, list(xg.shape),
     gn * np.repeat(sg, 2)[None, :, None, None] + np.repeat(bg, 2)[None, :, None, None], opset=18,
     inits=[("s", sg), ("b", bg)])
sc, bc = r(6), r(6)  # opset 21: per channel
save("group_norm_opset21", [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)], xg, list(xg.shape),
     gn * sc[None, :, None, None] + bc[None, :, None, None], opset=21, inits=[("s", sc), ("b", bc)])
sq = np.pad(xg * xg, ((0, 0), (1, 2), (0, 0), (0, 0)))  # size 4: 1 channel before, 2 after
ssum = sum(sq[:, i:i + 6] for i in range(4))
save("lrn", [N("LRN", ["x"], ["y"], size=4, alpha=0.3, beta=0.6, bias=2.0)], xg, list(xg.shape),
     xg / (2.0 + 0.3 / 4 * ssum) ** 0.6, expect=["avg_pool2d"])
xp = np.pad(np.abs(xg) ** 3, ((0, 0), (0, 0), (1, 1), (1, 1)))
lp = np.stack([np.stack([xp[:, :, i:i + 2, j:j + 2].sum((2, 3)) for j in range(0, 4, 2)], -1)
               for i in range(0, 4, 2)], -2) ** (1 / 3)
save("lp_pool_p3", [N("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], p=3)], xg,
     [2, 6, 2, 2], lp)



def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def recurrent_ref(cell, x, w, rw, b, lens, h0, clip, direction, lbr=0):
    """ONNX LSTM/GRU (default activations) in numpy: Y [T, dirs, B, H] and Y_h."""
    steps, dirs, hid = x.shape[0], w.shape[0], rw.shape[2]
    y = np.zeros((steps, dirs, x.shape[1], hid), np.float32)
    yh = np.zeros((dirs, x.shape[1], hid), np.float32)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(dirs):
        wb, rb = np.split(b[d], 2)
        h, c = h0[d].copy(), np.zeros_like(h0[d])
        for t in (range(steps - 1, -1, -1) if direction == "reverse" or d == 1 else range(steps)):
            g = x[t] @ w[d].T + wb
            if cell == "LSTM":
                i, o, f, cc = np.split(g + h @ rw[d].T + rb, 4, axis=1)
                cn = sigmoid(cl(f)) * c + sigmoid(cl(i)) * np.tanh(cl(cc))
                hn = sigmoid(cl(o)) * np.tanh(cn)
            else:
                (gz, gr, gh), (rz, rr, rh), (bz, br, bh) = np.split(g, 3, 1), np.split(rw[d], 3), np.split(rb, 3)
                z, rg = sigmoid(cl(gz + h @ rz.T + bz)), sigmoid(cl(gr + h @ rr.T + br))
                hh = np.tanh(cl(gh + (rg * (h @ rh.T + bh) if lbr else (rg * h) @ rh.T + bh)))
                hn, cn = (1 - z) * hh + z * h, c
            m = (t < lens)[:, None]
            y[t, d] = np.where(m, hn, 0)
            h, c = np.where(m, hn, h), np.where(m, cn, c)
        yh[d] = h
    return y, yh


# Recurrent ops with what the node tests lack: both directions, sequence
# lengths (the reverse direction starts at each entry's last step), clip,
# GRU's linear_before_reset; Y and Y_h flattened into y.
xs = r(5, 3, 4)
lens = np.array([5, 2, 4], np.int32)
for cell, gates, direction, extra in [("LSTM", 4, "bidirectional", {"clip": 0.8}), ("GRU", 3, "reverse", {}),
                                      ("GRU", 3, "bidirectional", {"linear_before_reset": 1, "clip": 1.5})]:
    dirs = 2 if direction == "bidirectional" else 1
    wr, rr, br, h0r = r(dirs, gates * 6, 4), r(dirs, gates * 6, 6), r(dirs, 2 * gates * 6), r(dirs, 3, 6)
    y_ref, yh_ref = recurrent_ref(cell, xs, wr, rr, br, lens, h0r, extra.get("clip"), direction,
                                  extra.get("linear_before_reset", 0))
    flat = np.array([-1], np.int64)
    save(f"{cell.lower()}_{direction}_lens", [
        N(cell, ["x", "w", "r", "b", "lens", "h0"], ["Y", "Y_h"], hidden_size=6, direction=direction, **extra),
        N("Reshape", ["Y", "flat"], ["yf"]), N("Reshape", ["Y_h", "flat"], ["hf"]),
        N("Concat", ["yf", "hf"], ["y"], axis=0)], xs, [y_ref.size + yh_ref.size],
        np.concatenate([y_ref.ravel(), yh_ref.ravel()]),
        inits=[("w", wr), ("r", rr), ("b", br), ("lens", lens), ("h0", h0r), ("flat", flat)], expect=["dense("])

# DFT (opset 17 attributes): zero-padded to 12 points, one-sided; truncated
# to 6 points; an inverse of complex input on another axis.
def complex_pairs(z):
    return np.stack([z.real, z.imag], -1).astype(np.float32)


xd = r(2, 10, 3, 1)
save("dft_padded_onesided", [N("DFT", ["x", "len"], ["y"], axis=1, onesided=1)], xd, [2, 7, 3, 2],
     complex_pairs(np.fft.fft(xd[..., 0], n=12, axis=1)[:, :7]), opset=17,
     inits=[("len", np.array(12, np.int64))], expect=["matmul"])
save("dft_truncated", [N("DFT", ["x", "len"], ["y"], axis=1)], xd, [2, 6, 3, 2],
     complex_pairs(np.fft.fft(xd[..., 0], n=6, axis=1)), opset=17, inits=[("len", np.array(6, np.int64))])
xc = r(2, 4, 5, 2)
save("dft_inverse_complex", [N("DFT", ["x"], ["y"], axis=2, inverse=1)], xc, [2, 4, 5, 2],
     complex_pairs(np.fft.ifft(xc[..., 0] + 1j * xc[..., 1], axis=2)), opset=17)

# If on a shape test (known at import): the chosen branch is imported in
# place; its nodes use values from before the If.
xi = r(2, 3)
then_g = helper.make_graph([N("Mul", ["x", "two"], ["t_out"])], "then", [],
                           [helper.make_tensor_value_info("t_out", F, [2, 3])])
else_g = helper.make_graph([N("Neg", ["x"], ["e_out"])], "else", [], [helper.make_tensor_value_info("e_out", F, [2, 3])])
save("if_shape_test", [N("Shape", ["x"], ["sh"]), N("Size", ["sh"], ["rank"]), N("Equal", ["rank", "two_i"], ["is2d"]),
                       N("If", ["is2d"], ["y"], then_branch=then_g, else_branch=else_g)], xi, [2, 3], xi * 2,
     inits=[("two", np.array(2, np.float32)), ("two_i", np.array(2, np.int64))], expect=["multiply"])

# Loop, unrolled at import: a trip count of 10 that the body's condition
# (i < 2) ends after 3 iterations, the state doubled plus the iteration
# number, each iteration's state collected as a scan output.
V = lambda name: helper.make_tensor_value_info(name, F, [2, 3])
loop_body = helper.make_graph(
    [N("Cast", ["i"], ["i_f"], to=F), N("Mul", ["v", "two"], ["v2"]), N("Add", ["v2", "i_f"], ["v_out"]),
     N("Less", ["i", "two_i"], ["c_out"]), N("Identity", ["v_out"], ["scan_out"])],
    "loop_body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                  helper.make_tensor_value_info("c", TensorProto.BOOL, []), V("v")],
    [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), V("v_out"), V("scan_out")])
v1 = xi * 2
v2 = v1 * 2 + 1
v3 = v2 * 2 + 2
save("loop_early_exit", [N("Loop", ["trips", "go", "x"], ["v_final", "scans"], body=loop_body),
                         N("ReduceSum", ["scans", "zero_axis"], ["total"], keepdims=0), N("Add", ["v_final", "total"], ["y"])],
     xi, [2, 3], v3 + v1 + v2 + v3,
     inits=[("trips", np.array(10, np.int64)), ("go", np.array(True)), ("two", np.array(2, np.float32)),
            ("two_i", np.array(2, np.int64)), ("zero_axis", np.array([0], np.int64))], expect=["concat"])

# Scan over axis 1, backwards, its outputs stacked backwards along axis 1: a
# reversed running sum of each row.
scan_body = helper.make_graph(
    [N("Add", ["s", "xt"], ["s_out"]), N("Identity", ["s_out"], ["o"])], "scan_body",
    [helper.make_tensor_value_info("s", F, [2]), helper.make_tensor_value_info("xt", F, [2])],
    [helper.make_tensor_value_info("s_out", F, [2]), helper.make_tensor_value_info("o", F, [2])])
save("scan_reversed", [N("Scan", ["s0", "x"], ["s_final", "y"], body=scan_body, num_scan_inputs=1,
                         scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1],
                         scan_output_directions=[1])],
     xi, [2, 3], np.flip(np.cumsum(np.flip(xi, 1), 1), 1), opset=16,
     inits=[("s0", np.zeros(2, np.float32))], expect=["concat"])

# A Loop whose body computes its condition from the data: refused.
data_body = helper.make_graph(
    [N("Mul", ["v", "two"], ["v_out"]), N("ReduceSum", ["v_out"], ["sum"], keepdims=0),
     N("Less", ["sum", "big"], ["c_out"])],
    "data_body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                  helper.make_tensor_value_info("c", TensorProto.BOOL, []), V("v")],
    [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), V("v_out")])
g = helper.make_graph([N("Loop", ["", "", "x"], ["y"], body=data_body)], "loop_runtime", [V("x")], [V("y")],
                      initializer=[numpy_helper.from_array(np.array(2, np.float32), "two"),
                                   numpy_helper.from_array(np.array(100, np.float32), "big")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "err_loop_runtime.onnx"))

# TfIdfVectorizer on integer tokens, against the ONNX reference's counting
# (n-grams with gaps of up to max_skip_count tokens, unigrams once) and its
# weightings.
def tfidf_ref(x, min_n, max_n, max_skip, counts, indexes, pool, mode, weights=None):
    rows = x.reshape(-1, x.shape[-1])
    out_size = max(indexes) + 1
    freq = np.zeros((rows.shape[0], out_size))
    grams = {}  # n-gram -> output column (a repeated n-gram: its last entry's)
    gid = 0
    for i, begin in enumerate(counts):
        size = i + 1
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        for at in range(begin, end, size):
            gid += 1
            if min_n <= size <= max_n:
                grams[tuple(pool[at:at + size])] = indexes[gid - 1]
    for gram, column in grams.items():
        size = len(gram)
        for d in ([1] if size == 1 else range(1, max_skip + 2)):
            for b, row in enumerate(rows):
                for s0 in range(len(row) - d * (size - 1)):
                    if all(row[s0 + k * d] == gram[k] for k in range(size)):
                        freq[b, column] += 1
    w = np.asarray(weights, np.float64)[:out_size] if weights is not None else None
    if mode == "IDF":
        y = np.where(freq > 0, w if w is not None else 1.0, 0.0)
    elif mode == "TFIDF":
        y = freq * w if w is not None else freq
    else:
        y = freq
    return y.reshape(x.shape[:-1] + (out_size,)).astype(np.float32)


tokens = rng.integers(0, 5, (3, 9)).astype(np.int32)
for name, xt, args in [
        ("tfidf_idf_weights", tokens, dict(min_n=1, max_n=2, max_skip=1, counts=[0, 3], indexes=[2, 0, 1, 3, 4, 3, 1],
                                           pool=[1, 2, 3, 1, 2, 2, 3, 4, 4, 1, 2], mode="IDF",
                                           weights=[0.5, 2.0, 3.0, 0.25, 1.5])),
        ("tfidf_tfidf_trigrams", tokens[0], dict(min_n=2, max_n=3, max_skip=2, counts=[0, 2, 6], indexes=[0, 1, 2, 3, 4, 5],
                                                pool=[0, 1, 1, 2, 3, 4, 0, 1, 2, 4, 4, 4], mode="TFIDF",
                                                weights=[1, 2, 3, 4, 5, 6])),
        ("tfidf_idf_unweighted", tokens.astype(np.int64), dict(min_n=1, max_n=1, max_skip=3, counts=[0], indexes=[1, 0, 2],
                                                              pool=[4, 0, 2], mode="IDF"))]:
    attrs = dict(min_gram_length=args["min_n"], max_gram_length=args["max_n"], max_skip_count=args["max_skip"],
                 ngram_counts=args["counts"], ngram_indexes=args["indexes"], pool_int64s=args["pool"],
                 mode=args["mode"])
    if args.get("weights") is not None:
        attrs["weights"] = [float(v) for v in args["weights"]]
    y = tfidf_ref(xt, **args)
    save(name, [N("TfIdfVectorizer", ["x"], ["y"], **attrs)], xt, list(y.shape), y, opset=9,
         x_type=TensorProto.INT32 if xt.dtype == np.int32 else TensorProto.INT64, expect=["matmul"])

# Resize tf_crop_and_resize, nearest (round_prefer_ceil): a crop reaching
# past the image on the right, whose outside samples are the extrapolation
# value (the ONNX specification's formula, per axis).
def crop_coords(length, out, a, b):
    span = length - 1
    return [(o * (b - a) * span / (out - 1) if out > 1 else (b - a) * span / 2) + a * span for o in range(out)]


xr = r(1, 2, 5, 6)
roi = np.array([0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3], np.float32)
ys, xs = crop_coords(5, 4, 0.2, 0.9), crop_coords(6, 5, -0.1, 1.3)
def pick(v):
    lo = int(np.floor(v))
    return lo + 1 if v - lo >= 0.5 else lo
yr = np.full((1, 2, 4, 5), -7.0, np.float32)
for i, sy in enumerate(ys):
    for j, sx in enumerate(xs):
        if 0 <= sy <= 4 and 0 <= sx <= 5:
            yr[:, :, i, j] = xr[:, :, pick(sy), pick(sx)]
save("resize_crop_nearest", [N("Resize", ["x", "roi", "", "sizes"], ["y"], mode="nearest",
                               coordinate_transformation_mode="tf_crop_and_resize", nearest_mode="round_prefer_ceil",
                               extrapolation_value=-7.0)],
     xr, [1, 2, 4, 5], yr, inits=[("roi", roi), ("sizes", np.array([1, 2, 4, 5], np.int64))], expect=["matmul"])
# Fuzz finding: a NaN in the roi made a sample position NaN, cast to an integer (UB).
save("err_resize_crop_roi_nan", [N("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear",
                                   coordinate_transformation_mode="tf_crop_and_resize")],
     xr, [1, 2, 4, 5], None,
     inits=[("roi", np.array([0, 0, np.nan, 0, 1, 1, 1, 1], np.float32)), ("sizes", np.array([1, 2, 4, 5], np.int64))])

# The ai.onnx.ml domain: Binarizer on integers with a negative non-integer
# threshold (x > -1.5), and ArrayFeatureExtractor picking columns (one
# twice) of the Binarizer's result.
xb = rng.integers(-4, 4, (3, 5)).astype(np.int64)
picks = np.array([[4, 0, 4]], np.int64)
save("ml_binarize_extract", [N("Binarizer", ["x"], ["b"], domain="ai.onnx.ml", threshold=-1.5),
                             N("ArrayFeatureExtractor", ["b", "picks"], ["e"], domain="ai.onnx.ml"),
                             N("Cast", ["e"], ["y"], to=F)],
     xb, [3, 3], (xb > -1.5).astype(np.float32)[:, [4, 0, 4]], inits=[("picks", picks)],
     x_type=TensorProto.INT64, ml=True, expect=["take"])

# The ops whose output shape depends on the values, where the values that
# decide it are known at import: Compress by a constant condition (the data
# at run time) along an axis and flat, NonZero and Unique (sorted, along an
# axis, all four outputs) of constants.
xc = r(3, 4)
keep = np.array([True, False, True], np.bool_)
save("compress_known_condition", [N("Compress", ["x", "keep"], ["a"], axis=0), N("Compress", ["x", "flat_keep"], ["b"]),
                                  N("ReduceSum", ["b"], ["s"], keepdims=1), N("Add", ["a", "s"], ["y"])],
     xc, [2, 4], np.compress(keep, xc, axis=0) + np.compress([0, 1, 1, 0, 1], xc).sum(keepdims=True),
     inits=[("keep", keep), ("flat_keep", np.array([0, 1, 1, 0, 1], np.bool_))], expect=["take"])
cu = np.array([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 1]], np.float32)
uy, ui, uinv, ucnt = np.unique(cu, True, True, True, axis=0)
nz = np.array([[0, 3, 0], [1, 0, 0]], np.float32)
flat = np.array([-1], np.int64)
parts = [uy.reshape(-1), ui, uinv.reshape(-1), ucnt, np.stack(np.nonzero(nz)).reshape(-1), xc[0]]
save("unique_nonzero_constants",
     [N("Unique", ["cu"], ["uy", "ui", "uinv", "ucnt"], axis=0, sorted=1), N("NonZero", ["nz"], ["nzi"]),
      N("Reshape", ["uy", "flat"], ["uyf"]), N("Cast", ["ui"], ["uif"], to=F), N("Cast", ["uinv"], ["uinvf"], to=F),
      N("Cast", ["ucnt"], ["ucntf"], to=F), N("Reshape", ["nzi", "flat"], ["nzr"]), N("Cast", ["nzr"], ["nzf"], to=F),
      N("Concat", ["uyf", "uif", "uinvf", "ucntf", "nzf", "x"], ["y"], axis=0)],
     xc[0], [sum(len(p) for p in parts)], np.concatenate([p.astype(np.float32) for p in parts]),
     inits=[("cu", cu), ("nz", nz), ("flat", flat)], expect=[])

# DeformConv with 2 groups, 2 offset groups, stride 2, dilation 2, padding, a
# mask and a bias, against a direct numpy version of the specification
# (bilinear sampling at the offset positions, zero outside the image).
def deform_conv_ref(xd, wd, off, bias, mask, stride, dil, pad, group, og):
    n_, c_, h_, w_ = xd.shape
    oc_, cpg, kh, kw = wd.shape
    oh, ow = off.shape[2:]
    off = off.reshape(n_, og, kh, kw, 2, oh, ow)
    mask = mask.reshape(n_, og, kh, kw, oh, ow)

    def at(img, yy, xx):
        if 0 <= yy < h_ and 0 <= xx < w_:
            return img[yy, xx]
        return 0.0

    def bilinear(img, py, px):
        y0, x0 = int(np.floor(py)), int(np.floor(px))
        fy, fx = py - y0, px - x0
        return ((1 - fy) * (1 - fx) * at(img, y0, x0) + (1 - fy) * fx * at(img, y0, x0 + 1) +
                fy * (1 - fx) * at(img, y0 + 1, x0) + fy * fx * at(img, y0 + 1, x0 + 1))

    out = np.zeros((n_, oc_, oh, ow))
    for b in range(n_):
        for o in range(oc_):
            g = o // (oc_ // group)
            for ci in range(cpg):
                ch = g * cpg + ci
                k = ch // (c_ // og)
                for i in range(oh):
                    for j in range(ow):
                        for a in range(kh):
                            for e in range(kw):
                                py = i * stride - pad + a * dil + off[b, k, a, e, 0, i, j]
                                px = j * stride - pad + e * dil + off[b, k, a, e, 1, i, j]
                                out[b, o, i, j] += (wd[o, ci, a, e] * mask[b, k, a, e, i, j] *
                                                    bilinear(xd[b, ch], py, px))
    return (out + bias.reshape(1, -1, 1, 1)).astype(np.float32)


xd = r(2, 4, 6, 7)
wd = r(6, 2, 2, 3)
offd = (r(2, 2 * 2 * 3 * 2, 3, 3) * 1.5).astype(np.float32)
maskd = rng.uniform(0, 1, (2, 2 * 2 * 3, 3, 3)).astype(np.float32)
bd = r(6)
save("deform_conv_groups", [N("DeformConv", ["x", "w", "off", "b", "mask"], ["y"], strides=[2, 2], dilations=[2, 2],
                              pads=[1, 1, 1, 1], group=2, offset_group=2, kernel_shape=[2, 3])],
     xd, [2, 6, 3, 3], deform_conv_ref(xd, wd, offd, bd, maskd, 2, 2, 1, 2, 2), opset=19,
     inits=[("w", wd), ("off", offd), ("b", bd), ("mask", maskd)], expect=["grid_sample", "matmul"])

# RoiAlign (average, half_pixel): rois over two images, one reaching past
# the image (samples beyond -1 / size are 0, those within clamp to the
# edge), against a numpy version of the reference's sampling.
def roi_align_ref(xa, rois, bidx, oh, ow, ratio, scale, mode="avg", half=True):
    _, ch, hh, ww = xa.shape
    out = np.zeros((len(rois), ch, oh, ow))

    def sample(img, y, x):
        if y < -1 or y > hh or x < -1 or x > ww:
            return np.zeros(ch)
        y, x = max(y, 0.0), max(x, 0.0)
        y0, x0 = int(y), int(x)
        y1, x1 = min(y0 + 1, hh - 1), min(x0 + 1, ww - 1)
        if y0 >= hh - 1:
            y0 = y1 = hh - 1
            y = float(y0)
        if x0 >= ww - 1:
            x0 = x1 = ww - 1
            x = float(x0)
        ly, lx = y - y0, x - x0
        parts = [(1 - ly) * (1 - lx) * img[:, y0, x0], (1 - ly) * lx * img[:, y0, x1],
                 ly * (1 - lx) * img[:, y1, x0], ly * lx * img[:, y1, x1]]
        return sum(parts) if mode == "avg" else np.max(parts, axis=0)

    off = 0.5 if half else 0.0
    for k, (x1_, y1_, x2_, y2_) in enumerate(rois):
        sw, sh = x1_ * scale - off, y1_ * scale - off
        rh, rw = y2_ * scale - off - sh, x2_ * scale - off - sw
        if not half:
            rh, rw = max(rh, 1.0), max(rw, 1.0)
        bh, bw = rh / oh, rw / ow
        for p_ in range(oh):
            for q in range(ow):
                got = [sample(xa[bidx[k]], sh + p_ * bh + (iy + 0.5) * bh / ratio, sw + q * bw + (ix + 0.5) * bw / ratio)
                       for iy in range(ratio) for ix in range(ratio)]
                out[k, :, p_, q] = np.sum(got, axis=0) / (ratio * ratio) if mode == "avg" else np.max(got, axis=0)
    return out.astype(np.float32)


xa = r(2, 3, 8, 9)
rois = np.array([[1, 1, 6, 5], [-4, 2, 12, 20], [3.5, 0.25, 4.5, 7]], np.float32)
bidx = np.array([1, 0, 1], np.int64)
save("roi_align_avg", [N("RoiAlign", ["x", "rois", "bidx"], ["y"], output_height=3, output_width=4, sampling_ratio=3,
                         spatial_scale=0.75, coordinate_transformation_mode="half_pixel")],
     xa, [3, 3, 3, 4], roi_align_ref(xa, rois, bidx, 3, 4, 3, 0.75), opset=16,
     inits=[("rois", rois), ("bidx", bidx)], expect=["grid_sample"])
# Max mode (the largest weighted corner per sample), legacy output_half_pixel
# (a roi thinner than a pixel stretched to one).
rois_max = np.array([[1, 1, 6, 5], [-4, 2, 12, 20], [3.5, 0.25, 3.8, 7]], np.float32)
save("roi_align_max", [N("RoiAlign", ["x", "rois", "bidx"], ["y"], output_height=3, output_width=2, sampling_ratio=2,
                         spatial_scale=0.75, mode="max", coordinate_transformation_mode="output_half_pixel")],
     xa, [3, 3, 3, 2], roi_align_ref(xa, rois_max, bidx, 3, 2, 2, 0.75, "max", False), opset=16,
     inits=[("rois", rois_max), ("bidx", bidx)], expect=["gather_elements"])

# Det of a batch of 4x4 matrices: a random one, one whose first column is 0
# above its last row (pivoting), a singular one (0, not NaN), and one with
# equal candidates for a pivot; against numpy.linalg.det.
md = r(4, 4, 4)
md[1, :3, 0] = 0
md[2, 3] = md[2, 0] * 2
md[3, :, 0] = [1, -1, 1, -1]
save("det_batch", [N("Det", ["x"], ["y"])], md, [4], np.linalg.det(md.astype(np.float64)).astype(np.float32),
     expect=["argmax", "matmul"])

# ai.onnx.ml TreeEnsemble: two trees over 3 features (modes LT, GT, NEQ and
# MEMBER, a NaN routed by missing-value tracking), leaves on 3 targets, each
# aggregate function; against a direct traversal of the trees.
te = dict(nodes_featureids=[0, 1, 2, 1, 0], nodes_modes=[1, 3, 6, 5, 0], nodes_splits=[0.5, -0.2, 0.0, 1.0, 0.0],
          nodes_truenodeids=[1, 0, 0, 4, 2], nodes_falsenodeids=[2, 1, 1, 3, 3], nodes_trueleafs=[0, 1, 1, 0, 1],
          nodes_falseleafs=[0, 1, 1, 1, 1], nodes_missing_value_tracks_true=[1, 0, 0, 0, 1],
          membership_values=[2.0, 4.0, np.nan], leaf_targetids=[0, 1, 2, 0, 1], leaf_weights=[1.5, -2.0, 3.0, 0.25, 4.0],
          tree_roots=[0, 3])


def tree_ref(xt, agg):
    members = {2: {2.0, 4.0}}
    ops = {0: np.less_equal, 1: np.less, 2: np.greater_equal, 3: np.greater, 4: np.equal, 5: np.not_equal}
    fill = {0: 0.0, 1: 0.0, 2: np.finfo(np.float32).max, 3: np.finfo(np.float32).min}[agg]
    out = np.full((len(xt), 3), fill, np.float64)
    for b, row in enumerate(xt):
        for root in te["tree_roots"]:
            i, leaf = root, False
            while not leaf:
                v = row[te["nodes_featureids"][i]]
                mode = te["nodes_modes"][i]
                hit = v in members[i] if mode == 6 else bool(ops[mode](v, te["nodes_splits"][i]))
                hit = hit or (bool(te["nodes_missing_value_tracks_true"][i]) and np.isnan(v))
                i, leaf = ((te["nodes_truenodeids"][i], te["nodes_trueleafs"][i]) if hit else
                           (te["nodes_falsenodeids"][i], te["nodes_falseleafs"][i]))
            w, tid = te["leaf_weights"][i], te["leaf_targetids"][i]
            if agg <= 1:
                out[b, tid] += w / (len(te["tree_roots"]) if agg == 0 else 1)
            else:
                out[b, tid] = min(out[b, tid], w) if agg == 2 else max(out[b, tid], w)
    return out.astype(np.float32)


xt = np.array([[0.2, 0.1, 2.0], [0.9, -1.0, 4.0], [np.nan, 0.3, 3.0], [0.7, 1.0, 2.0], [0.1, -0.5, 5.0], [2.0, 1.0, 0.0]],
              np.float32)
for agg, name in enumerate(["average", "sum", "min", "max"]):
    attrs = {k: v for k, v in te.items() if k not in ("nodes_modes", "nodes_splits", "membership_values", "leaf_weights")}
    tensors = dict(nodes_modes=numpy_helper.from_array(np.array(te["nodes_modes"], np.uint8)),
                   nodes_splits=numpy_helper.from_array(np.array(te["nodes_splits"], np.float32)),
                   membership_values=numpy_helper.from_array(np.array(te["membership_values"], np.float32)),
                   leaf_weights=numpy_helper.from_array(np.array(te["leaf_weights"], np.float32)))
    # The extremes MIN and MAX leave at targets no tree reaches are shown as
    # 0 (so that the comparison's tolerance, relative to the largest value,
    # stays tight).
    want = tree_ref(xt, agg)
    want = np.where(np.abs(want) < 1e30, want, 0).astype(np.float32)
    save("tree_ensemble_" + name, [N("TreeEnsemble", ["x"], ["t"], domain="ai.onnx.ml", n_targets=3, aggregate_function=agg,
                                     **attrs, **tensors),
                                   N("Abs", ["t"], ["ta"]), N("Less", ["ta", "huge"], ["finite"]),
                                   N("Where", ["finite", "t", "zero"], ["y"])],
         xt, [6, 3], want, ml=True, expect=["where"],
         inits=[("huge", np.array(1e30, np.float32)), ("zero", np.array(0, np.float32))])

# If on a value computed at run time: refused, naming the input to bind.
g = helper.make_graph([N("ReduceSum", ["x"], ["s"], keepdims=0), N("Greater", ["s", "zero"], ["c"]),
                       N("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], "if_runtime",
                      [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, [2, 3])],
                      initializer=[numpy_helper.from_array(np.array(2, np.float32), "two"),
                                   numpy_helper.from_array(np.array(0, np.float32), "zero")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "err_if_runtime.onnx"))

# The same axes computed from the input (axes + 0): the error names the input.
g = helper.make_graph([N("Add", ["axes", "zero"], ["a"]), N("ReduceSum", ["x", "a"], ["y"], keepdims=0)],
                      "bind_computed_axes",
                      [helper.make_tensor_value_info("x", F, [3, 4]),
                       helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                      [helper.make_tensor_value_info("y", F, [3])],
                      initializer=[numpy_helper.from_array(np.array([0], np.int64), "zero")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "err_bind_computed_axes.onnx"))

# A training model (only the ai.onnx.preview.training domain): refused as training.
g = helper.make_graph([N("Relu", ["x"], ["y"])], "training", [helper.make_tensor_value_info("x", F, [3])],
                      [helper.make_tensor_value_info("y", F, [3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("ai.onnx.preview.training", 1)])
m.ir_version = 8
onnx.save(m, os.path.join(out, "err_training_domain.onnx"))
