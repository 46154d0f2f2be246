"""Float64 NumPy reference of the Hugging Face transformers forward pass for Qwen3.

Covers model_type "qwen3" (dense) and "qwen3_moe". Written from transformers'
models/qwen3/modeling_qwen3.py, models/qwen3_moe/modeling_qwen3_moe.py and their
configuration_*.py (defaults), and shared/specs/qwen-models-and-nvfp4.md §3 -- never from
tern's C++. It is the oracle CI compares tern's logits against (see compare.py).

Everything is computed in float64: weights stored as BF16/F16/F32/FP8 are widened exactly,
and every step HF does in the model dtype (bf16) or in fp32 is done in float64 here. The
result is the exact math of the model, not a bit-copy of HF's bf16 run.

Per token sequence x = embed_tokens[ids]                           # [T, H]
  for each layer:  x = x + attention(rms_norm(x, input_layernorm))
                   x = x + mlp_or_moe(rms_norm(x, post_attention_layernorm))
  logits = rms_norm(x, norm) @ lm_head^T                             # [T, vocab]

Public API:
  forward(model_dir, input_ids) -> logits [T, vocab] float64
  greedy(model_dir, prompt_ids, steps) -> list of generated ids (argmax, float64 KV cache)
  Model(model_dir, w4a4=False, observer=None): .forward(ids, cache=None) with an explicit
      KVCache, .greedy(...)
  parse_config(dict) -> Qwen3Config

Quantized checkpoints (quant_np.py): every Linear stored as NVFP4, FP8 (per tensor) or FP8
128x128 blocks is dequantized to float64 on load, exactly; by default activations stay float64
(what Hopper-class GPUs do with Marlin: W4A16). w4a4=True reproduces Blackwell's NVFP4 numerics
by also fake-quantizing the input of every NVFP4 Linear per 16-element block with its own
input_scale as the global scale (quant_np.fake_quant_nvfp4_activation). observer(module, x), when
given, sees the input x [T, in] of every Linear (calibration in quantize_np.py). w4a8=True
reproduces tern's --quant-numerics w4a8: every NVFP4 Linear's input (routers and gates aside)
fake-quantized to 8-bit integers per 16-element block under a power-of-two scale
(quant_np.fake_quant_int8_activation).
"""

import dataclasses

import numpy as np

import quant_np
from safetensors_np import Checkpoint, load_config, to_float64


# --------------------------------------------------------------------------------------------
# Configuration


@dataclasses.dataclass
class Qwen3Config:
    model_type: str            # "qwen3" or "qwen3_moe"
    vocab_size: int
    hidden_size: int           # H
    num_hidden_layers: int
    num_attention_heads: int   # Hq
    num_key_value_heads: int   # Hkv; Hq % Hkv == 0, query head h uses kv head h // (Hq/Hkv)
    head_dim: int              # hd
    rms_norm_eps: float
    rope_theta: float
    attention_bias: bool
    tie_word_embeddings: bool
    intermediate_size: int     # dense MLP width (every layer of qwen3, non-MoE layers of qwen3_moe)
    # MoE fields (qwen3_moe only; num_experts == 0 means no MoE layer)
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = False
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple = ()

    def is_moe_layer(self, layer_idx):
        """Same rule as Qwen3MoeDecoderLayer.__init__."""
        return (layer_idx not in self.mlp_only_layers and self.num_experts > 0
                and (layer_idx + 1) % self.decoder_sparse_step == 0)


def _rope_theta(cfg):
    """rope_theta from a v5 "rope_parameters" dict, a v4 "rope_scaling" dict or the flat field.

    Only rope_type "default" (plain RoPE) is implemented; anything else raises.
    """
    theta = cfg.get("rope_theta", 10000.0)  # HF config default
    for key in ("rope_parameters", "rope_scaling"):
        params = cfg.get(key)
        if params is None:
            continue
        if not isinstance(params, dict):
            raise ValueError(f"config {key} must be an object, got {params!r}")
        rope_type = params.get("rope_type", params.get("type", "default"))
        if rope_type != "default":
            raise NotImplementedError(f"config {key}: rope_type {rope_type!r} is not implemented "
                                      "(only 'default')")
        theta = params.get("rope_theta", theta)
    return float(theta)


def parse_config(cfg):
    """cfg: the text config dict (see safetensors_np.load_config) -> Qwen3Config.

    Defaults are those of transformers' Qwen3Config / Qwen3MoeConfig. Note that a missing
    head_dim is 128 for qwen3 (Qwen3Config default) but hidden/heads for qwen3_moe (its
    config has no such field and the attention uses getattr(config, "head_dim", H/Hq)).
    """
    model_type = cfg.get("model_type")
    if model_type not in ("qwen3", "qwen3_moe"):
        raise NotImplementedError(f"model_type {model_type!r} is not qwen3 or qwen3_moe")
    moe = model_type == "qwen3_moe"

    if cfg.get("hidden_act", "silu") != "silu":
        raise NotImplementedError(f"hidden_act {cfg['hidden_act']!r} (only silu)")
    if cfg.get("use_sliding_window", False):
        raise NotImplementedError("use_sliding_window=true is not implemented")
    layer_types = cfg.get("layer_types")
    if layer_types is not None and any(t != "full_attention" for t in layer_types):
        raise NotImplementedError(f"layer_types other than full_attention: {layer_types}")
    if cfg.get("partial_rotary_factor", 1.0) != 1.0:
        raise NotImplementedError("partial_rotary_factor != 1")

    hidden = int(cfg.get("hidden_size", 2048 if moe else 4096))
    heads = int(cfg.get("num_attention_heads", 32))
    kv_heads = cfg.get("num_key_value_heads", 4 if moe else 32)
    kv_heads = heads if kv_heads is None else int(kv_heads)
    head_dim = cfg.get("head_dim")
    if head_dim is None:
        head_dim = hidden // heads if moe else 128
    if heads % kv_heads != 0:
        raise ValueError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")

    c = Qwen3Config(
        model_type=model_type,
        vocab_size=int(cfg.get("vocab_size", 151936)),
        hidden_size=hidden,
        num_hidden_layers=int(cfg.get("num_hidden_layers", 24 if moe else 32)),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=int(head_dim),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        rope_theta=_rope_theta(cfg),
        attention_bias=bool(cfg.get("attention_bias", False)),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        intermediate_size=int(cfg.get("intermediate_size", 6144 if moe else 22016)),
    )
    if moe:
        c.num_experts = int(cfg.get("num_experts", 128))
        c.num_experts_per_tok = int(cfg.get("num_experts_per_tok", 8))
        c.moe_intermediate_size = int(cfg.get("moe_intermediate_size", 768))
        c.norm_topk_prob = bool(cfg.get("norm_topk_prob", False))
        c.decoder_sparse_step = int(cfg.get("decoder_sparse_step", 1))
        c.mlp_only_layers = tuple(int(i) for i in (cfg.get("mlp_only_layers") or ()))
        if c.num_experts > 0 and not 1 <= c.num_experts_per_tok <= c.num_experts:
            raise ValueError(f"num_experts_per_tok {c.num_experts_per_tok} not in [1, {c.num_experts}]")
        if c.decoder_sparse_step < 1:
            raise ValueError(f"decoder_sparse_step {c.decoder_sparse_step} < 1")
    return c


# --------------------------------------------------------------------------------------------
# Blocks. Shapes: T tokens in this call, S = cached + T keys, H hidden, hd head_dim.


def rms_norm(x, w, eps):
    """Qwen3RMSNorm: w * (x * rsqrt(mean(x^2) + eps)) over the last axis; no +1 on w.
    x: [..., D]; w: [D] -> [..., D]"""
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return w * (x / np.sqrt(variance + eps))


def rope_cos_sin(positions, head_dim, theta):
    """Default RoPE tables. positions: [T] ints -> cos, sin: [T, hd].
    inv_freq[i] = theta^(-2i/hd), i < hd/2; emb = concat(freqs, freqs) (NeoX layout)."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # [hd/2]
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]         # [T, hd/2]
    emb = np.concatenate([freqs, freqs], axis=-1)                                         # [T, hd]
    return np.cos(emb), np.sin(emb)


def rotate_half(x):
    """[..., hd] -> concat(-x[..., hd/2:], x[..., :hd/2])"""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x: [T, heads, hd]; cos, sin: [T, hd] -> [T, heads, hd]"""
    return x * cos[:, None, :] + rotate_half(x) * sin[:, None, :]


class Lin:
    """One Linear for the forward pass. w: float64 [out, in] (dequantized); name: the module's
    full name ("model.layers.0.self_attn.q_proj"); act: None or a function applied to the input
    first (W4A4 fake-quant); observer: None or observer(name, x) called with every input."""

    __slots__ = ("w", "name", "act", "observer")

    def __init__(self, w, name, act=None, observer=None):
        self.w, self.name, self.act, self.observer = w, name, act, observer

    @property
    def shape(self):
        return self.w.shape


def round_bf16(x):
    """x rounded to BF16 as tern's AMX GEMM rounds its input (kernels/matmul_amx.h): through
    float32 (tern's activations), round to nearest even, magnitudes below 2^-126 flushed to
    zero, NaN kept. -> float64 array."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = r.view(np.float32).astype(np.float64)
    out[np.abs(f) < np.float32(2.0 ** -126)] = 0.0
    out[np.isnan(f)] = np.nan
    return out


def tiles_round_input(fmt, dtype, module):
    """Whether tern's BF16-activation mode rounds this Linear's input: weights exact in BF16
    (BF16 dense, NVFP4, FP8; not F32/F16), except MoE routers
    and the shared-expert gate, which stay f32 (their outputs pick experts)."""
    if module.endswith(".mlp.gate") or module.endswith("shared_expert_gate"):
        return False
    return fmt in ("nvfp4", "fp8", "fp8_block") or (fmt == "dense" and dtype == "BF16")


def linear(x, w, b=None):
    """nn.Linear: x: [T, in]; w: [out, in] array or Lin; b: [out] or None -> [T, out]"""
    if isinstance(w, Lin):
        if w.observer is not None:
            w.observer(w.name, x)
        if w.act is not None:
            x = w.act(x)
        w = w.w
    y = x @ w.T
    return y if b is None else y + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def rounds_attention(w):
    """Whether tern rounds this attention's inputs to BF16: w (a layer's attention weights) of a
    model in the BF16-activation mode (its q_proj's input is rounded: weights exact in BF16, mode
    on; F32/F16 checkpoints are not), on the path whose attention takes the mode
    (Weights.bf16_attention, recorded in w by _attn_weights)."""
    q = w["q_proj"]
    return bool(w.get("bf16_attention")) and isinstance(q, Lin) and q.act is round_bf16


def causal_attention(q, k, v, bf16=False):
    """softmax(q k^T / sqrt(hd)) v for the last T of S positions, causal, grouped-query.
    q: [T, Hq, hd]; k, v: [S, Hkv, hd] -> [T, Hq, hd].
    bf16: tern's BF16-activation mode of attention (kernels/ops.h PagedAttention; with
    TERN_BF16_MIN_ROWS=1, as the bf16 tests run tern, every attention takes it): the products
    on bf16(q * scale), bf16(k), bf16(v), and p = bf16(exp(s - max)) normalised by its own sum
    (tern's max is the running one over key blocks of 96: the row max for sequences of up to
    96 positions, as these tests use)."""
    T, hq, hd = q.shape
    S, hkv = k.shape[0], k.shape[1]
    scale = hd ** -0.5
    if bf16:
        q, k, v, scale = round_bf16(q * scale), round_bf16(k), round_bf16(v), 1.0
    group = hq // hkv
    k_rep = np.repeat(k, group, axis=1)  # [S, Hq, hd]; head h reads kv head h // group
    v_rep = np.repeat(v, group, axis=1)
    scores = np.einsum("thd,shd->hts", q, k_rep) * scale                # [Hq, T, S]
    allowed = np.arange(S)[None, :] <= (S - T + np.arange(T))[:, None]  # [T, S]
    scores = np.where(allowed[None, :, :], scores, -np.inf)
    if bf16:
        p = round_bf16(np.exp(scores - np.max(scores, axis=-1, keepdims=True)))
        probs = p / np.sum(p, axis=-1, keepdims=True)
    else:
        probs = softmax(scores, axis=-1)                                 # [Hq, T, S]
    return np.einsum("hts,shd->thd", probs, v_rep)                       # [T, Hq, hd]


def attention(x, w, cfg, positions, cache_kv):
    """Qwen3Attention + eager_attention_forward for one sequence.

    x: [T, H] (already input-normed); w: dict of this layer's self_attn weights;
    positions: [T] absolute positions of the T tokens; cache_kv: [K, V] list for this layer,
    each [S_past, Hkv, hd] or None, extended in place with this call's keys/values.
    Query t (at position positions[t]) attends to every cached key and to this call's keys
    0..t (causal). Returns [T, H].
    """
    T = x.shape[0]
    hd, hq, hkv = cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads
    q = linear(x, w["q_proj"], w.get("q_proj_bias")).reshape(T, hq, hd)    # [T, Hq, hd]
    k = linear(x, w["k_proj"], w.get("k_proj_bias")).reshape(T, hkv, hd)   # [T, Hkv, hd]
    v = linear(x, w["v_proj"], w.get("v_proj_bias")).reshape(T, hkv, hd)   # [T, Hkv, hd]
    q = rms_norm(q, w["q_norm"], cfg.rms_norm_eps)  # per-head norm, BEFORE RoPE
    k = rms_norm(k, w["k_norm"], cfg.rms_norm_eps)
    cos, sin = rope_cos_sin(positions, hd, cfg.rope_theta)
    q = apply_rope(q, cos, sin)
    k = apply_rope(k, cos, sin)

    if cache_kv[0] is not None:
        k = np.concatenate([cache_kv[0], k], axis=0)  # [S, Hkv, hd]
        v = np.concatenate([cache_kv[1], v], axis=0)
    cache_kv[0], cache_kv[1] = k, v
    out = causal_attention(q, k, v, rounds_attention(w)).reshape(T, hq * hd)  # [T, Hq*hd]
    return linear(out, w["o_proj"], w.get("o_proj_bias"))               # [T, H]


def mlp(x, gate, up, down):
    """SwiGLU: down(silu(gate x) * up x). x: [T, H]; gate, up: [I, H]; down: [H, I] -> [T, H]"""
    return linear(silu(linear(x, gate)) * linear(x, up), down)


def moe_route(x, router, top_k, norm_topk_prob):
    """Qwen3MoeTopKRouter. x: [T, H]; router: [E, H]
    -> (weights [T, k], experts [T, k] int): softmax over all E experts, the k largest
    probabilities, divided by their sum when norm_topk_prob. Ties in probability go to the
    lower expert index (a stable sort; torch.topk leaves that order unspecified)."""
    probs = softmax(linear(x, router), axis=-1)                          # [T, E]
    experts = np.argsort(-probs, axis=-1, kind="stable")[:, :top_k]      # [T, k]
    weights = np.take_along_axis(probs, experts, axis=-1)                # [T, k]
    if norm_topk_prob:
        weights = weights / np.sum(weights, axis=-1, keepdims=True)
    return weights, experts


def moe(x, router, expert_weights, top_k, norm_topk_prob):
    """Qwen3MoeSparseMoeBlock (no shared expert). x: [T, H]; router: [E, H];
    expert_weights(e) -> (gate [I, H], up [I, H], down [H, I]) -> [T, H]:
    out[t] = sum_j weights[t, j] * mlp_{experts[t, j]}(x[t])"""
    weights, experts = moe_route(x, router, top_k, norm_topk_prob)
    out = np.zeros_like(x)
    for e in np.unique(experts):
        rows, slots = np.nonzero(experts == e)                  # tokens routed to expert e
        gate, up, down = expert_weights(int(e))
        out[rows] += mlp(x[rows], gate, up, down) * weights[rows, slots][:, None]
    return out


# --------------------------------------------------------------------------------------------
# Weights and the model


class Weights:
    """Float64 weights by HF name, read from a Checkpoint. Finds the text-model prefix
    ("model." or, for VLM wrappers, "model.language_model."). Every "*.weight" goes through
    quant_np.load_linear: NVFP4, FP8 per-tensor and FP8 block weights are dequantized exactly,
    and a quantized module that the quantization config excludes is an error naming it."""

    def __init__(self, model_dir, full_config, cache=True, w4a4=False, observer=None, bf16_activations=False,
                 bf16_attention=None, w4a8=False):
        self.ckpt = Checkpoint(model_dir)
        self.cache = {} if cache else None
        self.w4a4 = w4a4
        self.w4a8 = w4a8
        if (w4a4 + w4a8 + bool(bf16_activations)) > 1:
            raise ValueError("w4a4, w4a8 and bf16 activations are separate numerics modes")
        self.bf16_activations = bf16_activations
        # Attention's inputs rounded too (tern's avx512-bf16 path; its amx path keeps attention in
        # f32 for now): by default with bf16_activations.
        self.bf16_attention = bf16_activations if bf16_attention is None else bf16_attention
        self.observer = observer
        self.meta = {}  # full tensor name -> (format, input_scale)
        for prefix in ("model.", "model.language_model.", "language_model.model."):
            if prefix + "embed_tokens.weight" in self.ckpt:
                self.prefix = prefix
                break
        else:
            raise KeyError(f"{model_dir}: no model.embed_tokens.weight (or VLM-wrapped variant)")
        self.qcfg = quant_np.QuantConfig.from_model_dir(model_dir, full_config)

    def has(self, name, top_level=False):
        return (name if top_level else self.prefix + name) in self.ckpt

    def get(self, name, shape=None, top_level=False):
        """name relative to the text-model prefix (or absolute when top_level) -> float64."""
        full = name if top_level else self.prefix + name
        if self.cache is not None and full in self.cache:
            return self.cache[full]
        w = self._load(full)
        if shape is not None and tuple(w.shape) != tuple(shape):
            raise ValueError(f"{full}: shape {list(w.shape)}, expected {list(shape)}")
        if self.cache is not None:
            self.cache[full] = w
        return w

    def linear(self, name, shape=None, top_level=False):
        """A "<module>.weight" as a Lin (fake-quantized input under w4a4 when it is NVFP4)."""
        w = self.get(name, shape, top_level)
        full = name if top_level else self.prefix + name
        fmt, input_scale = self.meta.get(full, ("dense", None))
        act = None
        if self.w4a4 and fmt == "nvfp4":
            if input_scale is None:
                raise ValueError(f"{full}: --w4a4 needs an input_scale for this NVFP4 Linear")
            act = lambda x, s=input_scale: quant_np.fake_quant_nvfp4_activation(x, s)  # noqa: E731
        module = full[: -len(".weight")]
        if self.w4a8 and fmt == "nvfp4" and tiles_round_input(fmt, None, module):  # (routers and gates: f32)
            act = quant_np.fake_quant_int8_activation
        if self.bf16_activations and tiles_round_input(fmt, self.ckpt.info(full)["dtype"], module):
            act = round_bf16
        return Lin(w, module, act, self.observer)

    def dtype(self, name, top_level=False):
        """The stored dtype of a tensor ("BF16", "U8", ...)."""
        return self.ckpt.info(name if top_level else self.prefix + name)["dtype"]

    def wrap(self, w, module, dtype=None, top_level=False):
        """An unquantized array as a Lin named `module` (relative to the prefix unless
        top_level), e.g. a slice of fused experts, so observers see it under its per-expert name;
        dtype: the stored dtype it came from (its input is BF16-rounded like a dense Linear's)."""
        name = module if top_level else self.prefix + module
        act = round_bf16 if self.bf16_activations and tiles_round_input("dense", dtype, name) else None
        return Lin(w, name, act, self.observer)

    def _load(self, full):
        if full.endswith(".weight"):
            w, fmt, input_scale = quant_np.load_linear(self.ckpt, full[: -len(".weight")], self.qcfg)
            self.meta[full] = (fmt, input_scale)
            return w
        dtype = self.ckpt.info(full)["dtype"]
        if dtype not in ("F64", "F32", "F16", "BF16"):
            raise NotImplementedError(f"{full}: {dtype} is only supported for \"*.weight\" Linears "
                                      "(quantized fused 3-D experts are not)")
        return to_float64(dtype, self.ckpt.raw(full))


class KVCache:
    """Per layer [K, V], each [S, Hkv, hd] float64 after RoPE (None before the first call)."""

    def __init__(self, num_layers):
        self.layers = [[None, None] for _ in range(num_layers)]

    def length(self):
        k = self.layers[0][0] if self.layers else None
        return 0 if k is None else k.shape[0]


class Model:
    def __init__(self, model_dir, cache_weights=True, w4a4=False, observer=None, bf16_activations=False,
                 bf16_attention=None, w4a8=False):
        text_cfg, full_cfg = load_config(model_dir)
        self.cfg = parse_config(text_cfg)
        self.w = Weights(model_dir, full_cfg, cache=cache_weights, w4a4=w4a4, observer=observer,
                         bf16_activations=bf16_activations, bf16_attention=bf16_attention, w4a8=w4a8)
        c = self.cfg
        self.embed = self.w.get("embed_tokens.weight", (c.vocab_size, c.hidden_size))

    def _attn_weights(self, i):
        c = self.cfg
        p = f"layers.{i}.self_attn."
        hq, hkv, hd, h = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.hidden_size
        w = {
            "q_proj": self.w.linear(p + "q_proj.weight", (hq * hd, h)),
            "k_proj": self.w.linear(p + "k_proj.weight", (hkv * hd, h)),
            "v_proj": self.w.linear(p + "v_proj.weight", (hkv * hd, h)),
            "o_proj": self.w.linear(p + "o_proj.weight", (h, hq * hd)),
            "q_norm": self.w.get(p + "q_norm.weight", (hd,)),
            "k_norm": self.w.get(p + "k_norm.weight", (hd,)),
            "bf16_attention": self.w.bf16_attention,
        }
        if c.attention_bias:
            w["q_proj_bias"] = self.w.get(p + "q_proj.bias", (hq * hd,))
            w["k_proj_bias"] = self.w.get(p + "k_proj.bias", (hkv * hd,))
            w["v_proj_bias"] = self.w.get(p + "v_proj.bias", (hkv * hd,))
            w["o_proj_bias"] = self.w.get(p + "o_proj.bias", (h,))
        return w

    def _expert(self, i, e):
        """-> (gate [I, H], up [I, H], down [H, I]) of expert e in layer i, as Lin. Reads the HF
        hub layout mlp.experts.{e}.*_proj.weight (any format quant_np reads), or the fused layout
        of transformers v5 (BF16/F16/F32 only):
          mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I].
        Checked in transformers: Qwen3MoeExperts holds gate_up_proj = nn.Parameter(E, 2*I, H) and
        down_proj (E, H, I); its forward does `gate, up = linear(x, gate_up_proj[e]).chunk(2, -1)`
        (so rows 0..I-1 are gate, I..2I-1 are up, each [out, in] like nn.Linear.weight) and
        `linear(act(gate) * up, down_proj[e])`. conversion_mapping.py builds these from the hub
        names with MergeModulelist(dim=0) then Concatenate(dim=1) of [gate, up]."""
        c = self.cfg
        h, inter = c.hidden_size, c.moe_intermediate_size
        p = f"layers.{i}.mlp.experts."
        if self.w.has(p + f"{e}.gate_proj.weight"):
            return (self.w.linear(p + f"{e}.gate_proj.weight", (inter, h)),
                    self.w.linear(p + f"{e}.up_proj.weight", (inter, h)),
                    self.w.linear(p + f"{e}.down_proj.weight", (h, inter)))
        gate_up = self.w.get(p + "gate_up_proj", (c.num_experts, 2 * inter, h))
        down = self.w.get(p + "down_proj", (c.num_experts, h, inter))
        return (self.w.wrap(gate_up[e, :inter], p + f"{e}.gate_proj"),
                self.w.wrap(gate_up[e, inter:], p + f"{e}.up_proj"),
                self.w.wrap(down[e], p + f"{e}.down_proj"))

    def _mlp_block(self, i, x):
        """x: [T, H] (post-attention-normed) -> [T, H]"""
        c = self.cfg
        p = f"layers.{i}.mlp."
        if c.is_moe_layer(i):
            router = self.w.get(p + "gate.weight", (c.num_experts, c.hidden_size))
            return moe(x, router, lambda e: self._expert(i, e), c.num_experts_per_tok, c.norm_topk_prob)
        h, inter = c.hidden_size, c.intermediate_size
        return mlp(x, self.w.linear(p + "gate_proj.weight", (inter, h)),
                   self.w.linear(p + "up_proj.weight", (inter, h)),
                   self.w.linear(p + "down_proj.weight", (h, inter)))

    def _lm_head(self):
        c = self.cfg
        if c.tie_word_embeddings:
            return self.w.wrap(self.embed, "lm_head", self.w.dtype("embed_tokens.weight"), top_level=True)
        if "lm_head.weight" not in self.w.ckpt:
            raise KeyError("tie_word_embeddings is false but the checkpoint has no lm_head.weight")
        return self.w.linear("lm_head.weight", (c.vocab_size, c.hidden_size), top_level=True)

    def forward(self, input_ids, cache=None):
        """input_ids: [T] ints; cache: KVCache or None (then a fresh one, discarded).
        The T tokens sit at positions cache.length() .. cache.length()+T-1.
        -> logits [T, vocab] float64."""
        c = self.cfg
        ids = np.asarray(input_ids, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ValueError("forward needs at least one token")
        if ids.min() < 0 or ids.max() >= c.vocab_size:
            raise ValueError(f"token id outside [0, {c.vocab_size}): {ids.min()}..{ids.max()}")
        if cache is None:
            cache = KVCache(c.num_hidden_layers)
        positions = cache.length() + np.arange(ids.size)
        x = self.embed[ids]                                                    # [T, H]
        for i in range(c.num_hidden_layers):
            p = f"layers.{i}."
            a = rms_norm(x, self.w.get(p + "input_layernorm.weight", (c.hidden_size,)), c.rms_norm_eps)
            x = x + attention(a, self._attn_weights(i), c, positions, cache.layers[i])
            m = rms_norm(x, self.w.get(p + "post_attention_layernorm.weight", (c.hidden_size,)),
                         c.rms_norm_eps)
            x = x + self._mlp_block(i, m)
        x = rms_norm(x, self.w.get("norm.weight", (c.hidden_size,)), c.rms_norm_eps)
        return linear(x, self._lm_head())                                      # [T, vocab]

    def greedy(self, prompt_ids, steps, use_cache=True):
        """Greedy decoding (argmax; ties -> lowest id). -> (ids [steps], logits [steps, vocab])
        where logits row i is the distribution that produced ids[i]. use_cache=False recomputes
        the whole sequence every step (for checking the cache)."""
        seq = [int(t) for t in prompt_ids]
        out_ids, rows = [], []
        cache = KVCache(self.cfg.num_hidden_layers) if use_cache else None
        feed = list(seq)
        for _ in range(steps):
            if use_cache:
                logits = self.forward(feed, cache)[-1]
            else:
                logits = self.forward(seq)[-1]
            nxt = int(np.argmax(logits))
            out_ids.append(nxt)
            rows.append(logits)
            seq.append(nxt)
            feed = [nxt]
        vocab = self.cfg.vocab_size
        return out_ids, (np.stack(rows) if rows else np.zeros((0, vocab)))


def forward(model_dir, input_ids, w4a4=False, w4a8=False):
    """-> logits [T, vocab] float64 for input_ids (one sequence, positions 0..T-1)."""
    return Model(model_dir, w4a4=w4a4, w4a8=w4a8).forward(input_ids)


def greedy(model_dir, prompt_ids, steps):
    """-> list of `steps` greedily generated token ids (float64 KV cache)."""
    return Model(model_dir).greedy(prompt_ids, steps)[0]


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Float64 reference logits / greedy ids for a Qwen3 model dir")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    ap.add_argument("--steps", type=int, default=0, help="greedy steps (0: print the argmax per position)")
    ap.add_argument("--w4a4", action="store_true",
                    help="fake-quantize the input of every NVFP4 Linear as Blackwell does (default: W4A16)")
    args = ap.parse_args()
    prompt = [int(t) for t in args.prompt_ids.split(",") if t.strip()]
    model = Model(args.model, w4a4=args.w4a4)
    if args.steps > 0:
        print(model.greedy(prompt, args.steps)[0])
    else:
        print([int(i) for i in np.argmax(model.forward(prompt), axis=-1)])
