#!/usr/bin/env bash
# The main job on the default model: installs what is missing, builds tern, and
# serves the bundled demo model (models/demo, NVFP4) on http://127.0.0.1:30000.
# Extra arguments go to `tern serve` (e.g. --port 8000, or --model DIR for your own).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
exec build/src/app/tern serve --served-model-name default --reasoning-parser qwen3 \
  --tool-call-parser qwen25 --enable-metrics "$@"
