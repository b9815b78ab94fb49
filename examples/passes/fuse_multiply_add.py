#!/usr/bin/env python3
"""A graph pass as a program (MLC chapter 7's EwiseFMARewriter): every
add(multiply(a, b), c) of f32 tensors, in either operand order, becomes
ewise_fma(a, b, c). The multiply stays for mlcc-fuse's dead-code-elimination
(it may have other uses). Called as a pipeline stage is: IN -o OUT.

    examples/passes/fuse_multiply_add.py model.ir -o fma.ir
    mlcc-pipeline run examples/passes/pipeline.yaml --input model.onnx
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlcc_ir  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="IR file ('-': stdin)")
    ap.add_argument("-o", "--output", required=True, help="IR file ('-': stdout)")
    args = ap.parse_args()
    try:
        module = mlcc_ir.read(args.input)
    except (OSError, ValueError) as e:
        sys.exit(f"fuse_multiply_add: {args.input}: {e}")
    fused = 0
    for block in module.blocks():
        defs = {b.name: b for b in block}
        for b in block:
            if b.op != "add" or b.attrs or not b.type.startswith("f32["):
                continue
            for i, x in enumerate(b.args):
                d = defs.get(x)
                if d is not None and d.op == "multiply" and d.type == b.type:
                    b.op, b.args = "ewise_fma", d.args + [b.args[1 - i]]
                    fused += 1
                    break
    module.write(args.output)
    print(f"fuse_multiply_add: {fused} multiply-add(s) fused", file=sys.stderr)


if __name__ == "__main__":
    main()
