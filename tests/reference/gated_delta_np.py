"""Float64 NumPy Gated DeltaNet pieces for the Qwen3.5 / Qwen3-Next reference (qwen35_ref.py).

Written from Hugging Face transformers' models/qwen3_5_moe/modeling_qwen3_5_moe.py (and
models/qwen3_next/modeling_qwen3_next.py, which has the same functions): `l2norm`,
`causal_conv1d_fn` / `causal_conv1d_update`, `torch_recurrent_gated_delta_rule`,
`torch_chunk_gated_delta_rule` and `Qwen3_5MoeRMSNormGated` -- never from tern's C++.
HF runs them in fp32; here everything is float64.

Shapes (one sequence; T tokens in this call):
  q, k: [T, Hk, dk]   v: [T, Hv, dv]   g, beta: [T, Hv]   (Hv % Hk == 0)
  state: [Hv, dk, dv]  (HF's recurrent_state [batch, Hv, dk, dv] without the batch axis)
Value head h reads key head h // (Hv / Hk) (HF: query/key .repeat_interleave(Hv // Hk, dim=2)).

The delta rule, per value head h and token t, with S = state[h] (dk x dv):
  S   = exp(g_t) * S
  u   = S^T k_t                       # HF "kv_mem"
  S   = S + k_t (beta_t (v_t - u))^T  # outer product
  o_t = S^T q_t
where q_t = l2norm(q_t) * dk^-0.5 and k_t = l2norm(k_t) (use_qk_l2norm_in_kernel=True, and the
chunked and recurrent functions both scale the query by dk^-0.5 after the norm).
"""

import numpy as np

L2NORM_EPS = 1e-6  # transformers' l2norm(x, dim=-1, eps=1e-6), as called by both delta-rule functions


def silu(x):
    return x / (1.0 + np.exp(-x))


def l2norm(x, eps=L2NORM_EPS):
    """HF l2norm: x * rsqrt(sum(x^2, -1) + eps). x: [..., d] -> [..., d]"""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def causal_conv1d(x, weight, conv_state=None):
    """Depthwise causal conv + SiLU over channels (HF causal_conv1d_fn with padding K-1, or
    causal_conv1d_update when a state is carried), no bias (Qwen's conv1d has bias=False).

    x: [T, C]; weight: [C, K] (conv1d.weight [C, 1, K] squeezed); conv_state: [K-1, C] (the last
    K-1 inputs before x, oldest first) or None (zeros: the start of a sequence).
    out[t, c] = silu( sum_{j<K} weight[c, j] * xp[t + j, c] ),  xp = concat(conv_state, x)
    so weight[:, K-1] multiplies the current token.
    -> (out [T, C], new conv_state [K-1, C] = last K-1 rows of xp)."""
    T, C = x.shape
    K = weight.shape[1]
    if conv_state is None:
        conv_state = np.zeros((K - 1, C))
    xp = np.concatenate([conv_state, x], axis=0)           # [K-1+T, C]
    out = np.zeros((T, C))
    for j in range(K):
        out += xp[j:j + T] * weight[:, j][None, :]
    return silu(out), xp[xp.shape[0] - (K - 1):].copy()


def gated_rms_norm(o, z, weight, eps):
    """Qwen3_5MoeRMSNormGated (no +1 on the weight): per head over dv,
    weight * (o * rsqrt(mean(o^2) + eps)) * silu(z). o, z: [..., dv]; weight: [dv]."""
    n = o / np.sqrt(np.mean(o * o, axis=-1, keepdims=True) + eps)
    return weight * n * silu(z)


def _prepare(q, k, v, g, beta, use_qk_l2norm):
    """-> (q, k expanded to value heads [Hv, T, dk] with the l2norm and the dk^-0.5 query scale,
    v [Hv, T, dv], g [Hv, T], beta [Hv, T])."""
    hk, hv = q.shape[1], v.shape[1]
    if hv % hk:
        raise ValueError(f"value heads {hv} are not a multiple of key heads {hk}")
    if use_qk_l2norm:
        q, k = l2norm(q), l2norm(k)
    q = np.repeat(q, hv // hk, axis=1)   # repeat_interleave: value head h <- key head h // (hv/hk)
    k = np.repeat(k, hv // hk, axis=1)
    q = q * q.shape[-1] ** -0.5
    return (q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2), g.T, beta.T)


def recurrent_gated_delta_rule(q, k, v, g, beta, state=None, use_qk_l2norm=True):
    """torch_recurrent_gated_delta_rule, token by token. Shapes in the module docstring.
    -> (out [T, Hv, dv], final state [Hv, dk, dv])."""
    q, k, v, g, beta = _prepare(q, k, v, g, beta, use_qk_l2norm)
    hv, T, dk = k.shape
    dv = v.shape[-1]
    S = np.zeros((hv, dk, dv)) if state is None else np.array(state, dtype=np.float64)
    out = np.zeros((hv, T, dv))
    for t in range(T):
        S = S * np.exp(g[:, t])[:, None, None]
        kv_mem = np.einsum("hkv,hk->hv", S, k[:, t])
        delta = (v[:, t] - kv_mem) * beta[:, t][:, None]
        S = S + k[:, t][:, :, None] * delta[:, None, :]
        out[:, t] = np.einsum("hkv,hk->hv", S, q[:, t])
    return out.transpose(1, 0, 2), S


def _solve_unit_lower(a, b):
    """Solves L x = b for L = I + strictly_lower(a) (torch.linalg.solve_triangular(a, b,
    upper=False, unitriangular=True) reads only the strict lower triangle). a: [..., C, C]."""
    C = a.shape[-1]
    L = np.tril(a, -1) + np.eye(C)
    return np.linalg.solve(L, b)


def chunk_gated_delta_rule(q, k, v, g, beta, state=None, use_qk_l2norm=True, chunk_size=64):
    """torch_chunk_gated_delta_rule (the UT / WY form, chunk 64), transcribed step by step:
    pad T to a multiple of chunk_size (zeros; beta = g = 0 there), then per chunk
      cum        = cumsum(g) inside the chunk
      decay[i,j] = exp(cum_i - cum_j) for j <= i, else 0
      ut         = (k_beta k^T) * decay,  solved as a unit lower-triangular system
      new_values = ut^-1 v_beta;  k_cumdecay = ut^-1 (k_beta * exp(cum))
      intra      = (q k^T) * decay              (diagonal included)
    and a sequential scan over chunks with the state S:
      v_new = new_values - k_cumdecay S
      out   = (q * exp(cum)) S + intra v_new
      S     = S * exp(cum_last) + (k * exp(cum_last - cum))^T v_new
    Mathematically equal to recurrent_gated_delta_rule. -> (out [T, Hv, dv], state [Hv, dk, dv])."""
    q, k, v, g, beta = _prepare(q, k, v, g, beta, use_qk_l2norm)
    hv, T, dk = k.shape
    dv = v.shape[-1]
    C = chunk_size
    pad = (C - T % C) % C
    q, k, v = (np.pad(x, ((0, 0), (0, pad), (0, 0))) for x in (q, k, v))
    g, beta = (np.pad(x, ((0, 0), (0, pad))) for x in (g, beta))
    n = (T + pad) // C
    v_beta = v * beta[..., None]
    k_beta = k * beta[..., None]
    q, k, k_beta, v_beta = (x.reshape(hv, n, C, x.shape[-1]) for x in (q, k, k_beta, v_beta))
    cum = np.cumsum(g.reshape(hv, n, C), axis=-1)                        # [Hv, n, C]
    upper = np.triu(np.ones((C, C), dtype=bool), 1)
    pair = cum[..., :, None] - cum[..., None, :]                          # [Hv, n, C, C]
    pair = np.exp(np.where(upper, -np.inf, pair))
    ut = (k_beta @ k.swapaxes(-1, -2)) * pair
    intra = (q @ k.swapaxes(-1, -2)) * pair
    decayed_k_beta = k_beta * np.exp(cum)[..., None]
    new_values = _solve_unit_lower(ut, v_beta)
    k_cumdecay = _solve_unit_lower(ut, decayed_k_beta)
    S = np.zeros((hv, dk, dv)) if state is None else np.array(state, dtype=np.float64)
    out = np.zeros((hv, n, C, dv))
    q_dec = q * np.exp(cum)[..., None]
    k_dec = k * np.exp(cum[..., -1:] - cum)[..., None]
    chunk_decay = np.exp(cum[..., -1])[..., None, None]                   # [Hv, n, 1, 1]
    for i in range(n):
        v_new = new_values[:, i] - k_cumdecay[:, i] @ S
        out[:, i] = q_dec[:, i] @ S + intra[:, i] @ v_new
        S = S * chunk_decay[:, i] + k_dec[:, i].swapaxes(-1, -2) @ v_new
    out = out.reshape(hv, n * C, dv)[:, :T]
    return out.transpose(1, 0, 2), S
