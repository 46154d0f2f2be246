#!/usr/bin/python3
"""Several prompts at once through tern's engine, each against the float64 reference.

Usage:
  compare_concurrent.py --tern TERN --model DIR [--prompts 5] [--steps 24] [--seed 1]
      [--kv-dtypes f32,f16,bf16,fp8_e4m3] [--max-running 3] [--pool-tokens 96] [--page-size 4]
      [--expect-retraction] [--expect-drafts] [--tern-arg=...] [--launcher CMD] [--same-ids-as-single]

For each KV cache dtype, ONE `tern generate` runs every prompt concurrently (--prompt-ids
repeated) through the engine the server runs, with at most --max-running sequences at once
(so later prompts reuse the recurrent-state slots of finished ones on Qwen3.5 / Qwen3-Next)
and a KV pool of --pool-tokens tokens in pages of --page-size (small enough that the engine
must retract sequences mid-decode and recompute them later; with --expect-retraction the run
must report that it did). Half of the prompts share a 9-token prefix, so on pure-attention
models the prefix cache serves part of them. Each prompt's logits rows and greedy ids then go
through compare.py's checks (a)-(c) against a teacher-forced float64 reference forward, with
the bound for the KV dtype: --tol (default 1e-3) for f32 and f16 caches, as the
single-sequence tests; --bf16-tol (default 0.05) for bf16, whose 8-bit significand rounds each
cached element by up to 2^-9 (RMS 2^-9/sqrt(3) ~ 1.1e-3 relative, on every K and V: most rows
move by 1-2e-3, where f16's 2^-11 stays under 2e-4), and one such rounding can flip a
random-weight MoE's expert choice for a token (measured: one row at 3.3e-2, the same when that
prompt runs alone);
--fp8-tol (default 0.1, E4M3 keeps 3 mantissa bits: fp8_kv_cache.py's bound) for fp8_e4m3, where a token may also differ from the reference argmax when the
reference's gap to it is below --fp8-tie-abs (default 0.05, a near tie; same file).

With --launcher (e.g. "tests/dist/mpirun.sh shm 2" and --tern-arg=--tp=2), tern runs under that
command: the ranks of a tensor / expert-parallel job, held to the same bounds; with
--same-ids-as-single, each prompt's greedy ids must also equal those of the same run in one
process (no launcher, no --tp/--ep arguments).
The last line reads "N passed, M failed"; exit 1 when any check failed.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (sets OPENBLAS_NUM_THREADS before numpy)
import numpy as np  # noqa: E402


def make_prompts(count, vocab, seed):
    """count prompts of 5-33 ids in [3, vocab); the even ones share a 9-id prefix."""
    rng = np.random.RandomState(seed)
    shared = [int(t) for t in rng.randint(3, vocab, size=9)]
    prompts = []
    for i in range(count):
        tail = [int(t) for t in rng.randint(3, vocab, size=int(rng.randint(5, 25)))]
        prompts.append(shared + tail if i % 2 == 0 else tail)
    return prompts


def run(args, prompts, kv, tmp, single=False):
    out = os.path.join(tmp, f"logits-{kv}{'-single' if single else ''}.npy")
    launcher = [] if single else shlex.split(args.launcher)
    tern_args = [a for a in args.tern_arg if not (single and a.split("=")[0] in ("--tp", "--ep"))]
    cmd = launcher + [args.tern, "generate", "--model", args.model, "--max-tokens", str(args.steps), "--temperature", "0",
           "--ignore-eos", "--kv-cache-dtype", kv, "--logits-out", out,
           "--max-running-requests", str(args.max_running), "--max-total-tokens", str(args.pool_tokens),
           "--page-size", str(args.page_size), "--prefill-chunk", "16"] + tern_args
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    print("running:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=compare._TERN_ENV)
    if proc.returncode != 0:
        raise RuntimeError(f"tern exited {proc.returncode}\n--- stderr\n{proc.stderr}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()][-len(prompts):]
    ids = [json.loads(ln) for ln in lines]
    m = re.search(r"retracted and recomputed (\d+) sequences", proc.stderr)
    retractions = int(m.group(1)) if m else 0
    d = re.search(r"speculative decoding kept (\d+) of (\d+) drafts", proc.stderr)
    drafts = (int(d.group(1)), int(d.group(2))) if d else (0, 0)
    logits = [compare.load_logits(f"{out[:-4]}.{i}.npy", f"prompt {i} logits") for i in range(len(prompts))]
    return ids, logits, retractions, drafts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", type=int, default=5)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kv-dtypes", default="f32,f16,bf16,fp8_e4m3")
    ap.add_argument("--max-running", type=int, default=3)
    ap.add_argument("--pool-tokens", type=int, default=96)
    ap.add_argument("--page-size", type=int, default=4)
    ap.add_argument("--expect-retraction", action="store_true")
    ap.add_argument("--expect-drafts", action="store_true",
                    help="(with --tern-arg=--speculative-algorithm=...) drafts were verified and some rejected")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--tie-rel", type=float, default=1e-4)
    ap.add_argument("--bf16-tol", type=float, default=0.05)
    ap.add_argument("--fp8-tol", type=float, default=0.1)
    ap.add_argument("--fp8-tie-abs", type=float, default=0.05)
    ap.add_argument("--tern-arg", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--launcher", default="", help="command tern runs under (mpirun ...)")
    ap.add_argument("--same-ids-as-single", action="store_true")
    args = ap.parse_args()

    model = compare.load_reference(args.model, cache_weights=True)
    vocab = model.cfg.vocab_size
    prompts = make_prompts(args.prompts, vocab, args.seed)
    passed = failed = 0

    def verdict(ok, what):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
        passed += ok
        failed += not ok

    ref_cache = {}
    for kv in [k for k in args.kv_dtypes.split(",") if k]:
        fp8 = kv.startswith("fp8")
        with tempfile.TemporaryDirectory(prefix="tern-concurrent-") as tmp:
            try:
                ids, logits, retractions, drafts = run(args, prompts, kv, tmp)
                single_ids = run(args, prompts, kv, tmp, single=True)[0] if args.same_ids_as_single else None
            except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as e:
                verdict(False, f"kv {kv}: {e}")
                continue
        if single_ids is not None:
            for i, (a, b) in enumerate(zip(ids, single_ids)):
                verdict(a == b, f"kv {kv} prompt {i}: greedy ids {'equal' if a == b else 'differ from'} "
                                f"those of one process ({len(a)} steps)")
        if args.expect_drafts:
            # Rejections (the rollback) must have happened; how many drafts a random-weight model
            # happens to confirm varies with the CPU's last bits (the engine tests assert kept ones).
            verdict(drafts[1] > drafts[0], f"kv {kv}: speculative decoding kept {drafts[0]} of {drafts[1]} drafts")
        if args.expect_retraction:
            verdict(retractions > 0, f"kv {kv}: the engine retracted {retractions} sequences mid-decode")
        for i, (prompt, got, rows) in enumerate(zip(prompts, ids, logits)):
            n = len(got)
            if n != args.steps or rows.shape != (n, vocab):
                verdict(False, f"kv {kv} prompt {i}: {n} ids, logits {list(rows.shape)}")
                continue
            key = (tuple(prompt), tuple(got))
            if key not in ref_cache:
                ref_cache[key] = model.forward(prompt + got[:-1])[len(prompt) - 1:]
            ref = ref_cache[key]
            tol = args.fp8_tol if fp8 else args.bf16_tol if kv == "bf16" else args.tol
            ok, table = compare.compare(got, rows, ref, tol, args.tie_rel)
            if not ok and (fp8 or kv == "bf16"):  # near ties under a coarse cache (see the docstring)
                ok = all(r["err_ok"] and r["self_ok"] and
                         (r["ref_ok"] or float(np.max(ref[r["step"]]) - ref[r["step"]][r["id"]]) <= args.fp8_tie_abs)
                         for r in table)
            worst = max(r["nrms"] for r in table)
            if not ok:
                compare.print_report(table, tol, verbose=False)
            verdict(ok, f"kv {kv} prompt {i} ({len(prompt)} tokens): max nrms {worst:.2e} (tol {tol:g}), "
                        f"{sum(r['id'] == r['ref_argmax'] for r in table)}/{n} ids equal the reference argmax")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
