# A plain PyTorch (1.13) Qwen3-MoE, the same math as Hugging Face transformers'
# Qwen3MoeForCausalLM (and tests/reference/qwen3_ref.py): RMSNorm (eps from the config, weight
# without +1, computed in float32), per-head q_norm / k_norm before RoPE, NeoX-layout RoPE with
# rope_theta, GQA, sparse MoE feed-forward (router softmax over all experts -> top-k ->
# renormalised when norm_topk_prob) with SwiGLU experts, untied or tied lm_head.
#
# Training additions that do not change the inference math: a Switch-style load-balancing loss, and optional NVFP4 fake quantization of the attention and
# expert weights (fake_quant_nvfp4, straight-through estimator) for quantization-aware training.
# Expert weights are kept stacked ([E, 2I, H] gate+up, [E, H, I] down); export.py writes them as
# HF's per-expert tensors.
import dataclasses
import math

import torch
import torch.nn.functional as F


@dataclasses.dataclass
class Config:
    vocab_size: int = 2048
    hidden_size: int = 192
    num_hidden_layers: int = 4
    num_attention_heads: int = 6
    num_key_value_heads: int = 2
    head_dim: int = 32
    num_experts: int = 8
    num_experts_per_tok: int = 2
    moe_intermediate_size: int = 384
    norm_topk_prob: bool = True
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 4096
    router_aux_loss_coef: float = 0.01

    def hf_config(self, bos_token_id, eos_token_id):
        """config.json for Qwen3MoeForCausalLM (every field tern's config.cc and HF read)."""
        return {
            "architectures": ["Qwen3MoeForCausalLM"],
            "model_type": "qwen3_moe",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.moe_intermediate_size * self.num_experts_per_tok,  # no dense layer uses it
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "max_position_embeddings": self.max_position_embeddings,
            "initializer_range": 0.02,
            "rms_norm_eps": self.rms_norm_eps,
            "use_cache": True,
            "rope_theta": self.rope_theta,
            "rope_scaling": None,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "use_sliding_window": False,
            "sliding_window": None,
            "max_window_layers": self.num_hidden_layers,
            "tie_word_embeddings": self.tie_word_embeddings,
            "num_experts": self.num_experts,
            "num_experts_per_tok": self.num_experts_per_tok,
            "moe_intermediate_size": self.moe_intermediate_size,
            "norm_topk_prob": self.norm_topk_prob,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "output_router_logits": False,
            "router_aux_loss_coef": self.router_aux_loss_coef,
            "bos_token_id": bos_token_id,
            "eos_token_id": eos_token_id,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.51.0",
        }


# ---------------------------------------------------------------------------------------------
# NVFP4 fake quantization (ModelOpt's weight recipe, shared/specs/qwen-models-and-nvfp4.md §4.4)

E4M3_MAX = 448.0
E2M1_MAX = 6.0


def round_e4m3(x):
    """x >= 0 float32 -> nearest float8_e4m3fn value (ties to even), saturating at 448."""
    x = torch.clamp(x, max=E4M3_MAX)
    e = torch.floor(torch.log2(torch.clamp(x, min=2.0 ** -9)))
    e = torch.clamp(e, min=-6.0)  # below 2^-6 the spacing is the subnormal step 2^-9
    step = torch.pow(2.0, e - 3.0)
    return torch.clamp(torch.round(x / step) * step, max=E4M3_MAX)


def round_e2m1(x):
    """x -> nearest E2M1 value {0, .5, 1, 1.5, 2, 3, 4, 6} with sign (ties to even), saturating."""
    a = torch.clamp(x.abs(), max=E2M1_MAX)
    q = torch.where(a < 2.0, torch.round(a * 2.0) / 2.0,
                    torch.where(a < 4.0, torch.round(a), torch.round(a / 2.0) * 2.0))
    return torch.sign(x) * q


def nvfp4_dequantized(w, amax=None):
    """w: [..., N, K] (K % 16 == 0) -> the weights NVFP4 export + dequantization gives back:
    weight_scale_2 = amax/(6*448) (amax over the last two dims unless given, shape [..., 1, 1]),
    per-16 block scale = e4m3(clamp(block_amax/(6*weight_scale_2), 2^-9, 448)) (1.0 for a zero
    block), code = e2m1(w / (scale * weight_scale_2))."""
    shape = w.shape
    if amax is None:
        amax = w.detach().abs().amax(dim=(-2, -1), keepdim=True)
    s2 = torch.clamp(amax, min=1e-30) / (E2M1_MAX * E4M3_MAX)
    blocks = w.reshape(*shape[:-1], shape[-1] // 16, 16)
    bmax = blocks.detach().abs().amax(dim=-1, keepdim=True)
    s2b = s2.unsqueeze(-1)
    scale = round_e4m3(torch.clamp(bmax / (E2M1_MAX * s2b), min=2.0 ** -9, max=E4M3_MAX))
    scale = torch.where(bmax == 0, torch.ones_like(scale), scale)
    q = round_e2m1(blocks / (scale * s2b))
    return (q * scale * s2b).reshape(shape)


def fake_quant_nvfp4(w, amax=None):
    """Straight-through estimator: forward uses the NVFP4 round trip, gradients pass to w."""
    return w + (nvfp4_dequantized(w, amax) - w).detach()


@torch.no_grad()
def apply_nvfp4_(model):
    """Replace the attention and expert weights in place by their NVFP4 round trip (the same
    grouping as the fake quantization in training: q/k/v share weight_scale_2, gate/up of an
    expert share it), for evaluating or generating with the quantized model at full speed
    (model.quant stays False)."""
    for layer in model.layers:
        a = layer.self_attn
        qkv = [a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]
        amax = torch.stack([t.abs().max() for t in qkv]).max().reshape(1, 1)
        for t in qkv:
            t.copy_(nvfp4_dequantized(t, amax))
        a.o_proj.weight.copy_(nvfp4_dequantized(a.o_proj.weight))
        gu, dn = layer.mlp.expert_weights(quant=True)
        layer.mlp.gate_up.copy_(gu)
        layer.mlp.down.copy_(dn)


# ---------------------------------------------------------------------------------------------
# Blocks


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rope_cos_sin(positions, head_dim, theta):
    """positions: [B, T] int -> cos, sin [B, T, hd] (emb = cat(freqs, freqs))."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        H, hd = c.hidden_size, c.head_dim
        self.q_proj = torch.nn.Linear(H, c.num_attention_heads * hd, bias=False)
        self.k_proj = torch.nn.Linear(H, c.num_key_value_heads * hd, bias=False)
        self.v_proj = torch.nn.Linear(H, c.num_key_value_heads * hd, bias=False)
        self.o_proj = torch.nn.Linear(c.num_attention_heads * hd, H, bias=False)
        self.q_norm = RMSNorm(hd, c.rms_norm_eps)
        self.k_norm = RMSNorm(hd, c.rms_norm_eps)

    def forward(self, x, cos, sin, mask, quant, kv_cache=None):
        """x: [B, T, H]; cos, sin: [B, T, hd]; mask: additive [B, 1, T, S] or None;
        kv_cache: None or a dict with 'k','v' [B, Hkv, S_past, hd] (extended in place)."""
        c = self.c
        B, T, _ = x.shape
        hq, hkv, hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        w = [m.weight for m in (self.q_proj, self.k_proj, self.v_proj, self.o_proj)]
        if quant:
            # q, k and v share weight_scale_2 (ModelOpt fuses Linears that read the same input)
            qkv_amax = torch.stack([t.detach().abs().max() for t in w[:3]]).max().reshape(1, 1)
            w = [fake_quant_nvfp4(t, qkv_amax) for t in w[:3]] + [fake_quant_nvfp4(w[3])]
        q = F.linear(x, w[0]).view(B, T, hq, hd)
        k = F.linear(x, w[1]).view(B, T, hkv, hd)
        v = F.linear(x, w[2]).view(B, T, hkv, hd)
        q, k = self.q_norm(q), self.k_norm(k)
        cs, sn = cos[:, :, None, :], sin[:, :, None, :]
        q = q * cs + rotate_half(q) * sn
        k = k * cs + rotate_half(k) * sn
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, T, hd]
        if kv_cache is not None:
            if "k" in kv_cache:
                k = torch.cat([kv_cache["k"], k], dim=2)
                v = torch.cat([kv_cache["v"], v], dim=2)
            kv_cache["k"], kv_cache["v"] = k, v
        g = hq // hkv
        if g > 1:
            k = k.repeat_interleave(g, dim=1)
            v = v.repeat_interleave(g, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * (hd ** -0.5)  # [B, Hq, T, S]
        if mask is not None:
            scores = scores + mask
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, hq * hd)
        return F.linear(out, w[3])


class MoE(torch.nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        E, H, inter = c.num_experts, c.hidden_size, c.moe_intermediate_size
        self.gate = torch.nn.Linear(H, E, bias=False)                    # router
        self.gate_up = torch.nn.Parameter(torch.empty(E, 2 * inter, H))  # rows [:I] gate, [I:] up
        self.down = torch.nn.Parameter(torch.empty(E, H, inter))

    def expert_weights(self, quant):
        gu, dn = self.gate_up, self.down
        if quant:
            inter = self.c.moe_intermediate_size
            # gate and up of one expert share weight_scale_2 (ModelOpt syncs their amax)
            amax = gu.detach().abs().amax(dim=(-2, -1), keepdim=True)
            gu = torch.cat([fake_quant_nvfp4(gu[:, :inter], amax), fake_quant_nvfp4(gu[:, inter:], amax)], dim=1)
            dn = fake_quant_nvfp4(dn)
        return gu, dn

    def forward(self, x, quant):
        """x: [N, H] -> (out [N, H], aux load-balancing loss)."""
        c = self.c
        N, H = x.shape
        E, k, inter = c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size
        probs = torch.softmax(F.linear(x, self.gate.weight).float(), dim=-1)   # [N, E]
        topw, topi = torch.topk(probs, k, dim=-1)                              # [N, k]
        if c.norm_topk_prob:
            topw = topw / topw.sum(dim=-1, keepdim=True)
        topw = topw.to(x.dtype)
        gu, dn = self.expert_weights(quant)
        gu, dn = gu.unbind(0), dn.unbind(0)  # one backward op, not a full-size zero-fill per expert
        flat = topi.reshape(-1)
        order = torch.argsort(flat)
        counts = torch.bincount(flat, minlength=E).tolist()
        tok = order // k
        wts = topw.reshape(-1)[order]
        out = torch.zeros_like(x)
        start = 0
        for e in range(E):
            n = counts[e]
            if n == 0:
                continue
            idx = tok[start:start + n]
            h = F.linear(x.index_select(0, idx), gu[e])                          # [n, 2I]
            h = F.silu(h[:, :inter]) * h[:, inter:]
            y = F.linear(h, dn[e]) * wts[start:start + n, None]
            out.index_add_(0, idx, y)
            start += n
        frac = torch.bincount(flat, minlength=E).float() / (N * k)
        aux = E * torch.sum(frac * probs.mean(dim=0))
        return out, aux


class Layer(torch.nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MoE(c)

    def forward(self, x, cos, sin, mask, quant, kv_cache=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, quant, kv_cache)
        B, T, H = x.shape
        m, aux = self.mlp(self.post_attention_layernorm(x).reshape(B * T, H), quant)
        return x + m.view(B, T, H), aux


class Qwen3Moe(torch.nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c.num_hidden_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.lm_head = None if c.tie_word_embeddings else torch.nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.quant = False  # NVFP4 fake quantization of attention and expert weights
        self.reset_parameters()

    def reset_parameters(self, std=0.02):
        g = torch.Generator().manual_seed(0)
        resid = std / math.sqrt(2 * self.c.num_hidden_layers)
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                torch.nn.init.ones_(p)
            else:
                s = resid if name.endswith(("o_proj.weight", "mlp.down")) else std
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g) * s)

    def head_weight(self):
        return self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    def hidden(self, ids, positions, mask, kv_caches=None):
        """ids, positions: [B, T] -> (final-normed hidden [B, T, H], summed aux loss)."""
        x = self.embed_tokens(ids)
        cos, sin = rope_cos_sin(positions, self.c.head_dim, self.c.rope_theta)
        aux = 0.0
        for i, layer in enumerate(self.layers):
            x, a = layer(x, cos, sin, mask, self.quant, None if kv_caches is None else kv_caches[i])
            aux = aux + a
        return self.norm(x), aux

    def logits(self, h):
        return F.linear(h, self.head_weight())

    def loss(self, ids, targets, weights):
        """One padded batch of conversations: ids, targets: [B, T] (each row one conversation from
        position 0, right-padded); weights: [B, T] float loss weights (0 off the assistant tokens
        and on padding). A causal mask suffices: padding only follows real tokens.
        -> (sum of weighted CE, aux loss)."""
        B, T = ids.shape
        positions = torch.arange(T)[None].expand(B, T)
        mask = torch.full((T, T), -1e9).triu(1)[None, None]
        h, aux = self.hidden(ids, positions, mask)
        sel = weights.reshape(-1) > 0
        hs = h.reshape(-1, h.shape[-1])[sel]
        logits = self.logits(hs)
        w = weights.reshape(-1)[sel]
        ce = F.cross_entropy(logits.float(), targets.reshape(-1)[sel], reduction="none")
        return (ce * w).sum(), aux / len(self.layers)

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens, stop_ids):
        """Greedy decoding of a batch of prompts (lists of ids) with a KV cache; prompts are
        left-padded, each with its own positions starting at 0. -> list of generated id lists
        (up to and including the first stop id)."""
        B = len(prompts)
        L = max(len(p) for p in prompts)
        ids = torch.zeros(B, L, dtype=torch.long)
        valid = torch.zeros(B, L, dtype=torch.bool)
        for b, p in enumerate(prompts):
            ids[b, L - len(p):] = torch.tensor(p)
            valid[b, L - len(p):] = True
        pos = (valid.long().cumsum(1) - 1).clamp(min=0)
        caches = [{} for _ in self.layers]
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        allowed = causal[None] & valid[:, None, :]
        allowed |= torch.eye(L, dtype=torch.bool)[None]  # padding rows attend to themselves
        mask = torch.zeros(B, 1, L, L).masked_fill(~allowed[:, None], -1e9)
        h, _ = self.hidden(ids, pos, mask, caches)
        nxt = self.logits(h[:, -1]).argmax(-1)
        out = [[] for _ in range(B)]
        done = [False] * B
        cur = pos[:, -1]
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


def count_params(model):
    c = model.c
    total = sum(p.numel() for p in model.parameters())
    expert = sum(l.mlp.gate_up.numel() + l.mlp.down.numel() for l in model.layers)
    active = total - expert + expert * c.num_experts_per_tok // c.num_experts - model.embed_tokens.weight.numel()
    return total, active


def nvfp4_bytes(model):
    """Size of the NVFP4 checkpoint: attention and expert weights at 4 bits + an e4m3 scale per 16
    (+ 8 bytes of scalars per Linear); embeddings, lm_head, routers and norms in BF16."""
    q = bf16 = n_lin = 0
    for name, p in model.named_parameters():
        if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight")):
            q += p.numel()
            n_lin += 1
        elif name.endswith(("mlp.gate_up", "mlp.down")):
            q += p.numel()
            n_lin += p.shape[0] * (2 if name.endswith("gate_up") else 1)
        else:
            bf16 += p.numel()
    return q // 2 + q // 16 + 8 * n_lin + 2 * bf16
