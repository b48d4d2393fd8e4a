#!/usr/bin/env bash
# Installs what Tessera needs to build and test, from Debian's packages and PyPI.
# Safe to run again: installed packages are skipped.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  clang libclang-rt-14-dev
  libdnnl-dev libopenblas-dev
  libsimde-dev
)
PIP_PACKAGES=(
  "onnx==1.22.0" "onnxruntime>=1.20" "numpy>=1.26" "ml_dtypes>=0.5"
  "pytest>=8" "nanobind>=2.4" "scikit-build-core>=0.10"
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
$PY -m pip install -q --disable-pip-version-check --root-user-action=ignore "${PIP_PACKAGES[@]}"
