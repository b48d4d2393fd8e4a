#!/usr/bin/env bash
# The whole test suite:
#   1. install what is needed (apt, pip);
#   2. C++ unit tests and ONNX's node tests (C++ runner) built with ASan + UBSan;
#   3. where the CPU lacks AVX-512: the AVX-512 kernels built for AVX2 through SIMDe (CMake option
#      TESSERA_EMULATE_AVX512) and run through the unit, node and model tests;
#   4. a short libFuzzer run on the model loader (clang, ASan);
#   5. the Python package (pip install .), then pytest: API, CLI, bad input, ONNX's node tests
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

step "AVX-512 kernels through SIMDe: unit, node and model tests"
if grep -qw avx512f /proc/cpuinfo; then
  echo "this CPU has AVX-512: the other steps run those kernels natively"
else
  cmake --preset emu512 >/dev/null
  cmake --build --preset emu512 -j "$JOBS" --target tessera_tests tessera_node_tests
  build/emu512/tests/tessera_tests --gtest_brief=1
  build/emu512/tests/tessera_node_tests --xfail tests/python/node_xfail.txt
  JOBS=$JOBS bash scripts/dev_python.sh emu512 >/dev/null
  PYTHONPATH=build/emu512/pydev python3 -c \
    'import sys, tessera; isa = tessera.kernel_isa(); print("kernels for:", isa); sys.exit("avx512f" not in isa)'
  PYTHONPATH=build/emu512/pydev python3 -m pytest -q -p no:cacheprovider tests/python/test_models.py \
    tests/python/test_more_models.py tests/python/test_gemm_paths.py tests/python/test_concat.py \
    tests/python/test_layout_nhwc.py
fi

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
