#!/usr/bin/env bash
# mlcc-tune as a user runs it, with real measurements on a small fused and
# legalized module (dense+add+relu, conv2d+relu): the tuned module means
# what the untuned one means (interpreted and compiled), every measured
# candidate is a database record, apply-only (--trials 0) reproduces the
# tuned module byte for byte, a resumed run measures nothing twice, a run
# killed with SIGKILL leaves a readable database, shards split the tasks and
# merge joins them; bad input exits 1 naming the file, usage errors exit 2.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-tune
T="llvm -num-cores=1"

check "--help shows an example" prints 'mlcc-tune lowered.ir --target llvm --db tune.db --trials 1000 -o tuned.ir' --help
check "--version" prints '^mlcc-tune ' --version
check "usage error exits 2" run 2 --no-such-flag
check "--db is required" run 2 x.ir --target llvm
check "a bad shard is a usage error" run 2 x.ir --target llvm --db d --shard 2/2

cp "$src/tests/cli/lib/dense_conv.ir" "$tmp/g.ir"
"$bin/mlcc-fuse" -q --passes fuse-ops "$tmp/g.ir" -o "$tmp/fused.ir" &&
  "$bin/mlcc-legalize" -q "$tmp/fused.ir" -o "$tmp/l.ir"
check "the module fuses and legalizes" test -s "$tmp/l.ir"
check "a cuda target is refused" fails_saying "only llvm targets can be tuned" "$tmp/l.ir" --target cuda --db "$tmp/x.db"

# db_check DB: every line is a JSON record and no workload+trace repeats; prints the count.
db_check() {
  py "$1" <<'PY'
import json, sys
seen = set()
for n, line in enumerate(open(sys.argv[1]), 1):
    r = json.loads(line)
    key = (r["workload"], r["target"], r["trace"])
    assert key not in seen, f"line {n}: measured twice"
    seen.add(key)
print(len(seen))
PY
}
lines() { [[ $(db_check "$1") == "$2" ]] || { echo "  $1: $(db_check "$1") records, not $2"; return 1; }; }

check "tunes" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/t.db" --trials 16 --batch 8 -j 2 --seed 1 \
  --log "$tmp/curve.csv" -o "$tmp/tuned.ir"
check "a report per task" contains "$tmp/err" "@fused_dense_add_relu"
check "16 records" lines "$tmp/t.db" 16
check "records of both tasks" bash -c "grep -q fused_conv2d_relu '$tmp/t.db' && grep -q fused_dense_add_relu '$tmp/t.db'"
check "the curve" contains "$tmp/curve.csv" "^trials,seconds,end_to_end_ms$"
check "the tuned functions carry their traces" contains "$tmp/tuned.ir" "sample_perfect_tile"
check "tuned module validates" "$bin/mlcc-inspect" --validate "$tmp/tuned.ir"
check "untuned module runs" "$bin/mlcc-run" -q "$tmp/l.ir" --seed 3 --output-dir "$tmp/before"
check "tuned module runs" "$bin/mlcc-run" -q "$tmp/tuned.ir" --seed 3 --output-dir "$tmp/after"
same_outputs() {
  local f ok=0
  for f in "$1"/*.npy; do compare "$f" "$2/$(basename "$f")" || ok=1; done
  return $ok
}
check "same outputs after tuning (interpreted)" same_outputs "$tmp/before" "$tmp/after"
"$bin/mlcc-codegen" -q "$tmp/tuned.ir" -o "$tmp/tuned.o" && "$bin/mlcc-link" "$tmp/tuned.o" -o "$tmp/tuned.so"
check "tuned module compiles" test -s "$tmp/tuned.so"
check "compiled tuned module runs" "$bin/mlcc-run" -q "$tmp/tuned.so" --seed 3 --output-dir "$tmp/compiled"
check "same outputs after tuning (compiled)" same_outputs "$tmp/before" "$tmp/compiled"

check "apply only" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/t.db" --trials 0 -o "$tmp/applied.ir"
check "apply only reproduces the tuned module" cmp "$tmp/applied.ir" "$tmp/tuned.ir"
check "mlcc-schedule --db applies the database" "$bin/mlcc-schedule" -q "$tmp/l.ir" --target "$T" --db "$tmp/t.db" -o "$tmp/scheduled.ir"
check "mlcc-schedule --db gives the tuned module" cmp "$tmp/scheduled.ir" "$tmp/tuned.ir"
check "apply only measures nothing" lines "$tmp/t.db" 16
check "another target gets the default rules" run 0 "$tmp/l.ir" --target "llvm -num-cores=2" --db "$tmp/t.db" --trials 0 -v -o "$tmp/other.ir"
check "-v: the rule per function" contains "$tmp/err" "^@fused_dense_add_relu: "

check "resumes" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/t.db" --trials 8 --batch 8 --seed 1 -o "$tmp/tuned2.ir"
check "8 more records, none measured twice" lines "$tmp/t.db" 24

# Killed at any moment: every complete record reads back and the run resumes.
"$tool" "$tmp/l.ir" --target "$T" --db "$tmp/k.db" --trials 400 --batch 4 -q -o "$tmp/k.ir" &
pid=$!
for _ in $(seq 200); do [[ -s $tmp/k.db ]] && [[ $(wc -l <"$tmp/k.db") -ge 6 ]] && break; sleep 0.05; done
workers=$(pgrep -P $pid -f 'mlcc-tun[e] worker' | tr '\n' ' ')
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
check "killed: no output written" absent "$tmp/k.ir"
check "killed: the database reads back" bash -c "$(declare -f db_check py); db_check '$tmp/k.db' >/dev/null"
before=$(db_check "$tmp/k.db" 2>/dev/null || echo 0)
check "killed: resumes" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/k.db" --trials 4 --batch 4 -o "$tmp/k.ir"
check "killed: 4 more records" lines "$tmp/k.db" $((before + 4))
# The killed tuner's workers notice and exit (within about half a second).
# (Its own workers only: other tests may be tuning at the same time.)
sleep 1
check "the killed tuner had workers" test -n "$workers"
check "no worker left behind" bash -c "for w in $workers; do ! kill -0 \$w 2>/dev/null || exit 1; done"

# --time-budget stops the search long before a large --trials.
start=$SECONDS
check "--time-budget" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/tb.db" --trials 100000 --batch 4 --time-budget 2 -o "$tmp/tb.ir"
check "--time-budget: stopped soon" test $((SECONDS - start)) -lt 30
check "--time-budget: some records, not 100000" bash -c "n=\$(wc -l <'$tmp/tb.db'); [[ \$n -ge 4 && \$n -lt 1000 ]]"

# Shards and merge.
check "shard 0/2" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/s0.db" --trials 4 --batch 4 --shard 0/2 -q -o "$tmp/s0.ir"
check "shard 1/2" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/s1.db" --trials 4 --batch 4 --shard 1/2 -q -o "$tmp/s1.ir"
check "shard 0 has only the first task" bash -c "! grep -q fused_conv2d_relu '$tmp/s0.db'"
check "shard 1 has only the second task" bash -c "! grep -q fused_dense_add_relu '$tmp/s1.db'"
check "merge" run 0 merge "$tmp/s0.db" "$tmp/s1.db" -o "$tmp/m.db"
check "merged has both" lines "$tmp/m.db" 8
check "merging a database with itself keeps one of each record" run 0 merge "$tmp/m.db" "$tmp/s0.db" -o "$tmp/m2.db"
check "no duplicates after merge" lines "$tmp/m2.db" 8

# A user's search space: a schedule script with an undecided sample.
cat >"$tmp/space.sched" <<'SCHED'
schedule @fused_dense_add_relu {
  %b0 = get_block("dense")
  %l1, %l2, %l3 = get_loops(%b0)
  %v4, %v5 = sample_perfect_tile(%l2, n = 2, max_innermost_factor = 16)
  %l6, %l7 = split(%l2, [%v4, %v5])
  vectorize(%l7)
}
SCHED
check "--space" run 0 "$tmp/l.ir" --target "$T" --db "$tmp/sp.db" --trials 6 --batch 3 --space "$tmp/space.sched" -o "$tmp/sp.ir"
check "--space: its decisions are searched" bash -c "grep fused_dense_add_relu '$tmp/sp.db' | grep -q 'sample_perfect_tile(%l2, max_innermost_factor = 16, n = 2) decision'"
check "--space: the tuned module has the script's schedule" contains "$tmp/sp.ir" "    vectorize(%l7)"
check "--space: tuned module runs" "$bin/mlcc-run" -q "$tmp/sp.ir" --seed 3 --output-dir "$tmp/sp"
check "--space: same outputs" same_outputs "$tmp/before" "$tmp/sp"

# Bad input.
head -1 "$tmp/t.db" >"$tmp/bad.db"
echo '{"workload": 7}' >>"$tmp/bad.db"
tail -1 "$tmp/t.db" >>"$tmp/bad.db"
check "a malformed record names its line" fails_saying "bad.db:2" "$tmp/l.ir" --target "$T" --db "$tmp/bad.db" --trials 0 -o "$tmp/bad.ir"
check "nothing written on error" absent "$tmp/bad.ir"
check "a missing database for apply only" fails_saying "nope.db" "$tmp/l.ir" --target "$T" --db "$tmp/nope.db" --trials 0 -o "$tmp/bad.ir"
check "a bad space script names its line" bash -c "printf 'schedule @x {\n  %%b0 = get_block(\n}\n' >'$tmp/bad.sched'; '$tool' '$tmp/l.ir' --target '$T' --db '$tmp/sp.db' --trials 2 --space '$tmp/bad.sched' -o '$tmp/bad.ir' 2>&1 | grep -q 'bad.sched:[23]:'"
finish tune
