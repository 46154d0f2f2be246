#!/usr/bin/env bash
# The Qwen3.5 chat template end to end in `tern serve` on a synthetic
# qwen3.5-tiny checkpoint (see qwen35_chat.test.mjs). Usage: run_qwen35_chat.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/qwen35-chat
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
"$tern" synth --arch qwen3_5_moe --preset qwen3.5-tiny --seed 5 --out "$work/model" 2>/dev/null
TERN="$tern" MODEL_DIR="$work/model" node --test --test-concurrency=1 "$here/qwen35_chat.test.mjs"

# NEXTN speculative decoding through the server: the head drafts, the replies are the model's own.
# Greedy replies (chat, streamed chat with n = 2, /generate) equal a plain server's; get_server_info
# names the setup; drafts were verified (a random-weight head: rarely kept).
port=$((20000 + RANDOM % 20000))
"$tern" serve --model "$work/model" --port "$port" --threads 1 2>"$work/plain.log" &
plain=$!
"$tern" serve --model "$work/model" --port $((port + 1)) --threads 1 --enable-metrics \
  --speculative-algorithm NEXTN --speculative-num-steps 2 2>"$work/nextn.log" &
nextn=$!
trap 'kill $plain $nextn 2>/dev/null || true' EXIT
for p in "$port" $((port + 1)); do
  for _ in $(seq 1 150); do curl -sf --max-time 5 "http://127.0.0.1:$p/health" >/dev/null && break; sleep 0.2; done
done
/usr/bin/python3 - "$port" $((port + 1)) <<'PY'
import json, sys, urllib.request
plain, nextn = (f"http://127.0.0.1:{p}" for p in sys.argv[1:3])
def post(base, path, body, stream=False):
    req = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        if not stream:
            return json.loads(r.read())
        text = {}
        for line in r.read().decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for c in json.loads(line[6:])["choices"]:
                    text[c["index"]] = text.get(c["index"], "") + (c["delta"].get("content") or "")
        return text
chat = {"model": "m", "temperature": 0, "max_tokens": 40, "messages": [{"role": "user", "content": "Count to ten, please."}],
        "chat_template_kwargs": {"enable_thinking": False}}
a, b = post(plain, "/v1/chat/completions", chat), post(nextn, "/v1/chat/completions", chat)
if a["choices"][0]["message"] != b["choices"][0]["message"]:
    sys.exit(f"FAIL NEXTN chat: {b['choices'][0]['message']!r} != plain {a['choices'][0]['message']!r}")
s = dict(chat, stream=True, n=2)
sa, sb = post(plain, "/v1/chat/completions", s, True), post(nextn, "/v1/chat/completions", s, True)
if sa != sb or len(sb) != 2:
    sys.exit(f"FAIL NEXTN streamed n=2: {sb!r} != plain {sa!r}")
for ids in ([5, 17, 99, 250, 5, 17, 99], [300, 301, 302, 12, 64]):
    g = {"input_ids": ids, "sampling_params": {"temperature": 0, "max_new_tokens": 32}}
    ga, gb = post(plain, "/generate", g), post(nextn, "/generate", g)
    if ga["text"] != gb["text"]:
        sys.exit(f"FAIL NEXTN /generate: {gb['text']!r} != plain {ga['text']!r}")
info = json.loads(urllib.request.urlopen(nextn + "/get_server_info", timeout=10).read())
if (info.get("speculative_algorithm"), info.get("speculative_num_steps"), info.get("speculative_eagle_topk"),
        info.get("speculative_num_draft_tokens")) != ("NEXTN", 2, 1, 3):
    sys.exit(f"FAIL get_server_info: {info.get('speculative_algorithm')} {info.get('speculative_num_steps')}")
metrics = urllib.request.urlopen(nextn + "/metrics", timeout=10).read().decode()
verifies = [l for l in metrics.splitlines() if l.startswith("tern:spec_draft_tokens_total")]
if not verifies or float(verifies[0].split()[-1]) <= 0:
    sys.exit(f"FAIL: no drafts scored under NEXTN: {verifies}")
print(f"NEXTN: replies equal the plain server's; {verifies[0]}")
PY
