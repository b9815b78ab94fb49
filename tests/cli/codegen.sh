#!/usr/bin/env bash
# mlcc-codegen as a user runs it: the public models (PyTorch-generated)
# through the whole chain — import (static shapes) → fuse → legalize →
# schedule --target llvm (when mlcc-schedule is built) → codegen → mlcc-link →
# run (mlcc-run, or the C example examples/c/run_model) — against PyTorch's
# outputs, and the MLP with BLAS dispatch; --emit ll|asm, the default output
# model.o, -v; no heap allocation while a model runs; the MLP with a symbolic
# batch at several batch sizes; the errors (unlegalized ops, symbolic shapes in
# BLAS calls, --target cuda, bad files) exit 1 with a clear message and leave no output behind.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-codegen

# --- usage, --help, --version ---
check "--help shows an example" prints 'mlcc-codegen scheduled.ir --target llvm -o model.o' --help
check "--version" prints 'mlcc-codegen' --version
check "usage error exits 2" run 2 --no-such-flag
check "bad --emit exits 2" run 2 x.ir --emit exe

# --- a small legalized module ---
cat >"$tmp/small.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 8]) -> f32[4, 8] {
  dataflow {
    %y: f32[4, 8] = exp(%x)
    %z: f32[4, 8] = negative(%y)
  }
  return %z
}
IR
"$bin/mlcc-legalize" "$tmp/small.ir" -o "$tmp/small.low.ir"
check "--emit ll" run 0 "$tmp/small.low.ir" --target llvm --emit ll -o "$tmp/small.ll"
check "the IR defines the model description" contains "$tmp/small.ll" '^@mlcc_abi_model_v1 = .*constant'
check "the IR has the entry" contains "$tmp/small.ll" 'define internal .*i32 @mlcc_entry('
check "--emit ll goes to stdout without -o" bash -c "cd '$tmp' && '$tool' small.low.ir --emit ll | grep -q mlcc_abi_model_v1"
check "--emit asm" run 0 "$tmp/small.low.ir" --target llvm --emit asm -O1 -o "$tmp/small.s"
check "assembly names the model" contains "$tmp/small.s" 'mlcc_abi_model_v1'
check "default output model.o" bash -c "cd '$tmp' && '$tool' small.low.ir --target llvm && test -s model.o"
check "-mcpu and -O" run 0 "$tmp/small.low.ir" --target llvm -mcpu=x86-64 -O2 -o "$tmp/generic.o"
check "-v" run 0 "$tmp/small.low.ir" --target llvm -o "$tmp/small.o" -v
check "-v: kernels" contains "$tmp/err" '^kernels: 2'
check "-v: memory plan" contains "$tmp/err" '^memory plan: 128 bytes planned for 128 bytes of intermediates'
check "-v: weights" contains "$tmp/err" '^embedded weights: 0 bytes'
check "-v: compile time" contains "$tmp/err" '^compile time: [0-9.e-]* s'
check "the object links" "$bin/mlcc-link" "$tmp/small.o" -o "$tmp/small.so"
check "deterministic" bash -c "'$tool' '$tmp/small.low.ir' -o '$tmp/small2.o' && cmp -s '$tmp/small.o' '$tmp/small2.o'"
check "-o - writes the object to stdout" bash -c "'$tool' '$tmp/small.low.ir' -o - | cmp -s - '$tmp/small.o'"

# --- errors: exit 1, a clear message, no output ---
check "--target cuda exits 1" run 1 "$tmp/small.low.ir" --target cuda -o "$tmp/x.o"
check "--target cuda: not supported yet" contains "$tmp/err" "target cuda is not supported by mlcc-codegen yet"
check "unknown target exits 1" run 1 "$tmp/small.low.ir" --target wasm -o "$tmp/x.o"
# CPUs and features are checked against LLVM's tables (before: an LLVM fatal
# error, exit 134), also by --check-args (what mlcc-pipeline runs first).
check "-mcpu=bogus exits 1" run 1 "$tmp/small.low.ir" -mcpu=bogus -o "$tmp/x.o"
check "-mcpu=bogus: message" contains "$tmp/err" "^-mcpu: error: unknown CPU 'bogus' for x86_64.*(valid: native, x86-64, x86-64-v2"
check "-mcpu=bogus: no LLVM warning" bash -c "! grep -q 'not a recognized processor' '$tmp/err'"
check "-mcpu=bogus: no output" absent "$tmp/x.o"
check "a misspelt -mcpu: did you mean" run 1 "$tmp/small.low.ir" --mcpu skylake-avx51 -o "$tmp/x.o"
check "a misspelt -mcpu: suggestion" contains "$tmp/err" "did you mean skylake-avx512"
check "32-bit CPU in --target exits 1" run 1 "$tmp/small.low.ir" --target "llvm -mcpu=i386" -o "$tmp/x.o"
check "32-bit CPU: message" contains "$tmp/err" "^--target: error: CPU 'i386' cannot run 64-bit code"
check "bad -mattr exits 1" run 1 "$tmp/small.low.ir" -mattr=+avx2,+avx9 -o "$tmp/x.o"
check "bad -mattr: message" contains "$tmp/err" "unknown CPU feature '+avx9' in -mattr=+avx2,+avx9"
check "-mattr=-64bit exits 1" run 1 "$tmp/small.low.ir" -mattr=-64bit -o "$tmp/x.o"
check "--check-args rejects -mcpu=bogus" run 1 "$tmp/small.low.ir" -mcpu=bogus --check-args
check "--check-args accepts a good -mcpu" run 0 "$tmp/small.low.ir" -mcpu=x86-64-v3 --check-args
check "-mcpu with -mattr" run 0 "$tmp/small.low.ir" --target "llvm -mcpu=x86-64-v3 -mattr=-fma" -o "$tmp/v3.o"
check "-mattr: the object links" "$bin/mlcc-link" "$tmp/v3.o" -o "$tmp/v3.so"
check "unlegalized op exits 1" run 1 "$tmp/small.ir" -o "$tmp/x.o"
check "unlegalized op: message" contains "$tmp/err" "small.ir: error: @main, binding %y: op exp was not legalized: run mlcc-legalize first"
# Symbolic shapes in library calls are refused (symbolic models run: see below).
cat >"$tmp/symblas.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[n, 8], %w: f32[2, 8]) -> f32[n, 2] {
  dataflow {
    %y: f32[n, 2] = call_extern "blas.dense"(%x, %w)
  }
  return %y
}
IR
check "symbolic shape in a BLAS call exits 1" run 1 "$tmp/symblas.ir" -o "$tmp/x.o"
check "symbolic shape: message" contains "$tmp/err" "symbolic shapes are not supported by codegen yet in library calls: .*--shape"
cat >"$tmp/ext.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 8], %w: f32[2, 8]) -> f32[4, 2] {
  dataflow {
    %y: f32[4, 2] = call_extern "blas.conv"(%x, %w)
  }
  return %y
}
IR
check "unknown extern exits 1" run 1 "$tmp/ext.ir" -o "$tmp/x.o"
check "unknown extern: message" contains "$tmp/err" 'binding %y: unknown extern "blas.conv" (the CPU codegen knows blas.dense'
check "unknown --entry exits 1" run 1 "$tmp/small.low.ir" --entry nosuch -o "$tmp/x.o"
check "unknown --entry: message" contains "$tmp/err" "no graph function @nosuch"
check "missing file exits 1" run 1 "$tmp/nosuch.ir" -o "$tmp/x.o"
printf 'mlcc.ir 1\ngraph @main(%%x: f32[4]) -> f32[4] {\n  return %%nope\n}\n' >"$tmp/bad.ir"
check "bad IR exits 1 at FILE:LINE:COL" run 1 "$tmp/bad.ir" -o "$tmp/x.o"
check "bad IR: location" contains "$tmp/err" "bad.ir:[0-9]*:[0-9]*: error:"
# A store the verifier can prove out of bounds is refused at its line (before:
# it compiled, and model.so wrote far past %y: SIGSEGV).
cat >"$tmp/oob.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[8]) -> f32[8] {
  dataflow {
    %y: f32[8] = call_tir @shift(%x)
  }
  return %y
}

prim @shift(%x: f32[8], %y: f32[8]) {
  for %i in 0..8 {
    block "shift" (%vi = spatial(8, %i)) {
      reads(%x[%vi])
      writes(%y[%vi])
      %y[%vi * 100000 + 1] = %x[%vi]
    }
  }
}
IR
check "out-of-bounds store exits 1" run 1 "$tmp/oob.ir" -o "$tmp/x.o"
check "out-of-bounds store: located" contains "$tmp/err" '^.*oob.ir:15:7: error: in prim @shift, block "shift": store to %y is out of bounds: index 700001 in dimension 0 of size 8 at %i = 7'
check "no output after errors" absent "$tmp/x.o"

# --bounds-check: an index read from the input (no verifier can know it) out
# of bounds fails the run, naming the prim func, buffer and index (without
# the checks, that model.so reads far outside %x: SIGSEGV).
cat >"$tmp/gather.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[8], %idx: i64[4]) -> f32[4] {
  dataflow {
    %y: f32[4] = call_tir @gather(%x, %idx)
  }
  return %y
}

prim @gather(%x: f32[8], %idx: i64[4], %y: f32[4]) {
  for %i in 0..4 {
    block "gather" (%vi = spatial(4, %i)) {
      reads(%x[0 +: 8], %idx[%vi])
      writes(%y[%vi])
      %y[%vi] = %x[%idx[%vi]]
    }
  }
}
IR
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
np.save(f"{d}/gx.npy", np.arange(8, dtype=np.float32))
np.save(f"{d}/gidx.npy", np.array([0, 3, 7, 1], np.int64))
np.save(f"{d}/gbad.npy", np.array([0, 3, 1000000000, 1], np.int64))
PY
  check "--bounds-check compiles" run 0 "$tmp/gather.ir" --bounds-check -o "$tmp/gather.o"
  check "--bounds-check: the object links" "$bin/mlcc-link" "$tmp/gather.o" -o "$tmp/gather.so"
  check "--bounds-check: in bounds, the right answer" bash -c "'$bin/mlcc-run' '$tmp/gather.so' --input x='$tmp/gx.npy' --input idx='$tmp/gidx.npy' --output-dir '$tmp/gout' && /usr/bin/python3 -c 'import numpy as np; assert (np.load(\"$tmp/gout/y.npy\") == [0, 3, 7, 1]).all()'"
  "$bin/mlcc-run" "$tmp/gather.so" --input x="$tmp/gx.npy" --input idx="$tmp/gbad.npy" --output-dir "$tmp/gbad" 2>"$tmp/err"
  rc=$?
  check "--bounds-check: out of bounds exits 1 (no signal)" test "$rc" -eq 1
  check "--bounds-check: the message" contains "$tmp/err" 'gather.so: error: run failed: prim func @gather, block "gather": load from %x\[1000000000\] is out of bounds of shape \[8\]'
  check "--bounds-check: no output" absent "$tmp/gbad/y.npy"
fi

# No allocation while a model runs: tests/cli/support/count_allocs.c counts
# every heap allocation of the process during runs (after a warm-up).
check "the allocation counter builds" cc -O2 -Wall -Wextra -I"$src/include" -o "$tmp/count_allocs" \
  "$src/tests/cli/support/count_allocs.c" -ldl

# --- how a model.so is run: mlcc-run, else the C example ---
runner=""
if "$bin/mlcc-run" "$tmp/small.so" --output-dir "$tmp/r" >/dev/null 2>&1; then
  runner=mlcc-run
elif make -s -C "$src/examples/c" O="$tmp" CC=cc >/dev/null 2>&1; then
  runner=c
fi
run_so() {  # run_so MODEL.so INPUT_NAME INPUT.npy OUTDIR
  rm -rf "$4"
  case $runner in
    mlcc-run) "$bin/mlcc-run" -q "$1" --input "$2=$3" --output-dir "$4" ;;
    c) mkdir -p "$4" && "$tmp/run_model" "$1" "$2=$3" --out "$4" >/dev/null ;;
    *) echo "  no way to run a model.so"; return 1 ;;
  esac
}

# --- the public models through the whole chain, against PyTorch ---
if public_models torch torchvision onnx numpy; then
  for m in mlp cnn resnet18 mobilenetv2 transformer; do
    shape=$(/usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$tmp/models/$m.input.npy').shape)))")
    d=$tmp/chain/$m
    mkdir -p "$d"
    check "$m imports (input=$shape)" "$bin/mlcc-import" -q "$tmp/models/$m.onnx" --shape "input=$shape" -o "$d/model.ir"
    check "$m fuses" "$bin/mlcc-fuse" -q "$d/model.ir" -o "$d/fused.ir"
    lowered "$m" "$d/fused.ir" "$d/lowered.ir" || continue
    in=$d/lowered.ir
    if [[ -x $bin/mlcc-schedule ]]; then
      check "$m schedules" "$bin/mlcc-schedule" -q "$d/lowered.ir" --target llvm -o "$d/scheduled.ir"
      in=$d/scheduled.ir
    fi
    start=$(date +%s.%N)
    check "$m compiles" run 0 "$in" --target llvm -o "$d/model.o" -v
    end=$(date +%s.%N)
    echo "     $m codegen: $(echo "$end - $start" | bc) s; $(grep -E '^(memory plan|embedded weights)' "$tmp/err" 2>/dev/null | tr '\n' ';')"
    check "$m links" "$bin/mlcc-link" "$d/model.o" -o "$d/model.so"
    check "$m runs" run_so "$d/model.so" input "$tmp/models/$m.input.npy" "$d/out"
    check "$m compiled matches PyTorch" compare "$d/out/output.npy" "$tmp/models/$m.output.npy"
    check "$m runs without allocating" "$tmp/count_allocs" "$d/model.so"
  done
  # The MLP imported without --shape (a symbolic batch): one model.so runs at
  # batch 4, 1, 3 and 8 (against the interpreter and PyTorch).
  d=$tmp/chain/mlp_sym
  mkdir -p "$d"
  check "mlp imports with a symbolic batch" "$bin/mlcc-import" -q "$tmp/models/mlp.onnx" -o "$d/model.ir"
  check "symbolic mlp: the batch is symbolic" contains "$d/model.ir" 'graph @main(%input: f32\[[a-z_]*, 784\])'
  "$bin/mlcc-fuse" -q "$d/model.ir" -o "$d/fused.ir" && "$bin/mlcc-legalize" -q "$d/fused.ir" -o "$d/lowered.ir" &&
    "$bin/mlcc-schedule" -q "$d/lowered.ir" --target llvm -o "$d/scheduled.ir"
  check "symbolic mlp compiles" run 0 "$d/scheduled.ir" --target llvm -o "$d/model.o" -v
  check "symbolic mlp: -v names the symbolic dimension" contains "$tmp/err" '^memory plan: .* for [a-z_]* = 1 (symbolic dimensions, set at run time)' 
  check "symbolic mlp links" "$bin/mlcc-link" "$d/model.o" -o "$d/model.so"
  check "symbolic mlp runs at batch 4" "$bin/mlcc-run" -q "$d/model.so" --input "input=$tmp/models/mlp.input.npy" --output-dir "$d/out4"
  check "symbolic mlp matches PyTorch" compare "$d/out4/output.npy" "$tmp/models/mlp.output.npy"
  for n in 1 3 8; do
    /usr/bin/python3 -c "import numpy as np; np.save('$d/in$n.npy', np.random.RandomState($n).randn($n, 784).astype(np.float32))"
    check "symbolic mlp runs at batch $n" "$bin/mlcc-run" -q "$d/model.so" --input "input=$d/in$n.npy" --output-dir "$d/so$n"
    "$bin/mlcc-run" -q "$d/model.ir" --input "input=$d/in$n.npy" --output-dir "$d/ir$n"
    check "symbolic mlp at batch $n matches the interpreter" compare "$d/so$n/output.npy" "$d/ir$n/output.npy"
  done
  check "PyTorch at batches 1, 3, 8" /usr/bin/python3 "$src/tests/cli/support/torch_mlp.py" "$src" \
    "$d/in1.npy" "$d/torch1.npy" "$d/in3.npy" "$d/torch3.npy" "$d/in8.npy" "$d/torch8.npy"
  for n in 1 3 8; do
    check "symbolic mlp at batch $n matches PyTorch" compare "$d/so$n/output.npy" "$d/torch$n.npy"
  done
  check "symbolic mlp runs without allocating" "$tmp/count_allocs" "$d/model.so"
  if make -s -C "$src/examples/c" O="$tmp" CC=cc >/dev/null 2>&1; then
    mkdir -p "$d/c3"
    check "the C example runs the symbolic mlp at batch 3" "$tmp/run_model" "$d/model.so" "input=$d/in3.npy" --out "$d/c3"
    check "the C example's output matches PyTorch" compare "$d/c3/output.npy" "$d/torch3.npy"
  fi
  /usr/bin/python3 -c "import numpy as np; np.save('$d/bad.npy', np.zeros((2, 783), np.float32))"
  check "symbolic mlp: a wrong shape exits 1" bash -c "'$bin/mlcc-run' -q '$d/model.so' --input 'input=$d/bad.npy' --output-dir '$d/bad' 2>'$d/bad.err'; test \$? -eq 1"
  check "symbolic mlp: wrong shape message" contains "$d/bad.err" "input 'input' has shape \[?, 784\], got \[2, 783\]"
  # BLAS dispatch: the MLP's dense groups as call_extern.
  d=$tmp/chain/mlp
  check "mlp fuses with BLAS patterns" "$bin/mlcc-fuse" -q "$d/model.ir" --passes 'fuse-by-pattern,fuse-ops' \
    --patterns "$src/pipelines/patterns/blas.yaml" -o "$d/blas.ir"
  check "mlp BLAS lowers" "$bin/mlcc-legalize" -q "$d/blas.ir" -o "$d/blas.lowered.ir"
  check "mlp BLAS compiles" run 0 "$d/blas.lowered.ir" --target llvm -o "$d/blas.o" -v
  check "mlp BLAS kernels named" contains "$tmp/err" 'blas.dense_bias_relu 4x256x784'
  check "mlp BLAS links" "$bin/mlcc-link" "$d/blas.o" -o "$d/blas.so"
  check "mlp BLAS runs" run_so "$d/blas.so" input "$tmp/models/mlp.input.npy" "$d/blas_out"
  check "mlp BLAS matches PyTorch" compare "$d/blas_out/output.npy" "$tmp/models/mlp.output.npy"
  check "mlp BLAS runs without allocating" "$tmp/count_allocs" "$d/blas.so"
fi

finish codegen
