#!/usr/bin/env python3
"""Quantization quality, reported (not asserted): top-1 agreement and KL divergence of the
next-token distribution between a reference checkpoint (BF16) and quantized versions of it,
computed by tern itself (`tern generate --logits-out`) over a fixed prompt set.

The prompts are the prefixes of a fixed text (every `--stride` tokens, from `--min-len`), so
the set covers short and long contexts; each prefix's next-token distribution is compared.

Usage: quality.py --tern build/src/app/tern --ref BF16_DIR --model NVFP4_DIR [--model FP8_DIR ...]
                  [--text FILE] [--kv-cache-dtype ...] [--quant-numerics w4a4]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

DEFAULT_TEXT = (
    "The committee met on a grey Tuesday morning to review the harbour plans. After two hours of "
    "debate, they agreed to rebuild the north pier first, because the storms of the previous winter "
    "had damaged it most. The engineer presented three options, each with a different cost: 1.2 "
    "million, 950 thousand and 1.7 million. def area(r):\n    return 3.14159 * r * r\n"
    "Question: what is 12 times 12? Answer: 144. The capital city of France is Paris, and the capital "
    "of Japan is Tokyo. She opened the window, listened to the rain, and began to write."
)


def tokenize(tern, model, text):
    out = subprocess.run([tern, "tokenize", "--model", model, "--text", text], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def next_token_logits(tern, model, ids, extra):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "l.npy")
        subprocess.run([tern, "generate", "--model", model, "--prompt-ids", ",".join(map(str, ids)), "--max-tokens",
                        "1", "--temperature", "0", "--ignore-eos", "--logits-out", path] + extra, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return np.load(path)[0].astype(np.float64)


def log_softmax(x):
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", required=True)
    ap.add_argument("--ref", required=True, help="reference (BF16) checkpoint")
    ap.add_argument("--model", action="append", required=True, help="quantized checkpoint (repeatable)")
    ap.add_argument("--text", help="file with the text whose prefixes are the prompts")
    ap.add_argument("--min-len", type=int, default=8)
    ap.add_argument("--stride", type=int, default=4)
    ap.add_argument("--max-prompts", type=int, default=32)
    ap.add_argument("--tern-arg", action="append", default=[], help="extra flag for tern generate (repeatable)")
    a = ap.parse_args()
    text = open(a.text, encoding="utf-8").read() if a.text else DEFAULT_TEXT
    ids = tokenize(a.tern, a.ref, text)
    prefixes = [ids[:n] for n in range(a.min_len, len(ids) + 1, a.stride)][: a.max_prompts]
    ref = [log_softmax(next_token_logits(a.tern, a.ref, p, [])) for p in prefixes]
    print(f"{len(prefixes)} prompts ({a.min_len}..{len(prefixes[-1])} tokens), reference {a.ref}")
    print(f"{'model':<48} {'top-1 agree':>11} {'mean KL':>10} {'max KL':>10}")
    for m in a.model:
        agree, kls = 0, []
        for p, r in zip(prefixes, ref):
            q = log_softmax(next_token_logits(a.tern, m, p, a.tern_arg))
            agree += int(np.argmax(q) == np.argmax(r))
            kls.append(float(np.sum(np.exp(r) * (r - q))))
        print(f"{m:<48} {agree / len(prefixes):>10.1%} {np.mean(kls):>10.4f} {np.max(kls):>10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
