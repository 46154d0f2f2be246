#!/usr/bin/env bash
# Every user error ends with a message on stderr and a non-zero exit code, never a crash.
# Usage: cli_errors.sh TERN WORKDIR
set -uo pipefail
tern=$1 work=$2/cli
rm -rf "$work"; mkdir -p "$work"
"$tern" synth --arch qwen3 --preset tiny --dtype f32 --out "$work/ok" 2>/dev/null || { echo "synth failed"; exit 1; }
pass=0 fail=0
# expect_error FRAGMENT CMD...: the command must exit non-zero (not by a signal) and print FRAGMENT on stderr.
expect_error() {
  local fragment=$1; shift
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -qF -- "$fragment" <<<"$err"; then
    pass=$((pass + 1))
  else
    echo "FAIL: $* -> rc=$rc, stderr: $err (expected: $fragment)"; fail=$((fail + 1))
  fi
}
cp -r "$work/ok" "$work/noconfig"; rm "$work/noconfig/config.json"
cp -r "$work/ok" "$work/arch"; sed -i 's/"model_type": "qwen3"/"model_type": "llama4"/' "$work/arch/config.json"
cp -r "$work/ok" "$work/shape"; sed -i 's/"intermediate_size": 128/"intermediate_size": 96/' "$work/shape/config.json"
cp -r "$work/ok" "$work/trunc"; truncate -s 5000 "$work/trunc/model.safetensors"
cp -r "$work/ok" "$work/ctx"; sed -i 's/"max_position_embeddings": 40960/"max_position_embeddings": 8/' "$work/ctx/config.json"
cp -r "$work/ok" "$work/extra"; /usr/bin/python3 - "$work/extra" <<'PY'
import json, struct, sys, os
d = sys.argv[1]
with open(os.path.join(d, "model.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]; header = json.loads(f.read(n)); data = f.read()
end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
header["model.layers.0.mlp.extra.weight"] = {"dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}
h = json.dumps(header).encode(); h += b" " * ((8 - len(h) % 8) % 8)
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + data + b"\0\0\0\0")
PY
# Hostile model folders (issue 16): each a load error naming what is wrong, never a crash or a hang.
here=$(cd "$(dirname "$0")" && pwd)
edit_config() {  # edit_config DIR PYTHON-STATEMENT-ON-c
  /usr/bin/python3 -c "import json,sys; p=sys.argv[1]+'/config.json'; c=json.load(open(p)); $2; json.dump(c, open(p,'w'))" "$1"
}
cp -r "$work/ok" "$work/rope4"; edit_config "$work/rope4" 'c["partial_rotary_factor"]=4.0'
cp -r "$work/ok" "$work/ropeneg"; edit_config "$work/ropeneg" 'c["partial_rotary_factor"]=-1.0'
cp -r "$work/ok" "$work/eos"; edit_config "$work/eos" 'c["eos_token_id"]=2**32+5'
cp -r "$work/ok" "$work/fifo"; rm "$work/fifo/config.json"; mkfifo "$work/fifo/config.json"
cp -r "$work/ok" "$work/fifoweights"; rm "$work/fifoweights/model.safetensors"; mkfifo "$work/fifoweights/model.safetensors"
cp -r "$work/ok" "$work/bigtok"; cp "$here/../../models/demo/tokenizer.json" "$work/bigtok/tokenizer.json"
cp -r "$work/ok" "$work/nan"; /usr/bin/python3 - "$work/nan" <<'PY'
import json, struct, sys, os
p = os.path.join(sys.argv[1], "model.safetensors")
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]; header = json.loads(b[8:8 + n])
t = header["model.layers.1.mlp.down_proj.weight"]; assert t["dtype"] == "F32"
struct.pack_into("<f", b, 8 + n + t["data_offsets"][0] + 4 * 5, float("nan"))
open(p, "wb").write(b)
PY
expect_error "partial_rotary_factor must be in (0, 1], got 4" "$tern" generate --model "$work/rope4" --prompt-ids 1,2
expect_error "partial_rotary_factor must be in (0, 1], got -1" "$tern" generate --model "$work/ropeneg" --prompt-ids 1,2
expect_error '"eos_token_id" value 4294967301 is not a token id' "$tern" generate --model "$work/eos" --prompt-ids 1,2
# (timeout: the FIFO once blocked the open forever)
expect_error "config.json is a FIFO, not a regular file" timeout 60 "$tern" generate --model "$work/fifo" --prompt-ids 1,2
expect_error "model.safetensors is a FIFO, not a regular file" timeout 60 "$tern" generate --model "$work/fifoweights" --prompt-ids 1,2
expect_error "tokenizer.json has token id 2047" "$tern" generate --model "$work/bigtok" --prompt hi
expect_error "weights hold NaN or Inf: 'model.layers.1.mlp.down_proj.weight': 1 non-finite value (first at element 5)" \
  "$tern" serve --model "$work/nan" --strict-weights --port 1
# Without --strict-weights the load warns, naming the tensor, and goes on.
nan_err=$("$tern" generate --model "$work/nan" --prompt-ids 1,2 --max-tokens 1 2>&1 >/dev/null)
if grep -qF "warning: $work/nan: weights hold NaN or Inf" <<<"$nan_err"; then
  pass=$((pass + 1))
else
  echo "FAIL: no NaN warning loading $work/nan"; fail=$((fail + 1))
fi
# Threads the OS refuses (an address-space limit far below 512 thread stacks): a message and exit 1, not an abort.
expect_error "cannot start 511 worker threads" bash -c 'ulimit -v 1000000; exec "$0" generate --model "$1" --prompt-ids 1,2 --threads 512' "$tern" "$work/ok"
# Startup flags that once did the wrong thing without a word (issue 16 items 7 and 13).
expect_error "--context-length 4611686018427387904 is larger than the largest supported" \
  "$tern" serve --model "$work/ok" --context-length 4611686018427387904 --port 1
# Past the model's max_position_embeddings (40960) only where asked, as SGLang: the reply would be unreliable there.
expect_error "--context-length 50000 is longer than the model's max_position_embeddings (40960); set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" \
  "$tern" serve --model "$work/ok" --context-length 50000 --port 1
expect_error "needs more than 2^63 bytes of KV cache" "$tern" serve --model "$work/ok" --max-total-tokens 4611686018427387904 --port 1
expect_error "--api-key is empty" "$tern" serve --model "$work/ok" --api-key "" --port 1
expect_error "--chat-template /nonexistent/t.jinja: no such file" "$tern" serve --model "$work/ok" --chat-template /nonexistent/t.jinja --port 1
# generation_config.json with temperature -1: a warning naming the field, and requests still answered.
cp -r "$work/ok" "$work/gencfg"
/usr/bin/python3 -c "import json,sys; p=sys.argv[1]+'/generation_config.json'; json.dump({'temperature': -1, 'top_p': 0.5}, open(p,'w'))" "$work/gencfg"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$tern" serve --model "$work/gencfg" --port "$port" --skip-server-warmup --threads 1 --log-level warning 2>"$work/gencfg.log" &
gpid=$!
# tern wait (issue 21 item 3): exit 0 once /health is 200 and a token was generated.
if "$tern" wait --url "http://127.0.0.1:$port" --timeout 60 2>"$work/wait.log"; then
  pass=$((pass + 1))
else
  echo "FAIL: tern wait on a healthy server: $(cat "$work/wait.log")"; fail=$((fail + 1))
fi
code=$(curl -s --max-time 60 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"model":"m","prompt":"hello","max_tokens":2}' "http://127.0.0.1:$port/v1/completions")
kill -TERM $gpid; wait $gpid
# (--log-level warning: the warning is there, the info lines are not)
if [ "$code" = 200 ] && grep -q "generation_config.json: ignoring temperature" "$work/gencfg.log" &&
   ! grep -q "tern serve: loading\|tern serve: listening" "$work/gencfg.log"; then
  pass=$((pass + 1))
else
  echo "FAIL: generation_config temperature -1: status $code, log: $(cat "$work/gencfg.log")"; fail=$((fail + 1))
fi
expect_error "not ready within 2 s" "$tern" wait --url http://127.0.0.1:1 --timeout 2
expect_error "--log-level loud: expected debug, info, warning or error" "$tern" serve --model "$work/ok" --log-level loud --port 1
expect_error "does not exist" "$tern" generate --model "$work/missing" --prompt hi
expect_error "config.json" "$tern" generate --model "$work/noconfig" --prompt-ids 1,2
expect_error "unknown architecture model_type \"llama4\"" "$tern" generate --model "$work/arch" --prompt-ids 1,2
expect_error "expected [96, 64]" "$tern" generate --model "$work/shape" --prompt-ids 1,2
expect_error "model.safetensors" "$tern" generate --model "$work/trunc" --prompt-ids 1,2
expect_error "unexpected tensor 'model.layers.0.mlp.extra.weight'" "$tern" generate --model "$work/extra" --prompt-ids 1,2
expect_error "Token id 999999 at index 1 of the input is outside the vocabulary" "$tern" generate --model "$work/ok" --prompt-ids 1,999999
expect_error "invalid token id list" "$tern" generate --model "$work/ok" --prompt-ids 1,x
expect_error "context length is 8" "$tern" generate --model "$work/ctx" --prompt-ids 1,2,3,4,5,6,7,8,9
expect_error "UTF-8" "$tern" tokenize --model "$work/ok" --text $'ab\xff'
expect_error "has no token" "$tern" detokenize --model "$work/ok" --ids 1,99999999
expect_error "--prompt" "$tern" generate --model "$work/ok"
expect_error "unknown --dtype" "$tern" synth --arch qwen3 --preset tiny --dtype q4 --out "$work/x"
expect_error "no preset" "$tern" synth --arch qwen3 --preset huge --out "$work/x"
expect_error "goes with the ModelOpt formats" "$tern" quantize --model "$work/ok" --out "$work/q" --format fp8-block \
  --quantize-lm-head
expect_error "unknown --format" "$tern" quantize --model "$work/ok" --out "$work/q" --format int4
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
