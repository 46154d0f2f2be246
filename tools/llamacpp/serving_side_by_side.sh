#!/usr/bin/env bash
# Serving throughput of `tern serve` and llama.cpp's `llama-server` on the same weights, measured by
# the same client (`tern bench-serving`: streaming /v1/completions, random prompts, ignore_eos).
#
#   tools/llamacpp/serving_side_by_side.sh --tern-model DIR --gguf FILE [options]
#
# Rounds alternate the servers (tern, llama.cpp, tern, ...); one server runs at a time, started fresh
# each round and warmed up by one request before the measured run. The training job
# (pgrep -f train.py) is stopped with SIGSTOP while a round runs and resumed on any exit.
#
# Options:
#   --llama-cpp DIR     llama.cpp tree with a CPU build in DIR/build (default /work/llama.cpp; this
#                       script does not build it)
#   --tern BIN          tern binary (default: build/src/app/tern of this checkout)
#   --threads N         threads for both servers (default 2)
#   --concurrency C     requests in flight (default 16); llama-server gets --parallel C
#   --requests N        requests per run (default 4 x C)
#   --input-len N / --output-len N   tokens per request (default 128 / 64)
#   --rounds R          rounds per server (default 2)
#   --out DIR           where the JSON results and server logs go (default a new folder under /tmp)
# Prints output tok/s, TTFT p50 and ITL p50 per run, then the medians and tern / llama.cpp ratios.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tern="$repo/build/src/app/tern"; lcpp=/work/llama.cpp; model=""; gguf=""; threads=2; conc=16; reqs=""
in_len=128; out_len=64; rounds=2; out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tern-model) model=$2; shift 2 ;;
    --gguf) gguf=$2; shift 2 ;;
    --llama-cpp) lcpp=$2; shift 2 ;;
    --tern) tern=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --requests) reqs=$2; shift 2 ;;
    --input-len) in_len=$2; shift 2 ;;
    --output-len) out_len=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n $model && -n $gguf ]] || { echo "usage: $0 --tern-model DIR --gguf FILE [options] (--help)" >&2; exit 2; }
server="$lcpp/build/bin/llama-server"
for f in "$tern" "$server"; do [[ -x $f ]] || { echo "missing $f" >&2; exit 1; }; done
[[ -d $model ]] || { echo "no checkpoint at $model" >&2; exit 1; }
[[ -f $gguf ]] || { echo "no GGUF at $gguf" >&2; exit 1; }
reqs=${reqs:-$((4 * conc))}
out=${out:-$(mktemp -d /tmp/serving-sbs.XXXXXX)}
mkdir -p "$out"
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pid=""; train_pids=""
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  local p
  for p in $train_pids; do kill -CONT "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# run_round NAME ROUND: start the server, wait for it, warm it up, measure, stop it.
run_round() {
  local name=$1 r=$2 port; port=$(free_port)
  local url="http://127.0.0.1:$port"
  if [[ $name == tern ]]; then
    "$tern" serve --model "$model" --host 127.0.0.1 --port "$port" --threads "$threads" \
      --max-running-requests "$conc" >"$out/$name-$r.log" 2>&1 &
  else
    # One slot per concurrent request, each with room for its prompt and output.
    "$server" -m "$gguf" --host 127.0.0.1 --port "$port" -t "$threads" --parallel "$conc" \
      -c $((conc * (in_len + out_len + 64))) >"$out/$name-$r.log" 2>&1 &
  fi
  pid=$!
  "$tern" wait --url "$url" --timeout 600 >/dev/null || { echo "$name did not come up: $out/$name-$r.log" >&2; exit 1; }
  "$tern" bench-serving --url "$url" --concurrency 1 --requests 1 --input-len "$in_len" --output-len 8 >/dev/null
  train_pids=$(pgrep -f train.py || true)
  local p; for p in $train_pids; do kill -STOP "$p" 2>/dev/null || true; done
  log "$name round $r: c=$conc, $reqs requests, $in_len in / $out_len out"
  "$tern" bench-serving --url "$url" --concurrency "$conc" --requests "$reqs" --input-len "$in_len" \
    --output-len "$out_len" --json "$out/$name-$r.json" >"$out/$name-$r.txt"
  for p in $train_pids; do kill -CONT "$p" 2>/dev/null || true; done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
}

for ((r = 1; r <= rounds; ++r)); do
  run_round tern "$r"
  run_round llama "$r"
done

/usr/bin/python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def get(j, name):
    if j.get(name) is None:
        raise SystemExit(f"{name} missing from a result (no request succeeded?): {j}")
    return float(j[name])
rows = {}
for name in ("tern", "llama"):
    runs = [json.load(open(f"{out}/{name}-{r}.json")) for r in range(1, rounds + 1)]
    thr = [get(j, "output_tokens_per_s") for j in runs]
    ttft = [get(j, "ttft_ms_p50") for j in runs]
    itl = [get(j, "itl_ms_p50") for j in runs]
    rows[name] = (statistics.median(thr), statistics.median(ttft), statistics.median(itl))
    for r, (a, b, c) in enumerate(zip(thr, ttft, itl), 1):
        print(f"{name:6s} round {r}: {a:8.1f} out tok/s   TTFT p50 {b:9.1f} ms   ITL p50 {c:8.2f} ms")
t, l = rows["tern"], rows["llama"]
print(f"median  tern {t[0]:.1f} tok/s, llama.cpp {l[0]:.1f}: {t[0] / l[0]:.2f}x output throughput;"
      f" TTFT p50 {t[1]:.0f} vs {l[1]:.0f} ms ({t[1] / l[1]:.2f} of llama.cpp's)")
EOF
echo "results and logs: $out"
