#!/usr/bin/env bash
# mlcc-inspect as a user runs it: validate, summary (text and JSON checked
# against its schema), --func, --diff, stdin, and every error path's exit code.
source "$2/tests/cli/lib/common.sh"
data=$src/tests/cli/inspect
tool=$bin/mlcc-inspect

check "validate" run 0 --validate "$data/mm.ir"
check "validate prints ok" contains "$tmp/out" "mm.ir: ok"
check "print is canonical (identity on printed text)" run 0 --print "$data/mm.ir"
check "print output equals input" cmp -s "$tmp/out" "$data/mm.ir"
check "stdin" bash -c "'$tool' --summary < '$data/mm.ir' > '$tmp/out'"
check "summary text shows flops" contains "$tmp/out" "flops: *4194304"

check "summary json" run 0 --summary --json "$data/mm_scheduled.ir"
cp "$tmp/out" "$tmp/summary.json"
check "summary json matches schema and counts" /usr/bin/python3 - "$tmp/summary.json" "$src/artifacts_schema/inspect-summary.schema.json" <<'PY'
import json, sys, jsonschema
doc = json.load(open(sys.argv[1])); schema = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
assert doc["graph_ops"] == {"call_tir": 1}, doc["graph_ops"]
assert doc["prim_funcs"] == 1 and doc["graph_funcs"] == 1
assert doc["loops"] == {"serial": 2, "parallel": 1, "vectorized": 1, "unrolled": 0, "thread_binding": 0}, doc["loops"]
assert doc["flops"] == 2 * 128**3, doc["flops"]
assert doc["functions"] == {"main": "graph", "mm": "prim"}
PY

check "func" run 0 --func mm "$data/mm.ir"
check "func prints the prim func" contains "$tmp/out" '^prim @mm('
check "func missing" run 1 --func nosuch "$data/mm.ir"
check "func missing names it" contains "$tmp/err" "no function @nosuch"

check "diff renamed is equal" run 0 --diff --exit-code "$data/mm.ir" "$data/mm_renamed.ir"
check "diff says equal" contains "$tmp/out" "structurally equal"
check "diff scheduled differs" run 3 --diff --exit-code "$data/mm.ir" "$data/mm_scheduled.ir"
check "diff names the function" contains "$tmp/out" "changed @mm"
check "diff shows the new loop" contains "$tmp/out" "^+ *for %j1 in 0..16 vectorized"
check "diff without --exit-code exits 0" run 0 --diff "$data/mm.ir" "$data/mm_scheduled.ir"

check "undefined buffer" run 1 --validate "$data/undefined_buffer.ir"
check "error has file:line:col" contains "$tmp/err" "undefined_buffer.ir:5:[0-9]*: error:"
check "op result type is checked" run 1 --validate "$data/wrong_op_type.ir"
check "op type error names both types" contains "$tmp/err" "wrong_op_type.ir:6:5: error: .*op 'concat' gives f32\[n + n, 4\], but %z is declared f32\[n, 8\]"
check "missing file" run 1 --validate "$tmp/nope.ir"
check "missing file named" contains "$tmp/err" "nope.ir"
printf 'mlcc.ir 1\ngraph @main(' > "$tmp/trunc.ir"
check "truncated" run 1 --validate "$tmp/trunc.ir"
head -c 4096 /dev/urandom > "$tmp/garbage.ir"
check "garbage" run 1 --validate "$tmp/garbage.ir"
check "usage: unknown flag" run 2 --no-such-flag
check "usage: two modes" run 2 --print --summary "$data/mm.ir"
check "usage: diff needs two files" run 2 --diff "$data/mm.ir"
check "version" run 0 --version
check "version line" contains "$tmp/out" "mlcc-inspect .* (IR format 1)"
check "help has an example" run 0 --help
check "help example" contains "$tmp/out" "mlcc-inspect --summary --json"

# -o writes atomically; a failing run leaves an existing output untouched.
echo "keep me" > "$tmp/o.txt"
check "failing run" run 1 --print "$tmp/garbage.ir" -o "$tmp/o.txt"
check "output untouched" grep -q "keep me" "$tmp/o.txt"
check "no temp files left" bash -c "[[ \$(ls '$tmp' | grep -c tmp) -eq 0 ]]"
check "-o writes" run 0 --print "$data/mm.ir" -o "$tmp/o.txt"
check "-o content" cmp -s "$tmp/o.txt" "$data/mm.ir"

finish inspect
