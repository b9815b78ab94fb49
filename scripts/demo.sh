#!/usr/bin/env bash
# The end-to-end demo: generate the public test models with PyTorch, import
# them to mlcc IR, run them in the reference interpreter and compare with
# PyTorch; fuse, lower and schedule ResNet-18, compile it to a native
# model.so, run and time it; then open IR files the way a user does with
# mlcc-inspect (summarize, extract a function, diff two stages).
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
echo "== 2. Import each model (ONNX -> graph IR + safetensors weights) and run it in the reference interpreter"
for m in mlp cnn resnet18 mobilenetv2 transformer; do
  step "$bin/mlcc-import" "$out/models/$m.onnx" -o "$out/$m.ir"
  step "$bin/mlcc-run" "$out/$m.ir" --input input="$out/models/$m.input.npy" --output-dir "$out/run_$m"
done
step "$bin/mlcc-inspect" --summary "$out/resnet18.ir"
echo
echo "== 3. Compare with PyTorch's outputs"
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
out = sys.argv[1]
for m in ["mlp", "cnn", "resnet18", "mobilenetv2", "transformer"]:
    got = np.load(f"{out}/run_{m}/output.npy"); want = np.load(f"{out}/models/{m}.output.npy")
    err = float(np.abs(got - want).max()); scale = float(np.abs(want).max())
    ok = np.allclose(got, want, rtol=1e-3, atol=1e-4 * max(scale, 1.0))
    print(f"  {m:12s} max |mlcc - pytorch| = {err:.2e}  (outputs up to {scale:.2f})  {'ok' if ok else 'MISMATCH'}")
    if not ok: sys.exit(1)
PY
echo
echo "== 4. Fuse and lower: graph passes, fusion into primitive functions, legalization to TensorIR"
step "$bin/mlcc-fuse" "$out/resnet18.ir" -o "$out/resnet18.fused.ir" -v
step "$bin/mlcc-legalize" "$out/resnet18.fused.ir" -o "$out/resnet18.lowered.ir" -v
step "$bin/mlcc-inspect" --summary "$out/resnet18.lowered.ir"
step "$bin/mlcc-inspect" --func fused_conv2d_add_relu "$out/resnet18.lowered.ir"
echo "(the lowered model runs in the TensorIR interpreter: every stage is checked against PyTorch)"
step "$bin/mlcc-run" "$out/resnet18.lowered.ir" --input input="$out/models/resnet18.input.npy" --output-dir "$out/run_lowered" -v
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
out = sys.argv[1]
got = np.load(f"{out}/run_lowered/output.npy"); want = np.load(f"{out}/models/resnet18.output.npy")
print(f"  resnet18 lowered: max |mlcc - pytorch| = {float(np.abs(got - want).max()):.2e}")
sys.exit(0 if np.allclose(got, want, rtol=1e-3, atol=1e-3) else 1)
PY
echo
echo "== 5. Schedule (default CPU rules), compile with LLVM, link into model.so, run natively"
step "$bin/mlcc-schedule" "$out/resnet18.lowered.ir" --target llvm -o "$out/resnet18.scheduled.ir" -v
step "$bin/mlcc-inspect" --func fused_dense_add "$out/resnet18.scheduled.ir"
step "$bin/mlcc-codegen" "$out/resnet18.scheduled.ir" --target llvm -o "$out/resnet18.o" -v
step "$bin/mlcc-link" "$out/resnet18.o" -o "$out/resnet18.so"
step "$bin/mlcc-run" "$out/resnet18.so" --input input="$out/models/resnet18.input.npy" --output-dir "$out/run_native"
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
out = sys.argv[1]
got = np.load(f"{out}/run_native/output.npy"); want = np.load(f"{out}/models/resnet18.output.npy")
print(f"  resnet18 native: max |mlcc - pytorch| = {float(np.abs(got - want).max()):.2e}")
sys.exit(0 if np.allclose(got, want, rtol=1e-3, atol=1e-3) else 1)
PY
step "$bin/mlcc-run" "$out/resnet18.so" --bench 10 --threads 1 --json
step "$bin/mlcc-run" "$out/resnet18.so" --bench 10 --threads 2 --json

echo
echo "== 6. The same chain as a YAML pipeline (pipelines/cpu-default.yaml): an incremental Ninja build"
shape=$(/usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$out/models/mobilenetv2.input.npy').shape)))")
step "$bin/mlcc-pipeline" run "$root/pipelines/cpu-default.yaml" --input "$out/models/mobilenetv2.onnx" \
  --build-dir "$out/pipeline_mobilenetv2" --set import_args="--shape input=$shape"
ls "$out/pipeline_mobilenetv2"
echo "(a second run has nothing to do)"
step "$bin/mlcc-pipeline" run "$root/pipelines/cpu-default.yaml" --input "$out/models/mobilenetv2.onnx" \
  --build-dir "$out/pipeline_mobilenetv2" --set import_args="--shape input=$shape"
step "$bin/mlcc-run" "$out/pipeline_mobilenetv2/model.so" --input "input=$out/models/mobilenetv2.input.npy" --bench 10 --json
echo "(verify: every stage's output on the same input, each compared with the stage before)"
shape=$(/usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$out/models/cnn.input.npy').shape)))")
step "$bin/mlcc-pipeline" verify "$root/pipelines/cpu-blas.yaml" --input "$out/models/cnn.onnx" \
  --build-dir "$out/pipeline_cnn" --set import_args="--shape input=$shape" --data "input=$out/models/cnn.input.npy"

echo
echo "== 7. What scheduling did to a matmul: a structural diff of two stages"
step "$bin/mlcc-inspect" --diff "$root/tests/cli/inspect/mm.ir" "$root/tests/cli/inspect/mm_scheduled.ir"

echo
echo "== 8. Errors point at the file, line and column"
printf 'mlcc.ir 1\n\nprim @f(%%A: f32[4]) {\n  for %%i in 0..4 {\n    %%A[%%i] = %%A[%%i, 0]\n  }\n}\n' > "$out/broken.ir"
set +e
"$bin/mlcc-inspect" --validate "$out/broken.ir"
echo "(exit status $?)"
set -e
echo
echo "demo: done. See README.md for the tools one by one."
