#!/usr/bin/env bash
# The end-to-end demo, as far as the tools exist: generate the public test
# models, then open an IR file the way a user does with mlcc-inspect
# (validate, summarize, extract a function, diff two stages).
# Run after building with the release preset (see README.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${MLCC_BIN:-$root/build/release/bin}
out=${MLCC_DEMO_DIR:-$root/build/demo}
mkdir -p "$out"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "== 1. The public test models, exported from PyTorch to ONNX (tests/models/generate.py)"
step /usr/bin/python3 "$root/tests/models/generate.py" --out "$out/models"
ls -l "$out/models"

echo
echo "== 2. An IR file at the lowered stage: an MLP with a symbolic batch dimension"
ir=$root/tests/ir/valid/mlp_lowered.ir
step "$bin/mlcc-inspect" --validate "$ir"
step "$bin/mlcc-inspect" --summary "$ir"
step "$bin/mlcc-inspect" --summary --json "$ir"
step "$bin/mlcc-inspect" --func softmax "$ir"

echo
echo "== 3. What scheduling did to a matmul: a structural diff of two stages"
step "$bin/mlcc-inspect" --diff "$root/tests/cli/inspect/mm.ir" "$root/tests/cli/inspect/mm_scheduled.ir"

echo
echo "== 4. Errors point at the file, line and column"
printf 'mlcc.ir 1\n\nprim @f(%%A: f32[4]) {\n  for %%i in 0..4 {\n    %%A[%%i] = %%A[%%i, 0]\n  }\n}\n' > "$out/broken.ir"
set +e
"$bin/mlcc-inspect" --validate "$out/broken.ir"
echo "(exit status $?)"
set -e
echo
echo "demo: done. The tools that import, compile and run models come next (see README.md)."
