#!/usr/bin/env bash
# Makefile.examples as a user runs it: the public mlp and cnn built with make
# (static shapes through IMPORT_ARGS), every intermediate kept, `run` (the
# compiled model) and `interpret` (the lowered IR) against PyTorch's output; a
# second make does nothing; a touched intermediate, a rebuilt tool or a changed
# variable reruns only the stages from there on; the errors (no MODEL, no such
# file, no INPUT, a failing stage) are clear and leave no output behind; help
# and clean.
source "$2/tests/cli/lib/common.sh"
tool=make
mk() { make --no-print-directory -f "$src/Makefile.examples" MLCC_BIN="$bin" "$@"; }
run() {  # run EXPECTED_RC MAKE_ARGS...: make in $tmp; stdout in $tmp/out, stderr in $tmp/err
  local expected=$1
  shift
  (cd "$tmp" && mk "$@") >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne $expected ]]; then
    echo "  'make $*' exited $rc, expected $expected; output:"
    sed 's/^/    /' "$tmp/out" "$tmp/err" | tail -20
    return 1
  fi
}
lacks() { ! grep -q -- "$2" "$1" || { echo "  '$2' in $1"; return 1; }; }

# --- what needs no model ---
check "help" run 0 help
check "help has an example" contains "$tmp/out" "make -f Makefile.examples MODEL=models/mlp.onnx BUILD=build/mlp"
check "help names the variables" contains "$tmp/out" "IMPORT_ARGS .*FUSE_PASSES\|FUSE_PASSES"
check "no MODEL" run 2
check "no MODEL: clear error" contains "$tmp/err" "MODEL is not set: make -f Makefile.examples MODEL=path/model.onnx"
check "no MODEL for run" run 2 run INPUT=x.npy
check "no such MODEL" run 2 MODEL=nope/m.onnx
check "no such MODEL: named" contains "$tmp/err" "MODEL=nope/m.onnx: no such file"
check "MODEL not .onnx" run 2 MODEL=m.txt
check "MODEL not .onnx: named" contains "$tmp/err" "MODEL=m.txt is not an .onnx file"

if ! /usr/bin/python3 -c 'import torch, onnx, numpy' 2>/dev/null; then
  echo "skip public models: torch/onnx/numpy not importable by /usr/bin/python3"
  finish makefile_examples
fi
if ! /usr/bin/python3 "$src/tests/models/generate.py" --out "$tmp/models" --only mlp cnn >"$tmp/gen.log" 2>&1; then
  echo "FAIL generating the public models:"; tail -5 "$tmp/gen.log"
  fails=$((fails + 1))
  finish makefile_examples
fi

shape() { /usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$1').shape)))"; }

# --- the public models through make ---
for m in mlp cnn; do
  args=(MODEL="models/$m.onnx" BUILD="build/$m" IMPORT_ARGS="--shape input=$(shape "$tmp/models/$m.input.npy")")
  check "$m builds" run 0 "${args[@]}"
  for f in $m.ir $m.safetensors $m.fused.ir $m.lowered.ir $m.scheduled.ir $m.o $m.so; do
    check "$m keeps $f" test -s "$tmp/build/$m/$f"
  done
  check "$m: IR files are IR" bash -c "head -1 '$tmp/build/$m/$m.scheduled.ir' | grep -q '^mlcc.ir '"
  check "$m run" run 0 "${args[@]}" run INPUT="models/$m.input.npy" OUTPUT_DIR="res/$m"
  check "$m run: mlcc-run with the only input" contains "$tmp/out" "mlcc-run build/$m/$m.so --input models/$m.input.npy --output-dir res/$m"
  check "$m compiled matches PyTorch" compare "$tmp/res/$m/output.npy" "$tmp/models/$m.output.npy"
  check "$m interpret" run 0 "${args[@]}" interpret INPUT="models/$m.input.npy" OUTPUT_DIR="interp/$m"
  check "$m interpreted matches PyTorch" compare "$tmp/interp/$m/output.npy" "$tmp/models/$m.output.npy"
done

# --- incremental: nothing to do; a touched intermediate reruns the stages after it
args=(MODEL=models/mlp.onnx BUILD=build/mlp IMPORT_ARGS="--shape input=$(shape "$tmp/models/mlp.input.npy")")
check "second make" run 0 "${args[@]}"
check "second make does nothing" contains "$tmp/out" "Nothing to be done for 'all'"
check "make -q: up to date" run 0 -q "${args[@]}"
check "run does not rebuild" run 0 "${args[@]}" run INPUT=models/mlp.input.npy
check "run: only mlcc-run" bash -c "[[ \$(wc -l <'$tmp/out') -ge 1 ]] && ! grep -q 'mlcc-\(import\|fuse\|legalize\|schedule\|codegen\|link\) ' '$tmp/out'"
before=$(stat -c %Y.%y "$tmp/build/mlp/mlp.ir")
touch "$tmp/build/mlp/mlp.fused.ir"
check "touched fused IR" run 0 "${args[@]}"
for t in legalize schedule codegen link; do
  check "touched fused IR reruns mlcc-$t" contains "$tmp/out" "/mlcc-$t "
done
check "touched fused IR: no import" lacks "$tmp/out" "/mlcc-import "
check "touched fused IR: no fuse" lacks "$tmp/out" "/mlcc-fuse "
check "import output untouched" test "$before" = "$(stat -c %Y.%y "$tmp/build/mlp/mlp.ir")"
check "rebuilt model still right (INPUT=NAME=FILE)" run 0 "${args[@]}" run INPUT=input=models/mlp.input.npy OUTPUT_DIR=res/mlp2
check "INPUT=NAME=FILE: passed as such" contains "$tmp/out" "mlcc-run build/mlp/mlp.so --input input=models/mlp.input.npy "
check "rebuilt model matches PyTorch" compare "$tmp/res/mlp2/output.npy" "$tmp/models/mlp.output.npy"
check "deleted intermediate rebuilt" bash -c "rm '$tmp/build/mlp/mlp.lowered.ir'"
check "make after a deletion" run 0 "${args[@]}"
check "the deleted file is back" test -s "$tmp/build/mlp/mlp.lowered.ir"
check "and the stages after it rerun" contains "$tmp/out" "/mlcc-link "

# A changed variable reruns its stage and those after it; the same again does nothing.
check "FUSE_PASSES changed" run 0 "${args[@]}" FUSE_PASSES=canonicalize,fuse-ops,dead-code-elimination
check "changed FUSE_PASSES reruns fuse" contains "$tmp/out" "/mlcc-fuse .*--passes 'canonicalize,fuse-ops,dead-code-elimination'"
check "and link" contains "$tmp/out" "/mlcc-link "
check "but not import" lacks "$tmp/out" "/mlcc-import "
check "same FUSE_PASSES again" run 0 "${args[@]}" FUSE_PASSES=canonicalize,fuse-ops,dead-code-elimination
check "same FUSE_PASSES does nothing" contains "$tmp/out" "Nothing to be done for 'all'"
check "CODEGEN_ARGS changed" run 0 "${args[@]}" FUSE_PASSES=canonicalize,fuse-ops,dead-code-elimination CODEGEN_ARGS=-O2
check "changed CODEGEN_ARGS reruns codegen" contains "$tmp/out" "/mlcc-codegen .* -O2 "
check "but not schedule" lacks "$tmp/out" "/mlcc-schedule "
check "back to the defaults" run 0 "${args[@]}"
check "back to the defaults reruns fuse" contains "$tmp/out" "/mlcc-fuse "

# A rebuilt tool reruns its stage and those after it: MLCC_BIN with every
# tool linked but mlcc-codegen, a script we touch.
mkdir -p "$tmp/tools"
for t in "$bin"/mlcc-*; do ln -s "$t" "$tmp/tools/"; done
rm "$tmp/tools/mlcc-codegen"
printf '#!/bin/sh\nexec %q "$@"\n' "$bin/mlcc-codegen" >"$tmp/tools/mlcc-codegen"
chmod +x "$tmp/tools/mlcc-codegen"
touch "$tmp/tools/mlcc-codegen"
check "new codegen tool" run 0 "${args[@]}" MLCC_BIN="$tmp/tools"
check "new tool reruns codegen" contains "$tmp/out" "tools/mlcc-codegen "
check "and link" contains "$tmp/out" "tools/mlcc-link "
check "not schedule" lacks "$tmp/out" "mlcc-schedule "
check "missing tool" run 2 "${args[@]}" MLCC_BIN="$tmp/nowhere"
check "missing tool named" contains "$tmp/err" "MLCC_BIN=$tmp/nowhere lacks mlcc-import mlcc-fuse .*mlcc-run; build the tools"

# Overrides reach the tools.
check "overrides" run 0 -B MODEL=models/mlp.onnx BUILD=build/ov IMPORT_ARGS="--shape input=4x784" \
  FUSE_PASSES="canonicalize,fuse-ops{max-depth=2}" TARGET="llvm -num-cores=2" CODEGEN_ARGS=-O1
check "FUSE_PASSES passed" contains "$tmp/out" "mlcc-fuse .*--passes 'canonicalize,fuse-ops{max-depth=2}'"
check "TARGET passed" contains "$tmp/out" "mlcc-schedule .*--target 'llvm -num-cores=2'"
check "CODEGEN_ARGS passed" contains "$tmp/out" "mlcc-codegen .* -O1 "

# --- tuned: mlcc-tune in place of mlcc-schedule, its database kept and resumed
cargs=(MODEL=models/cnn.onnx BUILD=build/cnn IMPORT_ARGS="--shape input=$(shape "$tmp/models/cnn.input.npy")")
check "tuned" run 0 "${cargs[@]}" tuned TRIALS=8 TARGET="llvm -num-cores=1"
check "tuned runs mlcc-tune" contains "$tmp/out" "mlcc-tune -q build/cnn/cnn.lowered.ir --target 'llvm -num-cores=1' --db build/cnn/cnn.tune.db --trials 8"
check "tuned: the database" test -s "$tmp/build/cnn/cnn.tune.db"
check "run-tuned" run 0 "${cargs[@]}" run-tuned TRIALS=8 TARGET="llvm -num-cores=1" INPUT=models/cnn.input.npy OUTPUT_DIR=res/cnn-tuned
check "tuned compiled matches PyTorch" compare "$tmp/res/cnn-tuned/output.npy" "$tmp/models/cnn.output.npy"
check "tuned again: nothing to do" run 0 "${cargs[@]}" tuned TRIALS=8 TARGET="llvm -num-cores=1"
check "tuned again: no mlcc-tune" lacks "$tmp/out" "mlcc-tune "
records=$(wc -l <"$tmp/build/cnn/cnn.tune.db")
check "more TRIALS resume the database" run 0 "${cargs[@]}" tuned TRIALS=4 TARGET="llvm -num-cores=1"
check "4 more records" test "$(wc -l <"$tmp/build/cnn/cnn.tune.db")" -eq $((records + 4))

# --- errors ---
check "run without INPUT" run 2 "${args[@]}" run
check "run without INPUT: clear" contains "$tmp/err" "INPUT is not set: .* run INPUT=x.npy"
check "two INPUTs for one input" run 2 "${args[@]}" run INPUT="models/mlp.input.npy models/mlp.input.npy"
check "two INPUTs: mlcc-run says why" contains "$tmp/err" "without NAME= is the only input"
check "failing stage" run 2 MODEL=models/mlp.onnx BUILD=build/bad IMPORT_ARGS="--shape nosuch=1x2"
check "failing stage: the tool's message" contains "$tmp/err" "error:.*nosuch"
check "failing stage: no output left" bash -c "[[ -d '$tmp/build/bad' && -z \$(ls '$tmp/build/bad') ]]"

# --- clean ---
check "clean" run 0 "${args[@]}" clean
for f in mlp.ir mlp.safetensors mlp.fused.ir mlp.lowered.ir mlp.scheduled.ir mlp.o mlp.so; do
  check "clean removes $f" absent "$tmp/build/mlp/$f"
done
check "clean removes the remembered arguments" bash -c "[[ -z \$(ls -A '$tmp/build/mlp') ]]"
check "clean leaves other models" test -s "$tmp/build/cnn/cnn.so"
check "clean (cnn)" run 0 "${cargs[@]}" clean
check "clean removes the tuned model" absent "$tmp/build/cnn/cnn.tuned.so"
check "clean keeps the tuning database" test -s "$tmp/build/cnn/cnn.tune.db"

finish makefile_examples
