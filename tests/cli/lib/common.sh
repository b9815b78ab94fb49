# Shared by the command-line tests (tests/cli/*.sh): source it after setting
# `tool` (the program `run` calls). It makes a temporary directory $tmp
# (removed on exit) and counts failures in $fails; end a test with `finish`.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
