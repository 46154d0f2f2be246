# A plain PyTorch (1.13) Qwen3.5-MoE text model with its multi-token-prediction head, for the
# second demo model (models/demo-qwen35). The inference math is Hugging Face transformers'
# Qwen3_5MoeForCausalLM (and tests/reference/qwen35_ref.py, the float64 reference tern is tested
# against), the MTP head vLLM's Qwen3_5MultiTokenPredictor (qwen35_ref.Model.mtp_forward):
#
#   x = embed[ids]
#   per layer: x += mixer(norm1p(x))      Gated DeltaNet ("linear_attention") or gated attention
#              x += moe(norm1p(x))        softmax router -> top-k -> renormalised, SwiGLU experts,
#                                         + sigmoid(shared_expert_gate x) * shared SwiGLU expert
#   h = norm1p(x, norm); logits = h @ lm_head^T
#   MTP at position p (predicts token p+2):  y = fc([norm1p(embed[t_{p+1}]); norm1p(h_p)])
#              y += attn(norm1p(y)); y += moe(norm1p(y)); mtp_logits = norm1p(y, mtp.norm) @ lm_head^T
#
# norm1p is the zero-centred RMSNorm x * rsqrt(mean x^2 + eps) * (1 + w) (weights start at 0);
# the GDN output norm is the plain gated one, w * rmsnorm(o) * silu(z).
#
# Training (train.py with run.json arch "qwen3_5_moe"): the loss is the main model's cross
# entropy plus mtp_loss_weight times the MTP head's cross entropy on the token after next (the
# MTP loss of Qwen3-Next / Qwen3.5 and DeepSeek-V3: the head sees the main model's final hidden
# state at p and the embedding of token p+1, and is trained jointly, its gradient reaching the
# main model through h), plus the load-balancing loss of every MoE (main and MTP layers).
# With mtp_train_depth D > 1 the head is also trained on its own output, as Qwen3-Next trains its
# MTP "multi-step ... consistent between training and inference" and as NEXTN chains it: step d
# (2 .. D) at position p + d - 1 reads the head's normed output of step d - 1 at p and the
# embedding of token p + d, and predicts token p + d + 1, each step weighted mtp_loss_weight (a
# full causal pass per step, as DeepSeek-V3's sequential MTP modules; the head's attention there
# reads step d's own keys, where NEXTN's chained step reads those of step 1 before it).
# The delta rule runs in the chunked (WY) form for prompts and training and token by token in
# decoding, as HF does; both are checked against gated_delta_np in model35_test.py.
import dataclasses
import math

import torch
import torch.nn.functional as F

from model import MoE, fake_quant_nvfp4, nvfp4_dequantized


@dataclasses.dataclass
class Config35:
    vocab_size: int = 2048
    hidden_size: int = 192
    num_hidden_layers: int = 4
    full_attention_interval: int = 2          # layer i is full attention when (i + 1) % interval == 0
    num_attention_heads: int = 6
    num_key_value_heads: int = 2
    head_dim: int = 32
    partial_rotary_factor: float = 0.25
    rope_theta: float = 10000.0
    linear_conv_kernel_dim: int = 4
    linear_key_head_dim: int = 32
    linear_value_head_dim: int = 32
    linear_num_key_heads: int = 2
    linear_num_value_heads: int = 4
    num_experts: int = 16
    num_experts_per_tok: int = 2
    moe_intermediate_size: int = 192
    shared_expert_intermediate_size: int = 192
    norm_topk_prob: bool = True               # Qwen3.5's router always renormalises
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 4096
    mtp_num_hidden_layers: int = 1
    mtp_loss_weight: float = 0.3
    mtp_train_depth: int = 1                  # training only: chained head steps in the loss (above)
    router_aux_loss_coef: float = 0.01
    delta_chunk: int = 64

    @property
    def layer_types(self):
        n = self.full_attention_interval
        return ["linear_attention" if (i + 1) % n else "full_attention" for i in range(self.num_hidden_layers)]

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

    def text_config(self, eos_token_id):
        """text_config of a published Qwen3.5-MoE config.json (Qwen3_5MoeTextConfig fields)."""
        half = self.rotary_dim // 2
        section = [half - 2 * (half // 4), half // 4, half // 4]   # t, h, w; equal positions for text
        return {
            "attention_bias": False, "attention_dropout": 0.0, "attn_output_gate": True, "dtype": "bfloat16",
            "eos_token_id": eos_token_id, "full_attention_interval": self.full_attention_interval,
            "head_dim": self.head_dim, "hidden_act": "silu", "hidden_size": self.hidden_size,
            "initializer_range": 0.02, "layer_types": self.layer_types,
            "linear_conv_kernel_dim": self.linear_conv_kernel_dim, "linear_key_head_dim": self.linear_key_head_dim,
            "linear_num_key_heads": self.linear_num_key_heads, "linear_num_value_heads": self.linear_num_value_heads,
            "linear_value_head_dim": self.linear_value_head_dim, "mamba_ssm_dtype": "float32",
            "max_position_embeddings": self.max_position_embeddings, "model_type": "qwen3_5_moe_text",
            "moe_intermediate_size": self.moe_intermediate_size, "mtp_num_hidden_layers": self.mtp_num_hidden_layers,
            "mtp_use_dedicated_embeddings": False, "num_attention_heads": self.num_attention_heads,
            "num_experts": self.num_experts, "num_experts_per_tok": self.num_experts_per_tok,
            "num_hidden_layers": self.num_hidden_layers, "num_key_value_heads": self.num_key_value_heads,
            "output_router_logits": False, "rms_norm_eps": self.rms_norm_eps,
            "rope_parameters": {"mrope_interleaved": True, "mrope_section": section, "rope_type": "default",
                                "rope_theta": self.rope_theta, "partial_rotary_factor": self.partial_rotary_factor},
            "router_aux_loss_coef": self.router_aux_loss_coef,
            "shared_expert_intermediate_size": self.shared_expert_intermediate_size, "use_cache": True,
            "vocab_size": self.vocab_size,
        }

    def hf_config(self, bos_token_id, eos_token_id):
        """config.json: the Qwen3_5MoeForConditionalGeneration wrapper the published checkpoints use
        (text model under model.language_model.*, mtp.* at the top). The demo has no vision tower;
        its vision_config is the smallest valid one and no model.visual.* tensors exist."""
        del bos_token_id
        return {
            "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
            "text_config": self.text_config(eos_token_id), "tie_word_embeddings": self.tie_word_embeddings,
            "transformers_version": "4.57.0.dev0",
            "vision_config": {"deepstack_visual_indexes": [], "depth": 1, "hidden_act": "gelu_pytorch_tanh",
                              "hidden_size": 16, "in_channels": 3, "initializer_range": 0.02,
                              "intermediate_size": 32, "model_type": "qwen3_5_moe", "num_heads": 2,
                              "num_position_embeddings": 16, "out_hidden_size": self.hidden_size,
                              "patch_size": 2, "spatial_merge_size": 2, "temporal_patch_size": 2},
        }


# ---------------------------------------------------------------------------------------------
# Pieces


class Norm1p(torch.nn.Module):
    """Zero-centred RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w); w starts at 0."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight)


def l2norm(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


def partial_rope(x, positions, rotary_dim, theta):
    """x: [B, T, heads, hd]; positions: [B, T]. NeoX rotate_half on x[..., :rotary_dim]."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)[:, :, None, :]
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    h = rotary_dim // 2
    rotated = torch.cat([-rot[..., h:], rot[..., :h]], dim=-1)
    return torch.cat([rot * emb.cos() + rotated * emb.sin(), rest], dim=-1)


def chunk_delta_rule(q, k, v, g, beta, state, chunk):
    """The gated delta rule in the chunked (UT / WY) form, batched; gated_delta_np's
    chunk_gated_delta_rule. q, k: [B, Hv, T, dk] (normalised, q scaled); v: [B, Hv, T, dv];
    g, beta: [B, Hv, T]; state: [B, Hv, dk, dv] or None. -> (out [B, Hv, T, dv], state)."""
    B, Hv, T, dk = k.shape
    dv = v.shape[-1]
    C = chunk
    pad = (C - T % C) % C
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        g, beta = (F.pad(x, (0, pad)) for x in (g, beta))
    n = (T + pad) // C
    v_beta = v * beta[..., None]
    k_beta = k * beta[..., None]
    q, k, v_beta, k_beta = (x.reshape(B, Hv, n, C, x.shape[-1]) for x in (q, k, v_beta, k_beta))
    cum = g.reshape(B, Hv, n, C).cumsum(-1)
    lower = torch.ones(C, C, dtype=torch.bool).tril()
    pair = (cum[..., :, None] - cum[..., None, :]).masked_fill(~lower, -math.inf).exp()
    eye = torch.eye(C)
    L = torch.tril((k_beta @ k.transpose(-1, -2)) * pair, -1) + eye
    new_values = torch.linalg.solve_triangular(L, v_beta, upper=False, unitriangular=True)
    k_cumdecay = torch.linalg.solve_triangular(L, k_beta * cum.exp()[..., None], upper=False, unitriangular=True)
    intra = (q @ k.transpose(-1, -2)) * pair
    q_dec = q * cum.exp()[..., None]
    last = cum[..., -1:]
    k_dec = k * (last - cum).exp()[..., None]
    S = torch.zeros(B, Hv, dk, dv) if state is None else state
    outs = []
    for i in range(n):
        v_new = new_values[:, :, i] - k_cumdecay[:, :, i] @ S
        outs.append(q_dec[:, :, i] @ S + intra[:, :, i] @ v_new)
        S = S * last[:, :, i, :, None].exp() + k_dec[:, :, i].transpose(-1, -2) @ v_new
    out = torch.stack(outs, dim=2).reshape(B, Hv, n * C, dv)[:, :, :T]
    return out, S


def recurrent_delta_rule(q, k, v, g, beta, state):
    """Token by token (HF torch_recurrent_gated_delta_rule); shapes as chunk_delta_rule."""
    B, Hv, T, dk = k.shape
    S = torch.zeros(B, Hv, dk, v.shape[-1]) if state is None else state
    outs = []
    for t in range(T):
        S = S * g[:, :, t, None, None].exp()
        mem = (S * k[:, :, t, :, None]).sum(-2)
        delta = (v[:, :, t] - mem) * beta[:, :, t, None]
        S = S + k[:, :, t, :, None] * delta[:, :, None, :]
        outs.append((S * q[:, :, t, :, None]).sum(-2))
    return torch.stack(outs, dim=2), S


def quant_group(weights, quant):
    """NVFP4 fake quantization of Linears that ModelOpt fuses (one weight_scale_2 for the group)."""
    if not quant:
        return weights
    amax = torch.stack([w.detach().abs().max() for w in weights]).max().reshape(1, 1)
    return [fake_quant_nvfp4(w, amax) for w in weights]


# ---------------------------------------------------------------------------------------------
# Blocks


class GatedDeltaNet(torch.nn.Module):
    def __init__(self, c: Config35):
        super().__init__()
        self.c = c
        H, hv = c.hidden_size, c.linear_num_value_heads
        self.in_proj_qkv = torch.nn.Linear(H, c.conv_dim, bias=False)
        self.in_proj_z = torch.nn.Linear(H, c.value_dim, bias=False)
        self.in_proj_b = torch.nn.Linear(H, hv, bias=False)
        self.in_proj_a = torch.nn.Linear(H, hv, bias=False)
        self.conv1d = torch.nn.Conv1d(c.conv_dim, c.conv_dim, c.linear_conv_kernel_dim, groups=c.conv_dim,
                                      bias=False)
        self.dt_bias = torch.nn.Parameter(torch.zeros(hv))
        self.A_log = torch.nn.Parameter(torch.zeros(hv))
        self.norm_weight = torch.nn.Parameter(torch.ones(c.linear_value_head_dim))   # exported as norm.weight
        self.out_proj = torch.nn.Linear(c.value_dim, H, bias=False)

    def forward(self, x, quant, cache=None, valid=None):
        """x: [B, T, H]; cache: None or dict ("conv" [B, K-1, conv_dim], "rec" [B, Hv, dk, dv]),
        updated in place; valid: [B, T] bool or None -- False rows (left padding) leave the state
        as at a sequence start (zero conv input, beta = g = 0). -> [B, T, H]"""
        c = self.c
        B, T, _ = x.shape
        hk, hv, dk, dv = c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim
        w_qkv = quant_group([self.in_proj_qkv.weight], quant)[0]   # tern quantize fuses none of these
        w_z = quant_group([self.in_proj_z.weight], quant)[0]
        w_out = quant_group([self.out_proj.weight], quant)[0]
        mixed = F.linear(x, w_qkv)
        z = F.linear(x, w_z).view(B, T, hv, dv)
        b = self.in_proj_b(x)
        a = self.in_proj_a(x)
        if valid is not None:
            mixed = mixed * valid[..., None]
        K = c.linear_conv_kernel_dim
        prev = cache["conv"] if cache is not None and "conv" in cache else mixed.new_zeros(B, K - 1, c.conv_dim)
        xp = torch.cat([prev, mixed], dim=1)                                   # [B, K-1+T, C]
        if cache is not None:
            cache["conv"] = xp[:, -(K - 1):]
        mixed = F.silu(F.conv1d(xp.transpose(1, 2), self.conv1d.weight, groups=c.conv_dim)).transpose(1, 2)
        q = mixed[..., :c.key_dim].reshape(B, T, hk, dk)
        k = mixed[..., c.key_dim:2 * c.key_dim].reshape(B, T, hk, dk)
        v = mixed[..., 2 * c.key_dim:].reshape(B, T, hv, dv)
        beta = torch.sigmoid(b)
        g = -self.A_log.exp() * F.softplus(a + self.dt_bias)
        if valid is not None:
            beta, g = beta * valid[..., None], g * valid[..., None]
        r = hv // hk
        q = (l2norm(q) * dk ** -0.5).repeat_interleave(r, dim=2).transpose(1, 2)
        k = l2norm(k).repeat_interleave(r, dim=2).transpose(1, 2)
        v, g, beta = v.transpose(1, 2), g.transpose(1, 2), beta.transpose(1, 2)
        state = cache.get("rec") if cache is not None else None
        if T == 1:
            o, state = recurrent_delta_rule(q, k, v, g, beta, state)
        else:
            o, state = chunk_delta_rule(q, k, v, g, beta, state, c.delta_chunk)
        if cache is not None:
            cache["rec"] = state
        o = o.transpose(1, 2)                                                   # [B, T, Hv, dv]
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + c.rms_norm_eps) * self.norm_weight * F.silu(z)
        return F.linear(o.reshape(B, T, hv * dv), w_out)


class GatedAttention(torch.nn.Module):
    def __init__(self, c: Config35):
        super().__init__()
        self.c = c
        H, hd = c.hidden_size, c.head_dim
        self.q_proj = torch.nn.Linear(H, 2 * c.num_attention_heads * hd, bias=False)  # per head: query, gate
        self.k_proj = torch.nn.Linear(H, c.num_key_value_heads * hd, bias=False)
        self.v_proj = torch.nn.Linear(H, c.num_key_value_heads * hd, bias=False)
        self.o_proj = torch.nn.Linear(c.num_attention_heads * hd, H, bias=False)
        self.q_norm = Norm1p(hd, c.rms_norm_eps)
        self.k_norm = Norm1p(hd, c.rms_norm_eps)

    def forward(self, x, positions, mask, quant, cache=None):
        """x: [B, T, H]; positions: [B, T]; mask: additive [B or 1, 1, T, S] or None;
        cache: None or dict with "k", "v" [B, Hkv, S_past, hd], extended in place."""
        c = self.c
        B, T, _ = x.shape
        hq, hkv, hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        wq, wk, wv = quant_group([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight], quant)
        wo = quant_group([self.o_proj.weight], quant)[0]
        qg = F.linear(x, wq).view(B, T, hq, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:].reshape(B, T, hq * hd)
        q = partial_rope(self.q_norm(q), positions, c.rotary_dim, c.rope_theta)
        k = partial_rope(self.k_norm(F.linear(x, wk).view(B, T, hkv, hd)), positions, c.rotary_dim, c.rope_theta)
        v = F.linear(x, wv).view(B, T, hkv, hd)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        grp = hq // hkv
        k, v = k.repeat_interleave(grp, dim=1), v.repeat_interleave(grp, dim=1)
        scores = (q @ k.transpose(-1, -2)) * hd ** -0.5
        if mask is not None:
            scores = scores + mask
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, hq * hd)
        return F.linear(out * torch.sigmoid(gate), wo)


class SharedMoE(torch.nn.Module):
    """Routed experts (model.MoE: stacked gate_up [E, 2I, H], down [E, H, I]) + the gated shared expert."""

    def __init__(self, c: Config35):
        super().__init__()
        self.routed = MoE(c)
        H, S = c.hidden_size, c.shared_expert_intermediate_size
        self.shared_gate_proj = torch.nn.Linear(H, S, bias=False)
        self.shared_up_proj = torch.nn.Linear(H, S, bias=False)
        self.shared_down_proj = torch.nn.Linear(S, H, bias=False)
        self.shared_expert_gate = torch.nn.Linear(H, 1, bias=False)

    def forward(self, x, quant):
        """x: [N, H] -> (out [N, H], aux)."""
        out, aux = self.routed(x, quant)
        wg, wu = quant_group([self.shared_gate_proj.weight, self.shared_up_proj.weight], quant)
        wd = quant_group([self.shared_down_proj.weight], quant)[0]
        shared = F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd)
        return out + torch.sigmoid(self.shared_expert_gate(x)) * shared, aux


class Layer35(torch.nn.Module):
    def __init__(self, c: Config35, kind):
        super().__init__()
        self.kind = kind
        self.input_layernorm = Norm1p(c.hidden_size, c.rms_norm_eps)
        if kind == "linear_attention":
            self.linear_attn = GatedDeltaNet(c)
        else:
            self.self_attn = GatedAttention(c)
        self.post_attention_layernorm = Norm1p(c.hidden_size, c.rms_norm_eps)
        self.mlp = SharedMoE(c)

    def forward(self, x, positions, mask, quant, cache=None, valid=None):
        a = self.input_layernorm(x)
        if self.kind == "linear_attention":
            x = x + self.linear_attn(a, quant, cache, valid)
        else:
            x = x + self.self_attn(a, positions, mask, quant, cache)
        B, T, H = x.shape
        m, aux = self.mlp(self.post_attention_layernorm(x).reshape(B * T, H), quant)
        return x + m.view(B, T, H), aux


class Mtp(torch.nn.Module):
    """mtp.*: pre_fc_norm_embedding, pre_fc_norm_hidden, fc [H, 2H], layers.0 (gated attention +
    MoE), norm. Embedding and lm_head are the main model's."""

    def __init__(self, c: Config35):
        super().__init__()
        H = c.hidden_size
        self.pre_fc_norm_embedding = Norm1p(H, c.rms_norm_eps)
        self.pre_fc_norm_hidden = Norm1p(H, c.rms_norm_eps)
        self.fc = torch.nn.Linear(2 * H, H, bias=False)
        self.layers = torch.nn.ModuleList([Layer35(c, "full_attention") for _ in range(c.mtp_num_hidden_layers)])
        self.norm = Norm1p(H, c.rms_norm_eps)

    def forward(self, emb, h, positions, mask, quant, step=0, cache=None):
        """emb: embeddings of the next tokens [B, T, H]; h: final-normed hidden [B, T, H]
        -> (normed output [B, T, H], aux)."""
        y = self.fc(torch.cat([self.pre_fc_norm_embedding(emb), self.pre_fc_norm_hidden(h)], dim=-1))
        y, aux = self.layers[step % len(self.layers)](y, positions, mask, False, cache)
        return self.norm(y), aux


# ---------------------------------------------------------------------------------------------
# The model


class Qwen35Moe(torch.nn.Module):
    def __init__(self, c: Config35):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = torch.nn.ModuleList([Layer35(c, t) for t in c.layer_types])
        self.norm = Norm1p(c.hidden_size, c.rms_norm_eps)
        self.lm_head = None if c.tie_word_embeddings else torch.nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.mtp = Mtp(c) if c.mtp_num_hidden_layers > 0 else None
        self.quant = False  # NVFP4 fake quantization (the Linears `tern quantize` quantizes; not mtp.*)
        self.last = {}      # the last loss() call's parts, for logging
        self.reset_parameters()

    def reset_parameters(self, std=0.02):
        g = torch.Generator().manual_seed(0)
        resid = std / math.sqrt(2 * (self.c.num_hidden_layers + self.c.mtp_num_hidden_layers))
        with torch.no_grad():
            for name, p in self.named_parameters():
                if isinstance(self._module_of(name), Norm1p):
                    p.zero_()
                elif name.endswith("norm_weight"):
                    p.fill_(1.0)
                elif name.endswith("A_log"):   # HF: A ~ U(0, 16); here U(1, 16) so no head starts without decay
                    p.copy_(torch.log(torch.rand(p.shape, generator=g) * 15 + 1))
                elif name.endswith("dt_bias"):  # HF: dt ~ logU(1e-3, 1e-1), dt_bias = softplus^-1(dt)
                    dt = torch.exp(torch.rand(p.shape, generator=g) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
                    p.copy_(dt + torch.log(-torch.expm1(-dt)))
                elif name.endswith("conv1d.weight"):
                    p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
                else:
                    s = resid if name.endswith(("o_proj.weight", "out_proj.weight", "routed.down",
                                                "shared_down_proj.weight")) else std
                    p.copy_(torch.randn(p.shape, generator=g) * s)

    def _module_of(self, param_name):
        m = self
        for part in param_name.split(".")[:-1]:
            m = getattr(m, part)
        return m

    def head_weight(self):
        return self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    def logits(self, h):
        return F.linear(h, self.head_weight())

    def hidden(self, ids, positions, mask, caches=None, valid=None):
        """ids, positions: [B, T] -> (final-normed hidden [B, T, H], mean aux loss)."""
        x = self.embed_tokens(ids)
        aux = 0.0
        for i, layer in enumerate(self.layers):
            x, a = layer(x, positions, mask, self.quant, None if caches is None else caches[i], valid)
            aux = aux + a
        return self.norm(x), aux / len(self.layers)

    def loss(self, ids, targets, weights):
        """A right-padded batch (train.py): ids, targets, weights [B, T]. -> (weighted CE sum of
        the main model + mtp_loss_weight * the MTP head's weighted CE sums over its
        mtp_train_depth chained steps, mean aux loss)."""
        B, T = ids.shape
        positions = torch.arange(T)[None].expand(B, T)
        mask = torch.full((T, T), -1e9).triu(1)[None, None]
        h, aux = self.hidden(ids, positions, mask)
        sel = weights.reshape(-1) > 0
        w = weights.reshape(-1)[sel]
        ce = F.cross_entropy(self.logits(h.reshape(-1, h.shape[-1])[sel]), targets.reshape(-1)[sel], reduction="none")
        main = (ce * w).sum()
        self.last = {"main": float(main), "mtp": 0.0, "mtp_weight": 0.0, "mtp_top1": 0}
        if self.mtp is None or T < 2:
            return main, aux
        # Step 1: row p (p < T-1) takes h_p and the embedding of token p+1 (= targets[p]) and
        # predicts token p+2 (= targets[p+1]), weighted like that target. Step d: rows p < T-d
        # at positions p+d-1 take step d-1's output at p and token p+d, predict token p+d+1.
        hin, total, aux_sum, steps = h, 0.0, 0.0, 0
        for d in range(1, max(1, self.c.mtp_train_depth) + 1):
            if T <= d:
                break
            hm, aux_m = self.mtp(self.embed_tokens(targets[:, d - 1:T - 1]), hin[:, :T - d],
                                 positions[:, d - 1:T - 1], mask[..., :T - d, :T - d], self.quant, step=d - 1)
            wm = weights[:, d:].reshape(-1)
            selm = wm > 0
            lm = self.logits(hm.reshape(-1, hm.shape[-1])[selm])
            tm = targets[:, d:].reshape(-1)[selm]
            mtp = (F.cross_entropy(lm, tm, reduction="none") * wm[selm]).sum()
            key = "" if d == 1 else str(d)
            self.last.update({f"mtp{key}": float(mtp), f"mtp{key}_weight": float(wm[selm].sum()),
                              f"mtp{key}_top1": int((lm.argmax(-1) == tm).sum()), f"mtp{key}_rows": int(selm.sum())})
            total, aux_sum, steps, hin = total + mtp, aux_sum + aux_m, steps + 1, hm
        n = len(self.layers)
        return main + self.c.mtp_loss_weight * total, (aux * n + aux_sum) / (n + steps)

    # -- decoding ---------------------------------------------------------------------------------

    def _prefill(self, prompts):
        """Left-padded prompts -> (caches, last hidden [B, H], positions of the last token [B], valid)."""
        B = len(prompts)
        L = max(len(p) for p in prompts)
        ids = torch.zeros(B, L, dtype=torch.long)
        valid = torch.zeros(B, L, dtype=torch.bool)
        for b, p in enumerate(prompts):
            ids[b, L - len(p):] = torch.tensor(p)
            valid[b, L - len(p):] = True
        pos = (valid.long().cumsum(1) - 1).clamp(min=0)
        caches = [{} for _ in self.layers]
        allowed = torch.ones(L, L, dtype=torch.bool).tril()[None] & valid[:, None, :]
        allowed |= torch.eye(L, dtype=torch.bool)[None]  # padding rows attend to themselves
        mask = torch.zeros(B, 1, L, L).masked_fill(~allowed[:, None], -1e9)
        h, _ = self.hidden(ids, pos, mask, caches, valid.float())
        return caches, h, pos[:, -1], valid

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens, stop_ids):
        """Greedy decoding of a batch of prompts (lists of ids): GDN state and attention K/V
        caches, prompts left-padded (padding leaves the state untouched and is masked out of
        attention). -> generated id lists (up to and including the first stop id)."""
        B = len(prompts)
        caches, h, cur, valid = self._prefill(prompts)
        nxt = self.logits(h[:, -1]).argmax(-1)
        out = [[] for _ in range(B)]
        done = [False] * B
        for step in range(max_new_tokens):
            for b in range(B):
                if not done[b]:
                    out[b].append(int(nxt[b]))
                    done[b] = int(nxt[b]) in stop_ids
            if all(done) or step == max_new_tokens - 1:
                break
            cur = cur + 1
            valid = torch.cat([valid, torch.ones(B, 1, dtype=torch.bool)], dim=1)
            mask = torch.zeros(B, 1, 1, valid.shape[1]).masked_fill(~valid[:, None, None, :], -1e9)
            h, _ = self.hidden(nxt[:, None], cur[:, None], mask, caches)
            nxt = self.logits(h[:, -1]).argmax(-1)
        return out

    @torch.no_grad()
    def greedy_with_margins(self, prompt, steps, stop):
        """One prompt, no padding -> (ids, margins: top-1 minus top-2 logit per step)."""
        caches = [{} for _ in self.layers]
        T = len(prompt)
        x = torch.tensor([prompt])
        pos = torch.arange(T)[None]
        mask = torch.full((T, T), -1e9).triu(1)[None, None]
        ids, margins = [], []
        for _ in range(steps):
            h, _ = self.hidden(x, pos, mask, caches)
            top = torch.topk(self.logits(h[0, -1]), 2)
            nxt = int(top.indices[0])
            ids.append(nxt)
            margins.append(round(float(top.values[0] - top.values[1]), 4))
            if nxt in stop:
                break
            x = torch.tensor([[nxt]])
            pos = pos[:, -1:] + 1
            mask = None
        return ids, margins

    @torch.no_grad()
    def mtp_agreement(self, seqs, weights):
        """Teacher-forced MTP top-1 agreement: for each sequence (ids) and its weights (1 where
        the token is a reply token), the share of positions p with weight[p+2] > 0 whose MTP
        argmax (from h_p and token p+1) equals token p+2. -> (hits, total)."""
        hits = total = 0
        for ids, w in zip(seqs, weights):
            T = len(ids) - 1
            x = torch.tensor([ids[:-1]])
            pos = torch.arange(T)[None]
            mask = torch.full((T, T), -1e9).triu(1)[None, None]
            h, _ = self.hidden(x, pos, mask)
            nxt = torch.tensor([ids[1:]])
            hm, _ = self.mtp(self.embed_tokens(nxt), h, pos, mask, False)
            pred = self.logits(hm[0]).argmax(-1)              # row p predicts ids[p + 2]
            for p in range(T - 1):
                if w[p + 2] > 0:
                    total += 1
                    hits += int(pred[p]) == ids[p + 2]
        return hits, total


def count_params35(model):
    c = model.c
    total = sum(p.numel() for p in model.parameters())
    layers = list(model.layers) + (list(model.mtp.layers) if model.mtp is not None else [])
    expert = sum(l.mlp.routed.gate_up.numel() + l.mlp.routed.down.numel() for l in layers)
    active = total - expert + expert * c.num_experts_per_tok // c.num_experts - model.embed_tokens.weight.numel()
    return total, active


QUANTIZED = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight", "in_proj_qkv.weight",
             "in_proj_z.weight", "out_proj.weight", "routed.gate_up", "routed.down", "shared_gate_proj.weight",
             "shared_up_proj.weight", "shared_down_proj.weight")


def nvfp4_bytes35(model):
    """Size of the NVFP4 checkpoint: the Linears tern quantize quantizes (not mtp.*, routers,
    in_proj_a/b, conv1d, lm_head) at 4 bits + an e4m3 scale per 16; the rest BF16 (A_log F32)."""
    q = other = 0
    for name, p in model.named_parameters():
        if not name.startswith("mtp.") and name.endswith(QUANTIZED):
            q += p.numel()
        else:
            other += p.numel() * (4 if name.endswith("A_log") else 2)
    return q // 2 + q // 16 + other


@torch.no_grad()
def apply_nvfp4_35_(model):
    """The NVFP4 round trip of `tern quantize --format nvfp4` in place (its fusion groups: q/k/v,
    each expert's and the shared expert's gate/up share weight_scale_2; mtp.* stays BF16)."""
    for layer in model.layers:
        if layer.kind == "linear_attention":
            a = layer.linear_attn
            mods = [[a.in_proj_qkv.weight], [a.in_proj_z.weight], [a.out_proj.weight]]
        else:
            a = layer.self_attn
            mods = [[a.q_proj.weight, a.k_proj.weight, a.v_proj.weight], [a.o_proj.weight]]
        m = layer.mlp
        mods += [[m.shared_gate_proj.weight, m.shared_up_proj.weight], [m.shared_down_proj.weight]]
        for group in mods:
            amax = torch.stack([t.abs().max() for t in group]).max().reshape(1, 1)
            for t in group:
                t.copy_(nvfp4_dequantized(t, amax))
        gu, dn = m.routed.expert_weights(quant=True)
        m.routed.gate_up.copy_(gu)
        m.routed.down.copy_(dn)
