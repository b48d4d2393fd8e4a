#!/usr/bin/env bash
# The whole test suite: install, build, C++ unit tests, the same under ASan+UBSan (plus ONNX's
# node tests through the C++ runner), a short libFuzzer run on the model loader, then the Python
# package (pip install .) with its API / CLI / bad-input tests, ONNX's node tests through onnx's
# own harness, and the real models against onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
step() { printf '\n==== %s ====\n' "$*"; }

step "setup"
bash scripts/setup.sh

step "C++ build (release) and unit tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS"
ctest --preset release -j "$JOBS" --timeout 600

step "ASan + UBSan build, unit tests and node tests"
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan -j "$JOBS" --target tessera_tests tessera_node_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build/asan/tests/tessera_tests --gtest_brief=1
ASAN_OPTIONS=detect_leaks=1 build/asan/tests/tessera_node_tests --xfail tests/python/node_xfail.txt

step "libFuzzer: model loader (short run)"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_CLI=OFF >/dev/null
cmake --build build/fuzz -j "$JOBS" --target fuzz_loader
mkdir -p build/fuzz/corpus
build/fuzz/tests/fuzz/fuzz_loader -max_total_time="${FUZZ_SECONDS:-60}" -rss_limit_mb=4096 \
  build/fuzz/corpus tests/fuzz/seeds

step "Python package (pip install .) and Python tests"
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-build-isolation .
python3 -m pytest -q -p no:cacheprovider tests/python
