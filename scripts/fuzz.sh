#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz long (the fuzz preset: clang-19,
# ASan + UBSan).
#
#   scripts/fuzz.sh                  # every target, 300 s each, one after another
#   scripts/fuzz.sh onnx 3600        # one target for an hour
#   FUZZ_ARGS='-jobs=2 -workers=2' scripts/fuzz.sh ir 600   # more libFuzzer flags
#
# Targets: ir schedule passes onnx npy safetensors pipeline patterns.
# The corpus each run grows is kept outside the tree, in
# build/fuzz/corpus/TARGET (the checked-in seeds, the tests' files and the
# generated seeds are read from their own directories); crash, timeout and
# OOM reproducers go to build/fuzz/findings/TARGET/. Minimize one with
#   build/fuzz/bin/fuzz_TARGET -minimize_crash=1 -runs=100000 FILE
# and add it as tests/fuzz/corpus/TARGET/regress-NAME (ctest runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
all=(ir schedule passes onnx npy safetensors pipeline patterns)
targets=("${1:-all}")
[[ ${targets[0]} == all ]] && targets=("${all[@]}")
seconds=${2:-300}
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (targets: ${all[*]})" >&2; exit 2; }
done

[[ -f build/fuzz/build.ninja ]] || nice cmake --preset fuzz >/dev/null
nice cmake --build --preset fuzz -j2

status=0
for t in "${targets[@]}"; do
  corpus=build/fuzz/corpus/$t
  findings=build/fuzz/findings/$t
  mkdir -p "$corpus" "$findings"
  { read -r -a flags; read -r -a seeds; } <"build/fuzz/tests/fuzz/$t.args"
  echo "== fuzz_$t: ${seconds} s, corpus $corpus, findings in $findings/" >&2
  # shellcheck disable=SC2086
  if ! nice "build/fuzz/bin/fuzz_$t" -max_total_time="$seconds" -artifact_prefix="$findings/" \
      "${flags[@]}" ${FUZZ_ARGS:-} "$corpus" "${seeds[@]}" 2>"$findings/log.txt"; then
    echo "fuzz_$t: FINDING (see $findings/ and $findings/log.txt)" >&2
    status=1
  fi
  # The executions so far (the last status line; -fork=N runs print no final stats).
  grep -E '^#[0-9]+' "$findings/log.txt" | tail -n 1 >&2 || true
done
exit $status
