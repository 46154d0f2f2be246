# Greedy evaluation of the demo model in PyTorch (float32): the battery's exact requests
# (OK, 17 × 19 thinking off / on, MARIGOLD recall, get_weather call and answer, Paris in chat and
# as raw text), two-digit multiplications with thinking off and on on held-out and seen pairs,
# and samples of the other tasks, each judged by data.judge (the battery's rules).
# train.py runs a quick version periodically; the CLI evaluates a checkpoint:
#
#   /usr/bin/python3 tools/demo_model/evaluate.py --dir .train/demo [--pairs 200] [--all-pairs]
import argparse
import json
import os
import random
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import data  # noqa: E402

BATTERY_NAMES = ["ok", "mul_off_17x19", "mul_on_17x19", "recall_marigold", "tool_call_paris", "tool_answer_paris",
                 "paris_chat", "paris_raw", "sentence", "colors", "ocean", "count"]
MAX_NEW = {"mul_on": 72, "addsub_on": 48, "tool_call": 80, "tool_answer": 80, "generic": 96}


def other_samples(per_kind, seed=4242):
    """Deterministic samples of the non-arithmetic tasks (a stream the training never uses)."""
    want = {"echo": [], "capital": [], "recall": [], "tool_call": [], "tool_answer": [], "retrieval": [],
            "addsub_off": [], "addsub_on": []}
    i = 0
    while any(len(v) < per_kind for v in want.values()) and i < 200000:
        s = data.make_sample(seed, i)
        i += 1
        if s.kind in want and len(want[s.kind]) < per_kind:
            want[s.kind].append(s)
    return want


class Evaluator:
    def __init__(self, tok, pairs=50, per_kind=16):
        self.tok = tok
        self.stop = {tok.token_id("<|im_end|>"), tok.token_id("<|endoftext|>")}
        self.battery = data.battery_samples()
        self.sets = {
            "mul_off_held": data.mul_eval_samples(data.eval_pairs("held_out", pairs), False),
            "mul_on_held": data.mul_eval_samples(data.eval_pairs("held_out", pairs), True),
            "mul_off_seen": data.mul_eval_samples(data.eval_pairs("seen", pairs), False),
            "mul_on_seen": data.mul_eval_samples(data.eval_pairs("seen", pairs), True),
        }
        self.sets.update(other_samples(per_kind))

    def generate(self, model, samples, batch=64):
        """-> decoded replies (special tokens kept) for samples, batched by prompt length."""
        prompts = [self.tok.encode(s.prompt_text()) for s in samples]
        order = sorted(range(len(samples)), key=lambda i: len(prompts[i]))
        out = [None] * len(samples)
        for k in range(0, len(order), batch):
            idx = order[k:k + batch]
            steps = max(MAX_NEW.get(samples[i].kind, 40) for i in idx)
            gen = model.generate([prompts[i] for i in idx], steps, self.stop)
            for i, g in zip(idx, gen):
                out[i] = self.tok.decode(g)
        return out

    def run(self, model, quick=True, examples=True):
        res = {}
        replies = self.generate(model, self.battery)
        for name, s, r in zip(BATTERY_NAMES, self.battery, replies):
            res[name] = bool(data.judge(s, r))
            if examples and name in ("mul_on_17x19", "tool_call_paris", "tool_answer_paris", "recall_marigold", "sentence"):
                res[name + "_reply"] = r[:160]
        for name, samples in self.sets.items():
            if not samples:
                continue
            replies = self.generate(model, samples)
            res[name] = round(sum(data.judge(s, r) for s, r in zip(samples, replies)) / len(samples), 3)
        return res


def summary(res):
    keys = ["mul_off_held", "mul_off_seen", "mul_on_held", "mul_on_seen", "addsub_off", "addsub_on", "echo",
            "capital", "recall", "tool_call", "tool_answer", "retrieval"]
    parts = [f"{k} {res[k]:.2f}" for k in keys if k in res]
    bat = [n for n in BATTERY_NAMES if n in res]
    parts.append("battery " + "".join("+" if res[n] else "-" for n in bat) + f" ({sum(res[n] for n in bat)}/{len(bat)}: "
                 + ",".join(n for n in bat if not res[n]) + " failed)")
    return "; ".join(parts)


def full_multiplication(model, tok, thinking, batch=128, pairs=None):
    """Accuracy over all 8,100 two-digit products (or the given pairs) in torch."""
    ev = Evaluator.__new__(Evaluator)
    ev.tok = tok
    ev.stop = {tok.token_id("<|im_end|>"), tok.token_id("<|endoftext|>")}
    samples = data.mul_eval_samples(pairs or data.all_pairs(), thinking)
    replies = ev.generate(model, samples, batch)
    ok = [data.judge(s, r) for s, r in zip(samples, replies)]
    return sum(ok) / len(ok), [(s.answer, r) for s, r, g in zip(samples, replies, ok) if not g][:20]


def main():
    import bpe
    import train
    ap = argparse.ArgumentParser(description="Evaluate a demo-model checkpoint in PyTorch.")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ckpt", help="default DIR/ckpt.pt")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--all-pairs", action="store_true", help="all 8,100 products, thinking off and on")
    ap.add_argument("--quant", action="store_true", help="evaluate with NVFP4 fake-quantized weights")
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = bpe.Tokenizer.load(os.path.join(args.dir, "tokenizer", "tokenizer.json"))
    model, ck = train.load_model(args.ckpt or os.path.join(args.dir, "ckpt.pt"))
    if args.quant:
        from model import apply_nvfp4_
        apply_nvfp4_(model)
    t0 = time.time()
    res = Evaluator(tok, pairs=args.pairs).run(model)
    res["step"] = ck["step"]
    print(json.dumps(res, indent=1))
    print(summary(res), f"({time.time() - t0:.0f} s)")
    if args.all_pairs:
        for thinking in (False, True):
            acc, bad = full_multiplication(model, tok, thinking)
            print(f"all 8,100 products, thinking {'on' if thinking else 'off'}: {acc:.4f}; first failures {bad[:5]}")


if __name__ == "__main__":
    main()
