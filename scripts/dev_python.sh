#!/usr/bin/env bash
# Builds the Python module into build/<preset> (release unless named) and lays out
# an importable package at build/<preset>/pydev/tessera (symlinks to
# python/tessera/*.py and the freshly built extension), so a working tree can be
# tried without `pip install .`:
#   bash scripts/dev_python.sh && PYTHONPATH=build/release/pydev python3 bench/compare_ort.py resnet50
#   bash scripts/dev_python.sh emu512   # AVX-512 kernels emulated on AVX2 (tests only)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
build=build/$preset
cmake --preset "$preset" -DTESSERA_BUILD_PYTHON=ON >/dev/null
cmake --build "$build" --target _tessera tessera_cli -j "${JOBS:-2}"
dev=$build/pydev/tessera
mkdir -p "$dev/bin"
for f in python/tessera/*.py; do ln -sf "$PWD/$f" "$dev/"; done
ln -sf "$PWD"/$build/python/_tessera*.so "$dev/"
ln -sf "$PWD/$build/tessera" "$dev/bin/tessera"
echo "PYTHONPATH=$PWD/$build/pydev"
