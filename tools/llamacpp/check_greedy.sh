#!/usr/bin/env bash
# Checks that llama.cpp runs the GGUFs made by hf_to_gguf.py as tern runs the checkpoints:
# same tokenizer ids, same greedy tokens, close logits, on the tiny synthetic presets.
#
#   tools/llamacpp/check_greedy.sh WORKDIR [--llama-cpp DIR] [--tern BIN] [--tokens N]
#
# For qwen3 and qwen3_moe tiny, BF16 and NVFP4: tern synth --seed 1, hf_to_gguf.py, then
#   tokenizer   tern tokenize vs llama-tokenize on a few texts (ids must be equal)
#   generation  tern generate --prompt-ids P --temperature 0 --logits-out vs greedy_ids (llama.cpp
#               C API): generated ids, max |logit difference| and the smallest top-1/top-2 margin.
# Random weights give near-uniform logits, so a mismatch at a step whose margin is below the logit
# difference is a tie, not a bug. NVFP4: llama.cpp quantizes activations to Q8_0 for the NVFP4
# matmul (W4A8) while tern keeps them in f32, so expect larger logit differences there.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=""; lcpp=/work/llama.cpp; tern="$repo/build/src/app/tern"; n=16; py=/usr/bin/python3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --llama-cpp) lcpp=$2; shift 2 ;;
    --tern) tern=$2; shift 2 ;;
    --tokens) n=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) work=$1; shift ;;
  esac
done
[[ -n $work ]] || { echo "usage: $0 WORKDIR [--llama-cpp DIR] [--tern BIN] [--tokens N]" >&2; exit 2; }
mkdir -p "$work"
# greedy_ids links against the llama.cpp build's shared libraries.
g++ -O2 -std=c++17 -o "$work/greedy_ids" "$here/greedy_ids.cpp" -I"$lcpp/include" -I"$lcpp/ggml/include" \
  -L"$lcpp/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$lcpp/build/bin"

texts=("Hello world, the quick brown fox 123" $'def f(x):\n    return x*2  # ok' $'  spaces   and\ttabs \\t <|im_start|>user\n\n' "ünïcödé 漢字 🦙 ...!!")
prompt=10,20,30,40,50,60,70
fail=0
for arch in qwen3 qwen3_moe; do
  for q in bf16 nvfp4; do
    d="$work/tiny-$arch-$q"; g="$d.gguf"
    [[ -f $d/config.json ]] || "$tern" synth --arch "$arch" --preset tiny --seed 1 --out "$d" \
      $([[ $q == bf16 ]] || echo --quant $q) > /dev/null
    [[ -f $g ]] || $py "$here/hf_to_gguf.py" "$d" --out "$g" --gguf-py "$lcpp/gguf-py" > /dev/null
    echo "== $arch $q"
    if [[ $q == bf16 ]]; then
      for t in "${texts[@]}"; do
        a=$("$tern" tokenize --model "$d" --text "$t" --no-special-tokens | tr -d '[] ')
        b=$("$lcpp/build/bin/llama-tokenize" -m "$g" -p "$t" --ids --log-disable --no-bos --no-escape 2>/dev/null \
            | tr -d '[] ')
        if [[ $a == "$b" ]]; then echo "tokenizer ok: $a"; else echo "TOKENIZER DIFFERS: tern $a llama $b"; fail=1; fi
      done
    fi
    tern_ids=$("$tern" generate --model "$d" --prompt-ids "$prompt" --max-tokens "$n" --temperature 0 \
      --ignore-eos --threads 2 --logits-out "$work/tern.npy" 2>/dev/null | head -1 | tr -d '[] ')
    "$work/greedy_ids" "$g" "$prompt" "$n" 2 "$work/llama.f32" > "$work/llama.txt"
    llama_ids=$(sed -n 's/^ids: //p' "$work/llama.txt")
    echo "tern  $tern_ids"
    echo "llama $llama_ids"
    $py - "$work/tern.npy" "$work/llama.f32" "$tern_ids" "$llama_ids" <<'EOF' || fail=1
import sys, numpy as np
t = np.load(sys.argv[1]); l = np.fromfile(sys.argv[2], dtype=np.float32).reshape(t.shape)
ti, li = sys.argv[3].split(","), sys.argv[4].split(",")
first = next((i for i, (a, b) in enumerate(zip(ti, li)) if a != b), None)
upto = len(ti) if first is None else first + 1   # logits agree only while the histories do
d = np.abs(t[:upto] - l[:upto]).max(axis=1)
s = np.sort(t, axis=1); margin = s[:, -1] - s[:, -2]
print(f"first-token argmax: tern {t[0].argmax()} llama {l[0].argmax()}; "
      f"max |logit diff| over the common steps {d.max():.4g} (logit range {np.ptp(t[0]):.3g}); "
      f"smallest tern margin {margin[:upto].min():.4g}")
if first is None:
    print("greedy tokens: identical")
else:
    tie = margin[first] <= 2 * d[first]
    print(f"greedy tokens differ from step {first}: margin there {margin[first]:.4g}, logit diff "
          f"{d[first]:.4g} -> {'a near-tie' if tie else 'NOT a tie: investigate'}")
    sys.exit(0 if tie else 1)
EOF
  done
done
exit $fail
