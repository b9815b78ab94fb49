#!/usr/bin/python3
"""Generated seed corpora for the fuzz targets (run at build time).

    make_seeds.py SRC_DIR OUT_DIR

Writes OUT_DIR/onnx (the small per-op ONNX models of tests/cli/import_models.py,
when python3-onnx is importable), OUT_DIR/npy (their .npy inputs and outputs,
plus arrays of every supported dtype written here) and OUT_DIR/safetensors
(files of every dtype, a 0-d tensor, metadata, an empty file). Only the
standard library is needed for npy and safetensors.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def npy(descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d," % d for d in shape) if len(shape) == 1 else ", ".join(str(d) for d in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def main():
    src, out = sys.argv[1], sys.argv[2]
    for d in ("onnx", "npy", "safetensors"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    w = lambda d, n, b: open(os.path.join(out, d, n), "wb").write(b)

    w("npy", "f4_2x3.npy", npy("<f4", [2, 3], struct.pack("<6f", *range(6))))
    w("npy", "f2_4.npy", npy("<f2", [4], b"\x00\x3c" * 4))
    w("npy", "i8_scalar.npy", npy("<i8", [], struct.pack("<q", 7)))
    w("npy", "i4_0.npy", npy("<i4", [0], b""))
    w("npy", "b1_3.npy", npy("|b1", [3], b"\x01\x00\x01"))
    w("npy", "i1_2x2.npy", npy("|i1", [2, 2], b"\x01\xff\x02\xfe"))
    w("npy", "u1_2.npy", npy("|u1", [2], b"\x01\x02"))
    w("npy", "f8_1.npy", npy("<f8", [1], struct.pack("<d", 1.5)))

    f32 = struct.pack("<4f", 1, 2, 3, 4)
    w("safetensors", "f32.safetensors", safetensors([("w", "F32", [2, 2], f32)]))
    w("safetensors", "mixed.safetensors", safetensors([
        ("a.weight", "F16", [2], b"\x00\x3c\x00\x40"), ("b", "I64", [1], struct.pack("<q", 3)),
        ("c", "BOOL", [3], b"\x01\x00\x01"), ("d", "BF16", [1], b"\x80\x3f"), ("e", "I8", [2], b"\x01\x02"),
        ("f", "I32", [], struct.pack("<i", 9)), ("g", "U8", [1], b"\x05"), ("h", "F64", [1], struct.pack("<d", 2))],
        {"format": "pt"}))
    w("safetensors", "empty.safetensors", safetensors([]))
    w("safetensors", "zero_dim.safetensors", safetensors([("z", "F32", [0, 3], b"")]))

    try:
        import onnx  # noqa: F401
    except ImportError:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(src, "tests/cli/import_models.py"), tmp],
                       check=True, stdout=subprocess.DEVNULL)
        for name in sorted(os.listdir(tmp)):
            path = os.path.join(tmp, name)
            if name.endswith(".onnx") and os.path.getsize(path) <= 64 * 1024:
                shutil.copy(path, os.path.join(out, "onnx", name))
            elif name.endswith(".npy") and os.path.getsize(path) <= 16 * 1024:
                shutil.copy(path, os.path.join(out, "npy", name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
