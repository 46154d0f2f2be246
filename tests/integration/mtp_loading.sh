#!/usr/bin/env bash
# Loading the MTP head (mtp.*) of Qwen3.5 / Qwen3-Next checkpoints, written by the independent
# NumPy writer (tests/reference/tiny_qwen35.py) or by tern synth, edited for each case:
#   - a loaded head's tensors are checked like every other (shape, presence, no unknown extras);
#   - mtp_num_hidden_layers 0 leaves mtp.* unread (as transformers ignores it);
#   - no mtp_num_hidden_layers / num_nextn_predict_layers in the config (Qwen3-Next's config.json):
#     one layer when mtp.fc.weight is present (vLLM's default);
#   - an NVFP4 checkpoint whose exclude_modules does not list mtp.* (mtp.fc stays BF16) loads;
#   - Qwen3-Next's mlp_only_layers rule applies to MTP layer index 0 (dense MLP, against the reference);
#   - --mtp-logits-out on a model without a head is refused.
# Usage: mtp_loading.sh TERN WORKDIR
set -uo pipefail
tern=$1 work=$2/mtp-loading
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
rm -rf "$work"; mkdir -p "$work"
tok="$work/tokenizer"
"$tern" synth --arch qwen3 --preset tiny --out "$tok" >/dev/null 2>&1 || { echo "synth failed"; exit 1; }
mk() {  # mk NAME [tiny_qwen35.py args]
  "$py" "$here/reference/tiny_qwen35.py" --out "$work/$1" --seed 3 --tokenizer "$tok" "${@:2}" >/dev/null ||
    { echo "tiny_qwen35.py failed for $1"; exit 1; }
}
edit_tensors() {  # edit_tensors DIR PYTHON: runs PYTHON with `h` (the header dict) and `end` (the data
                 # size) bound, then rewrites the file (zero bytes for added tensors)
  "$py" - "$1" "$2" <<'PY'
import json, struct, sys, os
d, code = sys.argv[1], sys.argv[2]
path = os.path.join(d, "model.safetensors")
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]; h = json.loads(f.read(n)); data = f.read()
end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
exec(code)
new_end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
data += b"\0" * max(0, new_end - len(data))  # room for added tensors
b = json.dumps(h).encode(); b += b" " * ((8 - len(b) % 8) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(b)) + b + data)
PY
}
edit_config() {  # edit_config DIR PYTHON: runs PYTHON with `t` (the text config dict) bound
  "$py" - "$1" "$2" <<'PY'
import json, sys, os
p = os.path.join(sys.argv[1], "config.json")
c = json.load(open(p)); t = c.get("text_config", c)
exec(sys.argv[2])
json.dump(c, open(p, "w"), indent=2)
PY
}
pass=0 fail=0
expect_error() {  # expect_error FRAGMENT CMD...: non-zero exit (not a signal) with FRAGMENT on stderr
  local fragment=$1; shift
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -qF -- "$fragment" <<<"$err"; then pass=$((pass + 1))
  else echo "FAIL: $* -> rc=$rc, stderr: $err (expected: $fragment)"; fail=$((fail + 1)); fi
}
expect_ok() {  # expect_ok CMD...
  local err
  if err=$("$@" 2>&1 >/dev/null); then pass=$((pass + 1)); else echo "FAIL: $* -> $err"; fail=$((fail + 1)); fi
}
gen() { "$tern" generate --model "$1" --prompt-ids 5,9,1,33 --max-tokens 3 --temperature 0 --ignore-eos "${@:2}"; }

mk ok
cp -r "$work/ok" "$work/fc-shape"
edit_tensors "$work/fc-shape" 'h["mtp.fc.weight"]["shape"] = [128, 64]'
expect_error "mtp.fc.weight' has shape [128, 64], expected [64, 128]" gen "$work/fc-shape"
cp -r "$work/ok" "$work/layer-shape"
edit_tensors "$work/layer-shape" 'h["mtp.layers.0.self_attn.k_norm.weight"]["shape"] = [2, 32]'
expect_error "mtp.layers.0.self_attn.k_norm.weight' has shape [2, 32], expected [64]" gen "$work/layer-shape"
cp -r "$work/ok" "$work/extra"
edit_tensors "$work/extra" 'h["mtp.layers.0.mlp.extra.weight"] = {"dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}'
expect_error "unexpected tensor 'mtp.layers.0.mlp.extra.weight'" gen "$work/extra"
mk missing --no-extras --set mtp_num_hidden_layers=1
expect_error "missing" gen "$work/missing"
cp -r "$work/ok" "$work/two"; edit_config "$work/two" 't["mtp_num_hidden_layers"] = 2'
expect_error "mtp.layers.1." gen "$work/two"
cp -r "$work/ok" "$work/dedicated"; edit_config "$work/dedicated" 't["mtp_use_dedicated_embeddings"] = True'
# Dedicated MTP embeddings (no tensor names defined anywhere): the model loads without its head.
expect_ok gen "$work/dedicated"
expect_error "has no MTP head" gen "$work/dedicated" --mtp-logits-out "$work/m.npy"
# 0 layers: mtp.* (even a malformed one) is ignored, and there is no head to run.
cp -r "$work/fc-shape" "$work/zero"; edit_config "$work/zero" 't["mtp_num_hidden_layers"] = 0'
expect_ok gen "$work/zero"
expect_error "has no MTP head" gen "$work/zero" --mtp-logits-out "$work/m.npy"
# No field (Qwen3-Next's config.json): the head is there when mtp.fc.weight is.
mk next --arch qwen3_next
edit_config "$work/next" 'del t["mtp_num_hidden_layers"]'
expect_ok gen "$work/next" --mtp-logits-out "$work/m.npy"
mk next-none --arch qwen3_next --no-extras
edit_config "$work/next-none" 'del t["mtp_num_hidden_layers"]'
expect_error "has no MTP head" gen "$work/next-none" --mtp-logits-out "$work/m.npy"
# Qwen3-Next's MLP rule at MTP index 0 (vLLM: layer_idx 0): mlp_only_layers [0] gives a dense MLP.
mk next-dense --arch qwen3_next --set 'mlp_only_layers=[0]'
expect_ok "$py" "$here/reference/compare.py" --tern "$tern" --model "$work/next-dense" --prompt-ids 5,9,1,33,70,2,18 \
  --steps 8 --tern-arg=--ignore-eos --mtp
# NVFP4 whose exclude list does not cover mtp.* (vLLM PR #38650): the BF16 head still loads.
"$tern" synth --arch qwen3_5_moe --preset qwen3.5-tiny --quant nvfp4 --seed 3 --out "$work/nvfp4" >/dev/null 2>&1 ||
  { echo "synth --quant nvfp4 failed"; exit 1; }
"$py" - "$work/nvfp4" <<'PY'
import json, sys, os
p = os.path.join(sys.argv[1], "hf_quant_config.json")
c = json.load(open(p)); q = c["quantization"]
q["exclude_modules"] = [m for m in q["exclude_modules"] if not m.startswith("mtp")]
json.dump(c, open(p, "w"), indent=2)
p = os.path.join(sys.argv[1], "config.json")
c = json.load(open(p)); qc = c.get("quantization_config") or c["text_config"].get("quantization_config")
for key in ("ignore", "exclude_modules", "ignored_layers"):
    if key in qc: qc[key] = [m for m in qc[key] if not m.startswith("mtp")]
json.dump(c, open(p, "w"), indent=2)
PY
grep -q '"mtp' "$work/nvfp4/hf_quant_config.json" && { echo "FAIL: mtp still excluded"; fail=$((fail + 1)); }
expect_ok gen "$work/nvfp4" --mtp-logits-out "$work/m.npy"
# --mtp-logits-all-rows: the head's rows from position 0 (4 prompt tokens, 3 generated: 3 + 3 rows),
# the last 3 of them the rows written without it; the prompt's rows equal the head run on the
# 4 prompt tokens alone (their hidden states do not depend on what follows).
expect_ok gen "$work/nvfp4" --mtp-logits-out "$work/all.npy" --mtp-logits-all-rows
expect_ok "$tern" generate --model "$work/nvfp4" --prompt-ids 5,9,1,33,70 --max-tokens 1 --temperature 0 \
  --ignore-eos --mtp-logits-out "$work/prompt5.npy" --mtp-logits-all-rows
expect_ok "$py" - "$work/m.npy" "$work/all.npy" "$work/prompt5.npy" <<'PY'
import sys
import numpy as np
last, full, p5 = (np.load(p) for p in sys.argv[1:4])
assert last.shape[0] == 3 and full.shape == (6, last.shape[1]), (last.shape, full.shape)
assert np.array_equal(full[3:], last), "the generated rows differ with --mtp-logits-all-rows"
# prompt5 = 5,9,1,33,70: its rows 0..2 read positions 0..2 with tokens 9,1,33, as in the first run.
assert np.allclose(p5[:3], full[:3], rtol=1e-3, atol=1e-3), np.abs(p5[:3] - full[:3]).max()
PY
expect_error "needs --mtp-logits-out" gen "$work/nvfp4" --mtp-logits-all-rows
"$tern" synth --arch qwen3 --preset tiny --out "$work/qwen3" >/dev/null 2>&1
expect_error "has no MTP head" gen "$work/qwen3" --mtp-logits-out "$work/m.npy"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
