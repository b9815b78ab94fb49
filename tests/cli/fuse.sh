#!/usr/bin/env bash
# mlcc-fuse as a user runs it: the public models (mlp, cnn, resnet18)
# imported, fused and run with mlcc-run before and after (outputs compared
# with numpy, and against PyTorch); new constants in the sidecar weights
# file and referenced by the IR; input weights referenced (re-relativized),
# never copied; pipeline errors with column and caret; --list-passes, -v,
# --help; and no output files after any failure.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-fuse
lacks() { ! grep -q -- "$2" "$1" || { echo "  '$2' in $1"; return 1; }; }
pipeline=canonicalize,fold-constants,dead-code-elimination

# --- public models: interpreted before and after fusing ---
if public_models torch torchvision onnx numpy -- --only mlp cnn resnet18; then
  for m in mlp cnn resnet18; do
    check "$m imports" "$bin/mlcc-import" -q "$tmp/models/$m.onnx" -o "$tmp/$m.ir"
    mkdir -p "$tmp/fused"
    check "$m fuses" run 0 "$tmp/$m.ir" -o "$tmp/fused/$m.ir" --passes "$pipeline" --verify-each
    check "$m fused validates with weights" "$bin/mlcc-inspect" --validate --check-weights "$tmp/fused/$m.ir"
    check "$m input weights referenced, re-relativized" contains "$tmp/fused/$m.ir" "^weights \"../$m.safetensors\""
    rm -rf "$tmp/before_$m" "$tmp/after_$m"
    check "$m runs before" "$bin/mlcc-run" -q "$tmp/$m.ir" --input "input=$tmp/models/$m.input.npy" \
      --output-dir "$tmp/before_$m"
    check "$m runs after" "$bin/mlcc-run" -q "$tmp/fused/$m.ir" --input "input=$tmp/models/$m.input.npy" \
      --output-dir "$tmp/after_$m"
    check "$m same outputs before and after" compare "$tmp/after_$m/output.npy" "$tmp/before_$m/output.npy"
    check "$m fused matches PyTorch" compare "$tmp/after_$m/output.npy" "$tmp/models/$m.output.npy"
  done
  check "resnet18 has no batch_norm left" lacks "$tmp/fused/resnet18.ir" "batch_norm("
  check "-v prints each pass's time" run 0 "$tmp/mlp.ir" -o "$tmp/v.ir" --passes "$pipeline" -v
  check "-v names canonicalize" contains "$tmp/err" '^canonicalize: [0-9.]* ms'
  check "-v names fold-constants" contains "$tmp/err" '^fold-constants: [0-9.]* ms'
  check "-v names dead-code-elimination" contains "$tmp/err" '^dead-code-elimination: [0-9.]* ms'
  check "deterministic" bash -c "'$tool' '$tmp/resnet18.ir' --passes '$pipeline' -o '$tmp/fused/r2.ir' --weights '$tmp/fused/resnet18.safetensors.2' && diff <(sed 's/resnet18.safetensors.2/resnet18.safetensors/' '$tmp/fused/r2.ir') '$tmp/fused/resnet18.ir' >/dev/null"
fi

# --- new constants go to the sidecar weights file ---
cat >"$tmp/fold.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[32]) -> f32[32] {
  dataflow {
    %s: f32[] = const 1.5
    %big: f32[32] = broadcast_to(%s, shape = [32])
    %r: f32[32] = reshape(%big, shape = [32])
    %y: f32[32] = add(%x, %r)
  }
  return %y
}
IR
mkdir -p "$tmp/o"
check "folds to a sidecar" run 0 "$tmp/fold.ir" -o "$tmp/o/f.ir" --passes "$pipeline"
check "sidecar beside the output" test -f "$tmp/o/f.safetensors"
check "output names the sidecar" contains "$tmp/o/f.ir" '^weights "f.safetensors"'
check "output uses the folded tensor" contains "$tmp/o/f.ir" 'const "folded.0"'
check "folded IR runs" "$bin/mlcc-run" -q "$tmp/o/f.ir"
check "same summary as before" bash -c "diff <('$bin/mlcc-run' '$tmp/fold.ir' --seed 1) <('$bin/mlcc-run' '$tmp/o/f.ir' --seed 1)"
check "--weights path" run 0 "$tmp/fold.ir" -o "$tmp/o/g.ir" --passes "$pipeline" --weights "$tmp/g_consts.safetensors"
check "--weights file written" test -f "$tmp/g_consts.safetensors"
check "absolute --weights stays absolute" contains "$tmp/o/g.ir" "^weights \"$tmp/g_consts.safetensors\""
check "relative --weights" bash -c "cd '$tmp' && '$tool' fold.ir -o o/g2.ir --passes '$pipeline' --weights w2.safetensors"
check "relative --weights named relative to the output" contains "$tmp/o/g2.ir" '^weights "../w2.safetensors"'
check "stdout output" bash -c "cd '$tmp/o' && '$tool' --passes '$pipeline' < '$tmp/fold.ir' > s.ir"
check "stdout: fused.safetensors in the current directory" test -f "$tmp/o/fused.safetensors"
check "stdout IR names fused.safetensors" contains "$tmp/o/s.ir" '^weights "fused.safetensors"'
check "no sidecar without new constants" run 0 "$tmp/fold.ir" -o "$tmp/o/c.ir" --passes canonicalize
check "no sidecar file" absent "$tmp/o/c.safetensors"
check "no weights line" lacks "$tmp/o/c.ir" '^weights'

# --- failures leave no output files ---
check "IR write failure" run 1 "$tmp/fold.ir" -o "$tmp/nodir/x.ir" --passes "$pipeline" --weights "$tmp/o/x.safetensors"
check "IR write failure removes the new weights" absent "$tmp/o/x.safetensors"
printf 'mlcc.ir 1\ngraph @main(%%x: f32[2]) -> f32[2] {\n  return %%nope\n}\n' >"$tmp/bad.ir"
check "bad input exits 1" run 1 "$tmp/bad.ir" -o "$tmp/o/bad.ir" --passes "$pipeline"
check "bad input: FILE:LINE:COL" contains "$tmp/err" "bad.ir:[0-9]*:[0-9]*: error:"
check "bad input: no output" absent "$tmp/o/bad.ir"
check "bad input: no sidecar" absent "$tmp/o/bad.safetensors"
if "$tool" --list-passes | grep -q '^fuse-ops$'; then
  check "default pipeline" run 0 "$tmp/fold.ir" -o "$tmp/o/d.ir"
else
  check "default pipeline without fuse-ops fails clearly" run 1 "$tmp/fold.ir" -o "$tmp/o/d.ir"
  check "names the missing pass" contains "$tmp/err" "unknown pass 'fuse-ops'"
  check "default pipeline: no output" absent "$tmp/o/d.ir"
  check "default pipeline: no sidecar" absent "$tmp/o/d.safetensors"
fi

# --- pipeline errors: --passes:1:COL and a caret ---
check "unknown pass exits 1" run 1 "$tmp/fold.ir" -o "$tmp/o/e.ir" --passes 'canonicalize,nosuch'
check "unknown pass column" contains "$tmp/err" "^--passes:1:14: error: unknown pass 'nosuch'"
check "caret line" bash -c "grep -q '^ *canonicalize,nosuch\$' '$tmp/err' && grep -q '^ *             ^' '$tmp/err'"
check "unknown pass: no output" absent "$tmp/o/e.ir"
check "bad option value exits 1" run 1 "$tmp/fold.ir" --passes 'fold-constants{max-bytes=big}'
check "bad option value column" contains "$tmp/err" "^--passes:1:26: error: option 'max-bytes' of pass 'fold-constants' takes an int"
check "unknown option exits 1" run 1 "$tmp/fold.ir" --passes 'canonicalize{x=1}'
check "unknown option column" contains "$tmp/err" "^--passes:1:14: error: pass 'canonicalize' has no option 'x'"
check "syntax error exits 1" run 1 "$tmp/fold.ir" --passes 'canonicalize fold-constants'
check "syntax error column" contains "$tmp/err" "^--passes:1:14: error: expected ',' between passes"

# --- graph rewrites with the shipped rules (README "Graph rewrites") ---
cat >"$tmp/rw.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 8], %w: f32[16, 8], %s: f32[4, 16], %t: f32[16]) -> f32[4, 16] {
  dataflow {
    %wt: f32[8, 16] = permute_dims(%w, axes = [1, 0])
    %y: f32[4, 16] = matmul(%x, %wt)
    %m: f32[4, 16] = multiply(%y, %s)
    %z: f32[4, 16] = add(%t, %m)
  }
  return %z
}
IR
check "rewrite runs" run 0 "$tmp/rw.ir" --passes 'rewrite,dead-code-elimination' \
  --patterns "$src/pipelines/patterns/rewrites.yaml" -v -o "$tmp/o/rw.ir"
check "rewrite counts each rule" contains "$tmp/err" "rewrote 1 x multiply_add_to_fma, 1 x transpose_to_dense"
check "rewrite: dense" contains "$tmp/o/rw.ir" "%y: f32\[4, 16\] = dense(%x, %w)"
check "rewrite: ewise_fma" contains "$tmp/o/rw.ir" "%z: f32\[4, 16\] = ewise_fma(%y, %s, %t)"
"$bin/mlcc-run" -q "$tmp/rw.ir" --seed 3 --output-dir "$tmp/rw_ref" &&
  "$bin/mlcc-run" -q "$tmp/o/rw.ir" --seed 3 --output-dir "$tmp/rw_out"
check "rewritten graph computes the same" compare "$tmp/rw_out/z.npy" "$tmp/rw_ref/z.npy"
check "a bad rule file exits 1" run 1 "$tmp/rw.ir" --passes rewrite \
  --patterns "$src/tests/transform/patterns/rewrite_bad_name.yaml" -o "$tmp/o/rw_bad.ir"
check "  naming file, line and key" contains "$tmp/err" "rewrite_bad_name.yaml:8:9: error: rewrites\[0\].replace\[0\]: 'd' names nothing"
check "  and writes nothing" absent "$tmp/o/rw_bad.ir"

# --- usage, --list-passes, --help ---
check "unknown command-line option exits 2" run 2 --no-such-flag
check "--list-passes" run 0 --list-passes
for p in canonicalize fold-constants dead-code-elimination; do
  check "--list-passes lists $p" contains "$tmp/out" "^$p\$"
done
check "--list-passes shows max-bytes" contains "$tmp/out" "max-bytes=<int> (default: 67108864)"
check "--help" run 0 --help
check "--help has examples" contains "$tmp/out" "mlcc-fuse model.ir -o fused.ir"
check "--help shows the default pipeline" contains "$tmp/out" "canonicalize,convert-layout,fold-constants,fuse-ops,dead-code-elimination"
check "--version" run 0 --version

finish fuse
