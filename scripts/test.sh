#!/usr/bin/env bash
# The whole test suite:
#   1. install what is needed (apt, pip);
#   2. C++ unit tests and ONNX's node tests (C++ runner) built with ASan + UBSan;
#   3. a short libFuzzer run on the model loader (clang, ASan);
#   4. the Python package (pip install .), then pytest: API, CLI, bad input, ONNX's node tests
#      through onnx's own harness and tessera.backend, and the real models against onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
step() { printf '\n==== %s  [%s]\n' "$*" "$(date +%T)"; }

step "setup"
bash scripts/setup.sh

step "C++ unit tests and node tests under ASan + UBSan"
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan -j "$JOBS" --target tessera_tests tessera_node_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
build/asan/tests/tessera_tests --gtest_brief=1
build/asan/tests/tessera_node_tests --xfail tests/python/node_xfail.txt
unset ASAN_OPTIONS UBSAN_OPTIONS

step "libFuzzer on the model loader (${FUZZ_SECONDS:-60} s)"
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DTESSERA_BUILD_FUZZ=ON -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_CLI=OFF >/dev/null
cmake --build build/fuzz -j "$JOBS" --target fuzz_loader fuzz_seeds
build/fuzz/tests/fuzz/fuzz_loader -max_total_time="${FUZZ_SECONDS:-60}" -rss_limit_mb=4096 -print_final_stats=1 \
  build/fuzz/tests/fuzz/corpus 2>&1 | tail -n 5

step "Python package: pip install ."
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-build-isolation .

step "pytest"
python3 -m pytest -q -p no:cacheprovider tests/python
