# Shared by the command-line tests (tests/cli/*.sh), which ctest runs as
# `TEST.sh BIN_DIR SOURCE_DIR`: source it first, as
# `source "$2/tests/cli/lib/common.sh"`, then set `tool` (the program `run`
# calls). It sets -uo pipefail, $bin and $src (both absolute), makes a
# temporary directory $tmp (removed on exit, kept with KEEP_TMP=1) and counts failures in $fails;
# end a test with `finish`.
set -uo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap '[[ -n ${KEEP_TMP:-} ]] || rm -rf "$tmp"' EXIT
fails=0

check() {  # check NAME COMMAND...: runs COMMAND, reports ok/FAIL under NAME
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fails=$((fails + 1)); fi
}

run() {  # run EXPECTED_RC ARGS...: runs $tool ARGS; stdout in $tmp/out, stderr in $tmp/err
  local expected=$1
  shift
  "$tool" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne $expected ]]; then
    echo "  '$(basename "$tool") $*' exited $rc, expected $expected; stderr:"
    sed 's/^/    /' "$tmp/err"
    return 1
  fi
}

contains() { grep -q -- "$2" "$1" || { echo "  '$2' not in $1:"; sed 's/^/    /' "$1" | head -20; return 1; }; }
absent() { [[ ! -e $1 ]] || { echo "  $1 exists"; return 1; }; }
py() { /usr/bin/python3 - "$@"; }

prints() {  # prints PATTERN ARGS...: $tool ARGS exits 0 and its stdout matches PATTERN
  local pattern=$1 out
  shift
  out=$("$tool" "$@") && grep -q -- "$pattern" <<<"$out"
}

python_has() {  # python_has MODULE...: /usr/bin/python3 imports every MODULE
  local IFS=,
  /usr/bin/python3 -c "import $*" 2>/dev/null
}

# public_models MODULE... [-- GENERATE_ARGS...]: generates the public models
# (tests/models/generate.py GENERATE_ARGS) into $tmp/models when python3
# imports every MODULE; otherwise says why it skips them, or counts the failed
# generation in $fails. Returns 0 only when the models are there.
public_models() {
  local modules=()
  while [[ $# -gt 0 && $1 != -- ]]; do modules+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  if ! python_has "${modules[@]}"; then
    echo "skip public models: $(IFS=/; echo "${modules[*]}") not importable by /usr/bin/python3"
    return 1
  fi
  if ! /usr/bin/python3 "$src/tests/models/generate.py" --out "$tmp/models" "$@" >"$tmp/gen.log" 2>&1; then
    echo "FAIL generating the public models:"; tail -5 "$tmp/gen.log"; fails=$((fails + 1))
    return 1
  fi
}

# compare OUT.npy REF.npy: rtol 1e-3, atol 1e-4 scaled by the reference's magnitude
compare() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, numpy as np
a = np.load(sys.argv[1]); b = np.load(sys.argv[2])
assert a.shape == b.shape, (a.shape, b.shape)
scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
ok = np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-3, atol=1e-4 * scale)
if not ok:
    print("  max abs error", float(np.abs(a.astype(np.float64) - b).max()), "scale", scale)
sys.exit(0 if ok else 1)
PY
}

finish() {  # finish NAME: prints the count and exits 0 only when nothing failed
  echo "$1: $fails failure(s)"
  [[ $fails -eq 0 ]]
  exit $?
}

# lowered MODEL IN.ir OUT.ir: mlcc-legalize lowers IN to OUT; where it cannot,
# a model with an op that cannot be lowered yet is skipped (saying so) and any
# other failure is counted in $fails. Returns 0 only when OUT was written.
lowered() {
  "$bin/mlcc-legalize" -q "$2" -o "$3" 2>"$tmp/err" && return 0
  local op
  if op=$(grep -o "op '[A-Za-z_0-9]*' cannot be lowered to TensorIR yet" "$tmp/err" | head -1) && [[ -n $op ]]; then
    echo "skip $1: $op"
  else
    echo "FAIL $1 lowers:"; sed 's/^/    /' "$tmp/err" | head -10; fails=$((fails + 1))
  fi
  return 1
}

fails_saying() {  # fails_saying MESSAGE ARGS...: $tool ARGS exits 1, MESSAGE in its stderr
  local message=$1
  shift
  run 1 "$@" && contains "$tmp/err" "$message"
}
