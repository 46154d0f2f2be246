# Speculative decoding on a demo model's own task, measured (issue 23): `tern serve` started
# once per configuration, rounds interleaved, the same chat requests each time.
#
#   /usr/bin/python3 tools/demo_model/bench_nextn.py --model models/demo-qwen35 \
#       [--config plain= --config nextn=--speculative-algorithm,NEXTN ...] [--concurrency 1 8]
#       [--requests 32] [--rounds 3] [--thinking on] [--json OUT]
#
# Requests: "What is A × B? Think it through, then give the final answer." for fixed pseudo-random
# pairs (thinking on by default: a reply of ~60 tokens, the reasoning trace included), temperature
# 0, max_tokens 160. Per configuration and concurrency: output tokens per second over the wall
# time of all requests (completion_tokens summed), and the server's accept length
# (sglang:spec_accept_length, tokens per verify forward) from /metrics. Every configuration's
# replies are checked equal to the first's (greedy: speculation must not change them).
import argparse
import concurrent.futures
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=300):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def start(tern, model, args, threads):
    port = free_port()
    proc = subprocess.Popen([tern, "serve", "--model", model, "--port", str(port), "--threads", str(threads),
                             "--enable-metrics", "--log-level", "warning", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            get(url + "/health")
            return proc, url
        except Exception:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"tern serve {' '.join(args)} did not start")
            time.sleep(0.2)


def run_round(url, prompts, concurrency, thinking):
    def one(p):
        r = post(url + "/v1/chat/completions",
                 {"model": "m", "messages": [{"role": "user", "content": p}], "temperature": 0, "max_tokens": 160,
                  "chat_template_kwargs": {"enable_thinking": thinking}})
        m = r["choices"][0]["message"]
        return r["usage"]["completion_tokens"], (m.get("reasoning_content") or "") + "|" + (m.get("content") or "")
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as ex:
        out = list(ex.map(one, prompts))
    wall = time.time() - t0
    return sum(n for n, _ in out) / wall, [text for _, text in out]


def accept_length(url):
    m = re.search(r"^sglang:spec_accept_length\{[^}]*\} (\S+)$", get(url + "/metrics"), re.M)
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description="NEXTN / NGRAM speed on the demo model's own chats")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "src", "app", "tern"))
    ap.add_argument("--config", action="append", default=[],
                    help="NAME=ARG,ARG,...: a server configuration (default: plain, NEXTN recompute, NEXTN per-token)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--thinking", choices=["on", "off"], default="on")
    ap.add_argument("--json")
    args = ap.parse_args()
    configs = args.config or ["plain=", "nextn=--speculative-algorithm,NEXTN",
                              "nextn_per_token=--speculative-algorithm,NEXTN,--speculative-state-rollback,per-token"]
    configs = [(c.split("=", 1)[0], [a for a in c.split("=", 1)[1].split(",") if a]) for c in configs]
    rng = random.Random(5)
    suffix = " Think it through, then give the final answer." if args.thinking == "on" else " Reply with the number only."
    prompts = [f"What is {rng.randint(10, 99)} × {rng.randint(10, 99)}?{suffix}" for _ in range(args.requests)]
    results = {name: {c: [] for c in args.concurrency} for name, _ in configs}
    accept = {name: [] for name, _ in configs}
    replies = {}
    for rnd in range(args.rounds):
        for name, cargs in configs:
            proc, url = start(args.tern, args.model, cargs, args.threads)
            try:
                run_round(url, prompts[:2], 1, args.thinking == "on")   # warm-up
                for c in args.concurrency:
                    tps, texts = run_round(url, prompts, c, args.thinking == "on")
                    results[name][c].append(tps)
                    if c not in replies:
                        replies[c] = texts
                    elif texts != replies[c]:
                        diff = sum(a != b for a, b in zip(texts, replies[c]))
                        print(f"WARNING: {name} at concurrency {c}: {diff} replies differ from the first configuration's")
                accept[name].append(accept_length(url))
            finally:
                proc.terminate()
                proc.wait()
            print(f"round {rnd + 1} {name}: " + ", ".join(f"c={c} {results[name][c][-1]:.1f} tok/s"
                                                     for c in args.concurrency)
                  + (f", accept length {accept[name][-1]:.2f}" if accept[name][-1] else ""), flush=True)
    base = configs[0][0]
    summary = {}
    for name, _ in configs:
        summary[name] = {}
        for c in args.concurrency:
            med = statistics.median(results[name][c])
            ratio = statistics.median(a / b for a, b in zip(results[name][c], results[base][c]))
            summary[name][c] = {"tok_s": med, "ratio_vs_" + base: ratio, "rounds": results[name][c]}
        al = [a for a in accept[name] if a]
        summary[name]["accept_length"] = statistics.median(al) if al else None
        print(f"{name}: " + ", ".join(f"c={c} {summary[name][c]['tok_s']:.1f} tok/s ({summary[name][c]['ratio_vs_' + base]:.2f}x)"
                                      for c in args.concurrency)
              + (f", accept length {summary[name]['accept_length']:.2f}" if al else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
