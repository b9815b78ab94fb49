#!/usr/bin/python3
"""Generate the public mlcc test-model suite as ONNX files plus reference data.

Run with Debian's Python (python3-torch, python3-torchvision, python3-onnx):

    /usr/bin/python3 tests/models/generate.py --out tests/models/out
    /usr/bin/python3 tests/models/generate.py --out DIR --only mlp cnn --opset 13

For every model NAME this writes into DIR:
    NAME.onnx         the exported model (input `input`, output `output`)
    NAME.input.npy    a fixed random input (float32 normal; int64 token ids for
                      the transformer)
    NAME.output.npy   PyTorch's float32 output for that input
and DIR/manifest.json describing all models (inputs, outputs, op histogram,
notable op attributes, versions, sha256 of each file).  When --only is given,
entries already in an existing manifest for other models are kept.

Everything is deterministic: fixed seeds per model, one intra-op thread, and
deterministic algorithms; rerunning produces byte-identical files.
"""

import argparse
import hashlib
import io
import json
import os
import platform
import sys
import time
import warnings
from collections import Counter, OrderedDict

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torchvision

DEFAULT_OPSET = 13


# ----------------------------------------------------------------------------
# Model definitions
# ----------------------------------------------------------------------------


class MLP(nn.Module):
    """784-256-10: Linear, ReLU, Linear."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class CNN(nn.Module):
    """The MLC course CNN: conv 1->32 3x3, relu, maxpool 2, flatten,
    linear 5408->100, relu, linear 100->10, softmax."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, kernel_size=3)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(32 * 13 * 13, 100)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(100, 10)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        x = self.pool(self.relu1(self.conv(x)))
        x = self.flatten(x)
        x = self.relu2(self.fc1(x))
        return self.softmax(self.fc2(x))


class TransformerClassifier(nn.Module):
    """Token embedding + learned positional embedding, 2-layer post-norm
    TransformerEncoder (GELU, batch_first, no dropout), final LayerNorm,
    mean over the sequence, Linear -> 10."""

    def __init__(self, vocab=1000, d_model=64, nhead=4, ffn=128, layers=2,
                 max_len=16, num_classes=10):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        # Learned positional embedding, added to every sequence (length is
        # fixed at max_len in this suite, so no position-id arithmetic).
        self.pos = nn.Parameter(torch.randn(1, max_len, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=d_model, nhead=nhead, dim_feedforward=ffn, dropout=0.0,
            activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=layers, norm=nn.LayerNorm(d_model),
            enable_nested_tensor=False)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[:, : ids.shape[1]]
        x = self.encoder(x)
        return self.head(x.mean(dim=1))


def make_nontrivial(model, gen):
    """Replace degenerate default initializations with seeded random values.

    Freshly constructed models have BatchNorm/LayerNorm at identity (weight 1,
    bias 0, running mean 0, var 1), zero biases in attention, and
    nn.TransformerEncoder deep-copies one layer so all layers start with
    identical weights.  Such values hide bugs (a wrong scale/shift or a
    swapped layer gives the same output) and make the exporter deduplicate
    equal initializers into Identity nodes.  Randomize them deterministically.
    """
    def uniform(t, lo, hi):
        return torch.rand(t.shape, generator=gen, dtype=t.dtype) * (hi - lo) + lo

    def normal(t, std):
        return torch.randn(t.shape, generator=gen, dtype=t.dtype) * std

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.TransformerEncoder):
                for layer in list(m.layers)[1:]:
                    layer.self_attn._reset_parameters()
                    layer.self_attn.out_proj.reset_parameters()
                    layer.linear1.reset_parameters()
                    layer.linear2.reset_parameters()
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(normal(m.running_mean, 0.1))
                m.running_var.copy_(uniform(m.running_var, 0.5, 1.5))
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)):
                m.weight.copy_(uniform(m.weight, 0.5, 1.5))
                m.bias.copy_(normal(m.bias, 0.1))
        for p in model.parameters():
            if p.numel() > 1 and bool((p == p.reshape(-1)[0]).all()):
                p.copy_(normal(p, 0.02))
    return model


def _image_input(gen, shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float32)


def build_mlp(gen):
    return MLP(), _image_input(gen, (4, 784)), {"input": {0: "batch"}, "output": {0: "batch"}}


def build_cnn(gen):
    return CNN(), _image_input(gen, (1, 1, 28, 28)), None


def build_resnet18(gen):
    return torchvision.models.resnet18(weights=None), _image_input(gen, (1, 3, 224, 224)), None


def build_mobilenetv2(gen):
    return torchvision.models.mobilenet_v2(weights=None), _image_input(gen, (1, 3, 224, 224)), None


def build_transformer(gen):
    ids = torch.randint(0, 1000, (1, 16), generator=gen, dtype=torch.int64)
    return TransformerClassifier(), ids, None


# name -> (builder, seed).  The seed fixes both the weights (torch.manual_seed
# before construction) and the input (a separate torch.Generator).
MODELS = OrderedDict([
    ("mlp", (build_mlp, 1)),
    ("cnn", (build_cnn, 2)),
    ("resnet18", (build_resnet18, 3)),
    ("mobilenetv2", (build_mobilenetv2, 4)),
    ("transformer", (build_transformer, 5)),
])


# ----------------------------------------------------------------------------
# ONNX inspection helpers
# ----------------------------------------------------------------------------

def _dtype_name(elem_type):
    """numpy spelling of an ONNX element type (float32, int64, ...)."""
    try:
        if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):
            return str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)))
        return str(np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]))
    except (KeyError, TypeError):
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def _value_info(vi):
    t = vi.type.tensor_type
    shape = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            shape.append(d.dim_param)
        else:
            shape.append(None)
    return {"name": vi.name, "shape": shape, "dtype": _dtype_name(t.elem_type)}


def _attr_value(a):
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    if isinstance(v, onnx.TensorProto):
        arr = onnx.numpy_helper.to_array(v)
        if arr.size <= 8:
            return {"tensor": arr.tolist(), "dtype": str(arr.dtype)}
        return {"tensor_shape": list(arr.shape), "dtype": str(arr.dtype)}
    if isinstance(v, float):
        return float(np.float32(v))  # keep float32 spelling short
    if isinstance(v, onnx.GraphProto):  # a Loop/If/Scan body: its size
        return {"graph_nodes": len(v.node)}
    return v


def summarize_graph(model):
    g = model.graph
    init_names = {i.name for i in g.initializer}
    ops = Counter(n.op_type for n in g.node)
    # Distinct attribute combinations per op type (Constant tensors are
    # summarized by shape/dtype) -- what an importer has to handle.
    attrs = {}
    for n in g.node:
        sig = json.dumps({a.name: _attr_value(a) for a in n.attribute}, sort_keys=True)
        attrs.setdefault(n.op_type, Counter())[sig] += 1
    op_attrs = {
        op: [{"attrs": json.loads(sig), "count": c} for sig, c in sorted(cnt.items())]
        for op, cnt in sorted(attrs.items())
    }
    n_params = sum(int(np.prod(i.dims)) for i in g.initializer)
    return {
        "opset": [{"domain": o.domain or "ai.onnx", "version": o.version} for o in model.opset_import],
        "inputs": [_value_info(i) for i in g.input if i.name not in init_names],
        "outputs": [_value_info(o) for o in g.output],
        "num_nodes": len(g.node),
        "num_initializers": len(g.initializer),
        "num_parameters": n_params,
        "ops": dict(sorted(ops.items())),
        "op_attrs": op_attrs,
    }


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_atomic(path, data):
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


# ----------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------


def generate(name, out_dir, opset, models=None):
    """Export model NAME of MODELS (or of the given name -> (builder, seed)
    table, e.g. tests/models/unseen.py's) with its input and PyTorch output."""
    builder, seed = (models or MODELS)[name]
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(1000 + seed)
    model, example, dynamic_axes = builder(gen)
    make_nontrivial(model, torch.Generator().manual_seed(2000 + seed))
    model.eval()

    with torch.no_grad():
        expected = model(example).detach().to(torch.float32).contiguous().numpy()

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (example,), buf,
            input_names=["input"], output_names=["output"],
            dynamic_axes=dynamic_axes,
            opset_version=opset,
            do_constant_folding=True,
            training=torch.onnx.TrainingMode.EVAL,
            export_params=True,
        )
    onnx_bytes = buf.getvalue()
    onnx_model = onnx.load_from_string(onnx_bytes)
    onnx.checker.check_model(onnx_model)
    # Guard against torch's fused kernels leaking into the graph (e.g. the
    # TransformerEncoderLayer fast path): only the default ONNX domain is
    # allowed.
    foreign = sorted({n.domain + "::" + n.op_type for n in onnx_model.graph.node if n.domain not in ("", "ai.onnx")})
    if foreign:
        raise RuntimeError("%s: exported graph uses non-standard ops: %s" % (name, foreign))

    onnx_path = os.path.join(out_dir, name + ".onnx")
    in_path = os.path.join(out_dir, name + ".input.npy")
    out_path = os.path.join(out_dir, name + ".output.npy")
    _write_atomic(onnx_path, onnx_bytes)
    _write_atomic(in_path, _npy_bytes(example.numpy()))
    _write_atomic(out_path, _npy_bytes(expected))
    elapsed = time.perf_counter() - t0

    entry = {
        "onnx": name + ".onnx",
        "input_data": name + ".input.npy",
        "output_data": name + ".output.npy",
        "seed": seed,
        "input_data_shape": list(example.shape),
        "input_data_dtype": str(example.numpy().dtype),
        "output_data_shape": list(expected.shape),
        "output_data_dtype": str(expected.dtype),
        "sha256": {
            "onnx": sha256(onnx_path),
            "input_data": sha256(in_path),
            "output_data": sha256(out_path),
        },
    }
    entry.update(summarize_graph(onnx_model))
    return entry, elapsed


def argument_parser(description, models):
    """The options both generators share: --out and --only (names of `models`)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", required=True, help="output directory (created if missing)")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(models),
                    help="generate only these models (%s)" % ", ".join(models))
    return ap


def set_deterministic():
    """One intra-op thread (results must not depend on the core count),
    deterministic kernels."""
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def previous_models(manifest_path, only, opset=None):
    """The models of an existing manifest that a run with --only keeps ({}
    without --only, or when the manifest is missing, unreadable, or, given
    `opset`, of another opset)."""
    if not only or not os.path.exists(manifest_path):
        return {}
    try:
        with open(manifest_path) as f:
            old = json.load(f)
        if opset is None or old.get("opset") == opset:
            return old.get("models", {})
    except (OSError, ValueError):
        pass
    return {}


def write_manifest(manifest_path, manifest, models):
    """Adds the tool versions, orders the entries as `models` and writes the
    manifest atomically."""
    manifest["versions"] = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "onnx": onnx.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    manifest["models"] = dict(sorted(manifest["models"].items(), key=lambda kv: list(models).index(kv[0])))
    _write_atomic(manifest_path, (json.dumps(manifest, indent=2, sort_keys=False) + "\n").encode())


def main(argv=None):
    ap = argument_parser(__doc__.split("\n\n")[0], MODELS)
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET,
                    help="ONNX opset version (default %d)" % DEFAULT_OPSET)
    ap.add_argument("--quiet", action="store_true", help="no per-model progress lines")
    args = ap.parse_args(argv)

    set_deterministic()
    os.makedirs(args.out, exist_ok=True)
    names = args.only or list(MODELS)

    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"models": previous_models(manifest_path, args.only, args.opset)}

    for name in names:
        entry, elapsed = generate(name, args.out, args.opset)
        manifest["models"][name] = entry
        if not args.quiet:
            ops = ", ".join("%s:%d" % kv for kv in entry["ops"].items())
            print("%-12s %6.2fs  %4d nodes  %s" % (name, elapsed, entry["num_nodes"], ops), flush=True)

    manifest["opset"] = args.opset
    write_manifest(manifest_path, manifest, MODELS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
