#!/usr/bin/env bash
# Runs the server end-to-end tests and `tern check` against `tern serve` on a
# synthetic checkpoint. Usage: run_server_e2e.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/server
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$work"; mkdir -p "$work"
"$tern" synth --arch qwen3_moe --preset tiny --seed 5 --out "$work/model" 2>/dev/null
# A checkpoint whose warm-up lasts long enough to watch /health answer 503 (~1 s at one thread).
"$tern" synth --arch qwen3 --preset qwen3-0.6b --quant nvfp4 --seed 1 --out "$work/slow" 2>/dev/null
TERN="$tern" MODEL_DIR="$work/model" SLOW_MODEL_DIR="$work/slow" node --test --test-concurrency=1 "$here/server_e2e.test.mjs"
rm -rf "$work/slow"

# tern check against tern serve: random weights, so the semantic checks must
# fail (and say so) while the structural ones pass.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$tern" serve --model "$work/model" --port "$port" --threads 2 --reasoning-parser qwen3 --tool-call-parser qwen25 \
  2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
"$root/src/check/testdata/run_battery.sh" "$tern" "http://127.0.0.1:$port" --expect random-weights -- --wait 120 --timeout 120
# The listen backlog (Send-Q of a listening socket): cpp-httplib's own 5 let
# bursts of reconnecting clients overflow the accept queue (connection resets);
# tern serve raises it to the system maximum.
backlog=$(ss -Hltn "sport = :$port" | awk '{print $3}' | head -1)
if [ -z "$backlog" ] || [ "$backlog" -lt 128 ]; then
  echo "FAIL: listen backlog of tern serve is '${backlog}' (want >= 128)"; exit 1
fi
echo "listen backlog $backlog: ok"
kill -TERM $pid; wait $pid
