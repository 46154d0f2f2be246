#!/usr/bin/env bash
# NVFP4 / FP8 checkpoints against the independent NumPy reference (tests/reference).
#
# Usage: quant_vs_reference.sh TERN WORKDIR ARCH FORMAT     ARCH qwen3|qwen3_moe, FORMAT nvfp4|fp8|fp8-block
#        quant_vs_reference.sh TERN WORKDIR fused           fused-expert BF16 qwen3_moe from tiny_checkpoint.py
#
# For ARCH/FORMAT, each step is reported and the script goes on after a failure:
#  (a) tern synth --quant FORMAT, then compare.py: logits nrmse <= 1e-3 per row and 32 greedy tokens
#      (default numerics: exact weight dequantization, activations at f32 precision); for nvfp4 also
#      --quant-numerics w4a4 against the reference's Blackwell fake-quant (w4a4_check.py: one
#      activation landing on the other side of an E2M1 rounding boundary moves a logit by a
#      quantization step, so float32 vs float64 activations cannot agree to 1e-3; tern must be
#      within half the W4A4 effect of the reference's W4A4 logits, and pick the same token); and
#      --quant-numerics w4a8 the same way against the reference's 8-bit fake-quant.
#  (b) tern synth BF16 -> tests/reference/quantize_np.py --format FORMAT (the independent
#      ModelOpt-layout producer) -> compare.py as in (a): tern loads what another producer wrote.
#  (c) nvfp4 and fp8 only (`tern quantize` has no block format): tern quantize and quantize_np.py
#      on the same BF16 model with the same --calibration-ids, then compare_checkpoints.py:
#      EXACT (bytes): quantized weights, weight_scale (NVFP4 E4M3 block scales / FP8 F32 scale),
#      weight_scale_2, every unquantized tensor, tensor names/dtypes/shapes, quant_algo,
#      group_size and the set of excluded modules; WITHIN 1e-3 relative: input_scale (the
#      calibration activations are f32 in tern and f64 in the reference). Then compare.py on
#      tern's own quantized output.
# The last line reads "N passed, M failed"; the exit status is 1 when any step failed.
set -uo pipefail
tern=$1 work=$2 arch=$3 fmt=${4:-}
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
ref=$here/reference
prompt=3,17,99,250,5,42,7,300,12,64,128,200,31,8,9,150,77
calib=11,250,3,77,400,19,5,128,301,42,9,260,199,64,7,480,23,350,101,2,505,300,17,88
pass=0 fail=0
step() {  # step NAME CMD...: runs CMD, counts and labels the result
  local name=$1; shift
  echo "=== $name"
  if "$@"; then pass=$((pass + 1)); echo "--- ok: $name"; else fail=$((fail + 1)); echo "--- FAILED: $name"; fi
}
compare() {  # compare MODEL [extra compare.py args]
  $py "$ref/compare.py" --tern "$tern" --model "$1" --prompt-ids "$prompt" --steps 32 --tern-arg=--ignore-eos "${@:2}"
}

if [ "$arch" = fused ]; then
  d=$work/quant/fused-experts-bf16
  rm -rf "$d" && mkdir -p "$work/quant"
  step "fused 3-D experts (gate_up_proj/down_proj) written by tiny_checkpoint.py" \
    $py "$ref/tiny_checkpoint.py" --out "$d" --arch qwen3_moe --dtype BF16 --fused-experts --seed 3
  step "tern loads fused experts and matches the reference" \
    $py "$ref/compare.py" --tern "$tern" --model "$d" --prompt-ids 5,9,1,33,70,2,18 --steps 32 --tern-arg=--ignore-eos
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]; exit
fi

base=$work/quant/$arch-$fmt
rm -rf "$base" && mkdir -p "$base"

# (a)
step "(a) tern synth --quant $fmt" \
  "$tern" synth --arch "$arch" --preset tiny --dtype bf16 --quant "$fmt" --seed 7 --out "$base/synth"
step "(a) tern vs reference on tern's synthetic $fmt checkpoint" compare "$base/synth" --tol 1e-3
if [ "$fmt" = nvfp4 ]; then
  step "(a) W4A4 numerics" $py "$here/integration/w4a4_check.py" --tern "$tern" --model "$base/synth" --prompt-ids "$prompt"
  step "(a) W4A8 numerics" $py "$here/integration/w4a4_check.py" --tern "$tern" --model "$base/synth" \
    --prompt-ids "$prompt" --numerics w4a8
fi

# (b)
step "(b) tern synth bf16" "$tern" synth --arch "$arch" --preset tiny --dtype bf16 --seed 7 --out "$base/bf16"
step "(b) quantize_np.py --format $fmt" \
  $py "$ref/quantize_np.py" --model "$base/bf16" --out "$base/np" --format "$fmt" --calibration-ids "$calib"
step "(b) tern vs reference on quantize_np.py's $fmt checkpoint" compare "$base/np" --tol 1e-3

# (c)
if [ "$fmt" != fp8-block ]; then
  step "(c) tern quantize --format $fmt" \
    "$tern" quantize --model "$base/bf16" --out "$base/tern-q" --format "$fmt" --calibration-ids "$calib"
  step "(c) tern quantize == quantize_np.py (exact weights and scales, input_scale rtol 1e-3)" \
    $py "$ref/compare_checkpoints.py" --a "$base/tern-q" --b "$base/np" --input-scale-rtol 1e-3
  step "(c) tern vs reference on tern quantize's output" compare "$base/tern-q" --tol 1e-3
fi
# (d) the output layer: a model whose head is tied to the embedding (qwen3 tiny-tied), quantized
# by both producers without and with --quantize-lm-head. Without: lm_head stays tied and is
# listed among the excluded modules (as ModelOpt's export lists it). With: its own quantized
# lm_head.weight made from the embedding, config untied. Exact as in (c), then tern against the
# reference on tern's output.
if [ "$arch" = qwen3 ] && [ "$fmt" != fp8-block ]; then
  step "(d) tern synth bf16, tied head" \
    "$tern" synth --arch qwen3 --preset tiny-tied --dtype bf16 --seed 7 --out "$base/tied"
  for head in kept quantized; do
    flag=; [ $head = quantized ] && flag=--quantize-lm-head
    step "(d) tern quantize $flag (tied head $head)" \
      "$tern" quantize --model "$base/tied" --out "$base/tied-$head" --format "$fmt" --calibration-ids "$calib" $flag
    step "(d) quantize_np.py $flag (tied head $head)" \
      $py "$ref/quantize_np.py" --model "$base/tied" --out "$base/tied-$head-np" --format "$fmt" \
      --calibration-ids "$calib" $flag
    step "(d) tern quantize == quantize_np.py (tied head $head)" \
      $py "$ref/compare_checkpoints.py" --a "$base/tied-$head" --b "$base/tied-$head-np" --input-scale-rtol 1e-3
    step "(d) tern vs reference (tied head $head)" compare "$base/tied-$head" --tol 1e-3
  done
  step "(d) the head's storage, config and exclude list, both ways" \
    $py "$here/integration/check_head_quant.py" --kept "$base/tied-kept" --quantized "$base/tied-quantized" \
    --format "$fmt"
  # (e) the same for Qwen3.5's layout (model.language_model.* under a composite config whose
  # text_config is untied too), NVFP4, with the MTP head (which shares lm_head) compared as well.
  if [ "$fmt" = nvfp4 ]; then
    step "(e) tern synth qwen3.5-tiny-tied bf16" \
      "$tern" synth --arch qwen3_5_moe --preset qwen3.5-tiny-tied --dtype bf16 --seed 7 --out "$base/q35-tied"
    for head in kept quantized; do
      flag=; [ $head = quantized ] && flag=--quantize-lm-head
      step "(e) tern quantize $flag (Qwen3.5, tied head $head)" \
        "$tern" quantize --model "$base/q35-tied" --out "$base/q35-$head" --format nvfp4 --calibration-ids "$calib" $flag
      step "(e) quantize_np.py $flag (Qwen3.5, tied head $head)" \
        $py "$ref/quantize_np.py" --model "$base/q35-tied" --out "$base/q35-$head-np" --format nvfp4 \
        --calibration-ids "$calib" $flag
      step "(e) tern quantize == quantize_np.py (Qwen3.5, tied head $head)" \
        $py "$ref/compare_checkpoints.py" --a "$base/q35-$head" --b "$base/q35-$head-np" --input-scale-rtol 1e-3
      step "(e) tern vs reference with the MTP head (Qwen3.5, tied head $head)" compare "$base/q35-$head" --tol 1e-3 --mtp
    done
    step "(e) the head's storage, configs and exclude list (Qwen3.5)" \
      $py "$here/integration/check_head_quant.py" --kept "$base/q35-kept" --quantized "$base/q35-quantized" --format nvfp4
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
