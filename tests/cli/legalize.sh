#!/usr/bin/env bash
# mlcc-legalize as a user runs it: the public models (generated with PyTorch,
# imported, fused first when mlcc-fuse is built) lowered to TensorIR and run
# through the interpreter (mlcc-run) against PyTorch's outputs, with the
# interpretation time of lowered ResNet-18 printed; mlcc-inspect's summary of
# lowered IR counting only call_tir/call_extern; weights referenced (paths
# re-relativized into another output directory), stdin/stdout, --list-passes,
# --help, determinism and the error paths' exit codes.
# A model with an op that has no TensorIR compute definition yet is skipped
# with a message naming the op.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-legalize
# only_lowered SUMMARY.json: graph_ops holds call_tir/call_extern only
only_lowered() {
  py "$1" <<'PY'
import json, sys
ops = json.load(open(sys.argv[1]))["graph_ops"]
bad = {k: v for k, v in ops.items() if k not in ("call_tir", "call_extern")}
if bad or not ops:
    print("  graph_ops:", ops)
    sys.exit(1)
PY
}

# --- a small hand-written module ---
cat >"$tmp/small.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[n, 4]) -> f32[n, 4] {
  dataflow {
    %y: f32[n, 4] = call @fused_negative(%x)
  }
  return %y
}

graph @fused_negative(%p: f32[m, 4]) -> f32[m, 4] attrs(primitive = true) {
  dataflow {
    %q: f32[m, 4] = negative(%p)
  }
  return %q
}
IR
check "--help shows an example" prints 'mlcc-legalize fused.ir -o lowered.ir' --help
check "--list-passes names legalize" prints '^legalize' --list-passes
check "--version" prints 'mlcc-legalize' --version
check "usage error exits 2" run 2 --no-such-flag
check "unknown pass exits 1" run 1 "$tmp/small.ir" --passes nosuch -o "$tmp/x.ir"
check "unknown pass points at --passes" contains "$tmp/err" "passes:1:1: error: unknown pass 'nosuch'"
printf 'mlcc.ir 1\ngraph @main(%%x: f32[4]) -> f32[4] {\n  return %%nope\n}\n' >"$tmp/bad.ir"
check "bad input exits 1" run 1 "$tmp/bad.ir" -o "$tmp/x.ir"
check "bad input: FILE:LINE:COL" contains "$tmp/err" "bad.ir:[0-9]*:[0-9]*: error:"
check "missing file exits 1" run 1 "$tmp/nosuch.ir" -o "$tmp/x.ir"
check "no output after errors" absent "$tmp/x.ir"
if run 0 "$tmp/small.ir" -o "$tmp/small_lowered.ir" -v 2>/dev/null; then
  echo "ok   small module lowers"
  check "-v says what legalize did" contains "$tmp/err" "legalize"
  check "fused group became call_tir" contains "$tmp/small_lowered.ir" "call_tir @fused_negative(%x)"
  check "sub-function removed" bash -c "! grep -q '^graph @fused_negative' '$tmp/small_lowered.ir'"
  check "stdin to stdout" bash -c "'$tool' < '$tmp/small.ir' | cmp -s - '$tmp/small_lowered.ir'"
  check "--verify-each" run 0 "$tmp/small.ir" --verify-each -o "$tmp/small2.ir"
  check "deterministic" cmp -s "$tmp/small2.ir" "$tmp/small_lowered.ir"
elif grep -q "cannot be lowered to TensorIR yet" "$tmp/err"; then
  echo "skip small module: $(grep -o "op '[a-z_0-9]*' cannot be lowered to TensorIR yet" "$tmp/err" | head -1)"
else
  echo "FAIL small module lowers"; sed 's/^/    /' "$tmp/err"; fails=$((fails + 1))
fi

# --- public models ---
have_fuse=0
[[ -x $bin/mlcc-fuse ]] && have_fuse=1
if public_models torch torchvision onnx; then
  mkdir -p "$tmp/lowered"
  for m in mlp cnn resnet18 mobilenetv2 transformer; do
    check "$m imports" "$bin/mlcc-import" -q "$tmp/models/$m.onnx" -o "$tmp/$m.ir"
    in=$tmp/$m.ir
    if [[ $have_fuse == 1 ]]; then
      check "$m fuses" "$bin/mlcc-fuse" -q "$tmp/$m.ir" -o "$tmp/$m.fused.ir"
      in=$tmp/$m.fused.ir
    fi
    # Lowered into another directory: the weights are referenced from there.
    out=$tmp/lowered/$m.ir
    lowered "$m" "$in" "$out" || continue
    echo "ok   $m lowers"
    check "$m: no weights file copied" absent "$tmp/lowered/$m.safetensors"
    check "$m: weights path re-relativized" contains "$out" "^weights \"../$m.safetensors\""
    check "$m lowered validates with weights" "$bin/mlcc-inspect" --validate --check-weights "$out"
    "$bin/mlcc-inspect" --summary --json "$out" >"$tmp/$m.summary.json"
    check "$m summary counts only call_tir/call_extern" only_lowered "$tmp/$m.summary.json"
    rm -rf "$tmp/out_$m"
    start=$(date +%s.%N)
    check "$m lowered runs (mlcc-run)" "$bin/mlcc-run" -q "$out" --input "input=$tmp/models/$m.input.npy" \
      --output-dir "$tmp/out_$m"
    end=$(date +%s.%N)
    echo "     $m TensorIR interpretation time: $(echo "$end - $start" | bc) s"
    check "$m lowered matches PyTorch" compare "$tmp/out_$m/output.npy" "$tmp/models/$m.output.npy"
  done
  # Library dispatch: groups with a codegen attribute become call_extern.
  if [[ $have_fuse == 1 && -f $tmp/mlp.ir ]]; then
    check "mlp fuses with BLAS patterns" "$bin/mlcc-fuse" -q "$tmp/mlp.ir" --passes 'fuse-by-pattern,fuse-ops' \
      --patterns "$src/pipelines/patterns/blas.yaml" -o "$tmp/mlp.blas.ir"
    check "mlp BLAS groups lower" run 0 "$tmp/mlp.blas.ir" -o "$tmp/mlp.blas.lowered.ir"
    check "mlp dense+bias+relu is call_extern" contains "$tmp/mlp.blas.lowered.ir" 'call_extern "blas.dense_bias_relu"(%input, %fc1.weight, %fc1.bias)'
    check "mlp dense+bias is call_extern" contains "$tmp/mlp.blas.lowered.ir" 'call_extern "blas.dense_bias"('
    check "mlp BLAS sub-functions removed" bash -c "! grep -q '^graph @fused' '$tmp/mlp.blas.lowered.ir'"
    "$bin/mlcc-inspect" --summary --json "$tmp/mlp.blas.lowered.ir" >"$tmp/mlp.blas.summary.json"
    check "mlp BLAS summary counts only call_tir/call_extern" only_lowered "$tmp/mlp.blas.summary.json"
  fi
fi

finish legalize
