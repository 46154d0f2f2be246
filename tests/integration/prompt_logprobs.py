#!/usr/bin/python3
"""tern serve's prompt logprobs against the float64 NumPy reference (tests/reference/qwen3_ref.py).

Usage: prompt_logprobs.py --tern TERN --model DIR   (a synthetic qwen3 checkpoint with its tokenizer)

Starts `tern serve` on the checkpoint and checks, for a fixed prompt of token ids:
  /generate return_logprob, logprob_start_len S (0 and 7), top_logprobs_num 5:
    meta_info.input_token_logprobs = [[null, ids[S], null], [lp, ids[S+1], null], ...] (SGLang's
    layout), each lp within 2e-3 of log_softmax(reference logits)[p-1][ids[p]], and
    input_top_logprobs[i] the reference's top 5 (ids, up to near-ties, and logprobs);
    a second identical request, whose prompt is now in the prefix cache, gives the same values;
  /v1/chat/completions prompt_logprobs 2 (input_ids): the top-level prompt_logprobs likewise;
  /v1/completions echo + logprobs 3, prompt_logprobs 3, return_tokens_as_token_ids:
    logprobs.token_logprobs = [null, ...prompt..., ...output...], tokens "token_id:<id>",
    choices[0].prompt_logprobs = [null, {"<id>": {"logprob", "rank", "decoded_token"}}, ...] with
    the prompt token's rank as the reference ranks it;
  bounds: logprob_start_len past the prompt and a request whose prompt logprobs would pass
    1,048,576 entries, or whose output logprobs 8,388,608, are 400s naming the fields, prompt_logprobs with stream is a 400, and the
    server answers normally afterwards.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import qwen3_ref  # noqa: E402

TOL = 2e-3  # f32 engine vs float64 reference, in nats


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_top(p, got_top, ref_row, k):
    order = np.argsort(-ref_row, kind="stable")[:k]
    for j, (lp, tid, _) in enumerate(got_top):
        if abs(lp - ref_row[tid]) > TOL:
            fail(f"position {p}: top {j} id {tid} logprob {lp} vs reference {ref_row[tid]}")
        # The j-th best may differ from the reference's only at a near-tie.
        if tid != order[j] and abs(ref_row[tid] - ref_row[order[j]]) > TOL:
            fail(f"position {p}: top {j} is {tid}, the reference's is {order[j]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tern", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    ids = [3, 17, 99, 250, 5, 42, 7, 300, 12, 64, 128, 200, 31, 8, 9, 150, 77, 21, 64, 12]
    ref = log_softmax(qwen3_ref.forward(a.model, ids))  # [T, vocab]: row p-1 scores ids[p]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(os.path.join(os.path.dirname(a.model), "prompt_logprobs_serve.log"), "w")
    srv = subprocess.Popen([a.tern, "serve", "--model", a.model, "--port", str(port), "--threads", "2",
                            "--kv-cache-dtype", "f32", "--skip-server-warmup"], stderr=log)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except Exception:
                time.sleep(0.2)
        else:
            fail("the server did not become healthy")

        for start in (0, 7):
            for attempt in ("cold", "cached"):
                st, r = post(port, "/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 3, "temperature": 0},
                                                 "return_logprob": True, "logprob_start_len": start, "top_logprobs_num": 5})
                if st != 200:
                    fail(f"/generate: {st} {r}")
                m = r["meta_info"]
                inp, top = m["input_token_logprobs"], m["input_top_logprobs"]
                if len(inp) != len(ids) - start or len(top) != len(inp):
                    fail(f"start {start}: {len(inp)} input_token_logprobs, {len(top)} tops for {len(ids) - start} tokens")
                if inp[0] != [None, ids[start], None] or top[0] is not None:
                    fail(f"start {start}: entry 0 is {inp[0]} / {top[0]}, expected [null, {ids[start]}, null] / null")
                for i in range(1, len(inp)):
                    p = start + i
                    lp, tid, _ = inp[i]
                    if tid != ids[p] or abs(lp - ref[p - 1][ids[p]]) > TOL:
                        fail(f"start {start} {attempt}: position {p}: {inp[i]} vs reference {ref[p - 1][ids[p]]}")
                    check_top(p, top[i], ref[p - 1], 5)
                if attempt == "cached" and m["cached_tokens"] > start:
                    fail(f"start {start}: {m['cached_tokens']} cached tokens reused past logprob_start_len")
        print("/generate input_token_logprobs: ok (cold and from the prefix cache)")

        st, r = post(port, "/v1/completions", {"model": "m", "prompt": ids, "max_tokens": 2, "temperature": 0, "echo": True,
                                               "logprobs": 3, "prompt_logprobs": 3, "return_tokens_as_token_ids": True})
        if st != 200:
            fail(f"/v1/completions: {st} {r}")
        c = r["choices"][0]
        lps = c["logprobs"]
        if lps["token_logprobs"][0] is not None or lps["top_logprobs"][0] is not None:
            fail(f"echo: the first prompt token has a logprob: {lps['token_logprobs'][:2]}")
        if lps["tokens"][: len(ids)] != [f"token_id:{t}" for t in ids]:
            fail(f"echo: tokens {lps['tokens'][:5]}...")
        for p in range(1, len(ids)):
            if abs(lps["token_logprobs"][p] - ref[p - 1][ids[p]]) > TOL:
                fail(f"echo: position {p}: {lps['token_logprobs'][p]} vs {ref[p - 1][ids[p]]}")
        if len(lps["tokens"]) != len(ids) + 2:
            fail(f"echo: {len(lps['tokens'])} tokens, expected the prompt's {len(ids)} and 2 generated")
        pl = c["prompt_logprobs"]
        if len(pl) != len(ids) or pl[0] is not None:
            fail(f"prompt_logprobs: {len(pl)} entries, first {pl[0]}")
        for p in range(1, len(ids)):
            e = pl[p][str(ids[p])]
            x = ref[p - 1][ids[p]]
            lo, hi = 1 + int((ref[p - 1] > x + TOL).sum()), int((ref[p - 1] > x - TOL).sum())  # rank up to near-ties
            if abs(e["logprob"] - x) > TOL or not lo <= e["rank"] <= hi:
                fail(f"prompt_logprobs position {p}: {e} vs reference logprob {x}, rank in [{lo}, {hi}]")
            if e["decoded_token"] != f"token_id:{ids[p]}" or len(pl[p]) > 4:
                fail(f"prompt_logprobs position {p}: {pl[p]}")
        print("/v1/completions echo + logprobs, prompt_logprobs: ok")

        st, r = post(port, "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}], "input_ids": ids,
                                                    "max_tokens": 1, "temperature": 0, "prompt_logprobs": 2})
        if st != 200 or len(r.get("prompt_logprobs") or []) != len(ids) or r["prompt_logprobs"][0] is not None:
            fail(f"chat prompt_logprobs: {st} {str(r)[:300]}")
        for p in range(1, len(ids)):
            e = r["prompt_logprobs"][p][str(ids[p])]
            if abs(e["logprob"] - ref[p - 1][ids[p]]) > TOL or len(r["prompt_logprobs"][p]) > 3:
                fail(f"chat prompt_logprobs position {p}: {r['prompt_logprobs'][p]} vs {ref[p - 1][ids[p]]}")
        print("/v1/chat/completions prompt_logprobs: ok")

        st, r = post(port, "/generate", {"input_ids": ids, "return_logprob": True, "logprob_start_len": len(ids)})
        if st != 400 or "logprob_start_len" not in json.dumps(r):
            fail(f"logprob_start_len past the prompt: {st} {r}")
        long_ids = [(i * 7) % 400 + 3 for i in range(1100)]
        st, r = post(port, "/generate", {"input_ids": long_ids, "sampling_params": {"max_new_tokens": 1}, "return_logprob": True,
                                         "logprob_start_len": 0, "top_logprobs_num": 1000})
        if st != 400 or "top_logprobs_num" not in json.dumps(r):
            fail(f"1,100 positions x 1,001 entries: {st} {r}")
        # Output logprobs: choices x reply tokens x (1 + alternatives) at most 2^23 entries (8,388,608).
        st, r = post(port, "/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 100, "n": 128},
                                         "return_logprob": True, "top_logprobs_num": 1000})
        if st != 400 or "12812800 entries" not in json.dumps(r) or "top_logprobs_num" not in json.dumps(r):
            fail(f"128 x 100 x 1,001 output entries: {st} {str(r)[:300]}")
        # prompt_logprobs give every output token their alternatives too (the engine keeps one count).
        st, r = post(port, "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}],
                                                    "n": 128, "max_tokens": 4000, "prompt_logprobs": 20})
        if st != 400 or "10752000 entries" not in json.dumps(r) or "prompt_logprobs" not in json.dumps(r):
            fail(f"128 choices x 4,000 tokens x 21 entries through prompt_logprobs: {st} {str(r)[:300]}")
        st, r = post(port, "/v1/completions", {"model": "m", "prompt": ids, "max_tokens": 3, "n": 128, "logprobs": 20,
                                               "temperature": 1, "seed": 1})
        if st != 200 or len(r["choices"]) != 128 or any(len(c["logprobs"]["top_logprobs"]) != 3 for c in r["choices"]):
            fail(f"128 x 3 x 21 output entries: {st} {str(r)[:300]}")
        st, r = post(port, "/v1/completions", {"model": "m", "prompt": ids, "prompt_logprobs": 2, "stream": True})
        if st != 400:
            fail(f"prompt_logprobs with stream: {st} {r}")
        st, r = post(port, "/v1/completions", {"model": "m", "prompt": ids, "prompt_logprobs": 21})
        if st != 400:
            fail(f"prompt_logprobs 21: {st} {r}")
        st, r = post(port, "/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 2, "temperature": 0}})
        if st != 200 or len(r["output_ids"]) != 2:
            fail(f"the server after the refused requests: {st} {r}")
        print("bounds: ok")
    finally:
        srv.terminate()
        srv.wait(timeout=60)


if __name__ == "__main__":
    main()
