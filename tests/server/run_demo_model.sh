#!/usr/bin/env bash
# The bundled demo model (models/demo) end to end, as a user meets it:
#   1. tern's greedy ids on the fixed prompt set equal PyTorch's on the same NVFP4 weights
#      (goldens_nvfp4.json, written by tools/demo_model/export.py --nvfp4-goldens);
#   2. `tern generate --chat --prompt "What is 17*19?"` without --model answers 323 after its
#      reasoning;
#   3. `tern check` against `tern serve` without --model: the whole smoke suite and every check of
#      the full one but long_context (a 1,496-token prompt; the model never saw more than 448
#      tokens, see models/demo/README.md);
#   4. two-digit multiplication accuracy in tern on a fixed sample of 200 products per mode,
#      against floors of 95%, issue 8's bar for the NVFP4 model with thinking (these weights: 100%
#      with thinking and 99.5% without on the sample; 99.85% and 99.78% on all 8,100): a kernel or
#      template bug costs far more than that margin, which leaves room for near-ties flipping
#      under benign numerics changes.
# Usage: run_demo_model.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/demo_model
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=$root/models/demo
rm -rf "$work"; mkdir -p "$work"

/usr/bin/python3 "$root/tools/demo_model/compare_tern.py" --model "$model" --goldens "$model/goldens_nvfp4.json" \
  --tern "$tern" | tail -1 | tee "$work/compare.txt"
grep -q " 0 mismatch" "$work/compare.txt"

out=$("$tern" generate --chat --prompt "What is 17*19?" --max-tokens 64 2>/dev/null)
answer=${out##*</think>}
if ! grep -qx "323" <<<"$(echo "$answer" | tr -d '[:space:]')"; then
  echo "FAIL: tern generate --chat answered '$answer' (full output: $out)"; exit 1
fi
echo "generate: 17*19 -> 323 after the reasoning"

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$tern" serve --port "$port" --threads 2 --reasoning-parser qwen3 --tool-call-parser qwen25 2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
"$tern" check --url "http://127.0.0.1:$port" --wait 120 \
  --suite model_info,simple_completion,arithmetic_no_thinking,arithmetic_thinking,determinism,stream_consistency,multi_turn_recall,tool_calling,concurrency,error_handling,latency,special_tokens,openai_error_body,stop_trimmed,degenerate_output

/usr/bin/python3 "$root/tools/demo_model/eval_tern.py" --model "$model" --url "http://127.0.0.1:$port" --sample 200 \
  --json "$work/eval.json" | tail -2
/usr/bin/python3 - "$work/eval.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
floors = {"thinking_on": 0.95, "thinking_off": 0.95}
bad = [f"{k}: {r[k]['accuracy']:.3f} < {v}" for k, v in floors.items() if r[k]["accuracy"] < v]
if bad:
    sys.exit("FAIL: " + "; ".join(bad))
print("accuracy floors: ok")
PY
kill -TERM $pid; wait $pid

# A bare `tern serve` (no parser flags, issue 21 item 1): the parsers come from the chat template,
# the startup line says which, and the smoke suite and tool calling pass as they do with the flags.
"$tern" serve --port "$port" --threads 2 2>"$work/bare.log" &
pid=$!
"$tern" check --url "http://127.0.0.1:$port" --wait 120 \
  --suite model_info,simple_completion,arithmetic_no_thinking,arithmetic_thinking,tool_calling
grep -qF "reasoning-parser qwen3 (the chat template writes <think>); tool-call-parser qwen25" "$work/bare.log" ||
  { echo "FAIL: no startup line naming the detected parsers"; cat "$work/bare.log"; exit 1; }
kill -TERM $pid; wait $pid
# --reasoning-parser none turns it off: the reasoning stays in content.
"$tern" serve --port "$port" --threads 2 --reasoning-parser none --tool-call-parser none 2>"$work/none.log" &
pid=$!
for _ in $(seq 1 100); do curl -sf --max-time 5 "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
reply=$(curl -s --max-time 60 -H 'Content-Type: application/json' \
  -d '{"model":"m","messages":[{"role":"user","content":"What is 17*19?"}],"temperature":0}' \
  "http://127.0.0.1:$port/v1/chat/completions")
kill -TERM $pid; wait $pid
/usr/bin/python3 - "$reply" <<'PY'
import json, sys
m = json.loads(sys.argv[1])["choices"][0]["message"]
if "</think>" not in (m.get("content") or "") or m.get("reasoning_content"):
    sys.exit(f"FAIL: with --reasoning-parser none the reasoning should stay in content: {m}")
print("--reasoning-parser none: reasoning left in content: ok")
PY

# Speculative decoding (NGRAM): the same checks pass, the accuracy floors hold, and drafts were
# verified and kept (the arithmetic replies repeat the operands, which prompt lookup finds).
"$tern" serve --port "$port" --threads 2 --enable-metrics --speculative-algorithm NGRAM 2>"$work/spec.log" &
pid=$!
"$tern" check --url "http://127.0.0.1:$port" --wait 120 \
  --suite model_info,simple_completion,arithmetic_no_thinking,arithmetic_thinking,determinism,stream_consistency,multi_turn_recall,tool_calling,stop_trimmed
/usr/bin/python3 "$root/tools/demo_model/eval_tern.py" --model "$model" --url "http://127.0.0.1:$port" --sample 100 \
  --json "$work/eval_spec.json" | tail -2
info=$(curl -s --max-time 10 "http://127.0.0.1:$port/get_server_info")
metrics=$(curl -s --max-time 10 "http://127.0.0.1:$port/metrics")
kill -TERM $pid; wait $pid
/usr/bin/python3 - "$work/eval_spec.json" "$info" "$metrics" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
bad = [f"{k}: {r[k]['accuracy']:.3f} < 0.95" for k in ("thinking_on", "thinking_off") if r[k]["accuracy"] < 0.95]
if bad:
    sys.exit("FAIL (speculative): " + "; ".join(bad))
info = json.loads(sys.argv[2])
if info.get("speculative_algorithm") != "NGRAM":
    sys.exit(f"FAIL: get_server_info speculative_algorithm {info.get('speculative_algorithm')!r}")
m = re.search(r"^sglang:spec_accept_length\{[^}]*\} (\S+)$", sys.argv[3], re.M)
kept = re.search(r"^tern:spec_accepted_tokens_total\{[^}]*\} (\S+)$", sys.argv[3], re.M)
if not m or not kept or float(m.group(1)) <= 1.0 or float(kept.group(1)) <= 0:
    sys.exit(f"FAIL: no drafts kept: accept length {m and m.group(1)}, kept {kept and kept.group(1)}")
print(f"speculative NGRAM: accuracy floors ok, {float(m.group(1)):.2f} tokens per verify forward")
PY

# --json-whitespace: a bounded schema's reply (which must stop) is exactly the JSON text Python
# writes for the parsed value, compact by default and json.dumps' ", " / ": " with spaced.
schema='{"type":"object","properties":{"answer":{"type":"integer","minimum":0,"maximum":99999},"unit":{"enum":["none","degrees"]}},"required":["answer","unit"],"additionalProperties":false}'
for ws in compact spaced; do
  "$tern" serve --port "$port" --threads 2 --json-whitespace $ws 2>"$work/ws-$ws.log" &
  pid=$!
  for _ in $(seq 1 100); do curl -sf --max-time 5 "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  reply=$(curl -s --max-time 60 -H 'Content-Type: application/json' -d '{"model":"m","temperature":0,"max_tokens":40,
    "messages":[{"role":"user","content":"What is 17*19?"}],"chat_template_kwargs":{"enable_thinking":false},
    "response_format":{"type":"json_schema","json_schema":{"name":"a","schema":'"$schema"'}}}' \
    "http://127.0.0.1:$port/v1/chat/completions")
  kill -TERM $pid; wait $pid
  /usr/bin/python3 - "$reply" "$ws" <<'PY'
import json, sys
choice = json.loads(sys.argv[1])["choices"][0]
text, ws = choice["message"]["content"], sys.argv[2]
value = json.loads(text)
want = json.dumps(value) if ws == "spaced" else json.dumps(value, separators=(",", ":"))
if choice["finish_reason"] != "stop" or text != want or set(value) != {"answer", "unit"}:
    sys.exit(f"FAIL --json-whitespace {ws}: {choice['finish_reason']} {text!r}, want {want!r}")
print(f"--json-whitespace {ws}: {text}")
PY
done
