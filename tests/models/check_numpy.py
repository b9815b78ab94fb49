#!/usr/bin/python3
"""Check generated ONNX files against PyTorch's outputs without ONNX Runtime.

    /usr/bin/python3 tests/models/check_numpy.py --dir DIR [--only NAME ...]

A deliberately small numpy interpreter (float64) for the ONNX ops the public
suite uses.  It runs DIR/NAME.onnx on DIR/NAME.input.npy and compares with
DIR/NAME.output.npy, so the exported graphs are known to mean what PyTorch
computed.  It is a test aid, not a general ONNX runtime: an op it does not
know is an error.  Exit status 0 when every model matches.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _pads2d(a, k):
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("auto_pad")
    p = a.get("pads", [0] * 2 * len(k))
    return p


def _im2col(x, kh, kw, sh, sw, dh, dw, pads):
    n, c, h, w = x.shape
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                 j * dw: j * dw + sw * (ow - 1) + 1: sw]
    return cols, oh, ow


def conv(x, w, b, a):
    g = a.get("group", 1)
    kh, kw = w.shape[2], w.shape[3]
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    pads = _pads2d(a, [kh, kw])
    cols, oh, ow = _im2col(x, kh, kw, sh, sw, dh, dw, pads)
    n, c = x.shape[:2]
    m = w.shape[0]
    if g == c and g == m:  # depthwise
        y = np.einsum("nckhij,ckh->ncij", cols, w[:, 0])
    else:
        cg, mg = c // g, m // g
        ys = []
        for gi in range(g):
            cc = cols[:, gi * cg:(gi + 1) * cg].reshape(n, cg * kh * kw, oh * ow)
            wg = w[gi * mg:(gi + 1) * mg].reshape(mg, cg * kh * kw)
            ys.append(np.einsum("mk,nkp->nmp", wg, cc).reshape(n, mg, oh, ow))
        y = np.concatenate(ys, axis=1)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y


def maxpool(x, a):
    kh, kw = a["kernel_shape"]
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    if a.get("ceil_mode", 0):
        raise NotImplementedError("ceil_mode")
    pads = _pads2d(a, [kh, kw])
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=-np.inf)
    cols, oh, ow = _im2col(x, kh, kw, sh, sw, dh, dw, [0, 0, 0, 0])
    return cols.max(axis=(2, 3))


def gemm(A, B, C, a):
    if a.get("transA", 0):
        A = A.T
    if a.get("transB", 0):
        B = B.T
    y = a.get("alpha", 1.0) * (A @ B)
    if C is not None:
        y = y + a.get("beta", 1.0) * C
    return y


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


_erf = np.vectorize(math.erf)


def run_node(n, v):
    a = _attrs(n)
    ins = [v[i] if i else None for i in n.input]
    op = n.op_type
    x = ins[0] if ins else None
    if op == "Constant":
        return [onnx.numpy_helper.to_array(a["value"])]
    if op == "Identity":
        return [x]
    if op == "Relu":
        return [np.maximum(x, 0)]
    if op == "Clip":
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else np.inf
        return [np.clip(x, lo, hi)]
    if op in ("Add", "Sub", "Mul", "Div", "Pow"):
        y = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Pow": np.power}.get(op)
        if op == "Div":
            if np.issubdtype(x.dtype, np.integer):
                return [(x // ins[1]).astype(x.dtype)]
            return [x / ins[1]]
        return [y(x, ins[1])]
    if op == "Sqrt":
        return [np.sqrt(x)]
    if op == "Erf":
        return [_erf(x)]
    if op == "MatMul":
        return [np.matmul(x, ins[1])]
    if op == "Gemm":
        return [gemm(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op == "Conv":
        return [conv(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op == "MaxPool":
        return [maxpool(x, a)]
    if op == "GlobalAveragePool":
        return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)]
    if op == "Flatten":
        ax = a.get("axis", 1)
        return [x.reshape(int(np.prod(x.shape[:ax])), -1)]
    if op == "Softmax":
        return [softmax(x, a.get("axis", -1))]
    if op == "ReduceMean":
        axes = tuple(a["axes"]) if "axes" in a else None
        return [x.mean(axis=axes, keepdims=bool(a.get("keepdims", 1)))]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if op == "Gather":
        return [np.take(x, ins[1].astype(np.int64), axis=a.get("axis", 0))]
    if op == "Reshape":
        shape = [int(s) for s in ins[1]]
        if not a.get("allowzero", 0):
            shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Slice":
        starts, ends = ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 and ins[3] is not None else np.arange(len(starts))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None else np.ones(len(starts), np.int64)
        sl = [slice(None)] * x.ndim
        for s, e, ax, st in zip(starts, ends, axes, steps):
            sl[int(ax)] = slice(int(s), int(e), int(st))
        return [x[tuple(sl)]]
    if op == "LayerNormalization":
        axis = a.get("axis", -1)
        axes = tuple(range(axis % x.ndim, x.ndim))
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * ins[1]
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2]
        return [y]
    raise NotImplementedError("op %s" % op)


def run_model(model, feeds):
    g = model.graph
    v = {}
    for init in g.initializer:
        arr = onnx.numpy_helper.to_array(init)
        v[init.name] = arr.astype(np.float64) if arr.dtype == np.float32 else arr
    for k, arr in feeds.items():
        v[k] = arr.astype(np.float64) if arr.dtype == np.float32 else arr
    for n in g.node:
        outs = run_node(n, v)
        for name, val in zip(n.output, outs):
            if name:
                v[name] = val
    return [v[o.name] for o in g.output]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="directory written by generate.py")
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args(argv)
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    ok = True
    for name, entry in manifest["models"].items():
        if args.only and name not in args.only:
            continue
        model = onnx.load(os.path.join(args.dir, entry["onnx"]))
        x = np.load(os.path.join(args.dir, entry["input_data"]))
        want = np.load(os.path.join(args.dir, entry["output_data"]))
        (got,) = run_model(model, {"input": x})
        err = float(np.max(np.abs(got - want)))
        good = got.shape == want.shape and np.allclose(got, want, rtol=args.rtol, atol=args.atol)
        ok &= good
        print("%-12s %s  max|onnx-torch| = %.3g" % (name, "OK  " if good else "FAIL", err))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
