# Warm start of a Qwen3.5 demo run (train.py --arch qwen3_5_moe) from the trained first demo model
# (models/demo, Qwen3-MoE in NVFP4), so that the Qwen3.5 run needs far fewer steps:
#
#   /usr/bin/python3 tools/demo_model/warm_start.py --from models/demo --dir RUN
#   /usr/bin/python3 tools/demo_model/train.py --dir RUN [--steps N]      # resumes at step 0
#
# RUN/run.json must exist (arch qwen3_5_moe) -- or is created here from train.py's qwen3_5_moe
# defaults, as train.py would, without training a tokenizer; --set / --steps edit it either way --
# and RUN/ckpt.pt must not (--force replaces one). Steps:
#   1. RUN/tokenizer/tokenizer.json := models/demo/tokenizer.json (byte copy); tokenizer_config.json
#      (the run's chat style's template, the added tokens' ids) and generation_config.json are
#      rewritten from it with bpe.py's writers, so the folder is what bpe.py would have written for
#      these merges; run.json's model.vocab_size is set from it as train.py does.
#      Caveat (printed as a WARNING): demo's merges were learnt on qwen3-style text, so Qwen3.5's
#      tool prompts (qwen3_coder XML instructions) take ~540 tokens instead of ~390, and with
#      max_len 448 train.py drops every tool_call / tool_answer sample (75 of the first 1024).
#      Either --set max_len=640 (edits run.json) or --tokenizer run: keep the run's own tokenizer
#      (bpe.py on its style) and map embedding / lm_head rows by token string (1821 of 2048 tokens
#      are demo tokens; the other 227 get the mean embedding of their demo pieces and the lm_head
#      row of the first one) -- the same warm-start loss, and the tool samples stay in.
#   2. A Qwen35Moe from run.json (train.make_model: the init train.py starts from).
#   3. models/demo's weights: NVFP4 Linears dequantized as ModelOpt does (E2M1(code) * E4M3(scale)
#      * weight_scale_2, low nibble = even column), BF16 tensors widened to float32.
#   4. Transplant: embed_tokens, lm_head, the final norm as w - 1 (Norm1p is x * (1 + w)); then by
#      layer (--mapping attention, the default): Qwen3.5's full-attention layers 1 and 3 get demo
#      layers 0 and 1 (attention, norms as w - 1, router and all experts), the linear-attention
#      layers 0 and 2 start as the identity (GDN out_proj, expert and shared-expert down_proj 0, the
#      rest fresh), demo layers 2 and 3 are dropped. Measured on the run's data: removing demo
#      layers 0 and 2's attention (what --mapping same, layer i <- demo layer i, has to do) takes
#      the demo's CE from 0.008 to 7.8, worse than a fresh init; removing its layers 2 and 3 only
#      to 1.44 (their attention hardly matters: 0.51 without it).
#        Attention: per head q_proj's query rows := demo's q rows, the gate rows := 0 (sigmoid(0) =
#        1/2) with o_proj := 2 * demo's o_proj; k, v, q/k norms (w - 1). Experts: both models keep
#        gate_up [E, 2I, H] = cat(gate, up) and down [E, H, I] (model35 reuses model.MoE).
#        Partial rotary: Qwen3.5 rotates only the first rotary_dim (8) of the 32 head dims, with
#        frequencies theta^(-2j/8), j < 4, which are exactly demo's NeoX pairs i = 4j (frequency
#        theta^(-2i/32)); the head dims are permuted (the same permutation for q, k and the q/k
#        norms, so q.k is unchanged) to put those pairs on the rotated dims; demo's other 12 pairs
#        become unrotated -- the one part that is not exact (CE 1.44 -> 4.40) --, and the 3 of them
#        faster than Qwen3.5's second rotary pair are silenced in q (q_norm 1 + w = 0; -> 3.20).
#      Shared experts: down_proj := 0 (off, but trainable: its gradient is not zero). MTP: fresh.
#   5. RUN/ckpt.pt as train.save_checkpoint writes it (model, a fresh optimizer from
#      train.make_optimizer, step 0 -- the data position --, run, and torch's RNG state after creating
#      the model and optimizer, as train.py has it at step 0; train.py never seeds torch's global RNG
#      and no training step draws from it, so this state is as good as any).
# Then, as a sanity check, the weighted cross entropy on the first samples of the run's data
# stream for: the demo model (in its own qwen3 chat style and in the run's), the demo model run
# with only the blocks the transplant keeps (what the transplanted model computes but for the
# partial RoPE), the transplanted model (main and MTP head), and the fresh init; and greedy
# replies of the demo and transplanted models to a few battery prompts.
import argparse
import fcntl
import json
import math
import os
import shutil
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import data  # noqa: E402
import train  # noqa: E402
from model import Config, Qwen3Moe, rope_cos_sin  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Reading the checkpoint (safetensors + NVFP4 dequantization)

_NP_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "<u2", "U8": "u1", "I8": "i1", "F8_E4M3": "u1",
              "I32": "<i4", "I64": "<i8", "U16": "<u2", "I16": "<i2"}


def read_safetensors_raw(path):
    """-> {name: (dtype string, numpy array of the stored bits/values)}: 8-byte little-endian header
    length, JSON header, raw little-endian row-major data (BF16 and F8 kept as unsigned ints)."""
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack("<Q", buf[:8])[0]
    header = json.loads(buf[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        a = np.frombuffer(buf, dtype=np.dtype(_NP_DTYPES[info["dtype"]]), count=-1, offset=base + b)
        a = a[:(e - b) // a.itemsize].reshape(info["shape"])
        out[name] = (info["dtype"], a)
    return out


def read_safetensors(path):
    """Like read_safetensors_raw, with the `safetensors` package when it is installed and can read
    the file (F8 has no NumPy dtype, so older versions cannot), else the parser above."""
    try:
        import safetensors  # noqa: F401
    except ImportError:
        return read_safetensors_raw(path)
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        from safetensors.numpy import load_file
        arrays = load_file(path)
        out = {}
        for name, a in arrays.items():
            dt = header[name]["dtype"]
            if dt in ("BF16", "F8_E4M3"):   # keep the bits
                a = a.view(np.uint16 if dt == "BF16" else np.uint8)
            out[name] = (dt, a)
        return out
    except Exception:
        return read_safetensors_raw(path)


E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def _e4m3_table():
    """The 256 float8_e4m3fn values (bias 7, subnormals, S.1111.111 = NaN, no infinities)."""
    t = np.empty(256)
    for b in range(256):
        s = -1.0 if b & 0x80 else 1.0
        e, m = (b >> 3) & 0xF, b & 7
        if e == 15 and m == 7:
            t[b] = np.nan
        elif e == 0:
            t[b] = s * m * 2.0 ** -9
        else:
            t[b] = s * (1 + m / 8) * 2.0 ** (e - 7)
    return t


E4M3 = _e4m3_table()


def to_float32(dtype, a):
    if dtype == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    if dtype == "F8_E4M3":
        return E4M3[a].astype(np.float32)
    return a.astype(np.float32)


def dequant_nvfp4(packed, scale_e4m3, scale_2, group=16):
    """uint8 [N, K/2] (element 2j in the low nibble of byte j), E4M3 bits [N, K/16], f32 scalar ->
    float32 [N, K] = E2M1(code) * E4M3(scale) * weight_scale_2 (exact in float64, one rounding)."""
    codes = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.uint8)
    codes[..., 0::2] = packed & 0xF
    codes[..., 1::2] = packed >> 4
    scale = np.repeat(E4M3[scale_e4m3], group, axis=-1)
    return (E2M1[codes] * scale * np.float64(scale_2)).astype(np.float32)


def load_hf_weights(model_dir):
    """-> {HF name: float32 torch tensor}: NVFP4 Linears (name.weight U8 + weight_scale +
    weight_scale_2) dequantized, everything else widened; input_scale dropped."""
    raw = {}
    for fn in sorted(os.listdir(model_dir)):
        if fn.endswith(".safetensors"):
            raw.update(read_safetensors(os.path.join(model_dir, fn)))
    out = {}
    for name, (dt, a) in raw.items():
        if name.endswith((".weight_scale", ".weight_scale_2", ".input_scale")):
            continue
        if dt == "U8" and name.endswith(".weight"):
            s_dt, s = raw[name + "_scale"]
            s2_dt, s2 = raw[name + "_scale_2"]
            assert s_dt == "F8_E4M3" and s2_dt == "F32", name
            out[name] = torch.from_numpy(dequant_nvfp4(a, s, float(s2)))
        else:
            out[name] = torch.from_numpy(to_float32(dt, a).copy())
    return out


def load_demo(model_dir):
    """-> the first demo model as a Qwen3Moe (model.py) with models/demo's dequantized weights."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    fields = {k: cfg[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                  "num_key_value_heads", "head_dim", "num_experts", "num_experts_per_tok",
                                  "moe_intermediate_size", "norm_topk_prob", "rms_norm_eps", "rope_theta",
                                  "tie_word_embeddings", "max_position_embeddings", "router_aux_loss_coef")
              if k in cfg}
    model = Qwen3Moe(Config(**fields))
    w = load_hf_weights(model_dir)
    c = model.c
    sd = {"embed_tokens.weight": w.pop("model.embed_tokens.weight"), "norm.weight": w.pop("model.norm.weight")}
    if model.lm_head is not None:
        sd["lm_head.weight"] = w.pop("lm_head.weight")
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            sd[f"layers.{i}.{n}.weight"] = w.pop(p + n + ".weight")
        for n in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"):
            sd[f"layers.{i}.self_attn.{n}.weight"] = w.pop(p + "self_attn." + n + ".weight")
        sd[f"layers.{i}.mlp.gate.weight"] = w.pop(p + "mlp.gate.weight")
        ex = [p + f"mlp.experts.{e}." for e in range(c.num_experts)]
        sd[f"layers.{i}.mlp.gate_up"] = torch.stack(
            [torch.cat([w.pop(x + "gate_proj.weight"), w.pop(x + "up_proj.weight")], 0) for x in ex])
        sd[f"layers.{i}.mlp.down"] = torch.stack([w.pop(x + "down_proj.weight") for x in ex])
    if w:
        raise ValueError(f"{model_dir}: tensors not used: {sorted(w)[:8]}")
    model.load_state_dict(sd)
    model.eval()
    return model


# ---------------------------------------------------------------------------------------------
# The transplant


def rotary_permutation(head_dim, rope_theta, rotary_dim, theta35):
    """The head-dim permutation (new dim -> demo dim) that puts demo's full NeoX RoPE pairs (i, i +
    hd/2; frequency theta^(-2i/hd)) whose frequencies Qwen3.5's partial RoPE has (pairs (j, j + r/2)
    of the first r dims, frequency theta35^(-2j/r)) on those dims; the other demo dims follow in
    order (unrotated). -> (perm list, [(j, i, relative frequency error)], fast: the new dims of the
    unrotated demo pairs faster than Qwen3.5's second rotary pair)."""
    half, r2 = head_dim // 2, rotary_dim // 2
    demo_f = [rope_theta ** (-2 * i / head_dim) for i in range(half)]
    used, match = [], []
    for j in range(r2):
        f = theta35 ** (-2 * j / rotary_dim)
        i = min((i for i in range(half) if i not in used), key=lambda i: abs(math.log(demo_f[i] / f)))
        used.append(i)
        match.append((j, i, demo_f[i] / f - 1))
    perm = used + [half + i for i in used]
    perm += [d for d in range(head_dim) if d not in perm]
    f1 = theta35 ** (-2 / rotary_dim) if r2 > 1 else 0.0
    fast_old = {d for i in range(half) if i not in used and demo_f[i] > f1 * (1 + 1e-9) for d in (i, half + i)}
    fast = [n for n, d in enumerate(perm) if d in fast_old]
    return perm, match, fast


def layer_mapping(c35, demo_layers, how="attention"):
    """-> [demo layer index or None] per Qwen3.5 layer. "attention": the k-th full-attention layer
    gets demo layer k (attention, MoE and norms), the linear-attention layers none (they start as
    the identity), demo's last layers are dropped; "same": layer i gets demo layer i (its MoE and
    norms; its attention only where layer i is full attention)."""
    types = c35.layer_types
    if how == "same":
        if len(types) != demo_layers:
            raise ValueError(f"--mapping same: {len(types)} layers vs the demo's {demo_layers}")
        return list(range(len(types)))
    if how != "attention":
        raise ValueError(f"mapping {how!r}")
    out, k = [], 0
    for t in types:
        if t == "full_attention" and k < demo_layers:
            out.append(k)
            k += 1
        else:
            out.append(None)
    return out


@torch.no_grad()
def transplant(demo, model, mapping, zero_fast=True, embed=None, head=None):
    """Copy demo (Qwen3Moe) into model (Qwen35Moe) by layer_mapping's list; zero_fast: silence the
    query dims of the unrotated demo RoPE pairs faster than Qwen3.5's second rotary pair (q_norm
    scale 1 + w = 0: without their rotation they only add a position-blind bias; measured on the
    run's data, CE 4.40 -> 3.20 right after the transplant); embed, head: the embedding and lm_head
    rows to use instead of demo's (remap_vocab, for a run with its own tokenizer). -> notes."""
    c, d = model.c, demo.c
    for k in ("hidden_size", "num_experts", "moe_intermediate_size", "vocab_size"):
        if getattr(c, k) != getattr(d, k):
            raise ValueError(f"{k}: run {getattr(c, k)} != demo {getattr(d, k)}")
    notes = []
    model.embed_tokens.weight.copy_(demo.embed_tokens.weight if embed is None else embed)
    if model.lm_head is not None:
        model.lm_head.weight.copy_(demo.head_weight() if head is None else head)
    model.norm.weight.copy_(demo.norm.weight - 1)
    hq, hkv, hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    perm, match, fast = rotary_permutation(d.head_dim, d.rope_theta, c.rotary_dim, c.rope_theta)
    perm = torch.tensor(perm)
    fast = fast if zero_fast else []
    notes.append("rotary: Qwen3.5 pair j <- demo pair i (freq error): "
                 + ", ".join(f"{j}<-{i} ({e:+.1e})" for j, i, e in match)
                 + f"; demo's other {d.head_dim // 2 - len(match)} pairs unrotated"
                 + (f", the {len(fast) // 2} fastest of them silenced in q (q_norm 1 + w = 0)" if fast else ""))
    for li, (l35, di) in enumerate(zip(model.layers, mapping)):
        m35 = l35.mlp
        m35.shared_down_proj.weight.zero_()          # the shared expert starts off (still trainable)
        if l35.kind == "linear_attention":
            l35.linear_attn.out_proj.weight.zero_()  # the GDN starts as the identity
        if di is None:
            m35.routed.down.zero_()                  # nothing here: the whole layer is the identity
            notes.append(f"layer {li} ({l35.kind}): identity (out_proj, expert and shared down_proj 0)")
            continue
        ld = demo.layers[di]
        l35.input_layernorm.weight.copy_(ld.input_layernorm.weight - 1)
        l35.post_attention_layernorm.weight.copy_(ld.post_attention_layernorm.weight - 1)
        m35.routed.gate.weight.copy_(ld.mlp.gate.weight)
        m35.routed.gate_up.copy_(ld.mlp.gate_up)    # both [E, 2I, H] = cat(gate, up), down [E, H, I]
        m35.routed.down.copy_(ld.mlp.down)
        if l35.kind == "linear_attention":
            notes.append(f"layer {li} ({l35.kind}): demo layer {di}'s norms and MoE; its attention dropped "
                         f"(GDN fresh, out_proj 0)")
            continue
        if (hq, hkv, hd) != (d.num_attention_heads, d.num_key_value_heads, d.head_dim):
            raise ValueError("attention shapes differ between the run and the demo model")
        a, ad = l35.self_attn, ld.self_attn
        qd = ad.q_proj.weight.view(hq, hd, -1)[:, perm]                      # [heads, hd, H]
        a.q_proj.weight.copy_(torch.cat([qd, torch.zeros_like(qd)], dim=1).reshape(2 * hq * hd, -1))
        a.k_proj.weight.copy_(ad.k_proj.weight.view(hkv, hd, -1)[:, perm].reshape(hkv * hd, -1))
        a.v_proj.weight.copy_(ad.v_proj.weight)
        a.o_proj.weight.copy_(2 * ad.o_proj.weight)                          # the gate halves it
        a.q_norm.weight.copy_(ad.q_norm.weight[perm] - 1)
        a.q_norm.weight[fast] = -1.0
        a.k_norm.weight.copy_(ad.k_norm.weight[perm] - 1)
        notes.append(f"layer {li} ({l35.kind}): demo layer {di} (attention: gate rows 0, o_proj x2, head dims "
                     f"permuted for the partial RoPE; norms; MoE)")
    dropped = [i for i in range(d.num_hidden_layers) if i not in mapping]
    if dropped:
        notes.append(f"demo layers {dropped} not used")
    notes.append("shared experts: down_proj 0; MTP head: fresh init")
    return notes


@torch.no_grad()
def demo_part_ce(demo, mapping, layer_types, enc, mbs):
    """Weighted CE of the demo model run with only the blocks the transplant keeps, in the same
    order (its own full RoPE): what the transplanted model computes but for the partial RoPE."""
    wsum = sum(sum(e[2]) for e in enc)
    c = demo.c
    tot = 0.0
    for ids, tgt, wts in mbs:
        B, T = ids.shape
        pos = torch.arange(T)[None].expand(B, T)
        mask = torch.full((T, T), -1e9).triu(1)[None, None]
        cos, sin = rope_cos_sin(pos, c.head_dim, c.rope_theta)
        x = demo.embed_tokens(ids)
        for di, kind in zip(mapping, layer_types):
            if di is None:
                continue
            ld = demo.layers[di]
            if kind == "full_attention":
                x = x + ld.self_attn(ld.input_layernorm(x), cos, sin, mask, False)
            m, _ = ld.mlp(ld.post_attention_layernorm(x).reshape(B * T, -1), False)
            x = x + m.view(B, T, -1)
        h = demo.norm(x)
        sel = wts.reshape(-1) > 0
        ce = F.cross_entropy(demo.logits(h.reshape(-1, h.shape[-1])[sel]), tgt.reshape(-1)[sel], reduction="none")
        tot += float((ce * wts.reshape(-1)[sel]).sum())
    return tot / wsum


@torch.no_grad()
def remap_vocab(demo, demo_tok, run_tok):
    """Embedding and lm_head rows for run_tok's ids from the demo model's: a token whose string is in
    demo's vocabulary (or an added token) gets its row; another one (a merge demo's tokenizer does
    not have) the mean of the embeddings of its demo pieces and the lm_head row of its first piece
    (the prediction demo makes there). -> (embed, head, number of tokens built from pieces)."""
    E, H = demo.embed_tokens.weight, demo.head_weight()
    embed, head = E.clone(), H.clone()   # rows past the tokenizer's size (padding) keep demo's
    built = 0
    for i in range(run_tok.size):
        t = run_tok.id_to_token[i]
        if t in run_tok.added:
            pieces = [demo_tok.added[t]]
        elif t in demo_tok.vocab:
            pieces = [demo_tok.vocab[t]]
        else:
            pieces = demo_tok._bpe(t)
            built += 1
        embed[i] = E[pieces].mean(0)
        head[i] = H[pieces[0]]
    return embed, head, built


def length_check(tok, run, n=1024, log=print):
    """How many of the first n samples of the run's stream train.py drops (longer than max_len), by kind."""
    drop, need, seen = {}, 0, {}
    for i in range(n):
        s = data.make_sample(run["seed"], i, run["holdout_until"] > 0)
        L = len(tok.encode(s.prompt_text() + s.completion_text())) - 1
        seen[s.kind] = seen.get(s.kind, 0) + 1
        if L > run["max_len"]:
            drop[s.kind] = drop.get(s.kind, 0) + 1
        need = max(need, L)
    if drop:
        log(f"WARNING: with this tokenizer train.py drops {sum(drop.values())} of the first {n} samples "
            f"(longer than max_len {run['max_len']}): " + ", ".join(f"{k} {v}/{seen[k]}" for k, v in sorted(drop.items()))
            + f"; the longest needs max_len {need} (--set max_len=N), or use --tokenizer run")
    else:
        log(f"length check: none of the first {n} samples is longer than max_len {run['max_len']} (longest {need})")
    return {k: [v, seen[k]] for k, v in drop.items()}, need


# ---------------------------------------------------------------------------------------------
# Sanity check


def batch_of(tok, run, n, style, also=()):
    """The first n samples of the run's training stream rendered in `style` that fit max_len with tok
    and the tokenizers in also -> (encoded, train.py micro-batches)."""
    data.configure(style)
    holdout = 0 < run["holdout_until"]
    enc = []
    for i in range(n):
        s = data.make_sample(run["seed"], i, holdout)
        e = train.encode_sample(tok, s, run["max_len"])
        if e is not None and all(train.encode_sample(t, s, run["max_len"]) is not None for t in also):
            enc.append(e)
    data.configure(run.get("style", "qwen3"))
    return enc, train.micro_batches(enc, run["micro_tokens"])


@torch.no_grad()
def weighted_ce(model, enc, mbs):
    """-> (main CE per weighted token, MTP CE per weighted token or None, main CE summed per sample)
    as train.py's loss."""
    wsum = sum(sum(e[2]) for e in enc)
    main = mtp = mtp_w = 0.0
    for ids, tgt, wts in mbs:
        loss, _ = model.loss(ids, tgt, wts)
        last = getattr(model, "last", None)
        if last:
            main += last["main"]
            mtp += last["mtp"]
            mtp_w += last["mtp_weight"]
        else:
            main += float(loss)
    return main / wsum, (mtp / mtp_w if mtp_w else None), main / len(enc)


def sanity_check(demo, model, fresh, demo_tok, tok, run, mapping, samples=24, log=print):
    """demo_tok: the demo model's tokenizer; tok: the run's (the same unless --tokenizer run)."""
    demo.eval(), model.eval(), fresh.eval()
    style = run.get("style", "qwen3")
    both = () if tok is demo_tok else (tok,)
    res = {}
    enc, mbs = batch_of(demo_tok, run, samples, "qwen3", both)
    res["demo, qwen3 style (its own)"] = weighted_ce(demo, enc, mbs)
    enc, mbs = batch_of(demo_tok, run, samples, style, both)
    res[f"demo, {style} style"] = weighted_ce(demo, enc, mbs)
    kept = " ".join(f"A{d} M{d}" if k == "full_attention" else f"M{d}"
                    for d, k in zip(mapping, model.c.layer_types) if d is not None)
    wsum = sum(sum(e[2]) for e in enc)
    ce = demo_part_ce(demo, mapping, model.c.layer_types, enc, mbs)
    res[f"demo, only the blocks kept ({kept}), full RoPE"] = (ce, None, ce * wsum / len(enc))
    if both:
        enc, mbs = batch_of(tok, run, samples, style, (demo_tok,))
    res["transplanted Qwen3.5" + (" (run's tokenizer)" if both else "")] = weighted_ce(model, enc, mbs)
    res["fresh Qwen3.5 init (train.py's)"] = weighted_ce(fresh, enc, mbs)
    log(f"sanity check: weighted CE on the run's first {len(enc)} samples (seed {run['seed']}; per trained token, "
        f"and summed per sample):")
    for k, (main, mtp, per) in res.items():
        log(f"  {k:58s} {main:.4f} {per:8.2f}" + (f"   (MTP head {mtp:.4f})" if mtp is not None else ""))
    stop = {tok.token_id("<|im_end|>"), tok.token_id("<|endoftext|>")}
    battery = data.battery_samples()
    picks = [battery[i] for i in (0, 1, 3, 6)]   # OK, 17x19 off, MARIGOLD recall, Paris chat
    for name, m, st, tk in (("demo (qwen3 style)", demo, "qwen3", demo_tok), (f"demo ({style})", demo, style, demo_tok),
                            (f"transplanted ({style})", model, style, tok)):
        data.configure(st)
        prompts = [tk.encode(s.prompt_text()) for s in picks]
        outs = m.generate(prompts, 24, stop)
        log(f"  greedy, {name}: " + " | ".join(repr(tk.decode(o)) for o in outs))
    data.configure(style)
    return {k: v[0] for k, v in res.items()}


# ---------------------------------------------------------------------------------------------


def prepare_run(run_dir, args):
    """-> run dict from RUN/run.json, or a new one from train.py's defaults of --arch; then --set and
    --steps (applied to an existing run.json too: before its first checkpoint a run has not started)."""
    run_path = os.path.join(run_dir, "run.json")
    if os.path.exists(run_path):
        with open(run_path) as f:
            run = json.load(f)
    else:
        run = json.loads(json.dumps(train.ARCHS[args.arch]))
    train.apply_sets(run, args.set)
    if args.steps:
        run["steps"] = args.steps
    if run.get("arch") != "qwen3_5_moe":
        raise SystemExit(f"warm_start.py: {run_path}: arch {run.get('arch')!r}, expected qwen3_5_moe")
    return run


def install_tokenizer(src_dir, run_dir, run):
    """Copy src_dir/tokenizer.json into RUN/tokenizer and rewrite the other two files from it."""
    tok_dir = os.path.join(run_dir, "tokenizer")
    os.makedirs(tok_dir, exist_ok=True)
    src = os.path.join(src_dir, "tokenizer.json")
    with open(src, encoding="utf-8") as f:
        tok_json = json.load(f)
    tok = bpe.Tokenizer(tok_json)
    if tok.size > run["vocab"]:
        raise SystemExit(f"warm_start.py: {src}: {tok.size} tokens > the run's vocab {run['vocab']}")
    shutil.copyfile(src, os.path.join(tok_dir, "tokenizer.json"))
    bpe.write_json(os.path.join(tok_dir, "tokenizer_config.json"),
                   bpe.tokenizer_config(tok_json, 4096, run.get("style", "qwen3")))
    bpe.write_json(os.path.join(tok_dir, "generation_config.json"), bpe.generation_config(tok))
    return bpe.Tokenizer.load(os.path.join(tok_dir, "tokenizer.json"))


def warm_start(src_dir, run_dir, args, log=print):
    os.makedirs(run_dir, exist_ok=True)
    lock = open(os.path.join(run_dir, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"warm_start.py: a train.py is running on {run_dir}")
    ckpt_path = os.path.join(run_dir, "ckpt.pt")
    if os.path.exists(ckpt_path) and not args.force:
        raise SystemExit(f"warm_start.py: {ckpt_path} exists (a run already started); --force replaces it")
    run = prepare_run(run_dir, args)
    torch.set_num_threads(run.get("threads", 1))
    data.configure(run.get("style", "qwen3"))
    demo_tok = bpe.Tokenizer.load(os.path.join(src_dir, "tokenizer.json"))
    if args.tokenizer == "demo":
        tok = demo_tok = install_tokenizer(src_dir, run_dir, run)
    else:
        tok_dir = os.path.join(run_dir, "tokenizer")
        if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):   # as train.py trains it
            log(f"training the tokenizer (vocab {run['vocab']}) -> {tok_dir}")
            os.system(f"{sys.executable} {os.path.join(HERE, 'bpe.py')} --out {tok_dir} --vocab {run['vocab']} "
                      f"--seed {run['seed']} --style {run.get('style', 'qwen3')}")
        tok = bpe.Tokenizer.load(os.path.join(tok_dir, "tokenizer.json"))
        if tok.added != demo_tok.added:
            raise SystemExit("warm_start.py: the run's added tokens differ from the demo model's")
    drops, need = length_check(tok, run, log=log)
    run["model"] = dict(run["model"], vocab_size=-(-tok.size // 64) * 64)   # as train.py sets it
    bpe.write_json(os.path.join(run_dir, "run.json"), run)

    # The model and optimizer exactly as train.py creates them at step 0, then the RNG state there.
    model = train.make_model(run)
    opt = train.make_optimizer(model, run)
    rng = torch.get_rng_state()
    fresh = train.make_model(run)
    fresh.load_state_dict(model.state_dict())

    t0 = time.time()
    demo = load_demo(src_dir)
    log(f"loaded {src_dir} (NVFP4 dequantized) in {time.time() - t0:.1f} s")
    mapping = layer_mapping(model.c, demo.c.num_hidden_layers, args.mapping)
    embed = head = None
    if tok is not demo_tok:
        embed, head, built = remap_vocab(demo, demo_tok, tok)
        log(f"  vocabulary: the run's tokenizer; {tok.size - built} of {tok.size} tokens are demo tokens (their "
            f"rows copied), {built} built from their demo pieces (embedding: mean, lm_head: first piece)")
    for n in transplant(demo, model, mapping, zero_fast=not args.keep_fast_pairs, embed=embed, head=head):
        log("  " + n)

    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 0, "run": run, "torch_rng": rng}
    tmp = ckpt_path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, ckpt_path)
    log(f"wrote {ckpt_path} (step 0, fresh AdamW state)")
    info = {"from": os.path.abspath(src_dir), "time": time.strftime("%Y-%m-%d %H:%M:%S"), "mapping": args.mapping,
            "layers_from_demo": mapping, "tokenizer": args.tokenizer, "silence_fast_pairs": not args.keep_fast_pairs,
            "dropped_by_max_len_in_first_1024": drops, "longest_in_first_1024": need}
    if not args.no_check:
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        info["sanity_ce"] = sanity_check(demo, model, fresh, demo_tok, tok, run, mapping,
                                          samples=args.check_samples, log=log)
    bpe.write_json(os.path.join(run_dir, "warm_start.json"), info)
    with open(os.path.join(run_dir, "train.log"), "a", encoding="utf-8") as f:
        f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + f"warm start from {src_dir} (tools/demo_model/warm_start.py) "
                f"-> {ckpt_path} at step 0\n")
    return state


def main():
    ap = argparse.ArgumentParser(description="Warm-start a Qwen3.5 demo run from the first demo model.")
    ap.add_argument("--from", dest="src", default="models/demo", help="the first demo model's directory")
    ap.add_argument("--dir", required=True, help="the Qwen3.5 run folder (run.json; no ckpt.pt yet)")
    ap.add_argument("--mapping", choices=["attention", "same"], default="attention",
                    help="attention (default): the full-attention layers 1, 3 get demo layers 0, 1 (attention, "
                         "MoE, norms), layers 0, 2 start as the identity; same: layer i gets demo layer i (its "
                         "attention only in 1, 3), which loses demo layers 0, 2's attention and starts far worse")
    ap.add_argument("--tokenizer", choices=["demo", "run"], default="run",
                    help="run (default): keep the run's own tokenizer (trained by bpe.py on its chat style if "
                         "missing) and map the embedding / lm_head rows by token string (remap_vocab); demo: copy "
                         "models/demo's tokenizer into RUN/tokenizer (its merges make Qwen3.5's tool prompts longer "
                         "than max_len 448: raise it with --set max_len=640)")
    ap.add_argument("--keep-fast-pairs", action="store_true",
                    help="keep the query dims of demo's unrotated fast RoPE pairs (default: silenced)")
    ap.add_argument("--force", action="store_true", help="replace an existing RUN/ckpt.pt")
    ap.add_argument("--no-check", action="store_true", help="skip the sanity check (a few forward passes)")
    ap.add_argument("--check-samples", type=int, default=24)
    ap.add_argument("--arch", default="qwen3_5_moe", choices=["qwen3_5_moe"],
                    help="only when run.json does not exist: create it from train.py's defaults")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="override a run.json field (as train.py --set, but also in an existing run.json), "
                         "e.g. --set max_len=640")
    ap.add_argument("--steps", type=int, help="set run.json's steps (as train.py --steps)")
    args = ap.parse_args()
    warm_start(args.src, args.dir, args)
    print(f"start training: /usr/bin/python3 tools/demo_model/train.py --dir {args.dir}")


if __name__ == "__main__":
    main()
