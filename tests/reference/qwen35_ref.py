"""Float64 NumPy reference of the Hugging Face forward pass for Qwen3.5-MoE and Qwen3-Next.

Covers model_type "qwen3_5_moe" (the VLM wrapper: text fields under "text_config", weights under
model.language_model.*, plus lm_head; model.visual.* is ignored), its text-only form
"qwen3_5_moe_text" (Qwen3_5MoeForCausalLM: model.layers.*, lm_head; model.visual.* ignored) and
"qwen3_next" (Qwen3NextForCausalLM). Written from transformers'
models/qwen3_5_moe/{modeling,modular,configuration}_qwen3_5_moe.py and
models/qwen3_next/{modeling,configuration}_qwen3_next.py, and shared/specs/qwen-models-and-nvfp4.md
§1-2 -- never from tern's C++. Everything runs in float64 (HF: bf16 / fp32).

The multi-token-prediction head (mtp.*) is not in transformers (it drops ^mtp.* on load); its
forward, Model.mtp_forward, is written from vLLM's qwen3_5_mtp.py / qwen3_next_mtp.py and the
proposer that drives them (v1/spec_decode/eagle.py), spec §2.7:
  row at position p: h_p = norm1p(x_p, norm), the main model's output AFTER its final norm (what
  vLLM's model forward returns and compute_logits feeds straight to lm_head); t = the token after p
    e = norm1p(embed_tokens[t], mtp.pre_fc_norm_embedding);  g = norm1p(h_p, mtp.pre_fc_norm_hidden)
    y = concat([e, g]) @ mtp.fc^T                     # embedding first; fc [H, 2H]
    y = y + attn(norm1p(y, input_layernorm)); y = y + moe(norm1p(y, post_attention_layernorm))
        # mtp.layers.{k}: a gated full-attention layer at position p (the proposer keeps the
        # target rows' positions and shifts their ids by one), its own K/V over the head's rows
    logits = norm1p(y, mtp.norm) @ lm_head^T          # embedding and lm_head shared
  k = step % layers (spec_step_idx), layers = mtp_num_hidden_layers (Qwen3.5; vLLM's default 1) or
  num_nextn_predict_layers (Qwen3-Next; default 1). Qwen3-Next's layer k takes a MoE or dense MLP
  by Qwen3NextDecoderLayer's rule with layer_idx k (vLLM's extract_layer_index("mtp.layers.k")).

  x = embed_tokens[ids]                                                # [T, H]
  per layer i:  x = x + mixer_i(norm1p(x, input_layernorm))            # GDN or gated attention
                x = x + moe_i(norm1p(x, post_attention_layernorm))     # (qwen3_next: or dense MLP)
  logits = norm1p(x, norm) @ lm_head^T
norm1p is the zero-centred RMSNorm (Qwen3_5MoeRMSNorm / Qwen3NextRMSNorm): x*rsqrt(mean x^2+eps)*(1+w).

Public API:
  Model(model_dir, w4a4=False, observer=None)
    .forward(ids, state=None, delta_rule="chunked"|"recurrent", return_hidden=False) -> logits
        [T, vocab] (and h [T, H], the final-normed hidden states, with return_hidden); the T
        tokens continue `state` (HybridState: conv + recurrent state per linear layer, K/V per
        full-attention layer) and update it in place.
    .mtp_forward(h, next_ids, state=None, step=0) -> MTP logits [T, vocab]: rows continue
        `state` (MtpState: position and the head's K/V); row t is position state.pos + t.
    .greedy(prompt, steps) -> (ids, logits rows): prompt in one call, then one token per call
        (recurrent delta rule), as a server decodes.
  parse_config(text_cfg_dict) -> Qwen35Config;  is_hybrid_config(text_cfg_dict) -> bool
Quantized Linears (NVFP4 / FP8) are dequantized on load through qwen3_ref.Weights / quant_np.
"""

import dataclasses

import numpy as np

import gated_delta_np as gdn
from qwen3_ref import Weights, causal_attention, linear, rounds_attention, softmax
from safetensors_np import load_config

TEXT_MODEL_TYPES = {"qwen3_5_moe": "qwen3_5_moe", "qwen3_5_moe_text": "qwen3_5_moe", "qwen3_next": "qwen3_next"}
_LEGACY_LAYER_TYPES = {"mamba": "linear_attention", "attention": "full_attention"}  # remap_legacy_layer_types


@dataclasses.dataclass
class Qwen35Config:
    family: str                 # "qwen3_5_moe" or "qwen3_next"
    vocab_size: int
    hidden_size: int            # H
    num_hidden_layers: int
    layer_types: tuple          # "linear_attention" | "full_attention" per layer
    num_attention_heads: int    # Hq (full attention)
    num_key_value_heads: int    # Hkv
    head_dim: int               # hd
    rms_norm_eps: float
    rope_theta: float
    partial_rotary_factor: float
    attention_bias: bool
    tie_word_embeddings: bool
    linear_conv_kernel_dim: int  # K
    linear_key_head_dim: int     # dk
    linear_value_head_dim: int   # dv
    linear_num_key_heads: int    # Hk
    linear_num_value_heads: int  # Hv
    num_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    shared_expert_intermediate_size: int
    norm_topk_prob: bool        # qwen3_5_moe: always True (its router has no flag)
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple = ()
    intermediate_size: int = 0  # dense MLP of qwen3_next mlp_only / non-sparse layers
    mtp_layers: int = 1         # MTP head layers (vLLM: mtp_num_hidden_layers / num_nextn_predict_layers)

    @property
    def model_type(self):
        return self.family

    @property
    def rotary_dim(self):
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def key_dim(self):
        return self.linear_num_key_heads * self.linear_key_head_dim

    @property
    def value_dim(self):
        return self.linear_num_value_heads * self.linear_value_head_dim

    @property
    def conv_dim(self):
        return 2 * self.key_dim + self.value_dim

    def is_moe_layer(self, i):
        """qwen3_5_moe: every layer (it deletes mlp_only_layers / decoder_sparse_step);
        qwen3_next: Qwen3NextDecoderLayer's rule."""
        if self.family == "qwen3_5_moe":
            return True
        return (i not in self.mlp_only_layers and self.num_experts > 0
                and (i + 1) % self.decoder_sparse_step == 0)


def is_hybrid_config(text_cfg):
    return text_cfg.get("model_type") in TEXT_MODEL_TYPES


def _rope(cfg):
    """-> (theta, partial_rotary_factor). transformers v5 RotaryEmbeddingConfigMixin: values in
    rope_parameters (or legacy rope_scaling) win; else the flat rope_theta / partial_rotary_factor;
    else default_theta 10000 and the 0.25 that Qwen3NextConfig.__post_init__ sets for BC. Only
    rope_type "default" exists for these models; text-only M-RoPE (mrope_section,
    mrope_interleaved) is plain RoPE because the three position rows are equal."""
    theta = cfg.get("rope_theta", 10000.0)
    factor = cfg.get("partial_rotary_factor", 0.25)
    for key in ("rope_parameters", "rope_scaling"):
        p = cfg.get(key)
        if p is None:
            continue
        if not isinstance(p, dict):
            raise ValueError(f"config {key} must be an object, got {p!r}")
        rope_type = p.get("rope_type", p.get("type", "default"))
        if rope_type not in ("default", "mrope"):
            raise NotImplementedError(f"config {key}: rope_type {rope_type!r} (only 'default')")
        theta = p.get("rope_theta", theta)
        factor = p.get("partial_rotary_factor", factor)
    return float(theta), float(factor)


def parse_config(cfg):
    """cfg: the text config (safetensors_np.load_config) -> Qwen35Config, with the defaults of
    Qwen3_5MoeTextConfig / Qwen3NextConfig for missing fields."""
    mt = cfg.get("model_type")
    if mt not in TEXT_MODEL_TYPES:
        raise NotImplementedError(f"model_type {mt!r} is not one of {sorted(TEXT_MODEL_TYPES)}")
    family = TEXT_MODEL_TYPES[mt]
    nxt = family == "qwen3_next"
    if cfg.get("hidden_act", "silu") != "silu":
        raise NotImplementedError(f"hidden_act {cfg['hidden_act']!r} (only silu)")
    layers = int(cfg.get("num_hidden_layers", 48 if nxt else 40))
    types = cfg.get("layer_types")
    if types is None:
        interval = int(cfg.get("full_attention_interval", 4))
        types = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)]
    types = tuple(_LEGACY_LAYER_TYPES.get(t, t) for t in types)
    if len(types) != layers or any(t not in ("linear_attention", "full_attention") for t in types):
        raise ValueError(f"layer_types {list(types)} for {layers} layers")
    hidden = int(cfg.get("hidden_size", 2048))
    heads = int(cfg.get("num_attention_heads", 16))
    head_dim = cfg.get("head_dim", 256)
    theta, factor = _rope(cfg)
    c = Qwen35Config(
        family=family,
        vocab_size=int(cfg.get("vocab_size", 151936 if nxt else 248320)),
        hidden_size=hidden, num_hidden_layers=layers, layer_types=types,
        num_attention_heads=heads,
        num_key_value_heads=int(cfg.get("num_key_value_heads", 2)),
        head_dim=int(head_dim if head_dim is not None else hidden // heads),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        rope_theta=theta, partial_rotary_factor=factor,
        attention_bias=bool(cfg.get("attention_bias", False)),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        linear_conv_kernel_dim=int(cfg.get("linear_conv_kernel_dim", 4)),
        linear_key_head_dim=int(cfg.get("linear_key_head_dim", 128)),
        linear_value_head_dim=int(cfg.get("linear_value_head_dim", 128)),
        linear_num_key_heads=int(cfg.get("linear_num_key_heads", 16)),
        linear_num_value_heads=int(cfg.get("linear_num_value_heads", 32)),
        num_experts=int(cfg.get("num_experts", 512 if nxt else 256)),
        num_experts_per_tok=int(cfg.get("num_experts_per_tok", 10 if nxt else 8)),
        moe_intermediate_size=int(cfg.get("moe_intermediate_size", 512)),
        shared_expert_intermediate_size=int(cfg.get("shared_expert_intermediate_size", 512)),
        norm_topk_prob=bool(cfg.get("norm_topk_prob", True)) if nxt else True,
    )
    # vLLM: Qwen3_5MultiTokenPredictor getattr(config, "mtp_num_hidden_layers", 1);
    # Qwen3NextMultiTokenPredictor getattr(config, "num_nextn_predict_layers", 1).
    c.mtp_layers = int(cfg.get("num_nextn_predict_layers" if nxt else "mtp_num_hidden_layers") or 1)
    if nxt:
        c.decoder_sparse_step = int(cfg.get("decoder_sparse_step", 1))
        c.mlp_only_layers = tuple(int(i) for i in (cfg.get("mlp_only_layers") or ()))
        c.intermediate_size = int(cfg.get("intermediate_size", 5632))
    if c.num_attention_heads % c.num_key_value_heads:
        raise ValueError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads")
    if c.linear_num_value_heads % c.linear_num_key_heads:
        raise ValueError("linear_num_value_heads is not a multiple of linear_num_key_heads")
    if c.rotary_dim % 2 or not 0 < c.rotary_dim <= c.head_dim:
        raise ValueError(f"rotary dim {c.rotary_dim} (head_dim {c.head_dim} x {factor})")
    if not 1 <= c.num_experts_per_tok <= c.num_experts:
        raise ValueError(f"num_experts_per_tok {c.num_experts_per_tok} not in [1, {c.num_experts}]")
    return c


# --------------------------------------------------------------------------------------------
# Blocks


def norm1p(x, w, eps):
    """Zero-centred RMSNorm: (x * rsqrt(mean(x^2) + eps)) * (1 + w). x: [..., D]; w: [D]."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def partial_rope(x, positions, rotary_dim, theta):
    """apply_rotary_pos_emb with a partial rotary dim: NeoX rotate_half on x[..., :rotary_dim],
    the rest passes. inv_freq[j] = theta^(-2j/rotary_dim). x: [T, heads, hd]; positions: [T]."""
    inv_freq = 1.0 / theta ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)[:, None, :]            # [T, 1, rd]
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    half = rotary_dim // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], axis=-1)
    return np.concatenate([rot * np.cos(emb) + rotated * np.sin(emb), rest], axis=-1)


def gated_attention(x, w, c, positions, kv):
    """Qwen3_5MoeAttention / Qwen3NextAttention. x: [T, H] normed; kv: [K, V] list, each
    [S_past, Hkv, hd] or None, extended in place. q_proj output is viewed (T, Hq, 2*hd) and
    chunked in two: per head h, rows [2*hd*h, 2*hd*h+hd) are its query and the next hd rows its
    gate. q/k norms (zero-centred, per head) come before RoPE. -> [T, H]"""
    T = x.shape[0]
    hd, hq, hkv = c.head_dim, c.num_attention_heads, c.num_key_value_heads
    qg = linear(x, w["q_proj"], w.get("q_proj_bias")).reshape(T, hq, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(T, hq * hd)
    q = norm1p(q, w["q_norm"], c.rms_norm_eps)
    k = norm1p(linear(x, w["k_proj"], w.get("k_proj_bias")).reshape(T, hkv, hd), w["k_norm"], c.rms_norm_eps)
    v = linear(x, w["v_proj"], w.get("v_proj_bias")).reshape(T, hkv, hd)
    q = partial_rope(q, positions, c.rotary_dim, c.rope_theta)
    k = partial_rope(k, positions, c.rotary_dim, c.rope_theta)
    if kv[0] is not None:
        k = np.concatenate([kv[0], k], axis=0)
        v = np.concatenate([kv[1], v], axis=0)
    kv[0], kv[1] = k, v
    out = causal_attention(q, k, v, rounds_attention(w)).reshape(T, hq * hd)
    out = out / (1.0 + np.exp(-gate))                                          # * sigmoid(gate)
    return linear(out, w["o_proj"], w.get("o_proj_bias"))


def gated_delta_net(x, w, c, layer_state, delta_rule):
    """Qwen3_5MoeGatedDeltaNet / Qwen3NextGatedDeltaNet. x: [T, H] normed; w: this layer's
    weights with split projections (see Model._gdn_weights); layer_state: dict with "conv"
    [K-1, conv_dim] and "rec" [Hv, dk, dv] (None at the start), updated in place. -> [T, H]"""
    T = x.shape[0]
    hk, hv, dk, dv = c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim
    mixed, z, b, a = w["project"](x)              # [T, conv_dim] in [q_all|k_all|v_all], [T, Hv, dv], [T, Hv] x2
    mixed, layer_state["conv"] = gdn.causal_conv1d(mixed, w["conv1d"], layer_state["conv"])
    q = mixed[:, :c.key_dim].reshape(T, hk, dk)
    k = mixed[:, c.key_dim:2 * c.key_dim].reshape(T, hk, dk)
    v = mixed[:, 2 * c.key_dim:].reshape(T, hv, dv)
    beta = 1.0 / (1.0 + np.exp(-b))
    g = -np.exp(w["A_log"]) * np.logaddexp(0.0, a + w["dt_bias"])   # softplus
    rule = gdn.chunk_gated_delta_rule if delta_rule == "chunked" else gdn.recurrent_gated_delta_rule
    o, layer_state["rec"] = rule(q, k, v, g, beta, layer_state["rec"])
    y = gdn.gated_rms_norm(o, z, w["norm"], c.rms_norm_eps).reshape(T, hv * dv)
    return linear(y, w["out_proj"])


def swiglu(x, gate, up, down):
    return linear(gdn.silu(linear(x, gate)) * linear(x, up), down)


def sparse_moe(x, router, expert, shared, shared_gate, top_k, renormalise):
    """Qwen3_5MoeSparseMoeBlock / Qwen3NextSparseMoeBlock. router: [E, H]; expert(e) ->
    (gate, up, down); shared: (gate, up, down); shared_gate: [1, H]. Softmax over all experts,
    top-k (ties -> lower index), divided by the top-k sum when renormalise. -> [T, H]"""
    probs = softmax(linear(x, router), axis=-1)
    experts = np.argsort(-probs, axis=-1, kind="stable")[:, :top_k]
    weights = np.take_along_axis(probs, experts, axis=-1)
    if renormalise:
        weights = weights / np.sum(weights, axis=-1, keepdims=True)
    out = np.zeros_like(x)
    for e in np.unique(experts):
        rows, slots = np.nonzero(experts == e)
        out[rows] += swiglu(x[rows], *expert(int(e))) * weights[rows, slots][:, None]
    sg = 1.0 / (1.0 + np.exp(-linear(x, shared_gate)))       # [T, 1]
    return out + sg * swiglu(x, *shared)


# --------------------------------------------------------------------------------------------
# The model


class HybridState:
    """Per-sequence state: pos (tokens seen); per layer a dict {"conv", "rec"} (linear layers:
    conv [K-1, conv_dim], recurrent [Hv, dk, dv]) or a [K, V] list (full attention, each
    [S, Hkv, hd] after RoPE)."""

    def __init__(self, cfg):
        self.pos = 0
        self.layers = [{"conv": None, "rec": None} if t == "linear_attention" else [None, None]
                       for t in cfg.layer_types]


class MtpState:
    """The MTP head's per-sequence state: pos (rows seen) and one [K, V] list per MTP layer (each
    [S, Hkv, hd] after RoPE, None before the first row)."""

    def __init__(self, cfg):
        self.pos = 0
        self.kv = [[None, None] for _ in range(cfg.mtp_layers)]


class Model:
    def __init__(self, model_dir, cache_weights=True, w4a4=False, observer=None, bf16_activations=False,
                 bf16_attention=None, w4a8=False):
        text_cfg, full_cfg = load_config(model_dir)
        self.cfg = parse_config(text_cfg)
        self.w = Weights(model_dir, full_cfg, cache=cache_weights, w4a4=w4a4, observer=observer,
                         bf16_activations=bf16_activations, bf16_attention=bf16_attention, w4a8=w4a8)
        c = self.cfg
        self.embed = self.w.get("embed_tokens.weight", (c.vocab_size, c.hidden_size))

    # -- weights ------------------------------------------------------------------------------

    @staticmethod
    def _layer(i, mtp):
        """-> (tensor prefix, top_level): main layer i under the text prefix, or MTP layer i."""
        return (f"mtp.layers.{i}.", True) if mtp else (f"layers.{i}.", False)

    def _attn_weights(self, i, mtp=False):
        c, (p, top) = self.cfg, self._layer(i, mtp)
        p += "self_attn."
        hq, hkv, hd, h = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.hidden_size
        w = {"q_proj": self.w.linear(p + "q_proj.weight", (2 * hq * hd, h), top),
             "k_proj": self.w.linear(p + "k_proj.weight", (hkv * hd, h), top),
             "v_proj": self.w.linear(p + "v_proj.weight", (hkv * hd, h), top),
             "o_proj": self.w.linear(p + "o_proj.weight", (h, hq * hd), top),
             "q_norm": self.w.get(p + "q_norm.weight", (hd,), top),
             "k_norm": self.w.get(p + "k_norm.weight", (hd,), top),
             "bf16_attention": self.w.bf16_attention}
        if c.attention_bias:
            for name, n in (("q_proj", 2 * hq * hd), ("k_proj", hkv * hd), ("v_proj", hkv * hd), ("o_proj", h)):
                w[name + "_bias"] = self.w.get(p + name + ".bias", (n,), top)
        return w

    def _gdn_weights(self, i):
        """Split (Qwen3.5: in_proj_qkv [2*key_dim+value_dim, H], in_proj_z [value_dim, H],
        in_proj_b / in_proj_a [Hv, H]) or fused (Qwen3-Next: in_proj_qkvz, in_proj_ba), chosen by
        the tensor names present. w["project"](x) -> (mixed [T, conv_dim], z [T, Hv, dv], b, a)."""
        c, p = self.cfg, f"layers.{i}.linear_attn."
        h, hk, hv = c.hidden_size, c.linear_num_key_heads, c.linear_num_value_heads
        dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
        w = {"conv1d": self.w.get(p + "conv1d.weight", (c.conv_dim, 1, c.linear_conv_kernel_dim))[:, 0, :],
             "dt_bias": self.w.get(p + "dt_bias", (hv,)),
             "A_log": self.w.get(p + "A_log", (hv,)),
             "norm": self.w.get(p + "norm.weight", (dv,)),
             "out_proj": self.w.linear(p + "out_proj.weight", (h, c.value_dim))}
        if self.w.has(p + "in_proj_qkvz.weight"):
            qkvz = self.w.linear(p + "in_proj_qkvz.weight", (2 * c.key_dim + 2 * c.value_dim, h))
            ba = self.w.linear(p + "in_proj_ba.weight", (2 * hv, h))
            r = hv // hk

            def project(x):
                """Qwen3NextGatedDeltaNet.fix_query_key_value_ordering: per key-head group
                qkvz = [q (dk) | k (dk) | v (r*dv) | z (r*dv)], ba = [b (r) | a (r)]."""
                T = x.shape[0]
                m = linear(x, qkvz).reshape(T, hk, 2 * dk + 2 * r * dv)
                q, k = m[..., :dk], m[..., dk:2 * dk]
                v, z = m[..., 2 * dk:2 * dk + r * dv], m[..., 2 * dk + r * dv:]
                nba = linear(x, ba).reshape(T, hk, 2 * r)
                mixed = np.concatenate([q.reshape(T, -1), k.reshape(T, -1), v.reshape(T, -1)], axis=-1)
                return (mixed, z.reshape(T, hv, dv), nba[..., :r].reshape(T, hv), nba[..., r:].reshape(T, hv))
        else:
            qkv = self.w.linear(p + "in_proj_qkv.weight", (c.conv_dim, h))
            wz = self.w.linear(p + "in_proj_z.weight", (c.value_dim, h))
            wb = self.w.linear(p + "in_proj_b.weight", (hv, h))
            wa = self.w.linear(p + "in_proj_a.weight", (hv, h))

            def project(x):
                return linear(x, qkv), linear(x, wz).reshape(x.shape[0], hv, dv), linear(x, wb), linear(x, wa)
        w["project"] = project
        return w

    def _expert(self, i, e, mtp=False):
        """(gate [F, H], up [F, H], down [H, F]) of expert e: per-expert tensors
        mlp.experts.{e}.{gate,up,down}_proj.weight (hub / ModelOpt layout, any quant_np format) or
        the fused 3-D Qwen3_5MoeExperts / Qwen3NextExperts parameters mlp.experts.gate_up_proj
        [E, 2F, H] (rows 0..F-1 gate, F..2F-1 up: `.chunk(2, dim=-1)` of linear(x, gate_up_proj[e]))
        and mlp.experts.down_proj [E, H, F]."""
        c, (p, top) = self.cfg, self._layer(i, mtp)
        p += "mlp.experts."
        h, f = c.hidden_size, c.moe_intermediate_size
        if self.w.has(p + f"{e}.gate_proj.weight", top):
            return (self.w.linear(p + f"{e}.gate_proj.weight", (f, h), top),
                    self.w.linear(p + f"{e}.up_proj.weight", (f, h), top),
                    self.w.linear(p + f"{e}.down_proj.weight", (h, f), top))
        gate_up = self.w.get(p + "gate_up_proj", (c.num_experts, 2 * f, h), top)
        down = self.w.get(p + "down_proj", (c.num_experts, h, f), top)
        if top and not self.w.bf16_activations:  # wrap names modules relative to the text prefix; MTP names are absolute
            return gate_up[e, :f], gate_up[e, f:], down[e]
        dt = self.w.dtype(p + "gate_up_proj", top)
        return (self.w.wrap(gate_up[e, :f], p + f"{e}.gate_proj", dt, top),
                self.w.wrap(gate_up[e, f:], p + f"{e}.up_proj", dt, top),
                self.w.wrap(down[e], p + f"{e}.down_proj", dt, top))

    def _mlp(self, i, x, mtp=False):
        """Layer i's MLP (MTP layer i's when mtp: the same rule with layer_idx i, as vLLM builds
        Qwen3NextDecoderLayer(prefix="mtp.layers.i"); Qwen3.5 layers are always MoE)."""
        c, (p, top) = self.cfg, self._layer(i, mtp)
        p += "mlp."
        h = c.hidden_size
        if not c.is_moe_layer(i):
            f = c.intermediate_size
            return swiglu(x, self.w.linear(p + "gate_proj.weight", (f, h), top),
                          self.w.linear(p + "up_proj.weight", (f, h), top),
                          self.w.linear(p + "down_proj.weight", (h, f), top))
        s = c.shared_expert_intermediate_size
        shared = (self.w.linear(p + "shared_expert.gate_proj.weight", (s, h), top),
                  self.w.linear(p + "shared_expert.up_proj.weight", (s, h), top),
                  self.w.linear(p + "shared_expert.down_proj.weight", (h, s), top))
        return sparse_moe(x, self.w.linear(p + "gate.weight", (c.num_experts, h), top),
                          lambda e: self._expert(i, e, mtp), shared,
                          self.w.linear(p + "shared_expert_gate.weight", (1, h), top), c.num_experts_per_tok,
                          c.norm_topk_prob)

    def _lm_head(self):
        c = self.cfg
        if c.tie_word_embeddings:
            return self.w.wrap(self.embed, "lm_head", self.w.dtype("embed_tokens.weight"), top_level=True)
        return self.w.linear("lm_head.weight", (c.vocab_size, c.hidden_size), top_level=True)

    # -- forward ------------------------------------------------------------------------------

    def forward(self, input_ids, state=None, delta_rule="chunked", return_hidden=False):
        """input_ids: [T]; state: HybridState or None (a fresh one, discarded); delta_rule:
        "chunked" (torch_chunk_gated_delta_rule, what HF uses for prompts) or "recurrent"
        (torch_recurrent_gated_delta_rule, HF's one-token decode). -> logits [T, vocab], or
        (logits, h) with return_hidden: h [T, H] the hidden states after the final norm."""
        c = self.cfg
        ids = np.asarray(input_ids, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ValueError("forward needs at least one token")
        if ids.min() < 0 or ids.max() >= c.vocab_size:
            raise ValueError(f"token id outside [0, {c.vocab_size})")
        if delta_rule not in ("chunked", "recurrent"):
            raise ValueError(f"delta_rule {delta_rule!r}")
        state = HybridState(c) if state is None else state
        positions = state.pos + np.arange(ids.size)
        x = self.embed[ids]
        for i, kind in enumerate(c.layer_types):
            p = f"layers.{i}."
            a = norm1p(x, self.w.get(p + "input_layernorm.weight", (c.hidden_size,)), c.rms_norm_eps)
            if kind == "linear_attention":
                x = x + gated_delta_net(a, self._gdn_weights(i), c, state.layers[i], delta_rule)
            else:
                x = x + gated_attention(a, self._attn_weights(i), c, positions, state.layers[i])
            m = norm1p(x, self.w.get(p + "post_attention_layernorm.weight", (c.hidden_size,)), c.rms_norm_eps)
            x = x + self._mlp(i, m)
        state.pos += ids.size
        x = norm1p(x, self.w.get("norm.weight", (c.hidden_size,)), c.rms_norm_eps)
        logits = linear(x, self._lm_head())
        return (logits, x) if return_hidden else logits

    def mtp_forward(self, hidden, next_ids, state=None, step=0):
        """The MTP head (module docstring). hidden: [T, H] final-normed main-model states at
        positions state.pos .. state.pos + T - 1; next_ids: [T], the token after each of those
        positions; state: MtpState or None (fresh, discarded), extended in place.
        -> logits [T, vocab]; row t predicts the token after next_ids[t]."""
        c, eps, h = self.cfg, self.cfg.rms_norm_eps, self.cfg.hidden_size
        ids = np.asarray(next_ids, dtype=np.int64).reshape(-1)
        hidden = np.asarray(hidden, dtype=np.float64).reshape(-1, h)
        if ids.size != hidden.shape[0] or ids.size == 0:
            raise ValueError(f"mtp_forward: {ids.size} ids for {hidden.shape[0]} hidden rows")
        if ids.min() < 0 or ids.max() >= c.vocab_size:
            raise ValueError(f"token id outside [0, {c.vocab_size})")
        state = MtpState(c) if state is None else state
        positions = state.pos + np.arange(ids.size)
        top = lambda name: self.w.get(name, (h,), top_level=True)  # noqa: E731
        e = norm1p(self.embed[ids], top("mtp.pre_fc_norm_embedding.weight"), eps)
        g = norm1p(hidden, top("mtp.pre_fc_norm_hidden.weight"), eps)
        y = linear(np.concatenate([e, g], axis=-1), self.w.linear("mtp.fc.weight", (h, 2 * h), top_level=True))
        k = step % c.mtp_layers
        p = f"mtp.layers.{k}."
        a = norm1p(y, top(p + "input_layernorm.weight"), eps)
        y = y + gated_attention(a, self._attn_weights(k, mtp=True), c, positions, state.kv[k])
        m = norm1p(y, top(p + "post_attention_layernorm.weight"), eps)
        y = y + self._mlp(k, m, mtp=True)
        state.pos += ids.size
        return linear(norm1p(y, top("mtp.norm.weight"), eps), self._lm_head())

    def mtp_teacher_forced(self, ids, n):
        """The MTP logits a decoder would draft along `ids`: h from one forward over ids[:-1], the
        head over every position with the next ids. -> [n, vocab], the rows of the last n
        positions of ids[:-1] (row i: position len(ids) - 1 - n + i, predicting ids[len - n + i])."""
        _, hidden = self.forward(list(ids[:-1]), return_hidden=True)
        return self.mtp_forward(hidden, list(ids[1:]))[len(ids) - 1 - n:]

    def forward_in_chunks(self, input_ids, chunk, delta_rule="chunked"):
        """The prompt fed `chunk` tokens per call through one state -> logits [T, vocab]."""
        state = HybridState(self.cfg)
        ids = list(input_ids)
        return np.concatenate([self.forward(ids[s:s + chunk], state, delta_rule)
                               for s in range(0, len(ids), chunk)], axis=0)

    def greedy(self, prompt_ids, steps):
        """Prompt in one call (chunked rule), then one token per call (recurrent rule).
        -> (ids [steps], logits [steps, vocab]); row i chose ids[i] (ties -> lowest id)."""
        state = HybridState(self.cfg)
        logits = self.forward(prompt_ids, state)[-1]
        out, rows = [], []
        for _ in range(steps):
            nxt = int(np.argmax(logits))
            out.append(nxt)
            rows.append(logits)
            if len(out) < steps:
                logits = self.forward([nxt], state, "recurrent")[-1]
        return out, (np.stack(rows) if rows else np.zeros((0, self.cfg.vocab_size)))


def forward(model_dir, input_ids, w4a4=False, w4a8=False):
    return Model(model_dir, w4a4=w4a4, w4a8=w4a8).forward(input_ids)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Float64 reference logits / greedy ids (Qwen3.5-MoE, Qwen3-Next)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    ap.add_argument("--steps", type=int, default=0, help="greedy steps (0: print the argmax per position)")
    args = ap.parse_args()
    prompt = [int(t) for t in args.prompt_ids.split(",") if t.strip()]
    model = Model(args.model)
    if args.steps > 0:
        print(model.greedy(prompt, args.steps)[0])
    else:
        print([int(i) for i in np.argmax(model.forward(prompt), axis=-1)])
