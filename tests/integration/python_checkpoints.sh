#!/usr/bin/env bash
# Checkpoints written by an independent writer (tests/reference/tiny_checkpoint.py,
# NumPy only): sharded with an index, VLM-wrapped config and tensor names, tied
# embeddings, non-default MoE layer placement. tern must load each and match the reference.
# Usage: python_checkpoints.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/python
here=$(cd "$(dirname "$0")/.." && pwd)
mk() { rm -rf "$work/$1"; /usr/bin/python3 "$here/reference/tiny_checkpoint.py" --out "$work/$1" "${@:2}" >/dev/null; }
mkdir -p "$work"
mk dense-sharded --arch qwen3 --dtype BF16 --shards 3
mk moe-vlm --arch qwen3_moe --dtype F32 --vlm-wrapper
mk dense-tied-f16 --arch qwen3 --dtype F16 --tie
mk moe-sparse-step --arch qwen3_moe --dtype F32 --set decoder_sparse_step=2 --set 'mlp_only_layers=[0]' --set num_hidden_layers=3
pass=0 fail=0
for m in dense-sharded moe-vlm dense-tied-f16 moe-sparse-step; do
  if /usr/bin/python3 "$here/reference/compare.py" --tern "$tern" --model "$work/$m" --prompt-ids 5,9,1,33,70,2,18 \
       --steps 24 --tern-arg=--ignore-eos; then pass=$((pass + 1)); else echo "FAILED: $m"; fail=$((fail + 1)); fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
