#!/usr/bin/env bash
# The Qwen3.5 chat template end to end in `tern serve` on a synthetic
# qwen3.5-tiny checkpoint (see qwen35_chat.test.mjs). Usage: run_qwen35_chat.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/qwen35-chat
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
"$tern" synth --arch qwen3_5_moe --preset qwen3.5-tiny --seed 5 --out "$work/model" 2>/dev/null
TERN="$tern" MODEL_DIR="$work/model" node --test --test-concurrency=1 "$here/qwen35_chat.test.mjs"
