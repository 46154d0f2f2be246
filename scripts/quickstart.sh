#!/usr/bin/env bash
# The main job on the default model: installs what is missing, builds tern,
# creates the default model if needed, and serves it on http://127.0.0.1:30000.
# Until the bundled trained model lands, the default model is a small synthetic
# Qwen3-MoE checkpoint (random weights: the text is noise, the machinery is real).
# Extra arguments go to `tern serve` (e.g. --port 8000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
model=models/synthetic-qwen3-moe
if [ ! -f "$model/config.json" ]; then
  build/src/app/tern synth --arch qwen3_moe --preset tiny --seed 1 --out "$model"
fi
exec build/src/app/tern serve --model "$model" --served-model-name default --reasoning-parser qwen3 \
  --tool-call-parser qwen25 --enable-metrics "$@"
