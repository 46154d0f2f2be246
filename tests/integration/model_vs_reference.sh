#!/usr/bin/env bash
# Synthesizes a checkpoint with tern, then checks tern's logits and greedy tokens
# against the independent float64 NumPy reference (tests/reference/compare.py),
# and that a prompt processed in one batch equals the same prompt fed token by token.
# Usage: model_vs_reference.sh TERN WORKDIR ARCH PRESET DTYPE [TOL]
set -euo pipefail
tern=$1 work=$2 arch=$3 preset=$4 dtype=$5 tol=${6:-1e-3}
here=$(cd "$(dirname "$0")/.." && pwd)
model="$work/$arch-$preset-$dtype"
rm -rf "$model"
"$tern" synth --arch "$arch" --preset "$preset" --dtype "$dtype" --seed 7 --out "$model"
prompt=3,17,99,250,5,42,7,300,12,64,128,200,31,8,9,150,77
/usr/bin/python3 "$here/reference/compare.py" --tern "$tern" --model "$model" --prompt-ids "$prompt" \
  --steps 32 --tol "$tol" --tern-arg=--ignore-eos
/usr/bin/python3 "$here/integration/batch_vs_stepwise.py" --tern "$tern" --model "$model" --prompt-ids "$prompt"
