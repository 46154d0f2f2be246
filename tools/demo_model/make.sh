#!/usr/bin/env bash
# The bundled demo model in one command, reproducibly: train (or resume) with the fixed seed of
# run.json, export the BF16 Hugging Face checkpoint and PyTorch's greedy goldens, quantize it to
# NVFP4 with `tern quantize`, check tern against the goldens, print the evaluation in tern, and
# install the result as OUT.
#
#   tools/demo_model/make.sh [--no-train] [RUN_DIR] [OUT]      (defaults .train/demo, models/demo)
#
# Training takes hours on 2 cores and resumes where it stopped: when train.py pauses (a signal)
# this script stops with status 3; run it again. --no-train exports the run's current
# checkpoint as it is (an intermediate model). TERN=path selects the tern binary
# (default build/src/app/tern). OUT's README.md (the model card) is kept; update its figures
# from the evaluation printed at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
train=1
if [ "${1:-}" = "--no-train" ]; then train=0; shift; fi
run=${1:-.train/demo} out=${2:-models/demo}
tern=${TERN:-build/src/app/tern} py=/usr/bin/python3
here=tools/demo_model

if [ "$train" = 1 ]; then
  status=0
  $py $here/train.py --dir "$run" || status=$?
  if [ "$status" = 3 ]; then echo "make.sh: training paused; run again to resume"; exit 3; fi
  [ "$status" = 0 ] || exit "$status"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$py $here/export.py --dir "$run" --out "$tmp/bf16" --nvfp4-goldens
"$tern" quantize --model "$tmp/bf16" --out "$tmp/nvfp4" --format nvfp4
cp "$tmp/bf16/goldens_nvfp4.json" "$tmp/nvfp4/" && rm -f "$tmp/nvfp4/goldens.json"  # (BF16 goldens: not for these weights)
$py $here/compare_tern.py --model "$tmp/bf16" --tern "$tern" | tail -1
$py $here/compare_tern.py --model "$tmp/nvfp4" --goldens "$tmp/nvfp4/goldens_nvfp4.json" --tern "$tern" | tail -1
echo "== BF16 export, all 8,100 products"
$py $here/eval_tern.py --model "$tmp/bf16" --tern "$tern" | cut -c1-200
echo "== NVFP4, all 8,100 products"
$py $here/eval_tern.py --model "$tmp/nvfp4" --tern "$tern" | cut -c1-200
[ -f "$out/README.md" ] && cp "$out/README.md" "$tmp/nvfp4/"
rm -rf "$out.old" && { [ ! -e "$out" ] || mv "$out" "$out.old"; } && mv "$tmp/nvfp4" "$out" && rm -rf "$out.old"
echo "make.sh: installed $out ($(du -sh "$out" | cut -f1))"
