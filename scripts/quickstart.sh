#!/usr/bin/env bash
# The main job on the default model: installs what is missing, builds tern,
# creates the default model if needed, and runs it.
# Until the bundled trained model and `tern serve` land, the default model is a
# small synthetic Qwen3-MoE checkpoint (random weights: the text is noise, the
# machinery is real) and the job is a generation from it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
model=models/synthetic-qwen3-moe
if [ ! -f "$model/config.json" ]; then
  build/src/app/tern synth --arch qwen3_moe --preset tiny --seed 1 --out "$model"
fi
exec build/src/app/tern generate --model "$model" --prompt "The capital city of France is" --max-tokens 32 --seed 1 "$@"
