#!/usr/bin/env bash
# Compiles models for the GPU with mlcc's tools (no GPU needed here):
#   bench/cuda/build_models.sh BIN OUT_DIR MODELS_DIR NAME... [--arch sm_90]
# For each NAME, MODELS_DIR/NAME.onnx (tests/models/generate.py's) becomes
# OUT_DIR/NAME.so (imported at its example input's shape, fused, legalized,
# scheduled by the default cuda rules, compiled with NVRTC) next to copies
# of NAME.input.npy and NAME.output.npy; the name gemmN makes an N x N x N
# fp32 matmul of two inputs. With --cublas, the matmul-like groups call
# cuBLAS (pipelines/patterns/cublas.yaml) and the files are named
# NAME_cublas.*. bench/cuda/run_models.py runs them on a GPU.
set -euo pipefail
bin=$1 out=$2 models=$3
shift 3
arch=sm_90
names=()
passes=canonicalize,fold-constants,fuse-ops,dead-code-elimination
suffix=
src=$(cd "$(dirname "$0")/../.." && pwd)
while [ $# -gt 0 ]; do
  case $1 in
    --arch) arch=$2; shift 2 ;;
    --cublas)
      passes="canonicalize,fold-constants,fuse-by-pattern{patterns=$src/pipelines/patterns/cublas.yaml},fuse-ops,dead-code-elimination"
      suffix=_cublas; shift ;;
    *) names+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
for name in "${names[@]}"; do
  w="$out/$name$suffix.work"
  mkdir -p "$w"
  if [[ $name =~ ^gemm([0-9]+)$ ]]; then
    n=${BASH_REMATCH[1]}
    cat > "$w/import.ir" <<IR
mlcc.ir 1

graph @main(%a: f32[$n, $n], %b: f32[$n, $n]) -> f32[$n, $n] {
  dataflow {
    %output: f32[$n, $n] = matmul(%a, %b)
  }
  return %output
}
IR
  else
    shape=$(/usr/bin/python3 -c "import numpy; print('x'.join(map(str, numpy.load('$models/$name.input.npy').shape)))")
    "$bin/mlcc-import" "$models/$name.onnx" --shape "input=$shape" -o "$w/import.ir"
    cp "$models/$name.input.npy" "$out/$name$suffix.input.npy"
    cp "$models/$name.output.npy" "$out/$name$suffix.output.npy"
  fi
  "$bin/mlcc-fuse" "$w/import.ir" --passes "$passes" -o "$w/fuse.ir"
  "$bin/mlcc-legalize" "$w/fuse.ir" -o "$w/legalize.ir"
  "$bin/mlcc-schedule" "$w/legalize.ir" --target "cuda -arch=$arch" -o "$w/schedule.ir"
  "$bin/mlcc-codegen" "$w/schedule.ir" --target "cuda -arch=$arch" -q -o "$w/model.o"
  "$bin/mlcc-codegen" "$w/schedule.ir" --target "cuda -arch=$arch" --emit cuda -q -o "$w/model.cu"
  "$bin/mlcc-link" "$w/model.o" -o "$out/$name$suffix.so"
  echo "$name$suffix: $(stat -c %s "$out/$name$suffix.so") bytes"
done
