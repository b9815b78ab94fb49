#!/usr/bin/env bash
# mlcc-schedule as a user runs it: a hand-written schedule script applied to
# a fused and legalized module, the result interpreted (mlcc-run) equal to the
# unscheduled module; --rules none, -v, stdin/stdout, determinism; the
# listings, --help and --version; malformed scripts (syntax errors, unknown
# instructions, bad arguments, unknown functions) exiting 1 with FILE:LINE:COL
# and no output file. Then the public models after the default llvm and cuda
# rules, interpreted against PyTorch's outputs (once a target has rules); a
# function no cuda rule applies to is left unscheduled with a warning.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-schedule
lacks() { ! grep -q -- "$2" "$1" || { echo "  '$2' in $1"; return 1; }; }
# same_outputs DIR_A DIR_B: the same .npy files with close values
same_outputs() {
  local f ok=0
  for f in "$1"/*.npy; do
    compare "$f" "$2/$(basename "$f")" || { echo "  $(basename "$f") differs"; ok=1; }
  done
  return $ok
}

check "--help shows a worked example" prints 'transform_layout(%b0, "w", \[o, i\], \[o / 16, i, o % 16\])' --help
check "--help says when --target is needed" prints '--target is required unless --rules none' --help
check "--version" prints '^mlcc-schedule ' --version
check "--list-instructions" bash -c "'$tool' --list-instructions | grep -qx 'transform_layout'"
check "--list-rules names both targets" bash -c "'$tool' --list-rules | grep -q '^llvm:' && '$tool' --list-rules | grep -q '^cuda:'"
check "--list-rules --target cuda" bash -c "'$tool' --list-rules --target cuda | grep -q '^cuda:'"
check "usage error exits 2" run 2 --no-such-flag

# --- a fused, legalized module: dense+add+relu and conv2d+relu ---
cp "$src/tests/cli/lib/dense_conv.ir" "$tmp/g.ir"
"$bin/mlcc-fuse" -q --passes fuse-ops "$tmp/g.ir" -o "$tmp/fused.ir" &&
  "$bin/mlcc-legalize" -q "$tmp/fused.ir" -o "$tmp/l.ir"
check "the module fuses and legalizes" test -s "$tmp/l.ir"
check "it has the prim funcs the script names" contains "$tmp/l.ir" "^prim @fused_dense_add_relu("

cat >"$tmp/s.sched" <<'SCHED'
# Pack the dense weight into 16-row panels and tile the dense; transpose an
# intermediate; fuse and split the relu; block the conv weight's output
# channels and stage its operands through caches.
schedule @fused_dense_add_relu {
  %b0 = get_block("dense")
  %l1, %l2, %l3 = get_loops(%b0)
  transform_layout(%b0, "w", [o, i], [o / 16, i, o % 16])
  %l4, %l5 = split(%l2, [-1, 16])
  %l6, %l7 = split(%l3, [8, -1])
  reorder([%l4, %l6, %l7, %l5])
  parallel(%l1)
  vectorize(%l5)
  %b8 = get_block("add")
  transform_layout(%b8, "a", [i, j], [j, i])
  %b9 = get_block("relu")
  %l10, %l11 = get_loops(%b9)
  %l12 = fuse([%l10, %l11])
  %l13, %l14 = split(%l12, [-1, 64])
  parallel(%l13)
  unroll(%l14)
}

schedule @fused_conv2d_relu {
  %b0 = get_block("conv2d")  # comments anywhere
  transform_layout(%b0, "k", [o, i, h, w], [o / 4, i, h, w, o % 4])
  %b1 = cache_read(%b0, 0, "shared")
  %b2 = cache_write(%b0, 0, "local")
}
SCHED
check "script applies" run 0 "$tmp/l.ir" --trace "$tmp/s.sched" --rules none -o "$tmp/s.ir" -v
check "-v: script for each function it names" contains "$tmp/err" "^@fused_dense_add_relu: script$"
check "-v: script (conv)" contains "$tmp/err" "^@fused_conv2d_relu: script$"
check "the trace is recorded" contains "$tmp/s.ir" '    transform_layout(%b0, "w", \[o, i\], \[o / 16, i, o % 16\])'
check "the weight is packed" contains "$tmp/s.ir" "alloc_buffer %w_layout: f32\[4, 32, 16\]"
check "the dense is tiled" contains "$tmp/s.ir" "for %i1_1 in 0..16 vectorized {"
check "scheduled module validates" "$bin/mlcc-inspect" --validate "$tmp/s.ir"
check "unscheduled module runs" "$bin/mlcc-run" -q "$tmp/l.ir" --seed 3 --output-dir "$tmp/before"
check "scheduled module runs" "$bin/mlcc-run" -q "$tmp/s.ir" --seed 3 --output-dir "$tmp/after"
check "same outputs after the script" same_outputs "$tmp/before" "$tmp/after"
check "deterministic" bash -c "'$tool' '$tmp/l.ir' --trace '$tmp/s.sched' --rules none | cmp -s - '$tmp/s.ir'"
check "stdin to stdout" bash -c "'$tool' --trace '$tmp/s.sched' --rules none < '$tmp/l.ir' | cmp -s - '$tmp/s.ir'"
# A script for one function: -v says the other is unscheduled.
printf 'schedule @fused_conv2d_relu {\n  %%b0 = get_block("relu")\n}\n' >"$tmp/one.sched"
check "one-function script" run 0 "$tmp/l.ir" --trace "$tmp/one.sched" --rules none -o "$tmp/one.ir" -v
check "-v: the other is left alone" contains "$tmp/err" "^@fused_dense_add_relu: none$"
# A second script appends to the traces, renaming clashing variables.
check "script on a scheduled module" run 0 "$tmp/s.ir" --trace "$tmp/one.sched" --rules none -o "$tmp/two.ir"
check "appended to the trace, %b0 renamed" contains "$tmp/two.ir" '    %b3 = get_block("relu")'

# Compute locations: inline the transposed add, the dense at a sampled loop
# of the relu, the conv under the relu's rows.
cat >"$tmp/compute.sched" <<'SCHED'
schedule @fused_dense_add_relu {
  %b0 = get_block("dense")
  transform_layout(%b0, "w", [o, i], [o / 16, i, o % 16])
  %b1 = get_block("add")
  transform_layout(%b1, "a", [i, j], [j, i])
  compute_inline(%b1)
  %l2 = sample_compute_location(%b0)
  compute_at(%b0, %l2)
}
schedule @fused_conv2d_relu {
  %b0 = get_block("conv2d")
  %b1 = get_block("relu")
  %l2, %l3, %l4, %l5 = get_loops(%b1)
  compute_at(%b0, %l4)
}
SCHED
check "compute script" run 0 "$tmp/l.ir" --trace "$tmp/compute.sched" --rules none --seed 2 -o "$tmp/compute.ir"
check "the add is inlined" lacks "$tmp/compute.ir" 'block "add"'
check "compute-scheduled module runs" "$bin/mlcc-run" -q "$tmp/compute.ir" --seed 3 --output-dir "$tmp/computed"
check "same outputs after compute_at/compute_inline" same_outputs "$tmp/before" "$tmp/computed"

# Sampling: a given decision is used, a missing one is sampled (with --seed) and recorded.
cat >"$tmp/sample.sched" <<'SCHED'
schedule @fused_conv2d_relu {
  %b0 = get_block("relu")
  %l1, %l2, %l3, %l4 = get_loops(%b0)
  %v5, %v6 = sample_perfect_tile(%l2, n = 2, max_innermost_factor = 4) decision [2, 4]
  %l7, %l8 = split(%l2, [%v5, %v6])
  %v9 = sample_categorical(candidates = [0, 16, 64], probs = [0.2, 0.3, 0.5])
  annotate(%l7, "pragma_auto_unroll_max_step", %v9)
}
SCHED
check "sampling script" run 0 "$tmp/l.ir" --trace "$tmp/sample.sched" --rules none --seed 5 -o "$tmp/sample.ir"
check "the given decision is kept" contains "$tmp/sample.ir" "sample_perfect_tile(%l2, max_innermost_factor = 4, n = 2) decision \[2, 4\]$"
check "the sampled decision is recorded" contains "$tmp/sample.ir" "sample_categorical(.*) decision [0-2]$"
check "sampling is deterministic per seed" bash -c "'$tool' '$tmp/l.ir' --trace '$tmp/sample.sched' --rules none --seed 5 | cmp -s - '$tmp/sample.ir'"
check "sampled module runs" "$bin/mlcc-run" -q "$tmp/sample.ir" --seed 3 --output-dir "$tmp/sampled"
check "same outputs after sampling" same_outputs "$tmp/before" "$tmp/sampled"

check "--rules none leaves traces empty" run 0 "$tmp/l.ir" --rules none -o "$tmp/none.ir"
check "no trace with --rules none" lacks "$tmp/none.ir" "trace {"
check "--rules none changes nothing" cmp -s "$tmp/none.ir" "$tmp/l.ir"
check "rules without --target exit 2" run 2 "$tmp/l.ir" -o "$tmp/x.ir"
check "it says --target is required" contains "$tmp/err" "--target is required"
check "unknown target exits 1" run 1 "$tmp/l.ir" --target tpu -o "$tmp/x.ir"
check "unknown target named" contains "$tmp/err" "^--target: error: unknown target 'tpu'"
check "unknown --rules value exits 2" run 2 "$tmp/l.ir" --rules some --target llvm -o "$tmp/x.ir"

# --- malformed scripts: exit 1, FILE:LINE:COL, nothing written ---
bad() {  # bad NAME SCRIPT_TEXT EXPECTED_MESSAGE_REGEX
  printf '%b' "$2" >"$tmp/bad.sched"
  rm -f "$tmp/x.ir"
  check "$1 exits 1" run 1 "$tmp/l.ir" --trace "$tmp/bad.sched" --rules none -o "$tmp/x.ir"
  check "$1: FILE:LINE:COL" contains "$tmp/err" "$3"
  check "$1: no output" absent "$tmp/x.ir"
}
bad "syntax error" 'schedule @fused_dense_add_relu {\n  %b0 = get_block("dense"\n}\n' \
  "/bad.sched:3:1: error: expected ')' after arguments of 'get_block'"
bad "unknown instruction" 'schedule @fused_dense_add_relu {\n  %b0 = get_block("dense")\n  frobnicate(%b0)\n}\n' \
  "/bad.sched:3:3: error: in prim @fused_dense_add_relu: unknown schedule instruction 'frobnicate'"
bad "bad argument" 'schedule @fused_dense_add_relu {\n  %l0 = get_loops("dense")\n}\n' \
  "/bad.sched:2:3: error: in prim @fused_dense_add_relu: get_loops: argument 1 must be a block"
bad "refused primitive" 'schedule @fused_dense_add_relu {\n  %b0 = get_block("dense")\n  transform_layout(%b0, "w", [o, i], [o / 16, i])\n}\n' \
  "/bad.sched:3:3: error: in prim @fused_dense_add_relu: transform_layout: index variable o must appear"
bad "invalid decision" 'schedule @fused_conv2d_relu {\n  %b0 = get_block("relu")\n  %l1, %l2, %l3, %l4 = get_loops(%b0)\n  %v5, %v6 = sample_perfect_tile(%l2, n = 2) decision [3, 3]\n}\n' \
  "/bad.sched:4:3: error: in prim @fused_conv2d_relu: sample_perfect_tile: decision \\[3, 3\\]"
bad "unknown function" '# comment\nschedule @fused_dense {\n}\n' \
  "/bad.sched:2:10: error: no prim func @fused_dense in the module"
bad "graph function" 'schedule @main {\n}\n' "/bad.sched:1:10: error: @main is a graph function, not a prim func"
check "the source line is shown" contains "$tmp/err" "^schedule @main {"
check "missing script exits 1" run 1 "$tmp/l.ir" --trace "$tmp/nosuch.sched" --rules none -o "$tmp/x.ir"
check "missing script: no output" absent "$tmp/x.ir"

# A function no cuda rule schedules (a store outside any block) is left as
# it is, with a warning: code generation for cuda would refuse it.
cat > "$tmp/bare.ir" <<'EOF'
mlcc.ir 1
prim @bare(%a: f32[4], %b: f32[4]) {
  for %i in 0..4 {
    %b[%i] = %a[%i]
  }
}
EOF
check "cuda: a function no rule applies to is left with a warning" run 0 "$tmp/bare.ir" --target cuda -o "$tmp/bare.s.ir"
check "cuda: the warning names it" contains "$tmp/err" "warning: no cuda rule applies to @bare, left unscheduled"
check "llvm: no warning for it" run 0 "$tmp/bare.ir" --target llvm -o "$tmp/bare.s.ir"
check "llvm: stderr empty" bash -c "[[ ! -s '$tmp/err' ]]"
check "cuda -q: no warning" run 0 "$tmp/bare.ir" --target cuda -q -o "$tmp/bare.s.ir"
check "cuda -q: stderr empty" bash -c "[[ ! -s '$tmp/err' ]]"

# --- public models after the default rules, against PyTorch ---
# Runs for each target once it has default rules (mlcc-schedule --list-rules).
has_rules() { ! "$tool" --list-rules --target "$1" | grep -q '(no rules yet'; }
targets=()
for t in llvm cuda; do
  if has_rules "$t"; then targets+=("$t"); else echo "skip public models for $t: no default rules yet"; fi
done
if [[ ${#targets[@]} -gt 0 ]]; then
  if public_models torch torchvision onnx; then
    for m in mlp cnn resnet18 mobilenetv2 transformer; do
      check "$m imports" "$bin/mlcc-import" -q "$tmp/models/$m.onnx" -o "$tmp/$m.ir" || continue
      check "$m fuses" "$bin/mlcc-fuse" -q "$tmp/$m.ir" -o "$tmp/$m.fused.ir" || continue
      lowered "$m" "$tmp/$m.fused.ir" "$tmp/$m.lowered.ir" || continue
      for t in "${targets[@]}"; do
        mkdir -p "$tmp/$t"
        out=$tmp/$t/$m.ir
        check "$m schedules for $t" run 0 "$tmp/$m.lowered.ir" --target "$t" -o "$out" -v || continue
        cp "$tmp/err" "$tmp/$m.$t.rules"
        if [[ $t == cuda ]]; then
          check "$m: every prim func scheduled for cuda" lacks "$tmp/$m.$t.rules" ": none$"
        fi
        check "$m ($t) validates with weights" "$bin/mlcc-inspect" --validate --check-weights "$out"
        rm -rf "$tmp/out_${m}_$t"
        check "$m ($t) runs (mlcc-run)" "$bin/mlcc-run" -q "$out" --input "input=$tmp/models/$m.input.npy" \
          --output-dir "$tmp/out_${m}_$t"
        check "$m ($t) matches PyTorch" compare "$tmp/out_${m}_$t/output.npy" "$tmp/models/$m.output.npy"
      done
    done
  fi
fi

finish "schedule"
