#!/usr/bin/env bash
# `tern serve` under mpirun: the bundled demo model at --tp 2 (shared memory)
# and at --tp 2 --ep 2 over TCP must give the same `tern check --suite full`
# results, check by check, as one process; then the OpenAI client end to end
# (tests/server/server_e2e.test.mjs) runs against a --tp 2 server.
# Usage: serve_check.sh TERN WORKDIR
set -uo pipefail
tern=$(readlink -f "$1") work=$2/dist-serve
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; tail -30 "$work"/*.log; exit 1; }
. "$here/lib.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run_check NAME LAUNCHER... -- SERVE-ARGS...: serves the demo model, runs the full suite into NAME.json.
run_check() {
  local name=$1; shift
  local launcher=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done; shift
  local port; port=$(free_port)
  "${launcher[@]}" "$tern" serve --port "$port" "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  "$tern" check --url "http://127.0.0.1:$port" --suite full --wait 180 --timeout 300 --no-color \
    --json "$work/$name.json" >"$work/$name.check" 2>&1
  # SIGTERM to the server itself (rank 0 of a job): it drains and tells the other ranks to stop.
  if [ ${#launcher[@]} -eq 0 ]; then kill -TERM $pid; else kill -TERM "$(rank_pid "$tern serve --port $port" 0)"; fi
  wait_for $pid 60
  [ "$code" = 0 ] || fail "$name: the server exited $code after SIGTERM"
  [ -s "$work/$name.json" ] || fail "$name: no report ($(tail -5 "$work/$name.check"))"
}
run_check one -- --threads 2
run_check tp2 "$here/mpirun.sh" shm 2 -- --tp 2 --threads 1
run_check tp2ep2 "$here/mpirun.sh" tcp 2 -- --tp 2 --ep 2 --threads 1
python3 - "$work" <<'PY' || fail "the results differ"
import json, sys
def results(name):
    r = json.load(open(f"{sys.argv[1]}/{name}.json"))
    return {c["name"]: c["result"] for c in r["checks"]}
one = results("one")
print(f"one process: {sum(s == 'pass' for s in one.values())}/{len(one)} checks pass")
ok = True
for name in ("tp2", "tp2ep2"):
    got = results(name)
    diff = {k: (one.get(k), got.get(k)) for k in set(one) | set(got) if one.get(k) != got.get(k)}
    print(f"{name}: {'same results' if not diff else 'DIFFERENT: ' + str(diff)}")
    ok &= not diff
sys.exit(0 if ok else 1)
PY
# Startup says what loading took, phase by phase, on every rank (issue 21 item 3).
grep -q "models/demo: loaded in .* s: mapped .*layers .*weight check" "$work/one.log" || fail "no load phases in one.log"
for r in 0 1; do
  grep -q "tern: rank $r: .*loaded in .*split .*GB held here" "$work/tp2.log" || fail "no load phases of rank $r"
done
echo "ok: tern check --suite full gives the same results at --tp 2 and --tp 2 --ep 2 as in one process"
