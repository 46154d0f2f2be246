"""Writes tiny random Qwen3 / Qwen3-MoE checkpoints in the Hugging Face layout.

Used by test_reference_selfcheck.py and usable as a CLI to make test models for tern:

  /usr/bin/python3 tests/reference/tiny_checkpoint.py --out DIR --arch qwen3_moe \
      [--dtype BF16|F32|F16] [--seed 0] [--shards 1] [--tie] [--vlm-wrapper] [--fused-experts]

Writes DIR/config.json and DIR/model.safetensors (or model-0000N-of-0000M.safetensors plus
model.safetensors.index.json when --shards > 1). The safetensors writer here is our own and
minimal: 8-byte little-endian header length, JSON header (keys sorted, padded with spaces to
a multiple of 8 bytes), then the tensors back to back in header order.

--fused-experts writes each MoE layer's experts as the two 3-D tensors of transformers v5's
Qwen3MoeExperts instead of per-expert matrices (same values, see fuse_experts).
"""

import argparse
import json
import os

import numpy as np

# safetensors dtype -> bytes per element, for the writer's size check
_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "U8": 1, "I8": 1,
             "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8, "U64": 8, "BOOL": 1}


def bf16_bits(x):
    """float array -> uint16 BF16 bit patterns, round to nearest even (finite inputs)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def encode(dtype, x):
    """float array -> (dtype, shape, little-endian bytes) for F32/F16/F64/BF16."""
    x = np.asarray(x)
    if dtype == "BF16":
        data = bf16_bits(x).astype("<u2").tobytes()
    elif dtype in ("F32", "F16", "F64"):
        data = x.astype({"F32": "<f4", "F16": "<f2", "F64": "<f8"}[dtype]).tobytes()
    else:
        raise ValueError(f"encode: use raw bytes for {dtype}")
    return dtype, list(x.shape), data


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: (dtype, shape, raw little-endian bytes)}; metadata: {str: str} or None."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        need = int(np.prod(shape, dtype=np.int64)) * _ITEMSIZE[dtype]
        if len(data) != need:
            raise ValueError(f"{name}: {len(data)} bytes for {dtype}{list(shape)}, need {need}")
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata is not None:
        header["__metadata__"] = metadata
    hjson = json.dumps(header, sort_keys=True).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)
    with open(path, "wb") as f:
        f.write(len(hjson).to_bytes(8, "little"))
        f.write(hjson)
        for b in blobs:
            f.write(b)


def tiny_config(arch, tie=False, **overrides):
    """A small but non-degenerate config: GQA 4/2 heads, head_dim 16 != hidden/heads."""
    cfg = {
        "architectures": ["Qwen3MoeForCausalLM" if arch == "qwen3_moe" else "Qwen3ForCausalLM"],
        "model_type": arch,
        "vocab_size": 97,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "hidden_act": "silu",
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "attention_bias": False,
        "tie_word_embeddings": tie,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    if arch == "qwen3_moe":
        cfg.update({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 24,
                    "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": []})
    cfg.update(overrides)
    return cfg


def random_weights(cfg, seed=0):
    """{HF tensor name: float32 array} for cfg (plain "model." prefix). Scales keep every
    activation O(1) so logits are well spread (std ~1-3) and the argmax is not a near-tie."""
    rng = np.random.default_rng(seed)
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    hq, hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or h // hq

    def mat(out, inp):
        return (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((v, h)).astype(np.float32)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(h)
        w[p + "post_attention_layernorm.weight"] = norm(h)
        w[p + "self_attn.q_proj.weight"] = mat(hq * hd, h)
        w[p + "self_attn.k_proj.weight"] = mat(hkv * hd, h)
        w[p + "self_attn.v_proj.weight"] = mat(hkv * hd, h)
        w[p + "self_attn.o_proj.weight"] = mat(h, hq * hd)
        w[p + "self_attn.q_norm.weight"] = norm(hd)
        w[p + "self_attn.k_norm.weight"] = norm(hd)
        if cfg.get("attention_bias"):
            for name, n in (("q_proj", hq * hd), ("k_proj", hkv * hd), ("v_proj", hkv * hd), ("o_proj", h)):
                w[p + f"self_attn.{name}.bias"] = (0.1 * rng.standard_normal(n)).astype(np.float32)
        num_experts = cfg.get("num_experts", 0) if cfg["model_type"] == "qwen3_moe" else 0
        sparse = (i not in (cfg.get("mlp_only_layers") or []) and num_experts > 0
                  and (i + 1) % cfg.get("decoder_sparse_step", 1) == 0)
        if sparse:
            inter = cfg["moe_intermediate_size"]
            w[p + "mlp.gate.weight"] = 2.0 * mat(num_experts, h)
            for e in range(num_experts):
                w[p + f"mlp.experts.{e}.gate_proj.weight"] = mat(inter, h)
                w[p + f"mlp.experts.{e}.up_proj.weight"] = mat(inter, h)
                w[p + f"mlp.experts.{e}.down_proj.weight"] = mat(h, inter)
        else:
            inter = cfg["intermediate_size"]
            w[p + "mlp.gate_proj.weight"] = mat(inter, h)
            w[p + "mlp.up_proj.weight"] = mat(inter, h)
            w[p + "mlp.down_proj.weight"] = mat(h, inter)
    w["model.norm.weight"] = norm(h)
    if not cfg.get("tie_word_embeddings"):
        w["lm_head.weight"] = (2.0 * mat(v, h)).astype(np.float32)
    return w


def fuse_experts(weights):
    """Per-expert tensors -> transformers v5's fused layout, per MoE layer prefix P:
      P.mlp.experts.gate_up_proj [E, 2I, H] = stack_e(concat(gate_e, up_e) along rows)
      P.mlp.experts.down_proj    [E, H, I]  = stack_e(down_e)
    (Qwen3MoeExperts: gate_up_proj (E, 2*I, H), down_proj (E, H, I); gate is rows 0..I-1.)"""
    out, layers = {}, {}
    for name, a in weights.items():
        head, sep, tail = name.partition(".mlp.experts.")
        if not sep:
            out[name] = a
            continue
        e, proj = tail.split(".")[:2]
        layers.setdefault(head, {}).setdefault(int(e), {})[proj] = a
    for head, experts in layers.items():
        ids = sorted(experts)
        if ids != list(range(len(ids))):
            raise ValueError(f"{head}: experts {ids} are not 0..E-1")
        out[head + ".mlp.experts.gate_up_proj"] = np.stack(
            [np.concatenate([experts[e]["gate_proj"], experts[e]["up_proj"]], axis=0) for e in ids])
        out[head + ".mlp.experts.down_proj"] = np.stack([experts[e]["down_proj"] for e in ids])
    return out


def write_model(out_dir, cfg, weights, dtype="BF16", shards=1, vlm_wrapper=False):
    """Writes config.json and the safetensors file(s). weights: {name: float array}.
    vlm_wrapper: nest cfg under "text_config" and prefix names with model.language_model."""
    os.makedirs(out_dir, exist_ok=True)
    if vlm_wrapper:
        weights = {("model.language_model." + n[len("model."):] if n.startswith("model.") else n): a
                   for n, a in weights.items()}
        text = {k: val for k, val in cfg.items() if k not in ("architectures", "tie_word_embeddings")}
        text["model_type"] = cfg["model_type"]
        top = {"architectures": ["TinyWrapperForConditionalGeneration"], "model_type": cfg["model_type"],
               "tie_word_embeddings": cfg.get("tie_word_embeddings", False), "text_config": text}
    else:
        top = cfg
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(top, f, indent=2)
    names = list(weights)
    if shards <= 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"),
                          {n: encode(dtype, weights[n]) for n in names}, {"format": "pt"})
        return
    weight_map = {}
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = names[s::shards]
        write_safetensors(os.path.join(out_dir, fname), {n: encode(dtype, weights[n]) for n in part},
                          {"format": "pt"})
        weight_map.update({n: fname for n in part})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--arch", choices=("qwen3", "qwen3_moe"), default="qwen3")
    ap.add_argument("--dtype", choices=("BF16", "F32", "F16"), default="BF16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--tie", action="store_true", help="tie_word_embeddings (no lm_head.weight)")
    ap.add_argument("--vlm-wrapper", action="store_true", help="config under text_config, model.language_model.*")
    ap.add_argument("--fused-experts", action="store_true",
                    help="MoE experts as fused 3-D mlp.experts.gate_up_proj / down_proj (transformers v5)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help='override a config field, e.g. --set num_hidden_layers=3 --set mlp_only_layers=[0]')
    args = ap.parse_args()
    overrides = {}
    for kv in args.set:
        key, _, val = kv.partition("=")
        overrides[key] = json.loads(val)
    cfg = tiny_config(args.arch, tie=args.tie, **overrides)
    weights = random_weights(cfg, args.seed)
    if args.fused_experts:
        weights = fuse_experts(weights)
    write_model(args.out, cfg, weights, args.dtype, args.shards, args.vlm_wrapper)
    print(args.out)


if __name__ == "__main__":
    main()
