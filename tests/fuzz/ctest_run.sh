#!/usr/bin/env bash
# ctest_run.sh FUZZER WORK_DIR LIBFUZZER_ARGS... CORPUS_DIRS...
# Runs a fuzz target under ctest: new inputs go to WORK_DIR (emptied first,
# so each run starts from the seeds alone), crash files to WORK_DIR.crashes.
set -euo pipefail
fuzzer=$1
work=$2
shift 2
rm -rf "$work" "$work.crashes"
mkdir -p "$work" "$work.crashes"
exec "$fuzzer" -artifact_prefix="$work.crashes/" "$work" "$@"
