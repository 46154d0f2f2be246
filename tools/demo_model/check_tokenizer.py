# Checks the demo tokenizer three ways on a few hundred strings (rendered training chats, the
# battery prompts, edge cases: digits, whitespace runs, CRLF, unicode, emoji, partial and
# adjacent special tokens): bpe.Tokenizer (what training uses) == the Hugging Face Rust
# tokenizers library (check_tokenizer.mjs) == `tern tokenize`; decode(encode(s)) == s.
# Also checks that tern's chat template rendering (`tern template`) equals chat.py's (Jinja2).
#
#   /usr/bin/python3 tools/demo_model/check_tokenizer.py --model DIR [--tern build/src/app/tern] [--count 300]
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import data  # noqa: E402

EDGE = ["12345678", "\n\n\n\n", "x<|im_end|><|im_start|>y<|endoftext|>z", "DON'T", "a\u0085'T", "a\ufeff're",
        "<|im_start", "<think></think><tool_call>", "</tool_response>\n", "  trailing  ", "\ttab\tand\r\nCRLF\r\n",
        "日本語のテキスト", "emoji 👩‍👩‍👧 and ✓", "é vs e\u0301 (NFC)", "17×19=323", "-42 + 3.14", "MARIGOLD", "Noted.",
        "What is 17 × 19? Reply with the number only.", "The capital city of France is", " Paris.", "",
        "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}", "°C", "1,234,567.89"]


def strings(count):
    out = list(EDGE)
    for s in data.battery_samples():
        out.append(s.prompt_text() + s.completion)
    for i in range(count):
        s = data.make_sample(77, i)
        out.append(s.prompt_text() + s.completion_text())
    return out


def tern_tokenize(tern, model, text):
    r = subprocess.run([tern, "tokenize", "--model", model, "--text", text], capture_output=True, text=True)
    if r.returncode != 0:
        return "error: " + r.stderr.strip()
    return json.loads(r.stdout)


def tern_template(tern, model, s):
    with tempfile.TemporaryDirectory() as d:
        mp = os.path.join(d, "messages.json")
        with open(mp, "w") as f:
            json.dump(s.messages, f, ensure_ascii=False)
        cmd = [tern, "template", "--model", model, "--messages", mp,
               "--kwargs", json.dumps({"enable_thinking": s.thinking})]
        if s.tools:
            tp = os.path.join(d, "tools.json")
            with open(tp, "w") as f:
                json.dump(s.tools, f)
            cmd += ["--tools", tp]
        r = subprocess.run(cmd, capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else "error: " + r.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="folder with tokenizer.json (and tokenizer_config.json)")
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "src", "app", "tern"))
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--templates", type=int, default=40, help="chat samples to render with tern template")
    args = ap.parse_args()
    tok = bpe.Tokenizer.load(os.path.join(args.model, "tokenizer.json"))
    texts = strings(args.count)
    hf = json.loads(subprocess.run(["node", os.path.join(HERE, "check_tokenizer.mjs"),
                                    os.path.join(args.model, "tokenizer.json")],
                                   input=json.dumps(texts), capture_output=True, text=True, check=True).stdout)
    bad = 0
    for i, (t, h) in enumerate(zip(texts, hf)):
        ours = tok.encode(t)
        problems = []
        if ours != h["ids"]:
            problems.append(f"python {ours[:20]} vs HF {h['ids'][:20]}")
        if h["dec"] != tok.decode(ours):
            problems.append(f"decode HF {h['dec']!r} vs python {tok.decode(ours)!r}")
        if os.path.exists(args.tern) and (i < len(EDGE) + 20 or i % 3 == 0):
            tt = tern_tokenize(args.tern, args.model, t)
            if tt != h["ids"]:
                problems.append(f"tern {str(tt)[:120]} vs HF {h['ids'][:20]}")
        if problems:
            bad += 1
            print(f"MISMATCH {t[:60]!r}: " + "; ".join(problems))
    print(f"tokenizer: {len(texts) - bad}/{len(texts)} strings agree (python, HF tokenizers, tern)")
    tbad = 0
    if os.path.exists(args.tern) and args.templates:
        samples = [s for s in data.battery_samples() if s.messages] + \
                  [s for s in (data.make_sample(78, i) for i in range(args.templates)) if s.messages]
        for s in samples:
            if tern_template(args.tern, args.model, s) != s.prompt_text():
                tbad += 1
                print(f"TEMPLATE MISMATCH {s.kind}:\n{tern_template(args.tern, args.model, s)!r}\n{s.prompt_text()!r}")
        print(f"template: {len(samples) - tbad}/{len(samples)} renderings agree (Jinja2, tern)")
    sys.exit(1 if bad or tbad else 0)


if __name__ == "__main__":
    main()
