"""Checks that a prompt processed in one forward pass gives the same logits and
tokens as the same prompt fed one token at a time (and in odd-sized chunks).

Usage: batch_vs_stepwise.py --tern BIN --model DIR --prompt-ids 1,2,3 [--steps 8] [--tol 1e-5]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(tern, model, ids, steps, chunk, out):
    cmd = [tern, "generate", "--model", model, "--prompt-ids", ids, "--max-tokens", str(steps),
           "--temperature", "0", "--ignore-eos", "--prefill-chunk", str(chunk), "--logits-out", out,
           # An f32 cache isolates the batching arithmetic: with a 16-bit cache, last-bit
           # differences between the batched and one-token matmuls can flip a rounding.
           "--kv-cache-dtype", "f32"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr}")
    tokens = json.loads(p.stdout.strip().splitlines()[-1])
    return tokens, np.load(out).astype(np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tern", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base_tokens, base = run(a.tern, a.model, a.prompt_ids, a.steps, 4096, os.path.join(d, "a.npy"))
        failures = 0
        for chunk in (1, 5):
            tokens, logits = run(a.tern, a.model, a.prompt_ids, a.steps, chunk, os.path.join(d, f"c{chunk}.npy"))
            err = np.sqrt(np.mean((logits - base) ** 2, axis=1)) / np.sqrt(np.mean(base ** 2, axis=1))
            ok = tokens == base_tokens and logits.shape == base.shape and float(err.max()) <= a.tol
            print(f"chunk {chunk}: max normalised RMS error {err.max():.2e}, tokens {'equal' if tokens == base_tokens else 'DIFFER'}"
                  f" -> {'ok' if ok else 'FAIL'}")
            failures += not ok
    print(f"{2 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
