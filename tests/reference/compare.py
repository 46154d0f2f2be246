#!/usr/bin/python3
"""Checks tern's greedy generation against the float64 reference (qwen3_ref.py).

Usage (CTest runs it with /usr/bin/python3):
  compare.py --tern PATH_TO_TERN --model DIR --prompt-ids 1,2,3 [--steps 32] [--tol 1e-3]
             [--tie-rel 1e-4] [--tern-arg=--threads=2 ...] [--timeout 600] [--verbose]
             [--quant-numerics w4a16|w4a4|w4a8]

--activations f32|bf16 (default: $TERN_TEST_ACTIVATIONS, else f32) selects tern's activation
numerics (kernels/cpu_features.h). f32 runs tern with TERN_ACTIVATIONS=f32 (no GEMM input is
rounded on any CPU path). bf16 runs it on the amx or avx512-bf16 path with TERN_BF16_MIN_ROWS=1, so that every
MatMul rounds its input to BF16 (kernels/matmul_amx.h), with an F32 KV cache (the roundings
must see inputs that agree far below BF16's ulp), and makes the reference round the input
of every Linear tern runs on the tiles the same way (qwen3_ref.round_bf16: BF16, NVFP4 and
per-tensor FP8 weights, not routers or gates): each row within 2^-8 (an element that rounds to
the neighbouring BF16 value on one side only) and the mean over rows within --tol. Without
the amx path on this CPU, bf16 exits 77 (ctest: skipped) after saying so.

--quant-numerics is passed to tern generate and selects the reference's numerics for quantized
checkpoints: w4a16 (exact weight dequantization, float64 activations; the reference's default)
or w4a4 (also fake-quantize every NVFP4 Linear's input per 16-block with its input_scale, as
Blackwell does; see quant_np.fake_quant_nvfp4_activation). Without the flag tern gets no option.

What it expects from tern. It runs
  TERN generate --model DIR --prompt-ids 1,2,3 --max-tokens STEPS --temperature 0
       --logits-out TMP/logits.npy [TERN_ARGS...]
which must exit 0, print the generated ids as a JSON array of ints on the LAST non-empty
line of stdout (other lines before it are ignored), and write TMP/logits.npy: a float32
(float64 accepted) .npy of shape [n, vocab] where n = number of generated ids (<= STEPS;
fewer when tern stops at an end token). Row 0 holds the logits after the prompt (they
chose ids[0]); row i holds the logits after feeding ids[i-1] (they chose ids[i]).

What it checks (teacher forcing: ONE reference forward over prompt + ids[:-1], whose
last n rows line up with tern's rows):
  (a) for every row, normalised RMS error rms(l_tern - l_ref) / rms(l_ref) <= --tol;
  (b) for every step, ids[i] == argmax(l_ref[i]). Tie rule: if the reference logit of
      ids[i] is within --tie-rel (relative, default 1e-4) of the reference maximum, i.e.
      max - l_ref[ids[i]] <= tie_rel * max(|max|, |l_ref[ids[i]]|), the step is reported as
      a TIE and accepted: a float32 engine cannot be expected to break such ties like a
      float64 one. Because of teacher forcing, later rows stay comparable either way;
  (c) ids[i] == argmax(l_tern[i]) (tern samples what its own logits say), same tie rule.
Prints a per-row table (always with --verbose; otherwise rows that fail) and a summary;
exits 0 when every check passes, 1 otherwise (including tern failing to run).

The reference is chosen by the text config's model_type: qwen3 / qwen3_moe -> qwen3_ref.py;
qwen3_5_moe (VLM wrapper), qwen3_5_moe_text and qwen3_next -> qwen35_ref.py.

--mtp (Qwen3.5 / Qwen3-Next with an MTP head): tern generate also gets --mtp-logits-out
TMP/mtp.npy, which must hold one float32 row per generated id: row i from the hidden state that
chose ids[i] and ids[i] itself, i.e. the head's logits for ids[i+1]. The reference computes the
same rows teacher-forced (qwen35_ref.Model.mtp_teacher_forced over prompt + ids: the head runs
over every position, as a speculative decoder fills its KV cache) and each row must pass
(d) normalised RMS error <= --tol. With --prefill-chunks, every chunked run is checked the same way.

--prefill-chunks N1,N2,... (chunked prefill): tern generate is run once more per size, with
--prefill-chunk N (plus every --chunk-tern-arg, e.g. --chunk-tern-arg=--kv-cache-dtype=f32).
Each of these runs must pass (a)-(c) against the reference, and give the same tokens as the
N1 run with per-row normalised RMS difference <= --chunk-tol (default 1e-4).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

_TERN_ENV = dict(os.environ)  # tern runs with the caller's environment, untouched
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the reference's matrices are small: threads only contend

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen35_ref  # noqa: E402
import qwen3_ref  # noqa: E402
from safetensors_np import load_config  # noqa: E402


def load_reference(model_dir, **kw):
    """The reference Model for model_dir's model_type (qwen35_ref for the hybrid families)."""
    text_cfg, _ = load_config(model_dir)
    if qwen35_ref.is_hybrid_config(text_cfg):
        return qwen35_ref.Model(model_dir, **kw)
    return qwen3_ref.Model(model_dir, **kw)


def parse_ids(text):
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"compare.py: --prompt-ids must be comma-separated integers, got {text!r}")
    if not ids:
        raise SystemExit("compare.py: --prompt-ids is empty")
    return ids


def mtp_path(logits_path):
    return os.path.join(os.path.dirname(logits_path), "mtp.npy")


def load_logits(path, what):
    if not os.path.exists(path):
        raise RuntimeError(f"tern did not write {path}")
    logits = np.load(path, allow_pickle=False)
    if logits.dtype not in (np.float32, np.float64) or logits.ndim != 2:
        raise RuntimeError(f"{what} file: dtype {logits.dtype} shape {logits.shape}, expected float32 [n, vocab]")
    return logits.astype(np.float64)


def set_activations(args):
    """Sets tern's environment for args.activations; -> None, or a reason it cannot run here."""
    if args.activations == "f32":
        _TERN_ENV["TERN_ACTIVATIONS"] = "f32"
        return None
    # Either BF16-activation GEMM (the amx path's tiles, else avx512-bf16's VDPBF16PS): one numerics mode.
    reason = None
    for path in ("amx", "avx512-bf16"):
        _TERN_ENV.update(TERN_ACTIVATIONS="bf16", TERN_CPU_PATH=path, TERN_BF16_MIN_ROWS="1")
        probe = subprocess.run([args.tern, "generate", "--model", args.model, "--prompt-ids", "1", "--max-tokens", "1",
                                "--temperature", "0"], capture_output=True, text=True, timeout=args.timeout,
                               env=_TERN_ENV)
        if probe.returncode == 0 or "TERN_CPU_PATH" not in probe.stderr:
            return None
        reason = probe.stderr.strip().splitlines()[-1]
    return reason


def run_tern(args, prompt_ids, logits_path, extra=()):
    """-> (generated ids list, logits [n, vocab] float64, MTP logits [n, vocab] or None without
    --mtp). Raises RuntimeError on failure."""
    cmd = [args.tern, "generate", "--model", args.model,
           "--prompt-ids", ",".join(str(t) for t in prompt_ids),
           "--max-tokens", str(args.steps), "--temperature", "0",
           "--logits-out", logits_path] + list(args.tern_arg) + list(extra)
    if args.mtp:
        cmd += ["--mtp-logits-out", mtp_path(logits_path)]
    if args.quant_numerics:
        cmd += ["--quant-numerics", args.quant_numerics]
    if args.activations == "bf16":
        # Rounding to BF16 is discontinuous: tern's input to each rounding must match the
        # reference's far below BF16's ulp, or the two round apart (a BF16 or F16 KV cache alone
        # moves attention outputs by ~2^-9 and decorrelates every later rounding).
        cmd += ["--kv-cache-dtype", "f32"]
    print("running:", " ".join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=_TERN_ENV)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"could not run tern: {e}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"tern exited with status {proc.returncode}\n--- stdout\n{proc.stdout}"
                           f"\n--- stderr\n{proc.stderr}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if not lines:
        raise RuntimeError(f"tern printed nothing on stdout\n--- stderr\n{proc.stderr}")
    try:
        ids = json.loads(lines[-1])
    except json.JSONDecodeError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise RuntimeError(f"last stdout line of tern is not a JSON array of ints: {lines[-1]!r}")
    logits = load_logits(logits_path, "logits")
    mtp = load_logits(mtp_path(logits_path), "MTP logits") if args.mtp else None
    return ids, logits, mtp


def check_mtp(model, prompt, ids, tern_mtp, tol, label=""):
    """(d): tern's MTP rows against the reference's teacher-forced ones. -> ok"""
    n = len(ids)
    if tern_mtp.shape != (n, model.cfg.vocab_size):
        print(f"FAIL: {label}MTP logits shape {list(tern_mtp.shape)}, expected [{n}, {model.cfg.vocab_size}]")
        return False
    ref = model.mtp_teacher_forced(prompt + ids, n)
    errs = [nrms(tern_mtp[i], ref[i]) for i in range(n)]
    bad = [i for i, e in enumerate(errs) if not (np.isfinite(e) and e <= tol)]
    for i in bad:
        print(f"  {label}MTP row {i}: nrms {errs[i]:.3e} > {tol:g}")
    print(f"(d) {label}MTP nrms: max {max(errs):.3e} at row {int(np.argmax(errs))}, "
          f"mean {float(np.mean(errs)):.3e}, tol {tol:g}: {len(bad)} rows over")
    return not bad


def is_tie(row, token, rel):
    """True when row[token] is within rel (relative) of max(row)."""
    top = float(np.max(row))
    val = float(row[token])
    return top - val <= rel * max(abs(top), abs(val))


def nrms(a, ref):
    """rms(a - ref) / rms(ref); inf when the reference row is all zeros but a is not."""
    den = np.sqrt(np.mean(ref * ref))
    num = np.sqrt(np.mean((a - ref) ** 2))
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return float(num / den)


def compare(ids, tern_logits, ref_logits, tol, tie_rel, flips=False):
    """ids: [n]; tern_logits, ref_logits: [n, vocab] float64.
    flips (the BF16-activation mode): a token other than the reference argmax is also accepted
    when the reference's gap to it is within twice the row's largest logit error (the row itself
    within tol): one input on the other side of a BF16 rounding boundary moves a row by up to
    2^-8 and can swap two tokens that close.
    -> (ok: bool, rows: one dict per step with the values and the verdict of each check)"""
    ok = True
    rows = []
    for i, tok in enumerate(ids):
        lt, lr = tern_logits[i], ref_logits[i]
        ref_arg, tern_arg = int(np.argmax(lr)), int(np.argmax(lt))
        err = nrms(lt, lr)
        r = {"step": i, "id": tok, "ref_argmax": ref_arg, "tern_argmax": tern_arg, "nrms": err,
             "err_ok": bool(np.isfinite(err) and err <= tol) and bool(np.all(np.isfinite(lt))),
             "ref_tie": False, "self_tie": False}
        r["ref_ok"] = tok == ref_arg
        if not r["ref_ok"] and is_tie(lr, tok, tie_rel):
            r["ref_ok"] = r["ref_tie"] = True
        if not r["ref_ok"] and flips and r["err_ok"] and \
                float(np.max(lr)) - float(lr[tok]) <= 2 * float(np.max(np.abs(lt - lr))):
            r["ref_ok"] = r["ref_tie"] = True
        r["self_ok"] = tok == tern_arg
        if not r["self_ok"] and np.all(np.isfinite(lt)) and is_tie(lt, tok, tie_rel):
            r["self_ok"] = r["self_tie"] = True
        ok = ok and r["err_ok"] and r["ref_ok"] and r["self_ok"]
        rows.append(r)
    return ok, rows


def print_report(rows, tol, verbose):
    """Prints one line per row that fails or is a tie (every row when verbose)."""
    shown = [r for r in rows if verbose or r["ref_tie"] or r["self_tie"]
             or not (r["err_ok"] and r["ref_ok"] and r["self_ok"])]
    if not shown:
        print("every row passes (--verbose lists them)")
        return
    print(f"{'step':>4} {'id':>7} {'ref_argmax':>10} {'tern_argmax':>11} {'nrms':>10}  status")
    for r in shown:
        notes = []
        if not r["err_ok"]:
            notes.append(f"NRMS>{tol:g}")
        if not r["ref_ok"]:
            notes.append("TOKEN!=REF")
        elif r["ref_tie"]:
            notes.append("tie with reference argmax (accepted)")
        if not r["self_ok"]:
            notes.append("TOKEN!=ARGMAX(TERN LOGITS)")
        elif r["self_tie"]:
            notes.append("tie in tern's own logits (accepted)")
        print(f"{r['step']:>4} {r['id']:>7} {r['ref_argmax']:>10} {r['tern_argmax']:>11} "
              f"{r['nrms']:>10.3e}  {'; '.join(notes) or 'ok'}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", required=True, help="path to the tern binary")
    ap.add_argument("--model", required=True, help="Hugging Face model directory")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--steps", type=int, default=32, help="tokens to generate (default 32)")
    ap.add_argument("--tol", type=float, default=1e-3, help="max normalised RMS error per row (default 1e-3)")
    ap.add_argument("--tie-rel", type=float, default=1e-4,
                    help="relative gap under which a token is a tie with the argmax (default 1e-4)")
    ap.add_argument("--tern-arg", action="append", default=[],
                    help="extra argument for tern generate (repeatable; use --tern-arg=--flag)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed for tern (default 600)")
    ap.add_argument("--verbose", action="store_true", help="print every row")
    ap.add_argument("--quant-numerics", choices=("w4a16", "w4a4", "w4a8"),
                    help="pass to tern generate; w4a4 and w4a8 also make the reference fake-quantize NVFP4 inputs "
                         "the same way (give w4a8 an F32 KV cache: --tern-arg=--kv-cache-dtype=f32)")
    ap.add_argument("--activations", choices=("f32", "bf16"), default=os.environ.get("TERN_TEST_ACTIVATIONS") or "f32",
                    help="tern's activation numerics, matched by the reference (default $TERN_TEST_ACTIVATIONS or f32)")
    ap.add_argument("--mtp", action="store_true",
                    help="also compare the MTP head's logits (tern generate --mtp-logits-out)")
    ap.add_argument("--prefill-chunks", default="",
                    help="comma-separated --prefill-chunk sizes to run and compare with each other (the first is the base)")
    ap.add_argument("--chunk-tern-arg", action="append", default=[],
                    help="extra tern argument for the --prefill-chunks runs only (repeatable)")
    ap.add_argument("--chunk-tol", type=float, default=1e-4,
                    help="max normalised RMS difference per row between prefill-chunk runs (default 1e-4)")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be >= 1")
    prompt = parse_ids(args.prompt_ids)

    why = set_activations(args)
    if why is not None:
        print(f"SKIP: --activations bf16 needs tern's amx path: {why}")
        return 77
    print(f"activations: {args.activations}", flush=True)
    try:
        # tern's avx512-bf16 path rounds attention's inputs too; its amx path keeps attention in f32.
        model = load_reference(args.model, cache_weights=False, w4a4=args.quant_numerics == "w4a4",
                               w4a8=args.quant_numerics == "w4a8",
                               bf16_activations=args.activations == "bf16",
                               bf16_attention=args.activations == "bf16"
                               and _TERN_ENV.get("TERN_CPU_PATH") == "avx512-bf16")
    except Exception as e:  # a bad model dir is a test failure with a readable reason
        print(f"FAIL: reference cannot load {args.model}: {type(e).__name__}: {e}")
        return 1
    vocab = model.cfg.vocab_size
    if min(prompt) < 0 or max(prompt) >= vocab:
        print(f"FAIL: prompt id outside [0, {vocab})")
        return 1

    with tempfile.TemporaryDirectory(prefix="tern-compare-") as tmp:
        try:
            ids, tern_logits, tern_mtp = run_tern(args, prompt, os.path.join(tmp, "logits.npy"))
        except RuntimeError as e:
            print(f"FAIL: {e}")
            return 1

    n = len(ids)
    problems = []
    if n == 0:
        problems.append("tern generated no tokens")
    if n > args.steps:
        problems.append(f"tern generated {n} tokens, more than --max-tokens {args.steps}")
    if tern_logits.shape != (n, vocab):
        problems.append(f"logits shape {list(tern_logits.shape)}, expected [{n}, {vocab}] "
                        "(one row per generated id)")
    if any(t < 0 or t >= vocab for t in ids):
        problems.append(f"generated id outside [0, {vocab})")
    if problems:
        print("tern ids:", json.dumps(ids))
        for p in problems:
            print("FAIL:", p)
        return 1

    # Teacher forcing: row i of the result predicts ids[i].
    seq = prompt + ids[:-1]
    ref_logits = model.forward(seq)[len(prompt) - 1:]  # [n, vocab]
    row_tol = args.tol
    if args.activations == "bf16":
        # The two sides' inputs to a rounding still differ by f32 rounding, so now and then one
        # element rounds to the neighbouring BF16 value (2^-8 of it) on one side only: each row
        # may be off by up to 2^-8, the mean over rows must stay within --tol. A rounding that
        # is missing or wrong anywhere moves every row (mean 2e-3 and more on the tiny models).
        row_tol = max(args.tol, 2.0 ** -8)
    ok, rows = compare(ids, tern_logits, ref_logits, row_tol, args.tie_rel, flips=args.activations == "bf16")
    if args.activations == "bf16":
        mean_err = float(np.mean([r["nrms"] for r in rows]))
        print(f"(a') bf16 activations: mean nrms {mean_err:.3e}, tol {args.tol:g}")
        ok = ok and mean_err <= args.tol

    print_report(rows, row_tol, args.verbose)
    errs = [r["nrms"] for r in rows]
    worst = int(np.argmax(errs))
    ref_greedy_match = sum(r["id"] == r["ref_argmax"] for r in rows)
    ties = sum(r["ref_tie"] for r in rows)
    print(f"model {args.model} ({model.cfg.model_type}), prompt {len(prompt)} tokens, "
          f"{n} generated (asked {args.steps})")
    print("tern ids:", json.dumps(ids))
    print(f"(a) nrms: max {max(errs):.3e} at step {worst}, mean {float(np.mean(errs)):.3e}, tol {row_tol:g}: "
          f"{sum(not r['err_ok'] for r in rows)} rows over")
    print(f"(b) tokens == reference argmax: {ref_greedy_match}/{n}, accepted ties {ties}, "
          f"mismatches {sum(not r['ref_ok'] for r in rows)}")
    print(f"(c) tokens == argmax of tern's logits: mismatches {sum(not r['self_ok'] for r in rows)}")
    if args.mtp:
        ok = check_mtp(model, prompt, ids, tern_mtp, row_tol) and ok
    if args.prefill_chunks:
        ok = check_prefill_chunks(args, model, prompt) and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def check_prefill_chunks(args, model, prompt):
    """Runs tern once per --prefill-chunks size; each run must pass against the reference and
    match the first run (same tokens, per-row nrms <= --chunk-tol). -> ok"""
    try:
        sizes = [int(t) for t in args.prefill_chunks.split(",") if t.strip()]
    except ValueError:
        print(f"FAIL: --prefill-chunks {args.prefill_chunks!r} is not a list of integers")
        return False
    ok, base, ref_cache = True, None, {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="tern-compare-") as tmp:
            try:
                ids, logits, mtp = run_tern(args, prompt, os.path.join(tmp, "logits.npy"),
                                            ["--prefill-chunk", str(size)] + list(args.chunk_tern_arg))
            except RuntimeError as e:
                print(f"FAIL: prefill chunk {size}: {e}")
                ok = False
                continue
        n, vocab = len(ids), model.cfg.vocab_size
        if n == 0 or logits.shape != (n, vocab) or any(t < 0 or t >= vocab for t in ids):
            print(f"FAIL: prefill chunk {size}: {n} ids, logits shape {list(logits.shape)}")
            ok = False
            continue
        key = tuple(ids)
        if key not in ref_cache:
            ref_cache[key] = model.forward(prompt + ids[:-1])[len(prompt) - 1:]
        good, rows = compare(ids, logits, ref_cache[key], args.tol, args.tie_rel)
        worst = max(r["nrms"] for r in rows)
        line = f"prefill chunk {size}: vs reference max nrms {worst:.3e} -> {'ok' if good else 'FAIL'}"
        if base is None:
            base = (size, ids, logits)
        else:
            same = ids == base[1] and logits.shape == base[2].shape
            diff = max(nrms(logits[i], base[2][i]) for i in range(n)) if same else float("inf")
            good = good and same and diff <= args.chunk_tol
            line += (f"; vs chunk {base[0]}: tokens {'equal' if ids == base[1] else 'DIFFER'}, "
                     f"max nrms {diff:.3e} (tol {args.chunk_tol:g}) -> {'ok' if good else 'FAIL'}")
        print(line)
        if not good:
            print_report(rows, args.tol, False)
        if args.mtp:
            good = check_mtp(model, prompt, ids, mtp, args.tol, f"prefill chunk {size}: ") and good
        ok = ok and good
    return ok


if __name__ == "__main__":
    sys.exit(main())
