#!/usr/bin/env bash
# Faults of a tensor-parallel job (tern under mpirun, 2 ranks):
#   1. a rank killed mid-generation: every rank ends, non-zero, within seconds,
#      with a message naming the lost rank; no hang, no output reported as done;
#   2. SIGTERM to the server (rank 0) while serving: the request in flight
#      finishes, then every rank exits and mpirun exits 0; SIGTERM to mpirun
#      ends every rank at once (Open MPI kills the job a second later);
#   3. a model folder missing on one rank: startup fails on every rank with
#      that rank's error.
# Usage: faults.sh TERN WORKDIR
set -uo pipefail
tern=$(readlink -f "$1") work=$2/dist-faults
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
"$tern" synth --arch qwen3_moe --preset tiny --seed 3 --out "$work/model" 2>/dev/null || exit 1
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
. "$here/lib.sh"

echo "== 1. rank 1 killed mid-generation"
"$here/mpirun.sh" shm 2 "$tern" generate --model "$work/model" --tp 2 --prompt-ids 5,6,7 --max-tokens 30000 \
  --ignore-eos --temperature 0 >"$work/kill.out" 2>"$work/kill.err" &
mp=$!
for ((i = 0; i < 300; i++)); do r1=$(rank_pid "$tern generate --model $work/model" 1); [ -n "$r1" ] && break; sleep 0.1; done
[ -n "${r1:-}" ] || fail "rank 1 never started"
sleep 2
kill -0 $mp 2>/dev/null || fail "the generation ended before rank 1 was killed (make it longer)"
kill -9 "$r1"
t0=$(date +%s.%N)
wait_for $mp 30
t1=$(date +%s.%N)
[ "$code" != 124 ] || { kill -9 $(tern_pids "$tern generate --model $work/model"); fail "the job still runs 30 s after rank 1 was killed"; }
[ "$code" != 0 ] || fail "mpirun exited 0 after rank 1 was killed"
grep -q "rank 1" "$work/kill.err" "$work/kill.out" || fail "no message names rank 1"
[ -z "$(tern_pids "$tern generate --model $work/model")" ] || fail "tern processes remain"
[ ! -s "$work/kill.out" ] || fail "a partial generation was printed as output: $(head -c 200 "$work/kill.out")"
echo "ok: exit $code after $(python3 -c "print(f'{$t1 - $t0:.1f}')") s: $(grep -m1 "rank 1" "$work/kill.err")"

echo "== 2. SIGTERM to rank 0 while serving"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$here/mpirun.sh" shm 2 "$tern" serve --model "$work/model" --tp 2 --port "$port" --shutdown-grace 120 \
  >"$work/serve.out" 2>"$work/serve.err" &
mp=$!
"$tern" wait --url "http://127.0.0.1:$port" --timeout 120 >/dev/null || { kill $mp; fail "the server never became healthy"; }
curl -s -m 60 "http://127.0.0.1:$port/generate" -H 'Content-Type: application/json' \
  -d '{"input_ids":[5,6,7],"sampling_params":{"max_new_tokens":100,"temperature":0,"ignore_eos":true}}' >"$work/req.json" &
cp=$!
sleep 0.5
kill -TERM "$(rank_pid "$tern serve --model $work/model" 0)"
wait_for $mp 180  # (a loaded CI machine: the drain waits for the request in flight)
[ "$code" = 0 ] || fail "mpirun exited $code after SIGTERM to rank 0 (want 0: drained)"
wait $cp || fail "the request in flight failed (curl exit $?)"
python3 - "$work/req.json" <<'PY' || fail "the request in flight did not finish whole"
import json, sys
r = json.load(open(sys.argv[1]))
n = r["meta_info"]["completion_tokens"]
assert n == 100, f"{n} tokens"
print(f"ok: drained; the request in flight got all {n} tokens")
PY
[ -z "$(tern_pids "$tern serve --model $work/model")" ] || fail "tern processes remain"

echo "== 2b. SIGTERM to mpirun while serving"
# Open MPI's mpirun forwards SIGTERM and sends SIGKILL one second later
# (odls_base_sigkill_timeout): the job must end at once, every rank with it,
# and mpirun report failure -- a cut, not a drain (that is SIGTERM to rank 0).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$here/mpirun.sh" shm 2 "$tern" serve --model "$work/model" --tp 2 --port "$port" >"$work/serve2.out" 2>"$work/serve2.err" &
mp=$!
"$tern" wait --url "http://127.0.0.1:$port" --timeout 120 >/dev/null || { kill $mp; fail "the server never became healthy"; }
kill -TERM $mp
wait_for $mp 30
[ "$code" != 124 ] || fail "the job still runs 30 s after SIGTERM to mpirun"
[ "$code" != 0 ] || fail "mpirun exited 0 (Open MPI reports a signalled job as failed: has it changed?)"
sleep 1
[ -z "$(tern_pids "$tern serve --model $work/model")" ] || fail "tern processes remain"
echo "ok: every rank ended; mpirun exited $code"

echo "== 3. the model folder missing on rank 1"
"$here/mpirun.sh" shm -- -np 1 "$tern" generate --model "$work/model" --tp 2 --prompt-ids 5,6 --max-tokens 2 : \
  -np 1 "$tern" generate --model "$work/nowhere" --tp 2 --prompt-ids 5,6 --max-tokens 2 >"$work/missing.out" \
  2>"$work/missing.err" &
wait_for $! 60
[ "$code" != 124 ] || fail "startup hung"
[ "$code" != 0 ] || fail "mpirun exited 0"
n=$(grep -c "rank 1: .*nowhere" "$work/missing.err")
[ "$n" -ge 2 ] || fail "want the rank-1 error from both ranks, found $n lines"
echo "ok: exit $code; $(grep -m1 "rank 1" "$work/missing.err")"
echo "== 3b. ranks that disagree are refused at startup, naming what differs"
# Other flags on rank 1 (each layout valid alone): they once waited in different collectives.
"$here/mpirun.sh" shm -- -np 1 "$tern" generate --model "$work/model" --tp 2 --prompt-ids 5,6 --max-tokens 2 : \
  -np 1 "$tern" generate --model "$work/model" --tp 2 --ep 2 --prompt-ids 5,6 --max-tokens 2 >/dev/null \
  2>"$work/layout.err" &
wait_for $! 60
[ "$code" != 124 ] || fail "startup hung with --ep 2 on rank 1 only"
[ "$code" != 0 ] || fail "mpirun exited 0 with --ep 2 on rank 1 only"
grep -q "rank 1 differs from rank 0 in its parallel layout.*'--tp 2 --ep 2, .*' against '--tp 2 --ep 1, " "$work/layout.err" ||
  fail "no message names the layouts"
# Another checkpoint of the same shapes on rank 1 (another seed): it once served garbage.
"$tern" synth --arch qwen3_moe --preset tiny --seed 4 --out "$work/model4" 2>/dev/null
"$here/mpirun.sh" shm -- -np 1 "$tern" generate --model "$work/model" --tp 2 --prompt-ids 5,6 --max-tokens 2 : \
  -np 1 "$tern" generate --model "$work/model4" --tp 2 --prompt-ids 5,6 --max-tokens 2 >/dev/null \
  2>"$work/files.err" &
wait_for $! 60
[ "$code" != 124 ] || fail "startup hung with another checkpoint on rank 1"
[ "$code" != 0 ] || fail "mpirun exited 0 with another checkpoint on rank 1"
grep -q "rank 1 differs from rank 0 in its model files" "$work/files.err" || fail "no message names the model files"
echo "ok: $(grep -m1 "differs" "$work/layout.err" | cut -c1-120)..."
echo "== 4. layouts that cannot run are refused at startup, naming what to change"
out=$("$tern" generate --model "$work/model" --tp 2 --prompt-ids 5,6 --max-tokens 2 2>&1) && fail "--tp 2 without mpirun ran"
grep -q "mpirun -np 2" <<<"$out" || fail "--tp 2 without mpirun: $out"
out=$("$here/mpirun.sh" shm 2 "$tern" generate --model "$work/model" --tp 3 --prompt-ids 5,6 --max-tokens 2 2>&1) &&
  fail "--tp 3 on 2 ranks ran"
grep -q "needs 3 processes (2 running)" <<<"$out" || fail "--tp 3 on 2 ranks: $out"
out=$("$here/mpirun.sh" shm 2 "$tern" generate --model "$work/model" --prompt-ids 5,6 --max-tokens 2 2>&1) &&
  fail "2 ranks without --tp ran"
grep -q "needs 1 processes (2 running)" <<<"$out" || fail "2 ranks without --tp: $out"
# 4 KV heads... the tiny qwen3_moe has 4 q heads and 2 KV heads: --tp 4 splits the KV heads
# 2 ways, but 8 experts of 32 intermediate at --tp 4 are 8 columns: not NVFP4 blocks.
"$tern" synth --arch qwen3_moe --preset tiny --seed 3 --quant nvfp4 --out "$work/nvfp4" 2>/dev/null
out=$("$here/mpirun.sh" shm 4 "$tern" generate --model "$work/nvfp4" --tp 4 --prompt-ids 5,6 --max-tokens 2 2>&1) &&
  fail "--tp 4 of an NVFP4 model with 32-wide experts ran"
grep -q "16-element scale blocks" <<<"$out" || fail "--tp 4 NVFP4: $out"
echo "ok: $(grep -m1 "16-element" <<<"$out")"
echo "all fault checks passed"
