#!/usr/bin/env bash
# Installs every Debian package mlcc needs to build, test and benchmark.
# Idempotent: prints nothing and touches nothing when all are present.
# Run as root (or with sudo) on Debian 12 (bookworm).
set -euo pipefail

packages=(
  # toolchain and build
  g++ cmake ninja-build ccache pkg-config clang-format
  # the fuzz preset (libFuzzer targets of tests/fuzz): clang with its sanitizer runtimes
  clang-19 libclang-rt-19-dev
  # libraries
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  llvm-19-dev libprotobuf-dev protobuf-compiler libonnx-dev libxgboost-dev libopenblas-dev
  # text tests (tests/lit): lit, FileCheck, not, count and split-file
  llvm-19-tools
  # test models and reference outputs (run with /usr/bin/python3)
  python3 python3-numpy python3-torch python3-torchvision python3-onnx python3-jsonschema
  python3-yaml  # tests/cli/schemas.sh: the YAML files against their schemas
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "install-deps: missing packages (${missing[*]}); run this script as root" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
