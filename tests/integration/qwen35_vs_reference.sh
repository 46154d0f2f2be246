#!/usr/bin/env bash
# Qwen3.5-MoE / Qwen3-Next checkpoints written by the independent NumPy writer
# (tests/reference/tiny_qwen35.py) against the float64 reference (tests/reference/qwen35_ref.py
# via compare.py): per-row normalised RMS error <= TOL, 32 greedy tokens, and the same logits and
# tokens whether the 150-token prompt is prefilled whole or in chunks of 1, 7 and 64 tokens; and
# the MTP head (mtp.*, every case has one) against the reference's, per-row normalised RMS error
# <= TOL over the 32 steps, in every one of those runs (compare.py --mtp).
# Usage: qwen35_vs_reference.sh TERN WORKDIR CASE [TOL]
#   CASE: wrapper     VLM wrapper (model_type qwen3_5_moe, text_config, model.language_model.*,
#                     mtp.* and model.visual.* present), per-expert MoE tensors
#         text        text-only qwen3_5_moe_text (model.layers.*), sharded in 3 files
#         fused       VLM wrapper with fused 3-D experts (mlp.experts.gate_up_proj / down_proj)
#         next        qwen3_next (fused in_proj_qkvz / in_proj_ba, layer_types from full_attention_interval)
#         next-fused  qwen3_next with fused 3-D experts, 8 layers
#         nvfp4, fp8  the wrapper (fused BF16 experts) quantized by tests/reference/quantize_np.py in
#                     ModelOpt's layout (per-expert; in_proj_a/b, conv1d, routers, shared_expert_gate,
#                     lm_head, mtp.*, model.visual.* left unquantized); default numerics (W4A16 /
#                     exact weight dequantization on both sides); nvfp4 also under --quant-numerics
#                     w4a8 (8-bit activations, the reference quantizing them the same way)
set -euo pipefail
tern=$1 work=$2/qwen35 case=$3 tol=${4:-1e-3}
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
mkdir -p "$work"
tok="$work/tokenizer"
[ -f "$tok/tokenizer.json" ] || "$tern" synth --arch qwen3 --preset tiny --out "$tok" >/dev/null
case "$case" in
  wrapper)    args=() ;;
  text)       args=(--text-only --shards 3) ;;
  fused)      args=(--fused-experts) ;;
  next)       args=(--arch qwen3_next) ;;
  next-fused) args=(--arch qwen3_next --fused-experts --set num_hidden_layers=8) ;;
  nvfp4|fp8)  args=(--fused-experts) ;;
  *) echo "unknown case $case" >&2; exit 2 ;;
esac
model="$work/$case"
rm -rf "$model"
"$py" "$here/reference/tiny_qwen35.py" --out "$model" --seed 5 --tokenizer "$tok" "${args[@]}" >/dev/null
if [ "$case" = nvfp4 ] || [ "$case" = fp8 ]; then
  rm -rf "$model-q"
  "$py" "$here/reference/quantize_np.py" --model "$model" --out "$model-q" --format "$case"
  model="$model-q"
fi
prompt=$(seq 0 149 | awk '{printf "%s%d", (NR > 1 ? "," : ""), ($1 * 37 + 11) % 500}')
"$py" "$here/reference/compare.py" --tern "$tern" --model "$model" --prompt-ids "$prompt" \
  --steps 32 --tol "$tol" --tern-arg=--ignore-eos --mtp \
  --prefill-chunks 4096,1,7,64 --chunk-tern-arg=--kv-cache-dtype=f32
if [ "$case" = nvfp4 ]; then
  # --quant-numerics w4a8: the reference fake-quantizes every NVFP4 Linear's input to 8 bits the same
  # way (quant_np.fake_quant_int8_activation); an F32 KV cache, since F16's roundings would flip 8-bit
  # steps that say nothing about the kernels (prefill in one chunk, decode 16 steps: both W4A8 paths).
  "$py" "$here/reference/compare.py" --tern "$tern" --model "$model" --prompt-ids "$prompt" \
    --steps 16 --tol "$tol" --tern-arg=--ignore-eos --tern-arg=--kv-cache-dtype=f32 --quant-numerics w4a8
fi
