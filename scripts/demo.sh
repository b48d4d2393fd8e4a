#!/usr/bin/env bash
# The main job: install what is needed, build Tessera, rebuild a default model from the skeleton
# shipped in assets/models, run it end to end and print its outputs and timing.
#   scripts/demo.sh [MODEL]      MODEL: resnet50 (default), resnet18, mobilenet_v2, vit_b_16, bert_base, gpt2, gpt2_decode
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-resnet50}
JOBS=${JOBS:-$(nproc)}

bash scripts/setup.sh
cmake --preset release -DTESSERA_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release -j "$JOBS"
mkdir -p build/models
[ -f "build/models/$MODEL.onnx" ] || python3 scripts/materialize.py "assets/models/$MODEL.skeleton.onnx" "build/models/$MODEL.onnx"
build/release/tessera info "build/models/$MODEL.onnx"
build/release/tessera run "build/models/$MODEL.onnx" --repeat 5
