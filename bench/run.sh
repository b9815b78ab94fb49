#!/usr/bin/env bash
# The benchmark suite in one command: builds the tools and bench programs it
# needs, creates (or reuses) a Python virtual environment with ONNX Runtime,
# numpy, matplotlib, onnx and jsonschema from PyPI, and runs bench/mlcc_bench.py:
# the public models through the whole mlcc chain against ONNX Runtime at 1 and
# 2 threads, matmul GFLOPS against OpenBLAS and the FMA peak, compile times, and
# the issue's targets. Writes OUT/bench.json and OUT/bench.png, prints a table.
#
#   bench/run.sh [--quick] [--out DIR] [--build-dir DIR] [--venv DIR] [--no-build] [--tvm] [MLCC_BENCH_ARGS...]
#
# Other arguments go to bench/mlcc_bench.py (--models, --sizes, --threads,
# --runs, --patterns, --parts, --no-chart, --tune-trials N, --tune-budgets
# N1,N2,...; see bench/mlcc_bench.py --help). --tvm also installs TVM
# (apache-tvm, apache-tvm-ffi 0.1.14.post1, xgboost-cpu, cloudpickle, psutil) into the
# venv and compares mlcc-tune with TVM's MetaSchedule on the 1024^3 GEMM and, with
# --tune-trials, on the MLP and the CNN.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$src/build/release
venv=$src/build/bench-venv
out=$src/build/bench
build_tools=1
tvm=0
pass=()
usage() {
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit "$1"
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --venv) venv=${2:?--venv needs a directory}; shift 2 ;;
    --no-build) build_tools=0; shift ;;
    --tvm) tvm=1; pass+=("$1"); shift ;;
    -h | --help) usage 0 ;;
    *) pass+=("$1"); shift ;;
  esac
done

# The tools of the chain and the bench programs (only those this tree has).
if [[ $build_tools == 1 ]]; then
  [[ -f $build/build.ninja || -f $build/Makefile ]] || cmake --preset release -S "$src" >&2
  mapfile -t known < <(cmake --build "$build" --target help | sed -n 's/^\([a-z_-]*\): .*/\1/p')
  targets=()
  for t in mlcc-import mlcc-fuse mlcc-legalize mlcc-schedule mlcc-codegen mlcc-link mlcc-run mlcc-tune fma_peak blas_bench; do
    if printf '%s\n' "${known[@]}" | grep -qx -- "$t"; then targets+=("$t"); else echo "bench: no target $t in this tree" >&2; fi
  done
  echo "bench: building ${targets[*]}" >&2
  keep_going=()
  [[ -f $build/build.ninja ]] && keep_going=(-- -k 0)
  # A target that fails to build leaves its stage to be reported as missing (or stale).
  cmake --build "$build" -j2 --target "${targets[@]}" "${keep_going[@]}" >&2 ||
    echo "bench: some targets failed to build (see above); the suite runs with what was built" >&2
fi

# The virtual environment (python3 -m venv; PyPI packages).
packages=(onnxruntime numpy matplotlib onnx jsonschema)
if ! "$venv/bin/python" -c 'import onnxruntime, numpy, matplotlib, onnx, jsonschema' 2>/dev/null; then
  echo "bench: creating $venv with ${packages[*]}" >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade "${packages[@]}" >&2
fi
# TVM only with --tvm (a newer apache-tvm-ffi crashes MetaSchedule's tuning
# database). A failed install is not fatal: the bench reports TVM as not measured.
if [[ $tvm == 1 ]] && ! "$venv/bin/python" -c 'import tvm, xgboost, cloudpickle, psutil' 2>/dev/null; then
  echo "bench: installing TVM into $venv" >&2
  "$venv/bin/python" -m pip install -q apache-tvm "apache-tvm-ffi==0.1.14.post1" xgboost-cpu cloudpickle psutil >&2 ||
    echo "bench: installing TVM failed (see above); its comparison is reported as not measured" >&2
fi

exec "$venv/bin/python" "$src/bench/mlcc_bench.py" --bin "$build/bin" --src "$src" --out "$out" "${pass[@]}"
