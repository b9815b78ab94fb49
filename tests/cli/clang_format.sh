#!/usr/bin/env bash
# Every C++ source of the project is formatted with the root .clang-format.
set -euo pipefail
src=$2
cd "$src"
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' 2>/dev/null || find libs tools tests -name '*.cpp' -o -name '*.h')
bad=0
for f in "${files[@]}"; do
  [[ -f "$f" ]] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not clang-formatted: $f (run: clang-format -i $f)"
    bad=1
  fi
done
exit $bad
