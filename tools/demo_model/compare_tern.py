# Runs tern on an exported demo model's goldens (export.py) and compares greedy token ids:
# `tern generate --model DIR --prompt-ids ... --max-tokens N` per case against PyTorch's
# output_ids. A case matches when the ids are equal; a divergence at a step whose torch
# top-1/top-2 logit margin is below --tie-margin is reported as a near-tie (BF16 / summation
# order), anything else as a mismatch (exit status 1).
#
#   /usr/bin/python3 tools/demo_model/compare_tern.py --model EXPORT [--goldens EXPORT/goldens.json]
#       [--tern build/src/app/tern] [--reference]   (--reference: also tests/reference/qwen3_ref.py)
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def tern_ids(tern, model, prompt_ids, max_tokens, extra=()):
    r = subprocess.run([tern, "generate", "--model", model, "--prompt-ids", ",".join(map(str, prompt_ids)),
                        "--max-tokens", str(max_tokens), "--temperature", "0", *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return json.loads(r.stdout.strip().splitlines()[-1])


def compare(gold, got, tie_margin):
    """-> ('match' | 'near-tie' | 'mismatch', first differing step or None)."""
    n = min(len(gold["output_ids"]), len(got))
    for i in range(n):
        if gold["output_ids"][i] != got[i]:
            return ("near-tie" if gold["margins"][i] < tie_margin else "mismatch"), i
    if len(got) != len(gold["output_ids"]):
        return "mismatch", n
    return "match", None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True)
    ap.add_argument("--goldens")
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "src", "app", "tern"))
    ap.add_argument("--tie-margin", type=float, default=0.05)
    ap.add_argument("--reference", action="store_true",
                    help="also run the float64 NumPy reference (tests/reference/qwen3_ref.py) on each case")
    ap.add_argument("--tern-arg", action="append", default=[], help="extra argument for tern generate")
    args = ap.parse_args()
    goldens = json.load(open(args.goldens or os.path.join(args.model, "goldens.json")))
    ref = None
    if args.reference:
        sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
        import qwen3_ref
        ref = qwen3_ref.Model(args.model)
    counts = {"match": 0, "near-tie": 0, "mismatch": 0}
    for c in goldens["cases"]:
        got = tern_ids(args.tern, args.model, c["prompt_ids"], goldens["max_new_tokens"], args.tern_arg)
        verdict, at = compare(c, got, args.tie_margin)
        counts[verdict] += 1
        line = f"{verdict:9s} {c['name']}"
        if at is not None:
            line += (f" at step {at}/{len(c['output_ids'])} (torch margin {c['margins'][at] if at < len(c['margins']) else '-'}):"
                     f" torch {c['output_ids'][max(0, at - 2):at + 3]} tern {got[max(0, at - 2):at + 3]}")
        if ref is not None:
            steps = len(c["output_ids"])
            rids = ref.greedy(c["prompt_ids"], steps)[0]
            rv, rat = compare(c, rids, args.tie_margin)
            line += f"; float64 reference vs torch: {rv}" + (f" at {rat}" if rat is not None else "")
        print(line, flush=True)
    print(f"tern vs torch greedy ids on {len(goldens['cases'])} prompts: {counts['match']} equal, "
          f"{counts['near-tie']} diverge after a near-tie, {counts['mismatch']} mismatch")
    sys.exit(1 if counts["mismatch"] else 0)


if __name__ == "__main__":
    main()
