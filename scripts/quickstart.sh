#!/usr/bin/env bash
# The main job on the default model: installs what is missing, builds tern, and
# serves the bundled demo model (models/demo, NVFP4) on http://127.0.0.1:30000.
# Extra arguments go to `tern serve` (e.g. --port 8000, or --model DIR for your own).
# Only the tern binary is built (tests and benchmarks off): scripts/test.sh builds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# ccache keys on paths relative to the checkout, so clones in other folders share the cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTERN_BUILD_TESTS=OFF -DTERN_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target tern
exec build/src/app/tern serve --served-model-name default --reasoning-parser qwen3 \
  --tool-call-parser qwen25 --enable-metrics "$@"
