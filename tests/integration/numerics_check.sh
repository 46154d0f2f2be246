#!/usr/bin/env bash
# `tern check --suite numerics` against `tern serve` (issue 20), on the bundled NVFP4 model:
#   1. the right deployment passes: tern serve on models/demo (its default F16 KV cache) against
#      --reference-model models/demo: every prompt passes, top-1 agreement 100%, KL below 1e-3 at
#      every position (the KV cache's F16 rounding; 0 up to f32 rounding with --kv-cache-dtype f32,
#      checked too: below 1e-6; and with --huge-pages, the weights copied into huge pages);
#   2. subtly wrong deployments (tests/integration/numerics_faults.py: one layer's weights off by 2%,
#      one expert's NVFP4 block scales halved, rope theta off by 10%) still pass the smoke suite
#      ("OK", 323 with and without thinking) yet fail --suite numerics with exit 1, and the report
#      names the first diverging position of the failing prompts (table and JSON); the same when the
#      deployment is judged as a BF16 one (--reference-numerics bf16: against BF16-rounded references);
#   3. where this CPU has a BF16 path (amx, avx512-bf16), tern serve in its default BF16-activation mode
#      passes, judged as BF16 because its /get_server_info says so (--reference-numerics auto, the
#      default); the f32 deployments above are judged as f32 the same way;
#   4. tern serve --quant-numerics w4a8 passes judged as W4A8 (auto: a W4A8 reference with the
#      deployment's KV cache dtype, the f32 thresholds), and the faults of step 2 fail so judged.
# Usage: numerics_check.sh TERN WORKDIR (run with TERN_ACTIVATIONS=f32: the right deployment is an f32 one)
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
numerics() {  # numerics NAME [args]: runs the suite against the server, the table to NAME.txt, JSON to NAME.json; echo exit code
  local name=$1; shift
  set +e
  "$tern" check --url "http://127.0.0.1:$port" --wait 120 --suite numerics --reference-model "$demo" \
    --reference-threads 2 --json "$work/$name.json" "$@" >"$work/$name.txt" 2>"$work/$name.err"
  local rc=$?
  set -e
  echo $rc
}

for kv in auto f32 huge; do  # huge: the default KV cache, the weights in huge pages (--huge-pages)
  if [ $kv = huge ]; then serve "$demo" right-huge --huge-pages; else serve "$demo" "right-$kv" --kv-cache-dtype $kv; fi
  rc=$(numerics "right-$kv")
  stop
  cat "$work/right-$kv.txt"
  [ "$rc" = 0 ] || { echo "FAIL: the right deployment (KV $kv) exited $rc"; cat "$work/right-$kv.err"; exit 1; }
  /usr/bin/python3 - "$work/right-$kv.json" $kv <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
kl_bound = 1e-6 if sys.argv[2] == "f32" else 1e-3
rows = {c["name"]: c for c in r["checks"]}
bad = [n for n, c in rows.items() if c["result"] != "pass"]
m = rows["numerics"]["metrics"]
if bad or len(rows) != 7:
    sys.exit(f"FAIL: rows {sorted(rows)} not all passing: {bad}")
if m["top1_agreement"] != 1.0 or m["kl_max"] > kl_bound or m["nonfinite_positions"]:
    sys.exit(f"FAIL: agreement {m['top1_agreement']}, KL max {m['kl_max']} (bound {kl_bound})")
if "/generate" not in m["api"] or m["positions"] < 1000:
    sys.exit(f"FAIL: api {m['api']}, {m['positions']} positions")
if m["judged_as"] != "full" or "activations f32" not in m["judged_as_why"]:
    sys.exit(f"FAIL: an f32 deployment judged as {m['judged_as']} ({m['judged_as_why']})")
print(f"right deployment (KV {sys.argv[2]}): agreement 100%, KL max {m['kl_max']:.2e} over {m['positions']} positions")
PY
done
# The huge-page run held the weights that way, and computed what the mapped run did (the same bytes).
grep -q "read into huge pages" "$work/right-huge.serve.log" ||
  { echo "FAIL: --huge-pages: the load did not say it read the weights into huge pages"; cat "$work/right-huge.serve.log"; exit 1; }
/usr/bin/python3 - "$work/right-auto.json" "$work/right-huge.json" <<'PY'
import json, sys
kl = [{c["name"]: c for c in json.load(open(f))["checks"]}["numerics"]["metrics"]["kl_max"] for f in sys.argv[1:]]
if kl[0] != kl[1]:
    sys.exit(f"FAIL: --huge-pages changed the numbers: KL max {kl[1]} against {kl[0]} mapped")
PY

for fault in perturb block-scale rope; do
  /usr/bin/python3 "$here/numerics_faults.py" --model "$demo" --out "$work/$fault" --fault $fault
  serve "$work/$fault" "$fault"
  "$tern" check --url "http://127.0.0.1:$port" --wait 120 --suite smoke >"$work/$fault.smoke.txt" ||
    { cat "$work/$fault.smoke.txt"; echo "FAIL: $fault: the smoke suite should still pass"; exit 1; }
  rc=$(numerics "$fault")
  rc_bf16=$(numerics "$fault-bf16" --reference-numerics bf16)
  stop
  cat "$work/$fault-bf16.txt"
  [ "$rc_bf16" = 1 ] || { echo "FAIL: $fault: judged as BF16, --suite numerics exited $rc_bf16, expected 1"; exit 1; }
  /usr/bin/python3 - "$work/$fault-bf16.json" $fault <<'PY'
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
if rows["numerics"]["metrics"]["judged_as"] != "bf16":
    sys.exit(f"FAIL: {sys.argv[2]}: --reference-numerics bf16 judged as {rows['numerics']['metrics']['judged_as']}")
failed = [n for n, c in rows.items() if n != "numerics" and c["result"] == "fail"]
judged = [n for n in failed if rows[n]["metrics"].get("bf16_rounding", {}).get("within") is False]
if not judged:
    sys.exit(f"FAIL: {sys.argv[2]}: no prompt failed against the BF16-rounded references (failing: {failed})")
print(f"{sys.argv[2]}: judged as BF16, fails beyond what BF16 rounding explains on {', '.join(judged)}")
PY
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
# 3. The default BF16-activation deployment, where this CPU has one.
TERN_ACTIVATIONS=bf16 serve "$demo" right-bf16
acts=$(/usr/bin/python3 - "$port" <<'PY'
import json, sys, time, urllib.request
for _ in range(240):
    try:
        print(json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/get_server_info"))["activations"])
        break
    except Exception:
        time.sleep(0.5)
PY
)
if [ "$acts" = bf16 ]; then
  rc=$(numerics right-bf16)
  stop
  cat "$work/right-bf16.txt"
  [ "$rc" = 0 ] || { echo "FAIL: the right BF16 deployment exited $rc"; cat "$work/right-bf16.err"; exit 1; }
  /usr/bin/python3 - "$work/right-bf16.json" <<'PY'
import json, sys
m = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}["numerics"]["metrics"]
if m["judged_as"] != "bf16" or "activations bf16" not in m["judged_as_why"]:
    sys.exit(f"FAIL: the BF16 deployment judged as {m['judged_as']} ({m['judged_as_why']})")
print(f"right deployment (BF16 activations): passes judged as BF16, KL max {m['kl_max']:.2e}")
PY
elif [ "$acts" = f32 ]; then
  stop
  echo "step 3 not run: this CPU has no BF16-activation path (/get_server_info says activations f32)"
else
  echo "FAIL: tern serve (TERN_ACTIVATIONS=bf16) never answered /get_server_info with activations"
  cat "$work/right-bf16.serve.log"; exit 1
fi
# 4. --quant-numerics w4a8 (NVFP4 layers' inputs as 8-bit integers): judged as W4A8 because its
# /get_server_info says so, against a reference that quantizes the same way with the deployment's KV
# cache dtype, by the f32 thresholds; the three faults of step 2 still fail so judged.
for kv in auto f32; do
  serve "$demo" "w4a8-$kv" --quant-numerics w4a8 --kv-cache-dtype $kv
  rc=$(numerics "w4a8-$kv")
  stop
  cat "$work/w4a8-$kv.txt"
  [ "$rc" = 0 ] || { echo "FAIL: the W4A8 deployment (KV $kv) exited $rc"; cat "$work/w4a8-$kv.err"; exit 1; }
  /usr/bin/python3 - "$work/w4a8-$kv.json" $kv <<'PY'
import json, sys
m = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}["numerics"]["metrics"]
kv = {"auto": "F16", "f32": "F32"}[sys.argv[2]]
if m["judged_as"] != "w4a8" or "activations w4a8" not in m["judged_as_why"] or f"w4a8 numerics, {kv} KV" not in m["reference"]:
    sys.exit(f"FAIL: the W4A8 deployment judged as {m['judged_as']} ({m['judged_as_why']}; {m['reference']})")
print(f"W4A8 deployment (KV {sys.argv[2]}): passes judged as W4A8, KL max {m['kl_max']:.2e}, "
      f"top-1 {100 * m['top1_agreement']:.2f}%")
PY
done
# w4a8 keeps every other activation in f32 even where BF16 activations are asked for (the amx and
# avx512-bf16 paths round attention's and the other GEMMs' inputs, which flips 8-bit steps downstream).
TERN_ACTIVATIONS=bf16 serve "$demo" w4a8-bf16env --quant-numerics w4a8
rc=$(numerics w4a8-bf16env)
stop
[ "$rc" = 0 ] || { cat "$work/w4a8-bf16env.txt"; echo "FAIL: the W4A8 deployment under TERN_ACTIVATIONS=bf16 exited $rc"; exit 1; }
echo "W4A8 deployment under TERN_ACTIVATIONS=bf16: passes"
for fault in perturb block-scale rope; do
  serve "$work/$fault" "$fault-w4a8" --quant-numerics w4a8
  rc=$(numerics "$fault-w4a8")
  stop
  [ "$rc" = 1 ] || { cat "$work/$fault-w4a8.txt"; echo "FAIL: $fault under w4a8: --suite numerics exited $rc, expected 1"; exit 1; }
  /usr/bin/python3 - "$work/$fault-w4a8.json" $fault <<'PY'
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
if rows["numerics"]["metrics"]["judged_as"] != "w4a8":
    sys.exit(f"FAIL: {sys.argv[2]} under w4a8: judged as {rows['numerics']['metrics']['judged_as']}")
failed = [n for n, c in rows.items() if n != "numerics" and c["result"] == "fail"]
print(f"{sys.argv[2]} under w4a8: fails judged as W4A8 on {', '.join(failed)}")
PY
done
echo "numerics_check: ok"
