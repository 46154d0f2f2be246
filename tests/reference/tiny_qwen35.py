"""Writes tiny random Qwen3.5-MoE / Qwen3-Next checkpoints in the Hugging Face layout.

The config.json is shaped like the published Qwen3.5-397B-A17B one (shared/specs/
qwen-models-and-nvfp4.md §1: a VLM wrapper, model_type "qwen3_5_moe", the text model under
"text_config" with model_type "qwen3_5_moe_text", layer_types and full_attention_interval,
rope_parameters with mrope_section / mrope_interleaved / partial_rotary_factor, a vision_config and
the vision token ids), scaled down: hidden 64, 4 layers (3 linear_attention + 1 full_attention),
4 query / 2 KV heads of head_dim 64 (rotary 16), GDN with 2 key heads x 16 and 6 value heads x 8
(3 value heads per key head, dk != dv), conv kernel 4, 8 experts top-2 of width 32, a shared
expert of width 48, vocab 520 (the 512 ids of tern's tiny tokenizer plus 4 vision ids, padded).

  /usr/bin/python3 tests/reference/tiny_qwen35.py --out DIR [--arch qwen3_5_moe|qwen3_next]
      [--text-only] [--fused-experts] [--dtype BF16|F32|F16] [--seed 0] [--shards N]
      [--no-extras] [--tokenizer DIR] [--set KEY=JSON ...]

Tensor names (P = model.language_model.layers.{i}. for the wrapper, model.layers.{i}. otherwise):
  linear layers:  P.linear_attn.in_proj_qkv [2*Hk*dk + Hv*dv, H], in_proj_z [Hv*dv, H],
                  in_proj_b [Hv, H], in_proj_a [Hv, H]  (qwen3_next instead: in_proj_qkvz
                  [2*Hk*dk + 2*Hv*dv, H] and in_proj_ba [2*Hv, H], grouped per key head),
                  conv1d.weight [2*Hk*dk + Hv*dv, 1, K], dt_bias [Hv], A_log [Hv] (always F32),
                  norm.weight [dv], out_proj.weight [H, Hv*dv]
  full layers:    P.self_attn.q_proj [2*Hq*hd, H] (per head: hd query rows then hd gate rows),
                  k_proj / v_proj [Hkv*hd, H], o_proj [H, Hq*hd], q_norm / k_norm [hd]
  every layer:    P.input_layernorm / post_attention_layernorm [H]; P.mlp.gate [E, H],
                  P.mlp.experts.{e}.{gate,up}_proj [F, H] and down_proj [H, F] (or, with
                  --fused-experts, P.mlp.experts.gate_up_proj [E, 2F, H] and down_proj [E, H, F]),
                  P.mlp.shared_expert.{gate,up}_proj [S, H], down_proj [H, S],
                  P.mlp.shared_expert_gate [1, H]
  top level:      embed_tokens [V, H], norm [H] under the text prefix; lm_head.weight [V, H]
  extras (--no-extras drops them and writes mtp_num_hidden_layers 0): the MTP head mtp.* (fc
                  [H, 2H], pre_fc_norm_embedding, pre_fc_norm_hidden, norm, layers.0.* a
                  full-attention MoE layer; mtp_num_hidden_layers 1) and, for the wrapper,
                  model.visual.* (a one-block vision tower, unused by the text model).
Weights are random with scales that keep activations O(1): zero-centred norm weights near 0
(the model uses 1 + w), the gated GDN norm near 1, Linears ~N(0, 1/in).  The same --seed gives
the same text-model values in every form, so the forms can be checked against each other.
"""

import argparse
import json
import os
import shutil

import numpy as np

from tiny_checkpoint import encode, write_safetensors


def tiny_text_config(arch="qwen3_5_moe", **overrides):
    """The text config (Qwen3_5MoeTextConfig fields or Qwen3NextConfig fields)."""
    layers = overrides.get("num_hidden_layers", 4)
    interval = overrides.get("full_attention_interval", 4)
    cfg = {
        "attention_bias": False, "attention_dropout": 0.0, "attn_output_gate": True,
        "dtype": "bfloat16", "eos_token_id": 503, "full_attention_interval": interval,
        "head_dim": 64, "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.02,
        "layer_types": ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)],
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_num_key_heads": 2,
        "linear_num_value_heads": 6, "linear_value_head_dim": 8, "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 4096, "model_type": "qwen3_5_moe_text", "moe_intermediate_size": 32,
        "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False, "num_attention_heads": 4,
        "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": layers, "num_key_value_heads": 2,
        "output_router_logits": False, "rms_norm_eps": 1e-6,
        "rope_parameters": {"mrope_interleaved": True, "mrope_section": [3, 3, 2], "rope_type": "default",
                            "rope_theta": 10000000, "partial_rotary_factor": 0.25},
        "router_aux_loss_coef": 0.001, "shared_expert_intermediate_size": 48, "use_cache": True,
        "vocab_size": 520,
    }
    if arch == "qwen3_next":
        # Qwen3-Next-80B-A3B's config.json style: flat rope fields, no layer_types (derived from
        # full_attention_interval), norm_topk_prob / decoder_sparse_step / mlp_only_layers.
        for k in ("layer_types", "rope_parameters", "attn_output_gate", "mamba_ssm_dtype",
                  "mtp_use_dedicated_embeddings", "dtype"):
            cfg.pop(k)
        cfg.update({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
                    "rope_theta": 10000000, "partial_rotary_factor": 0.25, "rope_scaling": None,
                    "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [],
                    "intermediate_size": 96, "torch_dtype": "bfloat16", "bos_token_id": 503})
    elif arch != "qwen3_5_moe":
        raise ValueError(f"arch {arch!r}")
    cfg.update(overrides)
    if "num_hidden_layers" in overrides and "layer_types" not in overrides and "layer_types" in cfg:
        cfg["layer_types"] = ["linear_attention" if (i + 1) % cfg["full_attention_interval"] else "full_attention"
                              for i in range(cfg["num_hidden_layers"])]
    return cfg


def wrapper_config(text_cfg):
    """Qwen3_5MoeConfig around a text config, as the published checkpoints are shaped."""
    return {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"], "image_token_id": 514,
        "model_type": "qwen3_5_moe", "text_config": text_cfg, "tie_word_embeddings": False,
        "transformers_version": "4.57.0.dev0", "video_token_id": 515,
        "vision_config": {"deepstack_visual_indexes": [], "depth": 1, "hidden_act": "gelu_pytorch_tanh",
                          "hidden_size": 16, "in_channels": 3, "initializer_range": 0.02,
                          "intermediate_size": 32, "model_type": "qwen3_5_moe", "num_heads": 2,
                          "num_position_embeddings": 16, "out_hidden_size": text_cfg["hidden_size"],
                          "patch_size": 2, "spatial_merge_size": 2, "temporal_patch_size": 2},
        "vision_end_token_id": 513, "vision_start_token_id": 512,
    }


def _layer_types(cfg):
    if cfg.get("layer_types"):
        legacy = {"mamba": "linear_attention", "attention": "full_attention"}
        return [legacy.get(t, t) for t in cfg["layer_types"]]
    n = cfg.get("full_attention_interval", 4)
    return ["linear_attention" if (i + 1) % n else "full_attention" for i in range(cfg["num_hidden_layers"])]


class _Rand:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def mat(self, out, inp, scale=1.0):
        return (scale * self.rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)

    def zc_norm(self, n):   # zero-centred norm weight: the model multiplies by 1 + w
        return (0.1 * self.rng.standard_normal(n)).astype(np.float32)

    def norm(self, n):      # plain norm weight (gated GDN norm)
        return (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)


def _attention(r, cfg, p, w):
    h, hq, hkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    w[p + "self_attn.q_proj.weight"] = r.mat(2 * hq * hd, h)
    w[p + "self_attn.k_proj.weight"] = r.mat(hkv * hd, h)
    w[p + "self_attn.v_proj.weight"] = r.mat(hkv * hd, h)
    w[p + "self_attn.o_proj.weight"] = r.mat(h, hq * hd, 2.5)
    w[p + "self_attn.q_norm.weight"] = r.zc_norm(hd)
    w[p + "self_attn.k_norm.weight"] = r.zc_norm(hd)


def _moe(r, cfg, p, w):
    h, e = cfg["hidden_size"], cfg["num_experts"]
    f, s = cfg["moe_intermediate_size"], cfg["shared_expert_intermediate_size"]
    w[p + "mlp.gate.weight"] = r.mat(e, h, 2.0)
    for x in range(e):
        w[p + f"mlp.experts.{x}.gate_proj.weight"] = r.mat(f, h)
        w[p + f"mlp.experts.{x}.up_proj.weight"] = r.mat(f, h)
        w[p + f"mlp.experts.{x}.down_proj.weight"] = r.mat(h, f)
    w[p + "mlp.shared_expert.gate_proj.weight"] = r.mat(s, h)
    w[p + "mlp.shared_expert.up_proj.weight"] = r.mat(s, h)
    w[p + "mlp.shared_expert.down_proj.weight"] = r.mat(h, s)
    w[p + "mlp.shared_expert_gate.weight"] = r.mat(1, h)


def random_weights(cfg, seed=0):
    """{name: float32 array} of the text model with the "model." prefix, split GDN projections and
    per-expert tensors (the canonical form; see fuse_gdn / fuse_experts / to_wrapper)."""
    r = _Rand(seed)
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv, kk = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"], cfg["linear_conv_kernel_dim"]
    conv_dim = 2 * hk * dk + hv * dv
    w = {"model.embed_tokens.weight": r.rng.standard_normal((v, h)).astype(np.float32)}
    for i, kind in enumerate(_layer_types(cfg)):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = r.zc_norm(h)
        w[p + "post_attention_layernorm.weight"] = r.zc_norm(h)
        if kind == "linear_attention":
            q = p + "linear_attn."
            w[q + "in_proj_qkv.weight"] = r.mat(conv_dim, h)
            w[q + "in_proj_z.weight"] = r.mat(hv * dv, h)
            w[q + "in_proj_b.weight"] = r.mat(hv, h)
            w[q + "in_proj_a.weight"] = r.mat(hv, h)
            w[q + "conv1d.weight"] = (0.6 * r.rng.standard_normal((conv_dim, 1, kk))).astype(np.float32)
            # decay g = -exp(A_log) * softplus(a + dt_bias): some heads remember for hundreds of
            # tokens (A ~ 0.005), others forget within a few (A ~ 4).
            w[q + "dt_bias"] = r.rng.uniform(-2.0, 1.0, hv).astype(np.float32)
            w[q + "A_log"] = r.rng.uniform(np.log(0.005), np.log(4.0), hv).astype(np.float32)
            w[q + "norm.weight"] = r.norm(dv)
            w[q + "out_proj.weight"] = r.mat(h, hv * dv)
        else:
            _attention(r, cfg, p, w)
        mlp_only = i in (cfg.get("mlp_only_layers") or []) or (i + 1) % cfg.get("decoder_sparse_step", 1) != 0
        if cfg["model_type"] == "qwen3_next" and mlp_only:
            f = cfg["intermediate_size"]
            w[p + "mlp.gate_proj.weight"] = r.mat(f, h)
            w[p + "mlp.up_proj.weight"] = r.mat(f, h)
            w[p + "mlp.down_proj.weight"] = r.mat(h, f)
        else:
            _moe(r, cfg, p, w)
    w["model.norm.weight"] = r.zc_norm(h)
    if not cfg.get("tie_word_embeddings"):
        w["lm_head.weight"] = r.mat(v, h, 2.0)
    return w


def extra_weights(cfg, vision, seed):
    """mtp.* (one full-attention layer, vLLM Qwen3_5MultiTokenPredictor / Qwen3NextMultiTokenPredictor
    names: a MoE, or for qwen3_next a dense MLP where Qwen3NextDecoderLayer's rule says so for
    layer_idx 0) and, when vision, a one-block model.visual.* tower (Qwen3_5MoeVisionModel names)."""
    r = _Rand(seed + 1000)
    h = cfg["hidden_size"]
    w = {"mtp.fc.weight": r.mat(h, 2 * h), "mtp.pre_fc_norm_embedding.weight": r.zc_norm(h),
         "mtp.pre_fc_norm_hidden.weight": r.zc_norm(h), "mtp.norm.weight": r.zc_norm(h),
         "mtp.layers.0.input_layernorm.weight": r.zc_norm(h),
         "mtp.layers.0.post_attention_layernorm.weight": r.zc_norm(h)}
    _attention(r, cfg, "mtp.layers.0.", w)
    dense = cfg["model_type"] == "qwen3_next" and (0 in (cfg.get("mlp_only_layers") or [])
                                                   or 1 % cfg.get("decoder_sparse_step", 1) != 0)
    if dense:
        f = cfg["intermediate_size"]
        w["mtp.layers.0.mlp.gate_proj.weight"] = r.mat(f, h)
        w["mtp.layers.0.mlp.up_proj.weight"] = r.mat(f, h)
        w["mtp.layers.0.mlp.down_proj.weight"] = r.mat(h, f)
    else:
        _moe(r, cfg, "mtp.layers.0.", w)
    if vision:
        d, m, p, t, n = 16, 32, 2, 2, 16
        vp = "model.visual."
        w[vp + "patch_embed.proj.weight"] = r.rng.standard_normal((d, 3, t, p, p)).astype(np.float32)
        w[vp + "patch_embed.proj.bias"] = np.zeros(d, np.float32)
        w[vp + "pos_embed.weight"] = r.mat(n, d)
        b = vp + "blocks.0."
        for name, shape in (("norm1", d), ("norm2", d)):
            w[b + name + ".weight"], w[b + name + ".bias"] = r.norm(shape), np.zeros(shape, np.float32)
        for name, (o, i) in (("attn.qkv", (3 * d, d)), ("attn.proj", (d, d)), ("mlp.linear_fc1", (m, d)),
                             ("mlp.linear_fc2", (d, m))):
            w[b + name + ".weight"], w[b + name + ".bias"] = r.mat(o, i), np.zeros(o, np.float32)
        merged = d * 4
        w[vp + "merger.norm.weight"], w[vp + "merger.norm.bias"] = r.norm(d), np.zeros(d, np.float32)
        for name, (o, i) in (("merger.linear_fc1", (merged, merged)), ("merger.linear_fc2", (h, merged))):
            w[vp + name + ".weight"], w[vp + name + ".bias"] = r.mat(o, i), np.zeros(o, np.float32)
    return w


def fuse_gdn(weights, cfg):
    """Split GDN projections -> Qwen3-Next's fused ones, the inverse of
    Qwen3NextGatedDeltaNet.fix_query_key_value_ordering: for key head g (r = Hv/Hk value heads each)
      in_proj_qkvz rows = concat_g [q_g (dk) | k_g (dk) | v_g (r*dv) | z_g (r*dv)]
      in_proj_ba   rows = concat_g [b_g (r) | a_g (r)]
    where q_g = in_proj_qkv rows [g*dk, (g+1)*dk), k_g the same past Hk*dk, v_g = value rows of
    heads g*r .. g*r+r-1. conv1d keeps the [q_all | k_all | v_all] channel order."""
    hk, hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    r, kd = hv // hk, hk * dk
    out = {}
    for name, a in weights.items():
        if name.endswith("linear_attn.in_proj_qkv.weight"):
            p = name[: -len("in_proj_qkv.weight")]
            z, b, aa = weights[p + "in_proj_z.weight"], weights[p + "in_proj_b.weight"], weights[p + "in_proj_a.weight"]
            groups, ba = [], []
            for g in range(hk):
                groups += [a[g * dk:(g + 1) * dk], a[kd + g * dk:kd + (g + 1) * dk],
                           a[2 * kd + g * r * dv:2 * kd + (g + 1) * r * dv], z[g * r * dv:(g + 1) * r * dv]]
                ba += [b[g * r:(g + 1) * r], aa[g * r:(g + 1) * r]]
            out[p + "in_proj_qkvz.weight"] = np.concatenate(groups, axis=0)
            out[p + "in_proj_ba.weight"] = np.concatenate(ba, axis=0)
        elif not any(name.endswith("linear_attn.in_proj_" + s + ".weight") for s in "zba"):
            out[name] = a
    return out


def fuse_experts(weights):
    """Per-expert tensors -> the fused Qwen3_5MoeExperts / Qwen3NextExperts parameters:
    P.mlp.experts.gate_up_proj [E, 2F, H] = stack_e(concat(gate_e, up_e)), down_proj [E, H, F]."""
    out, layers = {}, {}
    for name, a in weights.items():
        head, sep, tail = name.partition(".mlp.experts.")
        if not sep:
            out[name] = a
            continue
        e, proj = tail.split(".")[:2]
        layers.setdefault(head, {}).setdefault(int(e), {})[proj] = a
    for head, ex in layers.items():
        ids = sorted(ex)
        out[head + ".mlp.experts.gate_up_proj"] = np.stack(
            [np.concatenate([ex[e]["gate_proj"], ex[e]["up_proj"]]) for e in ids])
        out[head + ".mlp.experts.down_proj"] = np.stack([ex[e]["down_proj"] for e in ids])
    return out


def write_dir(out_dir, config, weights, dtype="BF16", shards=1, f32_names=("A_log",)):
    """config.json + safetensors (index when shards > 1). Tensors whose last name part is in
    f32_names are stored F32 whatever dtype is (the published checkpoints keep A_log in F32)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    enc = {n: encode("F32" if n.rsplit(".", 1)[-1] in f32_names else dtype, a) for n, a in weights.items()}
    names = sorted(enc)
    if shards <= 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), enc, {"format": "pt"})
        return
    weight_map = {}
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = names[s::shards]
        write_safetensors(os.path.join(out_dir, fname), {n: enc[n] for n in part}, {"format": "pt"})
        weight_map.update({n: fname for n in part})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        total = sum(len(e[2]) for e in enc.values())
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def build(arch="qwen3_5_moe", text_only=False, fused_experts=False, extras=True, seed=0, **overrides):
    """-> (config dict, {name: float32 array}) for one form."""
    if not extras:
        overrides.setdefault("mtp_num_hidden_layers", 0)  # no head: the config says so
    cfg = tiny_text_config(arch, **overrides)
    w = random_weights(cfg, seed)
    if arch == "qwen3_next":
        w = fuse_gdn(w, cfg)
    wrapper = arch == "qwen3_5_moe" and not text_only
    if extras:
        w.update(extra_weights(cfg, vision=wrapper, seed=seed))
    if fused_experts:
        w = fuse_experts(w)
    if not wrapper:
        if arch == "qwen3_5_moe":
            cfg = {"architectures": ["Qwen3_5MoeForCausalLM"], **cfg}
        return cfg, w
    inner = lambda n: n.startswith("model.") and not n.startswith("model.visual.")  # noqa: E731
    w = {("model.language_model." + n[len("model."):] if inner(n) else n): a for n, a in w.items()}
    return wrapper_config(cfg), w


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--arch", choices=("qwen3_5_moe", "qwen3_next"), default="qwen3_5_moe")
    ap.add_argument("--text-only", action="store_true", help="qwen3_5_moe_text at the top level, model.layers.*")
    ap.add_argument("--fused-experts", action="store_true", help="mlp.experts.gate_up_proj / down_proj 3-D tensors")
    ap.add_argument("--dtype", choices=("BF16", "F32", "F16"), default="BF16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--no-extras", action="store_true", help="leave out mtp.* and model.visual.*")
    ap.add_argument("--tokenizer",
                    help="copy tokenizer.json, tokenizer_config.json (and generation_config.json) from here")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON", help="override a text-config field")
    a = ap.parse_args()
    overrides = {}
    for kv in a.set:
        key, _, val = kv.partition("=")
        overrides[key] = json.loads(val)
    cfg, w = build(a.arch, a.text_only, a.fused_experts, not a.no_extras, a.seed, **overrides)
    write_dir(a.out, cfg, w, a.dtype, a.shards)
    if a.tokenizer:
        for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            if os.path.exists(os.path.join(a.tokenizer, name)):
                shutil.copy(os.path.join(a.tokenizer, name), os.path.join(a.out, name))
    print(a.out)


if __name__ == "__main__":
    main()
