#!/usr/bin/env bash
# The NaN guard end to end (issue 16 item 14): `tern serve` on a checkpoint
# whose final norm holds one NaN (so every logit is NaN) warns at load naming
# the tensor, answers a non-streaming request with a 500 that says the model
# produced non-finite values, ends a stream with an error event saying the
# same, counts both in /metrics, and reports 503 on /health (whose probe
# generates a token) while it keeps answering requests; with warm-up on, it
# refuses to start and says why; with --strict-weights it refuses to load.
# Usage: run_nan_guard.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/nan_guard
rm -rf "$work"; mkdir -p "$work"
"$tern" synth --arch qwen3 --preset tiny --dtype f32 --seed 3 --out "$work/model" 2>/dev/null
/usr/bin/python3 - "$work/model" <<'PY'
import json, struct, sys, os
p = os.path.join(sys.argv[1], "model.safetensors")
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]; header = json.loads(b[8:8 + n])
t = header["model.norm.weight"]; assert t["dtype"] == "F32"
struct.pack_into("<f", b, 8 + n + t["data_offsets"][0], float("nan"))
open(p, "wb").write(b)
PY
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fail() { echo "FAIL: $*"; echo "--- serve log"; cat "$work/serve.log"; exit 1; }

# Warm-up on: the server must not come up healthy on a model that computes NaN.
if timeout -k 10 120 "$tern" serve --model "$work/model" --port "$port" --threads 1 >"$work/warm.log" 2>&1; then
  fail "tern serve started on a model whose logits are NaN"
fi
grep -qF "non-finite logits" "$work/warm.log" || { cat "$work/warm.log"; echo "FAIL: the warm-up failure does not name non-finite logits"; exit 1; }
if "$tern" serve --model "$work/model" --port "$port" --strict-weights >"$work/strict.log" 2>&1; then
  fail "--strict-weights loaded NaN weights"
fi
grep -qF "weights hold NaN or Inf: 'model.norm.weight'" "$work/strict.log" || { cat "$work/strict.log"; exit 1; }

"$tern" serve --model "$work/model" --port "$port" --threads 1 --skip-server-warmup --enable-metrics 2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
# (/ping: /health itself generates a token, and so would fire the guard)
for _ in $(seq 1 100); do curl -sf --max-time 10 "http://127.0.0.1:$port/ping" >/dev/null && break; sleep 0.2; done
grep -qF "weights hold NaN or Inf (served anyway; --strict-weights refuses): 'model.norm.weight'" "$work/serve.log" ||
  fail "no load warning naming model.norm.weight"

body='{"model":"m","prompt":"hello","max_tokens":4,"temperature":0}'
code=$(curl -s --max-time 60 -o "$work/plain.json" -w '%{http_code}' -H 'Content-Type: application/json' -d "$body" \
  "http://127.0.0.1:$port/v1/completions")
[ "$code" = 500 ] || fail "non-streaming: status $code, body $(cat "$work/plain.json")"
grep -qF "The model produced non-finite logits (NaN or Inf)" "$work/plain.json" || fail "non-streaming body: $(cat "$work/plain.json")"

sbody='{"model":"m","prompt":"hello","max_tokens":4,"temperature":0,"stream":true}'
curl -sN --max-time 60 -H 'Content-Type: application/json' -d "$sbody" "http://127.0.0.1:$port/v1/completions" >"$work/stream.txt"
grep -F "non-finite logits" "$work/stream.txt" | grep -q '"error"' || fail "stream: no error event naming non-finite logits: $(cat "$work/stream.txt")"
if grep -q '"finish_reason": *"stop"\|"finish_reason":"length"' "$work/stream.txt"; then fail "stream reported a normal finish"; fi

curl -s --max-time 60 "http://127.0.0.1:$port/metrics" >"$work/metrics.txt"
grep -qE '^tern:nonfinite_logits_total(\{.*\})? 2$' "$work/metrics.txt" || fail "metrics: $(grep nonfinite "$work/metrics.txt")"
# /health generates a token: on this model it must report 503, and the probe is counted too.
code=$(curl -s --max-time 60 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")
[ "$code" = 503 ] || fail "/health answered $code on a model that computes NaN"
metric=$(curl -s --max-time 60 "http://127.0.0.1:$port/metrics" | grep -E '^tern:nonfinite_logits_total' || true)
# (at least 3: the probe's own request; a client's retried probe would add more)
[ "${metric##* }" -ge 3 ] 2>/dev/null || fail "the health probe was not counted: $metric"
# The server still serves: a tokenize request and a second generation are answered.
code=$(curl -s --max-time 60 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$body" \
  "http://127.0.0.1:$port/v1/completions")
[ "$code" = 500 ] || fail "second request: status $code"
kill -TERM $pid; wait $pid
echo "nan guard: ok"
