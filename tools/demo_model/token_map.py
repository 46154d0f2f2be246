# A hot-token map for NEXTN drafting (`tern serve --speculative-token-map FILE`) made the way
# SGLang's are, from the token frequencies of replies on a corpus: here the model's own greedy
# replies to held-out multiplication chats (pairs drawn with another seed than bench_nextn.py's),
# thinking on and off, tokenized without special tokens; every token that occurs, plus the
# tokenizer's added (special) tokens, sorted, as a JSON array.
#
#   /usr/bin/python3 tools/demo_model/token_map.py --model models/demo-qwen35 --out map.json
import argparse
import collections
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "src", "app", "tern"))
    ap.add_argument("--requests", type=int, default=96)
    ap.add_argument("--seed", type=int, default=12345)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([args.tern, "serve", "--model", args.model, "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            sys.exit(f"tern serve --model {args.model} did not become healthy")
        rng = random.Random(args.seed)
        texts = []
        for i in range(args.requests):
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            body = {"model": "default", "temperature": 0, "max_tokens": 160,
                    "messages": [{"role": "user",
                                  "content": f"What is {a} × {b}? Think it through, then give the final answer."}],
                    "chat_template_kwargs": {"enable_thinking": i % 2 == 0}}
            req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            m = json.loads(urllib.request.urlopen(req, timeout=300).read())["choices"][0]["message"]
            texts.append((m.get("reasoning_content") or "") + "\n" + (m.get("content") or ""))
    finally:
        server.terminate()
        server.wait()
    ids = []  # one reply at a time (a command-line argument is limited in size)
    for t in texts:
        ids += json.loads(subprocess.check_output([args.tern, "tokenize", "--model", args.model,
                                                   "--no-special-tokens", "--text", t]))
    with open(os.path.join(args.model, "tokenizer.json")) as f:
        special = [t["id"] for t in json.load(f).get("added_tokens", [])]
    hot = collections.Counter(ids)
    ids_out = sorted(set(hot) | set(special))
    with open(args.out, "w") as f:
        json.dump(ids_out, f)
    print(f"{len(ids)} reply tokens, {len(hot)} distinct, {len(special)} special: {len(ids_out)} ids -> {args.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
