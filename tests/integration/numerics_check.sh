#!/usr/bin/env bash
# `tern check --suite numerics` against `tern serve` (issue 20), on the bundled NVFP4 model:
#   1. the right deployment passes: tern serve on models/demo (its default F16 KV cache) against
#      --reference-model models/demo: every prompt passes, top-1 agreement 100%, KL below 1e-3 at
#      every position (the KV cache's F16 rounding; 0 up to f32 rounding with --kv-cache-dtype f32,
#      checked too: below 1e-6);
#   2. subtly wrong deployments (tests/integration/numerics_faults.py: one layer's weights off by 2%,
#      one expert's NVFP4 block scales halved, rope theta off by 10%) still pass the smoke suite
#      ("OK", 323 with and without thinking) yet fail --suite numerics with exit 1, and the report
#      names the first diverging position of the failing prompts (table and JSON).
# Usage: numerics_check.sh TERN WORKDIR
set -euo pipefail
tern=$1 work=$2/numerics_check
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
demo=$root/models/demo
rm -rf "$work"; mkdir -p "$work"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null || true' EXIT

serve() {  # serve MODEL NAME [args]: starts tern serve in the background
  local model=$1 name=$2; shift 2
  "$tern" serve --model "$model" --port "$port" --threads 2 "$@" 2>"$work/$name.serve.log" &
  pid=$!
}
stop() { kill -TERM $pid; wait $pid || true; pid=; }
numerics() {  # numerics NAME: runs the suite against the server, the table to NAME.txt, JSON to NAME.json; echo exit code
  set +e
  "$tern" check --url "http://127.0.0.1:$port" --wait 120 --suite numerics --reference-model "$demo" \
    --reference-threads 2 --json "$work/$1.json" >"$work/$1.txt" 2>"$work/$1.err"
  local rc=$?
  set -e
  echo $rc
}

for kv in auto f32; do
  serve "$demo" "right-$kv" --kv-cache-dtype $kv
  rc=$(numerics "right-$kv")
  stop
  cat "$work/right-$kv.txt"
  [ "$rc" = 0 ] || { echo "FAIL: the right deployment (KV $kv) exited $rc"; cat "$work/right-$kv.err"; exit 1; }
  /usr/bin/python3 - "$work/right-$kv.json" $kv <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
kl_bound = 1e-3 if sys.argv[2] == "auto" else 1e-6
rows = {c["name"]: c for c in r["checks"]}
bad = [n for n, c in rows.items() if c["result"] != "pass"]
m = rows["numerics"]["metrics"]
if bad or len(rows) != 7:
    sys.exit(f"FAIL: rows {sorted(rows)} not all passing: {bad}")
if m["top1_agreement"] != 1.0 or m["kl_max"] > kl_bound or m["nonfinite_positions"]:
    sys.exit(f"FAIL: agreement {m['top1_agreement']}, KL max {m['kl_max']} (bound {kl_bound})")
if "/generate" not in m["api"] or m["positions"] < 1000:
    sys.exit(f"FAIL: api {m['api']}, {m['positions']} positions")
print(f"right deployment (KV {sys.argv[2]}): agreement 100%, KL max {m['kl_max']:.2e} over {m['positions']} positions")
PY
done

for fault in perturb block-scale rope; do
  /usr/bin/python3 "$here/numerics_faults.py" --model "$demo" --out "$work/$fault" --fault $fault
  serve "$work/$fault" "$fault"
  "$tern" check --url "http://127.0.0.1:$port" --wait 120 --suite smoke >"$work/$fault.smoke.txt" ||
    { cat "$work/$fault.smoke.txt"; echo "FAIL: $fault: the smoke suite should still pass"; exit 1; }
  rc=$(numerics "$fault")
  stop
  cat "$work/$fault.txt"
  [ "$rc" = 1 ] || { echo "FAIL: $fault: --suite numerics exited $rc, expected 1"; exit 1; }
  grep -q "first diverges at position" "$work/$fault.txt" ||
    { echo "FAIL: $fault: the table names no diverging position"; exit 1; }
  /usr/bin/python3 - "$work/$fault.json" $fault <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
failed = [c for c in r["checks"] if c["result"] == "fail" and c["name"] != "numerics"]
if r["exit_code"] != 1 or not failed:
    sys.exit(f"FAIL: {sys.argv[2]}: exit {r['exit_code']}, failing prompts {[c['name'] for c in failed]}")
for c in failed:
    f = c["metrics"].get("first_divergence")
    if not f or f["position"] < 1:
        sys.exit(f"FAIL: {sys.argv[2]}: {c['name']} fails without a first diverging position: {c['detail']}")
print(f"{sys.argv[2]}: smoke passes; numerics fails on {', '.join(c['name'] for c in failed)}, first at "
      + "; ".join(f"{c['name']} {c['metrics']['first_divergence']['in']} token {c['metrics']['first_divergence']['index']}"
                  for c in failed))
PY
done
echo "numerics_check: ok"
