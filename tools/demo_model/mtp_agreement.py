# The MTP head's top-1 agreement with the next-next token on held-out chats (issue 23), in
# PyTorch and in tern on the same token ids:
#
#   /usr/bin/python3 tools/demo_model/mtp_agreement.py --model models/demo-qwen35 \
#       [--dir .train/demo-qwen35] [--chats 200] [--seed 7] [--tern build/src/app/tern] [--json OUT]
#
# Chats: data.make_sample(seed, i) for i < --chats with a seed the run did not train on (the
# run's stream is seed 1), tokenized with the model directory's tokenizer. Teacher-forced: for
# every position p whose token p + 2 is a reply token (loss weight > 0), the head's argmax from
# the main model's hidden state at p and token p + 1 is compared with token p + 2.
#  - PyTorch (with --dir): model35.mtp_agreement on the run's ckpt.pt, with and without the NVFP4
#    weight round trip (the last 10% of the run trained through it);
#  - tern: `tern generate --prompt-ids <the whole chat> --max-tokens 1 --mtp-logits-out F
#    --mtp-logits-all-rows` on --model (BF16 export or the NVFP4 checkpoint); row p of F is the
#    head's logits at p.
# Prints hits / total for each and, for each PyTorch figure, the two-proportion z against tern's
# (|z| < 2: equal within sampling noise; the pairs are not independent, so this is conservative).
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import data  # noqa: E402


def held_out_chats(tok, seed, count, max_len):
    """-> list of (ids, weights): weights[t] is the loss weight of token t (0 in the prompt)."""
    out = []
    i = 0
    while len(out) < count:
        s = data.make_sample(seed, i, holdout=False)
        i += 1
        p = tok.encode(s.prompt_text())
        c = tok.encode(s.completion_text())
        if len(p) + len(c) > max_len:
            continue
        out.append((p + c, [0.0] * len(p) + [1.0] * len(c)))
    return out


def tern_agreement(tern, model, chats):
    hits = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mtp.npy")
        for ids, w in chats:
            r = subprocess.run([tern, "generate", "--model", model, "--prompt-ids", ",".join(map(str, ids)),
                                "--max-tokens", "1", "--temperature", "0", "--threads", "1",
                                "--mtp-logits-out", path, "--mtp-logits-all-rows"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"tern generate failed: {r.stderr.strip()}")
            pred = np.load(path).argmax(-1)     # row p predicts ids[p + 2]
            if len(pred) < len(ids) - 1:
                raise RuntimeError(f"tern wrote {len(pred)} MTP rows for a {len(ids)}-token chat")
            for p in range(len(ids) - 2):
                if w[p + 2] > 0:
                    total += 1
                    hits += int(pred[p]) == ids[p + 2]
    return hits, total


def z_two_proportions(h1, n1, h2, n2):
    p = (h1 + h2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    return 0.0 if se == 0 else (h1 / n1 - h2 / n2) / se


def main():
    ap = argparse.ArgumentParser(description="MTP head top-1 agreement with the next-next token, PyTorch and tern")
    ap.add_argument("--model", required=True, help="tern model directory (an export or models/demo-qwen35)")
    ap.add_argument("--dir", help="the training run folder (ckpt.pt) for the PyTorch figures")
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7, help="data seed of the held-out chats (the run trains on 1)")
    ap.add_argument("--max-len", type=int, default=448)
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "src", "app", "tern"))
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--expect", help="a --json file written with --dir: fail (status 1) unless tern's agreement "
                                     "on the same chats is within noise (|z| <= 2) of its PyTorch NVFP4 figure")
    args = ap.parse_args()

    data.configure("qwen3_5")
    tok = bpe.Tokenizer.load(os.path.join(args.model, "tokenizer.json"))
    chats = held_out_chats(tok, args.seed, args.chats, args.max_len)
    res = {"chats": len(chats), "seed": args.seed}
    h, n = tern_agreement(args.tern, args.model, chats)
    res["tern"] = {"hits": h, "total": n, "agreement": h / n}
    print(f"tern ({args.model}): {h} / {n} = {h / n:.4f}")
    if args.dir:
        import torch
        import train
        model, _ = train.load_model(os.path.join(args.dir, "ckpt.pt"))
        torch.set_num_threads(1)
        for quant in (False, True):
            model.quant = quant
            ph, pn = model.mtp_agreement([c[0] for c in chats], [c[1] for c in chats])
            key = "torch_nvfp4" if quant else "torch_bf16"
            z = z_two_proportions(ph, pn, h, n)
            res[key] = {"hits": ph, "total": pn, "agreement": ph / pn, "z_vs_tern": z}
            print(f"PyTorch ({'NVFP4 weight round trip' if quant else 'float weights'}): {ph} / {pn} = "
                  f"{ph / pn:.4f}  (z vs tern {z:+.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if args.expect:
        want = json.load(open(args.expect))
        if (want["chats"], want["seed"]) != (res["chats"], res["seed"]):
            sys.exit(f"FAIL: {args.expect} is for {want['chats']} chats of seed {want['seed']}, "
                     f"this run {res['chats']} of seed {res['seed']}")
        t = want["torch_nvfp4"]
        z = z_two_proportions(t["hits"], t["total"], h, n)
        if t["total"] != n or abs(z) > 2:
            sys.exit(f"FAIL: tern's MTP agreement {h} / {n} against PyTorch's {t['hits']} / {t['total']} (z {z:+.2f})")
        print(f"MTP agreement: tern {h} / {n}, PyTorch {t['hits']} / {t['total']} (z {z:+.2f}): equal within noise")


if __name__ == "__main__":
    main()
