#!/usr/bin/env bash
# One --target for every tool (libs/target): the same target strings, good
# and bad, through mlcc-schedule, mlcc-codegen, mlcc-pipeline's up-front
# check (--set target=...) and mlcc-inspect --target-info give the same
# outcome, exit code and message; the same meaning (a -mcpu's vector width
# is what -vector-bits says, for the schedule rules and for codegen's
# instructions); --target-info shows what the compiler assumes and its
# first line is a target string that means the same again.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-inspect

printf 'mlcc.ir 1\n\ngraph @main(%%x: f32[64, 64]) -> f32[64, 64] {\n  dataflow {\n    %%y: f32[64, 64] = exp(%%x)\n  }\n  return %%y\n}\n' \
  >"$tmp/small.ir"
"$bin/mlcc-legalize" "$tmp/small.ir" -o "$tmp/low.ir"
printf 'name: p\ntarget: llvm\nstages:\n  - {name: f, tool: mlcc-fuse}\n' >"$tmp/p.yaml"
touch "$tmp/m.onnx"

# outcome TOOL TARGET: "RC MESSAGE" of TOOL given TARGET (the message: the
# error after "error: " and the tool's own prefix; empty on success).
outcome() {
  local t=$2 rc
  case $1 in
    schedule) "$bin/mlcc-schedule" "$tmp/low.ir" --target "$t" -o "$tmp/o.ir" 2>"$tmp/e" >/dev/null ;;
    codegen) "$bin/mlcc-codegen" "$tmp/low.ir" --target "$t" -o "$tmp/o.o" 2>"$tmp/e" >/dev/null ;;
    pipeline)
      "$bin/mlcc-pipeline" run "$tmp/p.yaml" --input "$tmp/m.onnx" --build-dir "$tmp/b" --dry-run \
        --set "target=$t" 2>"$tmp/e" >/dev/null ;;
    inspect) "$bin/mlcc-inspect" --target-info "$t" 2>"$tmp/e" >/dev/null ;;
  esac
  rc=$?
  local msg
  msg=$(head -1 "$tmp/e")
  msg=${msg#*error: }
  echo "$rc ${msg#"--set target=$t: "}"
}

# same_outcome EXPECTED_RC TARGET TOOLS...: every tool exits EXPECTED_RC with one message.
same_outcome() {
  local expected=$1 t=$2 first="" o
  shift 2
  for tool_name in "$@"; do
    o=$(outcome "$tool_name" "$t")
    if [[ ${o%% *} != "$expected" ]]; then
      echo "  mlcc-$tool_name --target '$t': exit ${o%% *}, expected $expected: ${o#* }"
      return 1
    fi
    if [[ -z $first ]]; then
      first=$o
    elif [[ $o != "$first" ]]; then
      echo "  mlcc-$tool_name --target '$t' says '${o#* }', mlcc-$1 '${first#* }'"
      return 1
    fi
  done
}

all=(schedule codegen pipeline inspect)
for t in "llvm" "llvm -vector-bits=256" "llvm -mcpu=native" "llvm -num-cores=2 -vector-bits=128" \
  "llvm -mcpu=x86-64-v3 -mattr=-fma -num-cores=2" "llvm -mattr=+avx2"; do
  check "accepted by every tool: $t" same_outcome 0 "$t" "${all[@]}"
done
for t in "llvm -mcpu=bogus" "llvm -mcpu=skylake-avx51" "llvm -mcpu=i386" "llvm -mattr=+avx9" \
  "llvm -mattr=avx2" "llvm -num-cores=0" "llvm -vector-bits=x" "llvm -vector-bits=7" "llvm -arch=sm_80" "llvm -mcpu" "wasm" \
  "cuda -arch=sm_12" "cuda -arch=sm_70" "cuda -max-threads-per-block=4096" "cuda -mcpu=x86-64" \
  "cuda -fast-math=1" "llvm -fast-math"; do
  check "refused by every tool, with one message: $t" same_outcome 1 "$t" "${all[@]}"
done
# mlcc-codegen takes them too, for a module scheduled for the GPU (the CPU
# module here is refused by the GPU checks, not by the target's parser).
for t in "cuda" "cuda -arch=sm_90" "cuda -arch=sm_100a -max-threads-per-block=256" "cuda -fast-math"; do
  check "accepted by schedule, pipeline, inspect: $t" same_outcome 0 "$t" schedule pipeline inspect
  check "mlcc-codegen parses it: $t" bash -c "'$bin/mlcc-codegen' '$tmp/low.ir' --target '$t' -o '$tmp/x.o' 2>&1 \
    | grep -q 'is not inside a GPU kernel'"
done
check "a bad target names the bad part" run 1 --target-info "llvm -mcpu=skylake-avx51"
check "... with the close names" contains "$tmp/err" "^--target-info: error: unknown CPU 'skylake-avx51'.*did you mean skylake-avx512"
check "an unknown CUDA arch lists the known ones" run 1 --target-info "cuda -arch=sm_12"
check "... from sm_75" contains "$tmp/err" "unknown CUDA architecture 'sm_12' (known: sm_75, sm_80"
check "a pipeline's target key is checked at its line" bash -c "printf 'name: p\ntarget: llvm -vector-bits=0\nstages:\n  - {name: f, tool: mlcc-fuse}\n' >'$tmp/bad.yaml' && ! '$bin/mlcc-pipeline' run '$tmp/bad.yaml' --input '$tmp/m.onnx' --build-dir '$tmp/b' --dry-run 2>'$tmp/e' && grep -q '^$tmp/bad.yaml:2:9: error: target: -vector-bits must be a positive integer' '$tmp/e'"

# --- one meaning: -mcpu=x86-64-v3 has 256-bit vectors for the rules (as
# -vector-bits=256 says) and for codegen's instructions; x86-64 has 128 ---
sched() { "$bin/mlcc-schedule" "$tmp/low.ir" --target "$1" -o "$2"; }
if [[ $(uname -m) == x86_64 ]]; then
  check "schedule: x86-64-v3 is -vector-bits=256" bash -c "$(declare -f sched); bin='$bin' tmp='$tmp'; \
    sched 'llvm -mcpu=x86-64-v3 -num-cores=2' '$tmp/v3.ir' && sched 'llvm -num-cores=2 -vector-bits=256' '$tmp/256.ir' \
    && cmp -s '$tmp/v3.ir' '$tmp/256.ir'"
  check "schedule: x86-64 is -vector-bits=128, not 256" bash -c "$(declare -f sched); bin='$bin' tmp='$tmp'; \
    sched 'llvm -mcpu=x86-64 -num-cores=2' '$tmp/v1.ir' && sched 'llvm -num-cores=2 -vector-bits=128' '$tmp/128.ir' \
    && cmp -s '$tmp/v1.ir' '$tmp/128.ir' && ! cmp -s '$tmp/v1.ir' '$tmp/v3.ir'"
  check "codegen: x86-64-v3 uses ymm registers" bash -c "'$bin/mlcc-codegen' '$tmp/v3.ir' --target 'llvm -mcpu=x86-64-v3' \
    --emit asm -o - | grep -q ymm"
  check "codegen: x86-64 does not" bash -c "! '$bin/mlcc-codegen' '$tmp/v1.ir' --target 'llvm -mcpu=x86-64' \
    --emit asm -o - | grep -q ymm"
  check "--target-info: x86-64-v3" run 0 --target-info "llvm -mcpu=x86-64-v3 -num-cores=2"
  check "... the target resolved" contains "$tmp/out" "^target: llvm -mcpu=x86-64-v3 -num-cores=2 -vector-bits=256$"
  check "... the CPU" contains "$tmp/out" "^cpu: x86-64-v3$"
  check "... its vector features" contains "$tmp/out" "^features: sse4.2 avx avx2 fma f16c ("
  check "... vector bits" contains "$tmp/out" "^vector bits: 256$"
fi
check "--target-info llvm: this machine" run 0 --target-info llvm
check "... the host CPU" contains "$tmp/out" "^cpu: .* (this machine)$"
check "... cores" contains "$tmp/out" "^cores: $(getconf _NPROCESSORS_ONLN)$"
check "... caches" contains "$tmp/out" "^l1d cache: "
check "... its first line means the same again" bash -c "t=\$(head -1 '$tmp/out' | sed 's/^target: //') && \
  '$tool' --target-info \"\$t\" | cmp -s - '$tmp/out'"
check "--target-info cuda -arch=sm_90" run 0 --target-info "cuda -arch=sm_90"
check "... compute capability" contains "$tmp/out" "^arch: sm_90 (compute capability 9.0)$"
check "... shared memory" contains "$tmp/out" "^shared memory per block: 48 KiB (static), 227 KiB (opt-in)$"
check "--help shows --target-info" bash -c "'$tool' --help | grep -q -- \"--target-info 'cuda -arch=sm_90'\""
check "--target-info and --summary exit 2" run 2 --target-info llvm --summary x.ir

finish target
