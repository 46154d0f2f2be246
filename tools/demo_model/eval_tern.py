# Accuracy of an exported demo model *in tern* on two-digit multiplications (10..99 × 10..99),
# thinking off and on, judged by the battery's rules (data.judge_parts: thinking off = the
# content holds the product and no other number, no reasoning; thinking on = reasoning came
# back separately and the content holds the product). Prompts are the battery's:
# "What is A × B? Reply with the number only." (off) / "... Think it through, then give the
# final answer." (on). Also runs the battery's other requests once and reports them.
#
# Two backends:
#   --serve  (default) starts `tern serve --model DIR` on a free port (the parsers detected from
#            the model's chat template; or uses --url of a running server) and
#            sends /v1/chat/completions with chat_template_kwargs {"enable_thinking": ...},
#            temperature 0, --concurrency requests in flight (tern batches them).
#   --generate  one `tern generate --model DIR --prompt TEXT` per prompt, TEXT rendered by
#            chat.py (tern generate --chat has no switch for enable_thinking); slow, for --sample.
#
#   /usr/bin/python3 tools/demo_model/eval_tern.py --model EXPORT [--sample 200] [--thinking off|on|both]
#       [--json report.json]        (no --sample: all 8,100 products per mode)
import argparse
import concurrent.futures
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import data  # noqa: E402

MAX_TOKENS = {False: 32, True: 160}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A tern serve child process (or an existing server at url)."""

    def __init__(self, tern, model, url=None, threads=0, log=None):
        self.proc = None
        if url:
            self.url = url.rstrip("/")
        else:
            port = free_port()
            self.url = f"http://127.0.0.1:{port}"
            cmd = [tern, "serve", "--model", model, "--port", str(port), "--threads", str(threads),
                   "--log-level", "warning"]
            self.proc = subprocess.Popen(cmd, stdout=log or subprocess.DEVNULL, stderr=log or subprocess.DEVNULL)
        deadline = time.time() + 300
        while True:
            try:
                with urllib.request.urlopen(self.url + "/v1/models", timeout=5) as r:
                    self.model = json.load(r)["data"][0]["id"]
                    return
            except Exception:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"tern serve exited with {self.proc.returncode}")
                if time.time() > deadline:
                    raise
                time.sleep(0.5)

    def chat(self, sample, max_tokens):
        body = {"model": self.model, "messages": sample.messages, "max_tokens": max_tokens, "temperature": 0,
                "chat_template_kwargs": {"enable_thinking": sample.thinking}}
        if sample.tools:
            body["tools"] = sample.tools
        req = urllib.request.Request(self.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            msg = json.load(r)["choices"][0]["message"]
        reasoning = msg.get("reasoning_content", msg.get("reasoning"))
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg.get("tool_calls") or []]
        return reasoning, msg.get("content"), calls

    def close(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def generate_reply(tern, model, sample, max_tokens):
    """tern generate on the chat.py-rendered prompt -> (reasoning, content, None)."""
    r = subprocess.run([tern, "generate", "--model", model, "--prompt", sample.prompt_text(),
                        "--max-tokens", str(max_tokens), "--temperature", "0"],
                       capture_output=True, text=True, check=True)
    reasoning, content = data.split_reply(r.stdout.rstrip("\n"))
    return reasoning, content, None


def run_all(reply, samples, max_tokens, concurrency):
    with concurrent.futures.ThreadPoolExecutor(concurrency) as ex:
        return list(ex.map(lambda s: reply(s, max_tokens(s)), samples))


def main():
    ap = argparse.ArgumentParser(description="Two-digit multiplication accuracy of a demo model in tern.")
    ap.add_argument("--model", required=True, help="exported model directory (BF16 or NVFP4)")
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "src", "app", "tern"))
    ap.add_argument("--url", help="use this running tern serve instead of starting one")
    ap.add_argument("--generate", action="store_true", help="use tern generate per prompt instead of tern serve")
    ap.add_argument("--sample", type=int, help="this many random pairs per mode (deterministic); default all 8,100")
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--thinking", choices=["off", "on", "both"], default="both")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="tern serve --threads")
    ap.add_argument("--json", help="write the report here")
    args = ap.parse_args()

    pairs = data.all_pairs()
    if args.sample:
        pairs = random.Random(args.seed).sample(pairs, args.sample)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.thinking]
    server = None
    if args.generate:
        def reply(s, n):
            return generate_reply(args.tern, args.model, s, n)
        conc = 1
    else:
        server = Server(args.tern, args.model, args.url, args.threads)
        reply, conc = server.chat, args.concurrency
    report = {"model": os.path.abspath(args.model), "pairs": len(pairs), "backend": "generate" if args.generate else "serve"}
    try:
        battery = data.battery_samples()
        names = ["ok", "mul_off_17x19", "mul_on_17x19", "recall_marigold", "tool_call", "tool_answer", "paris_chat"]
        chat_battery = [s for s in battery if s.messages is not None][:len(names)]
        res = run_all(reply, chat_battery, lambda s: 160 if s.thinking else 80, conc)
        report["battery"] = {n: bool(data.judge_parts(s, *r)) for n, s, r in zip(names, chat_battery, res)}
        report["battery_replies"] = {n: [r[0], r[1], r[2]] for n, r in zip(names, res)}
        print("battery:", " ".join(f"{n}={'pass' if ok else 'FAIL'}" for n, ok in report["battery"].items()), flush=True)
        for thinking in modes:
            samples = data.mul_eval_samples(pairs, thinking)
            t0 = time.time()
            res = run_all(reply, samples, lambda s: MAX_TOKENS[s.thinking], conc)
            ok = [data.judge_parts(s, *r) for s, r in zip(samples, res)]
            key = "thinking_" + ("on" if thinking else "off")
            acc = sum(ok) / len(ok)
            fails = [{"pair": p, "reasoning": r[0], "content": r[1]} for p, r, g in zip(pairs, res, ok) if not g]
            report[key] = {"accuracy": acc, "correct": sum(ok), "total": len(ok), "seconds": round(time.time() - t0, 1),
                           "failures": fails[:50]}
            print(f"{key}: {sum(ok)}/{len(ok)} = {acc:.4f} ({time.time() - t0:.0f} s); first failures: "
                  + "; ".join(f"{f['pair'][0]}×{f['pair'][1]} -> {f['content']!r}" for f in fails[:3]), flush=True)
    finally:
        if server is not None:
            server.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
