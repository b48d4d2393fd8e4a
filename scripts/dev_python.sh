#!/usr/bin/env bash
# Builds the Python module into build/release and lays out an importable
# package at build/release/pydev/tessera (symlinks to python/tessera/*.py and
# the freshly built extension), so a working tree can be tried without
# `pip install .`:
#   bash scripts/dev_python.sh && PYTHONPATH=build/release/pydev python3 bench/compare_ort.py resnet50
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release -DTESSERA_BUILD_PYTHON=ON >/dev/null
cmake --build build/release --target _tessera tessera_cli -j "${JOBS:-2}"
dev=build/release/pydev/tessera
mkdir -p "$dev/bin"
for f in python/tessera/*.py; do ln -sf "$PWD/$f" "$dev/"; done
ln -sf "$PWD"/build/release/python/_tessera*.so "$dev/"
ln -sf "$PWD/build/release/tessera" "$dev/bin/tessera"
echo "PYTHONPATH=$PWD/build/release/pydev"
