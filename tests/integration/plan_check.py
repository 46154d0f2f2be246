#!/usr/bin/env python3
"""`tern plan` against a hand computation from the config's numbers (written here, not tern's code).

Usage:
  plan_check.py --tern TERN --model DIR --tp 4 --tp 8 [--ep E] [--kv-cache-dtype fp8_e4m3] [--memory 64GB ...]
      [--safetensors]
Checks, for every --tp (rank 0, the rank holding the most): weight bytes per rank, exact to the byte;
KV bytes per token and linear-attention state per sequence, exact; the number of concurrent requests
of --context tokens for each --memory. With --safetensors (a checkpoint with weights, e.g. from
`tern synth`), also checks that the --tp 1 weight bytes equal the sum of the stored tensors'
sizes read from the safetensors headers (MTP included when the config gives it layers).
"""
import argparse
import fnmatch
import glob
import json
import os
import struct
import subprocess
import sys

UNITS = {"GB": 10**9, "GiB": 2**30, "TB": 10**12, "MB": 10**6}


def size(text):
    for u in sorted(UNITS, key=len, reverse=True):
        if text.endswith(u):
            return int(float(text[: -len(u)]) * UNITS[u])
    return int(text)


class Model:
    def __init__(self, d):
        top = json.load(open(os.path.join(d, "config.json")))
        self.vlm = "text_config" in top
        c = top.get("text_config", top)
        self.c = c
        self.type = top.get("model_type") or c["model_type"]
        self.tied = c.get("tie_word_embeddings", top.get("tie_word_embeddings", False))
        dtype = c.get("torch_dtype") or c.get("dtype") or top.get("torch_dtype") or "bfloat16"
        self.ds = {"float32": 4, "bfloat16": 2, "float16": 2}[dtype]
        self.H, self.L, self.V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
        self.Hq = c["num_attention_heads"]
        self.Hkv = c.get("num_key_value_heads", self.Hq)
        self.D = c.get("head_dim") or (128 if self.type == "qwen3" else self.H // self.Hq)
        self.hybrid = self.type in ("qwen3_5_moe", "qwen3_5_moe_text", "qwen3_next")
        self.gate = self.hybrid  # attention output gate: q_proj holds [q | gate] per head
        interval = c.get("full_attention_interval") or 4
        lt = c.get("layer_types")
        self.linear = [self.hybrid and (lt[i] == "linear_attention" if lt else (i + 1) % interval != 0)
                       for i in range(self.L)]
        self.E = c.get("num_experts", 0)
        self.F = c.get("intermediate_size", 0)
        self.Fe = c.get("moe_intermediate_size", 0)
        self.Fs = c.get("shared_expert_intermediate_size", 0)
        step, only = c.get("decoder_sparse_step", 1), c.get("mlp_only_layers", [])
        if self.type in ("qwen3_5_moe", "qwen3_5_moe_text"):
            self.moe = [True] * self.L
        elif self.type in ("qwen3_moe", "qwen3_next") and self.E > 0:
            self.moe = [i not in only and (i + 1) % step == 0 for i in range(self.L)]
        else:
            self.moe = [False] * self.L
        self.Hk, self.Hv = c.get("linear_num_key_heads", 0), c.get("linear_num_value_heads", 0)
        self.dk, self.dv = c.get("linear_key_head_dim", 0), c.get("linear_value_head_dim", 0)
        self.K = c.get("linear_conv_kernel_dim", 0)
        self.mtp = c.get("mtp_num_hidden_layers", c.get("num_nextn_predict_layers", 0)) if self.hybrid else 0
        self.prefix = "model.language_model." if self.vlm else "model."
        # Quantization: hf_quant_config.json wins over config.json's quantization_config.
        q = None
        hq = os.path.join(d, "hf_quant_config.json")
        if os.path.exists(hq):
            q = json.load(open(hq))["quantization"]
            self.algo, self.exclude = q["quant_algo"], q.get("exclude_modules") or []
            self.kv_fp8 = q.get("kv_cache_quant_algo") == "FP8"
            self.block = None
        elif "quantization_config" in top or "quantization_config" in c:
            q = top.get("quantization_config") or c["quantization_config"]
            if q["quant_method"] == "fp8":
                self.algo, self.block = "FP8", q.get("weight_block_size")
                self.exclude = (q.get("modules_to_not_convert") or []) + (q.get("ignored_layers") or []) + (q.get("ignore") or [])
                self.kv_fp8 = False
            else:
                self.algo, self.exclude, self.block = q["quant_algo"], q.get("ignore") or [], None
                self.kv_fp8 = "kv_cache_scheme" in q
        else:
            self.algo, self.exclude, self.block, self.kv_fp8 = None, [], None, False
        if self.algo == "MIXED_PRECISION":
            sys.exit("plan_check.py: MIXED_PRECISION is not modelled here")

    def fmt(self, module):
        if not self.algo:
            return "bf16"
        # vLLM and SGLang build the router and shared_expert_gate with no quant config; Qwen's block-FP8
        # exports (no exclusion list) keep lm_head in BF16 as well.
        if module.endswith(".mlp.gate") or module.endswith(".shared_expert_gate"):
            return "bf16"
        if self.block and module == "lm_head":
            return "bf16"
        for p in self.exclude:  # fnmatch as Python's (what ModelOpt and vLLM use), and "name" covers "name.*"
            if fnmatch.fnmatchcase(module, p) or module.startswith(p + "."):
                return "bf16"
        return "nvfp4" if self.algo == "NVFP4" else ("fp8block" if self.block else "fp8")


def linear(m, module, rows, cols):
    """Bytes a rank keeps of Linear `module`: `rows` output rows (a list of (begin, end)), `cols` input columns."""
    n = sum(e - b for b, e in rows)
    k = cols[1] - cols[0]
    f = m.fmt(module)
    if f == "bf16":
        return n * k * m.ds
    if f == "nvfp4":
        assert k % 16 == 0 and cols[0] % 16 == 0, module
        return n * k // 2 + n * k // 16 + 4 + 4  # E2M1 pairs, one E4M3 per 16, weight_scale_2, input_scale
    if f == "fp8":
        return n * k + 4 + 4  # E4M3 weights, weight_scale, input_scale
    blocks = lambda b, e: (e + 127) // 128 - b // 128
    return n * k + sum(blocks(b, e) for b, e in rows) * blocks(*cols) * 4  # weight_scale_inv per 128x128 block


def mlp(m, p, F, tp, r):
    lo, hi = F // tp * r, F // tp * (r + 1)
    return (linear(m, p + "gate_proj", [(lo, hi)], (0, m.H)) + linear(m, p + "up_proj", [(lo, hi)], (0, m.H))
            + linear(m, p + "down_proj", [(0, m.H)], (lo, hi)))


def layer(m, p, i, linear_layer, tp, ep, rank, world):
    """(weight bytes, recurrent state bytes, kv heads) of one decoder layer on `rank`."""
    H, r = m.H, rank % tp
    b = 2 * H * m.ds  # input_layernorm, post_attention_layernorm
    state, kvn = 0, None
    if linear_layer:
        a = p + "linear_attn."
        kn, vn = m.Hk // tp, m.Hv // tp
        k0, v0 = r * kn, r * vn
        if m.type == "qwen3_next":
            g = m.Hv // m.Hk
            gq = 2 * m.dk + 2 * g * m.dv
            b += linear(m, a + "in_proj_qkvz", [(k0 * gq, (k0 + kn) * gq)], (0, H))
            b += linear(m, a + "in_proj_ba", [(k0 * 2 * g, (k0 + kn) * 2 * g)], (0, H))
        else:
            qk = m.Hk * m.dk
            b += linear(m, a + "in_proj_qkv", [(k0 * m.dk, (k0 + kn) * m.dk), (qk + k0 * m.dk, qk + (k0 + kn) * m.dk),
                                               (2 * qk + v0 * m.dv, 2 * qk + (v0 + vn) * m.dv)], (0, H))
            b += linear(m, a + "in_proj_z", [(v0 * m.dv, (v0 + vn) * m.dv)], (0, H))
            b += linear(m, a + "in_proj_b", [(v0, v0 + vn)], (0, H))
            b += linear(m, a + "in_proj_a", [(v0, v0 + vn)], (0, H))
        b += linear(m, a + "out_proj", [(0, H)], (v0 * m.dv, (v0 + vn) * m.dv))
        channels = 2 * kn * m.dk + vn * m.dv
        b += (channels * m.K + 2 * vn + m.dv) * m.ds  # conv1d, dt_bias, A_log, norm
        state = (channels * (m.K - 1) + vn * m.dk * m.dv) * 4
    else:
        a = p + "self_attn."
        qn = m.Hq // tp
        if m.Hkv % tp == 0:
            kvn, kv0 = m.Hkv // tp, r * (m.Hkv // tp)
        else:
            assert tp % m.Hkv == 0
            kvn, kv0 = 1, r // (tp // m.Hkv)
        per = 2 * m.D if m.gate else m.D
        b += linear(m, a + "q_proj", [(r * qn * per, (r + 1) * qn * per)], (0, H))
        b += linear(m, a + "k_proj", [(kv0 * m.D, (kv0 + kvn) * m.D)], (0, H))
        b += linear(m, a + "v_proj", [(kv0 * m.D, (kv0 + kvn) * m.D)], (0, H))
        b += linear(m, a + "o_proj", [(0, H)], (r * qn * m.D, (r + 1) * qn * m.D))
        b += 2 * m.D * m.ds  # q_norm, k_norm
        if m.kv_fp8 and not p.startswith("mtp."):
            b += 8  # k_proj.k_scale, v_proj.v_scale (main model only)
    f = p + "mlp."
    if m.moe[i] if i is not None else True:
        b += linear(m, f + "gate", [(0, m.E)], (0, H))
        if ep > 1:
            per_rank = m.E // ep
            for e in range(rank * per_rank, (rank + 1) * per_rank):
                b += mlp(m, f"{f}experts.{e}.", m.Fe, 1, 0)
        else:
            for e in range(m.E):
                b += mlp(m, f"{f}experts.{e}.", m.Fe, tp, r)
        if m.Fs:
            b += mlp(m, f + "shared_expert.", m.Fs, tp, r) + linear(m, f + "shared_expert_gate", [(0, 1)], (0, H))
    else:
        b += mlp(m, f, m.F, tp, r)
    return b, state, kvn


def hand_plan(m, tp, ep, kv_dtype, rank=0):
    world = max(tp, ep)
    total = m.V * m.H * m.ds + m.H * m.ds  # embedding (mapped in full), final norm
    state, kvn = 0, None
    for i in range(m.L):
        b, s, k = layer(m, f"{m.prefix}layers.{i}.", i, m.linear[i], tp, ep, rank, world)
        total, state = total + b, state + s
        kvn = k if k is not None else kvn
    if not m.tied:
        sl = -(-m.V // tp)
        v0 = (rank % tp) * sl
        total += linear(m, "lm_head", [(v0, min(m.V, v0 + sl))], (0, m.H))
    mtp = 0
    if m.mtp:
        mtp = 3 * m.H * m.ds + linear(m, "mtp.fc", [(0, m.H)], (0, 2 * m.H))
        for j in range(m.mtp):
            mtp += layer(m, f"mtp.layers.{j}.", None if m.type != "qwen3_next" else j, False, 1, 1, 0, 1)[0]
    if world == 1:
        total += mtp
    kv_size = {"auto": 4 if m.ds == 4 else 2, "bf16": 2, "fp16": 2, "fp32": 4, "fp8_e4m3": 1}[kv_dtype]
    full = sum(1 for x in m.linear if not x)
    return {"weight_bytes": total, "mtp_bytes": mtp, "kv_bytes_per_token": 2 * full * kvn * m.D * kv_size,
            "state_bytes_per_sequence": state}


def safetensors_bytes(d):
    total, mtp = 0, 0
    for path in glob.glob(os.path.join(d, "*.safetensors")):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        for name, t in header.items():
            if name == "__metadata__":
                continue
            nbytes = t["data_offsets"][1] - t["data_offsets"][0]
            if name.startswith("mtp."):
                mtp += nbytes
            elif not name.startswith("model.visual."):
                total += nbytes
    return total, mtp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tern", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tp", type=int, action="append", required=True)
    ap.add_argument("--ep", type=int, default=1)
    ap.add_argument("--kv-cache-dtype", default="auto")
    ap.add_argument("--memory", action="append", default=None)
    ap.add_argument("--context", type=int, default=32768)
    ap.add_argument("--safetensors", action="store_true")
    a = ap.parse_args()
    memories = a.memory or ["64GB"]
    m = Model(a.model)
    cmd = [a.tern, "plan", "--model", a.model, "--ep", str(a.ep), "--kv-cache-dtype", a.kv_cache_dtype,
           "--context", str(a.context), "--json"]
    for t in a.tp:
        cmd += ["--tp", str(t)]
    for mem in memories:
        cmd += ["--memory-per-rank", mem]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}: {r.stderr}")
    plans = json.loads(r.stdout)
    failures = 0
    for t, got in zip(a.tp, plans):
        want = hand_plan(m, t, a.ep, a.kv_cache_dtype)
        for key, value in want.items():
            ok = got[key] == value
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'}: --tp {t} --ep {a.ep} {key}: tern {got[key]}, by hand {value}")
        per_request = -(-a.context // 16) * 16 * want["kv_bytes_per_token"] + want["state_bytes_per_sequence"]
        for mem, fit in zip(memories, got["fits"]):
            mb = size(mem)
            reserve = max(2 * 10**9, mb // 20)
            free = mb - want["weight_bytes"] - reserve
            n = free // per_request if free > 0 else 0
            ok = fit["requests"] == n and fit["reserve"] == reserve and fit["bytes_per_request"] == per_request
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'}: --tp {t} {mem}: {fit['requests']} requests of {a.context} tokens, by hand {n}")
    if a.safetensors:
        stored, stored_mtp = safetensors_bytes(a.model)
        want1 = hand_plan(m, 1, 1, a.kv_cache_dtype)
        r1 = subprocess.run([a.tern, "plan", "--model", a.model, "--json"], capture_output=True, text=True)
        got1 = json.loads(r1.stdout)[0]
        for what, g, w in (("weights at --tp 1 (MTP included)", got1["weight_bytes"], stored + stored_mtp),
                           ("MTP head", got1["mtp_bytes"], stored_mtp),
                           ("hand computation at --tp 1", want1["weight_bytes"], stored + stored_mtp)):
            ok = g == w
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'}: {what}: {g}, stored tensors {w}")
    if failures:
        sys.exit(f"FAIL: {failures} mismatch(es)")
    print("PASS")


if __name__ == "__main__":
    main()
