#!/usr/bin/python3
"""Self-tests of the Qwen3.5-MoE / Qwen3-Next float64 reference (gated_delta_np, qwen35_ref,
tiny_qwen35, compare.py's dispatch and --prefill-chunks) without tern.

Run: /usr/bin/python3 tests/reference/test_qwen35_selfcheck.py [-v] [-k SUBSTRING]
Exits non-zero when a test fails; the last line is "N passed, M failed".

  (i)   the chunked delta rule (transformers' torch_chunk_gated_delta_rule, chunk 64 and 16)
        equals the recurrent one to 1e-10, with and without an initial state, and both equal a
        plain per-head loop written from the equations (spec §2.3 step 7);
  (ii)  the causal conv (whole, streamed with its state) equals np.convolve per channel; the
        norms and the partial RoPE equal hand formulas; a 3-layer model (linear, full, linear;
        GQA in both mixers) equals a loop-by-loop forward in scalars and math.*, and so does its
        MTP head (mtp_forward) fed with the loop's final-normed hidden states;
  (iii) whole prompt (chunked rule) == token by token (recurrent rule, explicit state) == the
        prompt fed in chunks of 5 / 64 / 100, to 1e-10; greedy decode == teacher forcing; MTP
        rows in pieces (their K/V carried in MtpState) == all rows at once;
  (iv)  every checkpoint form gives the same logits for the same seed: VLM wrapper, text-only,
        fused experts, qwen3_next's fused in_proj_qkvz / in_proj_ba, without mtp/vision extras,
        sharded; layer_types derived from full_attention_interval; config forms and errors;
  (v)   the tiny model is not degenerate (spread logits, long-range memory across chunks);
  (vi)  quantize_np.py's NVFP4 / FP8 exports of the tiny model load (ModelOpt exclusions kept);
  (vii) compare.py against a fake tern, with --prefill-chunks and --mtp (a bug in each is caught).
"""

import json
import math
import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # tiny matrices: BLAS threads only add contention

import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gated_delta_np as gdn  # noqa: E402
import qwen35_ref as R  # noqa: E402
import tiny_qwen35 as tiny  # noqa: E402

TESTS = []
_TMP_ROOT = tempfile.TemporaryDirectory(prefix="tern-q35-test-")
PROMPT = [int(t) for t in np.random.default_rng(1).integers(0, 512, 150)]


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def close(a, b, atol, what):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    check(a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}")
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    check(err <= atol, f"{what}: max abs diff {err:.3e} > {atol:.1e}")


_MODELS = {}


def model_dir(name, dtype="BF16", **kw):
    """Writes (once) a tiny checkpoint; kw go to tiny_qwen35.build."""
    key = (name, dtype, json.dumps(kw, sort_keys=True))
    if key not in _MODELS:
        d = tempfile.mkdtemp(dir=_TMP_ROOT.name)
        shards = kw.pop("shards", 1)
        cfg, w = tiny.build(**kw)
        tiny.write_dir(d, cfg, w, dtype, shards)
        _MODELS[key] = d
    return _MODELS[key]


def logits_of(d, ids=PROMPT):
    return R.Model(d).forward(ids)


def _random_gdn_inputs(rng, T, hk=2, hv=6, dk=16, dv=12):
    q, k = rng.standard_normal((T, hk, dk)), rng.standard_normal((T, hk, dk))
    v = rng.standard_normal((T, hv, dv))
    g = -np.exp(rng.uniform(np.log(0.005), np.log(3.0), (T, hv)))
    beta = 1.0 / (1.0 + np.exp(-rng.standard_normal((T, hv))))
    return q, k, v, g, beta


# ----------------------------------------------------------------------------------------------
# (i) delta rule


@test
def chunked_delta_rule_equals_recurrent():
    rng = np.random.default_rng(0)
    for T in (1, 7, 63, 64, 65, 150):
        q, k, v, g, beta = _random_gdn_inputs(rng, T)
        for s0 in (None, rng.standard_normal((6, 16, 12))):
            o1, s1 = gdn.recurrent_gated_delta_rule(q, k, v, g, beta, s0)
            for chunk in ((64, 16) if T == 150 else (64,)):
                o2, s2 = gdn.chunk_gated_delta_rule(q, k, v, g, beta, s0, chunk_size=chunk)
                close(o2, o1, 1e-10, f"T={T} chunk={chunk} output")
                close(s2, s1, 1e-10, f"T={T} chunk={chunk} state")


@test
def delta_rule_equals_plain_per_head_loop():
    """Spec §2.3 steps 5-7 written as loops over heads with np.outer."""
    rng = np.random.default_rng(1)
    T, hk, hv, dk, dv = 9, 2, 6, 16, 12
    q, k, v, g, beta = _random_gdn_inputs(rng, T)
    s0 = rng.standard_normal((hv, dk, dv))
    out = np.zeros((T, hv, dv))
    S = s0.copy()
    for h in range(hv):
        kh = h // (hv // hk)
        for t in range(T):
            qt = q[t, kh] / np.sqrt(np.sum(q[t, kh] ** 2) + 1e-6) / np.sqrt(dk)
            kt = k[t, kh] / np.sqrt(np.sum(k[t, kh] ** 2) + 1e-6)
            S[h] = np.exp(g[t, h]) * S[h]
            u = S[h].T @ kt
            S[h] = S[h] + np.outer(kt, beta[t, h] * (v[t, h] - u))
            out[t, h] = S[h].T @ qt
    o1, s1 = gdn.recurrent_gated_delta_rule(q, k, v, g, beta, s0)
    close(o1, out, 1e-12, "recurrent vs loop output")
    close(s1, S, 1e-12, "recurrent vs loop state")
    o2, s2 = gdn.chunk_gated_delta_rule(q, k, v, g, beta, s0)
    close(o2, out, 1e-10, "chunked vs loop output")


@test
def delta_rule_state_carries_across_calls():
    rng = np.random.default_rng(2)
    q, k, v, g, beta = _random_gdn_inputs(rng, 150)
    whole, s_whole = gdn.chunk_gated_delta_rule(q, k, v, g, beta)
    s, parts = None, []
    for a, b in ((0, 37), (37, 38), (38, 120), (120, 150)):
        o, s = gdn.chunk_gated_delta_rule(q[a:b], k[a:b], v[a:b], g[a:b], beta[a:b], s)
        parts.append(o)
    close(np.concatenate(parts), whole, 1e-10, "split calls")
    close(s, s_whole, 1e-10, "final state")


# ----------------------------------------------------------------------------------------------
# (ii) conv, norms, rope


@test
def causal_conv_matches_convolve_and_streams():
    rng = np.random.default_rng(3)
    T, C, K = 23, 5, 4
    x, w = rng.standard_normal((T, C)), rng.standard_normal((C, K))
    y, st = gdn.causal_conv1d(x, w)
    for c in range(C):
        # out[t] = sum_j w[j] x[t - (K-1) + j]  ==  np.convolve(x, w[::-1])[t]
        ref = np.convolve(x[:, c], w[c, ::-1])[:T]
        close(y[:, c], gdn.silu(ref), 1e-12, f"channel {c}")
    close(st, x[-(K - 1):], 0, "state = last K-1 inputs")
    s, parts = None, []
    for a, b in ((0, 1), (1, 2), (2, 10), (10, 23)):
        o, s = gdn.causal_conv1d(x[a:b], w, s)
        parts.append(o)
    close(np.concatenate(parts), y, 1e-12, "streamed conv")


@test
def norms_and_partial_rope_by_hand():
    x, w = np.array([1.0, -2.0, 3.0, 0.5]), np.array([0.1, -0.2, 0.0, 0.3])
    r = 1.0 / np.sqrt((1 + 4 + 9 + 0.25) / 4 + 1e-6)
    close(R.norm1p(x, w, 1e-6), x * r * (1 + w), 1e-15, "zero-centred norm")
    z = np.array([0.3, -1.0, 2.0, 0.0])
    close(gdn.gated_rms_norm(x, z, w, 1e-6), w * x * r * z / (1 + np.exp(-z)), 1e-15, "gated norm (no +1)")
    rng = np.random.default_rng(4)
    xs, rd, theta = rng.standard_normal((3, 2, 12)), 8, 1e4
    got = R.partial_rope(xs, [0, 5, 17], rd, theta)
    for t, pos in enumerate((0, 5, 17)):
        for h in range(2):
            close(got[t, h, rd:], xs[t, h, rd:], 0, "pass-through dims")
            for j in range(rd // 2):
                ang = pos * theta ** (-2 * j / rd)
                a, b = xs[t, h, j], xs[t, h, j + rd // 2]
                want = [a * np.cos(ang) - b * np.sin(ang), b * np.cos(ang) + a * np.sin(ang)]
                close(got[t, h, [j, j + rd // 2]], want, 1e-13, "rotated pair")


# ----------------------------------------------------------------------------------------------
# hand computation: a loop-by-loop forward (scalars and math.*, weights read by name)


def _v(a):
    return [float(x) for x in np.asarray(a).reshape(-1)]


def _mv(w, x):
    w = np.asarray(w)
    return [sum(float(w[o, i]) * x[i] for i in range(len(x))) for o in range(w.shape[0])]


def _n1p(x, w, eps=1e-6):
    r = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [x[i] * r * (1.0 + w[i]) for i in range(len(x))]


def _sig(v):
    return 1.0 / (1.0 + math.exp(-v))


def _silu(v):
    return v * _sig(v)


def _loop_attention(cfg, w, a, normed):
    """Gated full attention (tensors under `a`, "...self_attn.") over rows `normed` at positions
    0, 1, ..., per head and element. -> one output row per input row."""
    eps = cfg["rms_norm_eps"]
    hq, hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    rp = cfg["rope_parameters"]
    rd, theta = int(hd * rp["partial_rotary_factor"]), rp["rope_theta"]
    mix, ks, vs = [], [], []
    for t, x in enumerate(normed):
        qg, k, v = (_mv(w[a + f"{n}_proj.weight"], x) for n in "qkv")

        def rope(vec):
            out = list(vec)
            for j in range(rd // 2):
                ang = t * theta ** (-2.0 * j / rd)
                x1, x2 = vec[j], vec[j + rd // 2]
                c_, s_ = math.cos(ang), math.sin(ang)
                out[j], out[j + rd // 2] = x1 * c_ - x2 * s_, x2 * c_ + x1 * s_
            return out
        ks.append([rope(_n1p(k[h * hd:(h + 1) * hd], _v(w[a + "k_norm.weight"]), eps)) for h in range(hkv)])
        vs.append([v[h * hd:(h + 1) * hd] for h in range(hkv)])
        out = []
        for h in range(hq):
            q = rope(_n1p(qg[2 * hd * h:2 * hd * h + hd], _v(w[a + "q_norm.weight"]), eps))
            gate = qg[2 * hd * h + hd:2 * hd * (h + 1)]
            kvh = h // (hq // hkv)
            sc = [sum(q[d] * ks[s][kvh][d] for d in range(hd)) / math.sqrt(hd) for s in range(t + 1)]
            m = max(sc)
            e = [math.exp(s - m) for s in sc]
            out += [sum(e[s] * vs[s][kvh][d] for s in range(t + 1)) / sum(e) * _sig(gate[d]) for d in range(hd)]
        mix.append(_mv(w[a + "o_proj.weight"], out))
    return mix


def _loop_moe_residual(cfg, w, p, x):
    """x + MoE(norm1p(x, post_attention_layernorm)) for layer prefix p, one row."""
    H, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
    m = _n1p(x, _v(w[p + "post_attention_layernorm.weight"]), eps)
    logits = _mv(w[p + "mlp.gate.weight"], m)
    mx = max(logits)
    pr = [math.exp(l - mx) for l in logits]
    pr = [v / sum(pr) for v in pr]
    top = sorted(range(len(pr)), key=lambda e: (-pr[e], e))[:cfg["num_experts_per_tok"]]
    tot = sum(pr[e] for e in top)
    y = [0.0] * H

    def ffn(pre):
        gt, up = _mv(w[pre + "gate_proj.weight"], m), _mv(w[pre + "up_proj.weight"], m)
        return _mv(w[pre + "down_proj.weight"], [_silu(gt[i]) * up[i] for i in range(len(gt))])
    for e in top:
        y = [y[i] + pr[e] / tot * v for i, v in enumerate(ffn(p + f"mlp.experts.{e}."))]
    sg = _sig(_mv(w[p + "mlp.shared_expert_gate.weight"], m)[0])
    y = [y[i] + sg * v for i, v in enumerate(ffn(p + "mlp.shared_expert."))]
    return [x[i] + y[i] for i in range(H)]


def loop_mtp(cfg, w, hidden, next_ids):
    """The MTP head (vLLM Qwen3_5MultiTokenPredictor + the proposer's shifted ids), row by row
    from position 0: [norm1p(embed[next]) | norm1p(h)] -> fc -> one gated-attention MoE layer ->
    norm1p(mtp.norm) -> lm_head."""
    eps = cfg["rms_norm_eps"]
    e = [_n1p(_v(w["model.embed_tokens.weight"][t]), _v(w["mtp.pre_fc_norm_embedding.weight"]), eps)
         for t in next_ids]
    g = [_n1p(list(h), _v(w["mtp.pre_fc_norm_hidden.weight"]), eps) for h in hidden]
    xs = [_mv(w["mtp.fc.weight"], e[t] + g[t]) for t in range(len(e))]
    p = "mtp.layers.0."
    normed = [_n1p(x, _v(w[p + "input_layernorm.weight"]), eps) for x in xs]
    mix = _loop_attention(cfg, w, p + "self_attn.", normed)
    xs = [_loop_moe_residual(cfg, w, p, [x[i] + m[i] for i in range(len(x))]) for x, m in zip(xs, mix)]
    return [_mv(w["lm_head.weight"], _n1p(x, _v(w["mtp.norm.weight"]), eps)) for x in xs]


def loop_forward(cfg, w, ids, return_hidden=False):
    """Per token, per layer, per head, per element; one sequence from position 0. Split GDN
    projections, per-expert MoE (tiny_qwen35 canonical names, "model." prefix). -> logits rows
    (and the final-normed hidden rows with return_hidden)."""
    H, eps = cfg["hidden_size"], cfg["rms_norm_eps"]
    hk, hv, dk, dv = (cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"],
                      cfg["linear_value_head_dim"])
    K = cfg["linear_conv_kernel_dim"]
    xs = [_v(w["model.embed_tokens.weight"][t]) for t in ids]
    for li, kind in enumerate(cfg["layer_types"]):
        p = f"model.layers.{li}."
        normed = [_n1p(x, _v(w[p + "input_layernorm.weight"]), eps) for x in xs]
        mix = []
        if kind == "linear_attention":
            a = p + "linear_attn."
            qkv = [_mv(w[a + "in_proj_qkv.weight"], x) for x in normed]
            conv_w = np.asarray(w[a + "conv1d.weight"])
            S = [[[0.0] * dv for _ in range(dk)] for _ in range(hv)]
            for t, x in enumerate(normed):
                c = []
                for ch in range(len(qkv[0])):
                    acc = 0.0
                    for j in range(K):
                        src = t - (K - 1) + j
                        acc += float(conv_w[ch, 0, j]) * (qkv[src][ch] if src >= 0 else 0.0)
                    c.append(_silu(acc))
                z, b, aa = (_mv(w[a + f"in_proj_{n}.weight"], x) for n in "zba")
                out = []
                for h in range(hv):
                    kh = h // (hv // hk)
                    q = c[kh * dk:(kh + 1) * dk]
                    k = c[hk * dk + kh * dk:hk * dk + (kh + 1) * dk]
                    v = c[2 * hk * dk + h * dv:2 * hk * dk + (h + 1) * dv]
                    qn = 1.0 / math.sqrt(sum(e * e for e in q) + 1e-6) / math.sqrt(dk)
                    kn = 1.0 / math.sqrt(sum(e * e for e in k) + 1e-6)
                    q, k = [e * qn for e in q], [e * kn for e in k]
                    beta = _sig(b[h])
                    g = -math.exp(float(w[a + "A_log"][h])) * math.log1p(math.exp(aa[h] + float(w[a + "dt_bias"][h])))
                    for i in range(dk):
                        for j in range(dv):
                            S[h][i][j] *= math.exp(g)
                    u = [sum(S[h][i][j] * k[i] for i in range(dk)) for j in range(dv)]
                    for i in range(dk):
                        for j in range(dv):
                            S[h][i][j] += k[i] * beta * (v[j] - u[j])
                    o = [sum(S[h][i][j] * q[i] for i in range(dk)) for j in range(dv)]
                    r = 1.0 / math.sqrt(sum(e * e for e in o) / dv + eps)
                    out += [float(w[a + "norm.weight"][j]) * o[j] * r * _silu(z[h * dv + j]) for j in range(dv)]
                mix.append(_mv(w[a + "out_proj.weight"], out))
        else:
            mix = _loop_attention(cfg, w, p + "self_attn.", normed)
        xs = [[xs[t][i] + mix[t][i] for i in range(H)] for t in range(len(xs))]
        xs = [_loop_moe_residual(cfg, w, p, x) for x in xs]
    normed = [_n1p(x, _v(w["model.norm.weight"]), eps) for x in xs]
    logits = [_mv(w["lm_head.weight"], x) for x in normed]
    return (logits, normed) if return_hidden else logits


@test
def hand_computed_hybrid_model():
    over = dict(hidden_size=16, head_dim=8, num_attention_heads=4, num_key_value_heads=2, linear_num_key_heads=2,
                linear_num_value_heads=4, linear_key_head_dim=4, linear_value_head_dim=3, num_experts=4,
                moe_intermediate_size=5, shared_expert_intermediate_size=6, vocab_size=20, num_hidden_layers=3,
                layer_types=["linear_attention", "full_attention", "linear_attention"],
                rope_parameters={"rope_type": "default", "rope_theta": 100.0, "partial_rotary_factor": 0.5})
    cfg, w = tiny.build(text_only=True, extras=False, seed=4, **over)
    d = tempfile.mkdtemp(dir=_TMP_ROOT.name)
    tiny.write_dir(d, cfg, w, "F32", f32_names=())
    w64 = {n: np.asarray(a, dtype=np.float64) for n, a in w.items()}
    ids = [3, 17, 5, 5, 11, 0, 19]
    close(R.Model(d).forward(ids), loop_forward(cfg, w64, ids), 1e-11, "hand-computed logits")


@test
def hand_computed_mtp_head():
    """The MTP head against loop_mtp, fed by loop_forward's final-normed hidden states."""
    over = dict(hidden_size=16, head_dim=8, num_attention_heads=4, num_key_value_heads=2, linear_num_key_heads=2,
                linear_num_value_heads=4, linear_key_head_dim=4, linear_value_head_dim=3, num_experts=4,
                moe_intermediate_size=5, shared_expert_intermediate_size=6, vocab_size=20, num_hidden_layers=2,
                layer_types=["linear_attention", "full_attention"],
                rope_parameters={"rope_type": "default", "rope_theta": 100.0, "partial_rotary_factor": 0.5})
    cfg, w = tiny.build(text_only=True, extras=True, seed=6, **over)
    check(cfg["mtp_num_hidden_layers"] == 1 and "mtp.fc.weight" in w, "the checkpoint has an MTP head")
    d = tempfile.mkdtemp(dir=_TMP_ROOT.name)
    tiny.write_dir(d, cfg, w, "F32", f32_names=())
    w64 = {n: np.asarray(a, dtype=np.float64) for n, a in w.items()}
    ids = [3, 17, 5, 5, 11, 0, 19]
    m = R.Model(d)
    _, hidden = m.forward(ids[:-1], return_hidden=True)
    _, loop_hidden = loop_forward(cfg, w64, ids[:-1], return_hidden=True)
    close(hidden, loop_hidden, 1e-12, "final-normed hidden states")
    close(m.mtp_forward(hidden, ids[1:]), loop_mtp(cfg, w64, loop_hidden, ids[1:]), 1e-11,
          "hand-computed MTP logits")


# ----------------------------------------------------------------------------------------------
# (iii) state


@test
def mtp_rows_continue_their_state():
    m = R.Model(model_dir("wrapper"))
    ids = PROMPT[:41]
    _, h = m.forward(ids[:-1], return_hidden=True)
    whole = m.mtp_forward(h, ids[1:])
    st, parts = R.MtpState(m.cfg), []
    for a, b in ((0, 1), (1, 8), (8, 40)):
        parts.append(m.mtp_forward(h[a:b], ids[a + 1:b + 1], st))
    close(np.concatenate(parts), whole, 1e-10, "MTP rows in pieces")
    close(m.mtp_teacher_forced(ids, 5), whole[-5:], 1e-10, "teacher-forced rows")
    check(np.abs(m.mtp_forward(h[-1:], ids[-1:]) - whole[-1:]).max() > 1e-3, "the head attends to earlier rows")


@test
def whole_prompt_equals_token_by_token_and_chunks():
    m = R.Model(model_dir("wrapper"))
    ids = PROMPT[:90]
    whole = m.forward(ids)
    close(m.forward_in_chunks(ids, 1, "recurrent"), whole, 1e-10, "token by token (recurrent)")
    for chunk in (5, 64, 70):
        close(m.forward_in_chunks(ids, chunk), whole, 1e-10, f"chunks of {chunk}")
    close(m.forward(ids, delta_rule="recurrent"), whole, 1e-10, "recurrent rule over the prompt")


@test
def greedy_equals_teacher_forcing():
    for name, kw in (("wrapper", {}), ("next", {"arch": "qwen3_next"})):
        m = R.Model(model_dir(name, **kw))
        ids, rows = m.greedy(PROMPT[:20], 12)
        full = m.forward(PROMPT[:20] + ids[:-1])[19:]
        close(rows, full, 1e-10, f"{name}: greedy rows")
        check(ids == [int(i) for i in np.argmax(full, axis=-1)], f"{name}: greedy ids")


# ----------------------------------------------------------------------------------------------
# (iv) forms and configs


@test
def checkpoint_forms_agree():
    # Forms that only rename or re-shard tensors must agree bit for bit. Forms whose projections
    # are one fused product (Qwen3-Next's in_proj_qkvz/ba, fused expert tensors) go through BLAS
    # with other shapes, and BLAS picks kernels (and so the order of its sums) by shape and CPU:
    # they agree to float64 rounding, 1e-12 being ~1e4 ulps of these O(1) logits and ~1e9 times
    # below any real difference in the model.
    base = logits_of(model_dir("wrapper"))
    for name, kw, atol in (("text", {"text_only": True}, 0), ("fused", {"fused_experts": True}, 1e-12),
                           ("next", {"arch": "qwen3_next"}, 1e-12),
                           ("next-fused", {"arch": "qwen3_next", "fused_experts": True}, 1e-12),
                           ("plain", {"extras": False}, 0), ("sharded", {"shards": 3}, 0)):
        close(logits_of(model_dir(name, **kw)), base, atol, f"{name} vs wrapper")
    d = model_dir("next", arch="qwen3_next")
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    check("layer_types" not in cfg and cfg["full_attention_interval"] == 4, "qwen3_next config derives layer_types")
    w = R.Model(d).w
    check(w.prefix == "model." and w.has("layers.0.linear_attn.in_proj_qkvz.weight")
          and not w.has("layers.0.linear_attn.in_proj_qkv.weight"), "qwen3_next has fused projections")
    check(R.Model(model_dir("wrapper")).w.prefix == "model.language_model.", "wrapper prefix")


@test
def layer_types_are_honoured():
    base = logits_of(model_dir("wrapper"))
    legacy = logits_of(model_dir("legacy", layer_types=["mamba", "mamba", "mamba", "attention"]))
    close(legacy, base, 0, "legacy layer type names")
    d8 = model_dir("interval", num_hidden_layers=8, layer_types=None)  # derived from the interval
    c = R.Model(d8).cfg
    block = ("linear_attention",) * 3 + ("full_attention",)
    check(c.layer_types == block * 2, f"derived layer_types {c.layer_types}")
    other = logits_of(model_dir("first-full", layer_types=["full_attention", "linear_attention", "linear_attention",
                                                           "linear_attention"]))
    check(np.abs(other - base).max() > 1e-3, "a different layer pattern changes the logits")


@test
def config_forms_and_errors():
    base = {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 4}
    c = R.parse_config(base)
    got = (c.rope_theta, c.partial_rotary_factor, c.head_dim, c.num_experts, c.vocab_size)
    check(got == (10000.0, 0.25, 256, 256, 248320), f"qwen3_5_moe_text defaults: {c}")
    c = R.parse_config({**base, "rope_theta": 5.0, "partial_rotary_factor": 0.5,
                        "rope_parameters": {"rope_type": "default", "rope_theta": 7.0}})
    check((c.rope_theta, c.partial_rotary_factor) == (7.0, 0.5), "rope_parameters wins over flat fields")
    c = R.parse_config({"model_type": "qwen3_next", "norm_topk_prob": False, "mlp_only_layers": [1]})
    check(c.num_hidden_layers == 48 and c.num_experts == 512 and not c.norm_topk_prob and not c.is_moe_layer(1),
          f"qwen3_next defaults: {c}")
    check(R.parse_config({**base, "norm_topk_prob": False}).norm_topk_prob, "qwen3_5_moe always renormalises")
    for bad, what in (({**base, "rope_parameters": {"rope_type": "yarn"}}, "rope_type"),
                      ({"model_type": "qwen3"}, "model_type"),
                      ({**base, "layer_types": ["linear_attention"]}, "layer_types"),
                      ({**base, "linear_num_key_heads": 4, "linear_num_value_heads": 6}, "multiple")):
        try:
            R.parse_config(bad)
        except (ValueError, NotImplementedError) as e:
            check(what in str(e), f"error for {what}: {e}")
        else:
            raise AssertionError(f"no error for {what}")


@test
def qwen3_next_dense_layers_and_routing_flag():
    d = model_dir("next-dense", arch="qwen3_next", mlp_only_layers=[0])
    m = R.Model(d)
    check(not m.cfg.is_moe_layer(0) and m.cfg.is_moe_layer(1), "mlp_only_layers")
    check(m.w.has("layers.0.mlp.gate_proj.weight"), "dense MLP weights written")
    a = m.forward(PROMPT[:30])
    b = logits_of(model_dir("next-nonorm", arch="qwen3_next", mlp_only_layers=[0], norm_topk_prob=False), PROMPT[:30])
    check(np.abs(a - b).max() > 1e-3, "norm_topk_prob=false changes the logits")


@test
def wrong_shapes_are_errors():
    d = model_dir("wrong-heads", dtype="F32")
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    cfg["text_config"]["linear_value_head_dim"] = 6
    cfg["text_config"]["linear_num_value_heads"] = 12
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    try:
        R.Model(d).forward([1, 2])
    except ValueError as e:
        check("shape" in str(e), f"message names the shape: {e}")
    else:
        raise AssertionError("a GDN shape mismatch loaded")


@test
def quantized_checkpoints_load():
    """quantize_np.py (ModelOpt layout) on the tiny wrapper: the GDN / attention / expert Linears
    become NVFP4 or FP8, ModelOpt's default exclusions stay BF16, and the reference reads it."""
    import quantize_np
    from safetensors_np import Checkpoint
    src = model_dir("fused", fused_experts=True)
    base = logits_of(src, PROMPT[:40])
    for fmt, dtype in (("nvfp4", "U8"), ("fp8", "F8_E4M3")):
        out = tempfile.mkdtemp(dir=_TMP_ROOT.name)
        quantize_np.quantize_dir(src, out, fmt, log=lambda *a: None)
        ck = Checkpoint(out)
        p = "model.language_model.layers.0."
        for name in ("linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj",
                     "mlp.experts.3.down_proj", "mlp.shared_expert.up_proj"):
            check(ck.info(p + name + ".weight")["dtype"] == dtype, f"{fmt}: {name} quantized")
        for name in ("linear_attn.in_proj_a.weight", "linear_attn.in_proj_b.weight", "linear_attn.conv1d.weight",
                     "mlp.gate.weight", "mlp.shared_expert_gate.weight"):
            check(ck.info(p + name)["dtype"] == "BF16", f"{fmt}: {name} left BF16")
        check(all(ck.info(n)["dtype"] == "BF16" for n in ("mtp.fc.weight", "lm_head.weight")), "mtp, lm_head")
        q = logits_of(out, PROMPT[:40])
        check(np.all(np.isfinite(q)) and 0 < np.abs(q - base).max() and
              np.sqrt(np.mean((q - base) ** 2)) < np.sqrt(np.mean(base ** 2)), f"{fmt}: logits near BF16")
        if fmt == "nvfp4":
            w4a4 = R.Model(out, w4a4=True).forward(PROMPT[:40])
            check(np.abs(w4a4 - q).max() > 0, "w4a4 numerics differ from w4a16")


# ----------------------------------------------------------------------------------------------
# (v) non-degenerate


@test
def tiny_model_is_not_degenerate():
    m = R.Model(model_dir("wrapper"))
    lg = m.forward(PROMPT)
    srt = np.sort(lg, axis=-1)
    check(float(np.min(lg.std(axis=-1))) > 0.5, "logits spread")
    check(len(set(np.argmax(lg, axis=-1).tolist())) > 50, "argmax varies with the position")
    check(float(np.median(srt[:, -1] - srt[:, -2])) > 0.05, "top-2 gaps are not ties")
    other = list(PROMPT)
    other[0] = (other[0] + 1) % 512
    lo = m.forward(other)
    rel = np.sqrt(np.mean((lo[-1] - lg[-1]) ** 2)) / np.sqrt(np.mean(lg[-1] ** 2))
    check(rel > 1e-3, f"token 0 still matters at position 149 (nrms {rel:.2e}): chunked prefill is tested")


# ----------------------------------------------------------------------------------------------
# (vi) compare.py


FAKE_TERN = r'''#!/usr/bin/python3
# Fake "tern generate" for compare.py: greedy from the float64 reference (prompt fed in
# --prefill-chunk pieces), float32 logits; FAKE_TERN_MODE=chunkbug perturbs runs with chunk < 16.
import argparse, json, os, sys
import numpy as np
sys.path.insert(0, {here!r})
import qwen35_ref
ap = argparse.ArgumentParser()
ap.add_argument("cmd"); ap.add_argument("--model"); ap.add_argument("--prompt-ids")
ap.add_argument("--max-tokens", type=int); ap.add_argument("--temperature", type=float)
ap.add_argument("--logits-out"); ap.add_argument("--prefill-chunk", type=int, default=512)
ap.add_argument("--ignore-eos", action="store_true"); ap.add_argument("--kv-cache-dtype")
ap.add_argument("--mtp-logits-out")
a = ap.parse_args()
m = qwen35_ref.Model(a.model)
prompt = [int(t) for t in a.prompt_ids.split(",")]
st = qwen35_ref.HybridState(m.cfg)
for s in range(0, len(prompt), a.prefill_chunk):
    last = m.forward(prompt[s:s + a.prefill_chunk], st)[-1]
if os.environ.get("FAKE_TERN_MODE") == "chunkbug" and a.prefill_chunk < 16:
    last = last + 0.01 * np.random.default_rng(0).standard_normal(last.shape)
ids, rows = [], []
for _ in range(a.max_tokens):
    ids.append(int(np.argmax(last))); rows.append(last)
    last = m.forward([ids[-1]], st, "recurrent")[-1]
np.save(a.logits_out, np.stack(rows).astype(np.float32))
if a.mtp_logits_out:  # FAKE_TERN_MODE=mtpbug: the head fed the token at p instead of the one after
    seq = prompt + ids
    _, h = m.forward(seq[:-1], return_hidden=True)
    nxt = seq[:-1] if os.environ.get("FAKE_TERN_MODE") == "mtpbug" else seq[1:]
    np.save(a.mtp_logits_out, m.mtp_forward(h, nxt)[-len(ids):].astype(np.float32))
print(json.dumps(ids))
'''


def _run_compare(d, mode, extra):
    fake = os.path.join(tempfile.mkdtemp(dir=_TMP_ROOT.name), "tern")
    with open(fake, "w") as f:
        f.write(FAKE_TERN.replace("{here!r}", repr(HERE)))
    os.chmod(fake, 0o755)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--tern", fake, "--model", d,
                           "--prompt-ids", ",".join(map(str, PROMPT[:40])), "--steps", "3"] + extra,
                          capture_output=True, text=True, env=dict(os.environ, FAKE_TERN_MODE=mode), timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@test
def compare_dispatches_and_checks_prefill_chunks():
    d = model_dir("next", arch="qwen3_next")
    chunks = ["--prefill-chunks", "4096,7,16", "--chunk-tern-arg=--kv-cache-dtype=f32"]
    rc, out = _run_compare(d, "ok", chunks)
    check(rc == 0 and out.strip().endswith("PASS") and "(qwen3_next)" in out and "vs chunk 4096" in out,
          f"ok run:\n{out}")
    rc, out = _run_compare(d, "chunkbug", chunks)
    check(rc == 1 and "prefill chunk 7:" in out and "FAIL" in out, f"chunk bug not caught:\n{out}")


@test
def compare_checks_mtp_logits():
    d = model_dir("wrapper")
    rc, out = _run_compare(d, "ok", ["--mtp"])
    check(rc == 0 and "(d) MTP nrms" in out and out.strip().endswith("PASS"), f"ok run:\n{out}")
    rc, out = _run_compare(d, "mtpbug", ["--mtp"])
    check(rc == 1 and "MTP row 0: nrms" in out and "FAIL" in out, f"MTP bug not caught:\n{out}")


def main():
    verbose = "-v" in sys.argv
    only = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
    passed = failed = 0
    for fn in TESTS:
        if only and only not in fn.__name__:
            continue
        try:
            t0 = time.time()
            fn()
            passed += 1
            if verbose:
                print(f"PASS {fn.__name__} ({time.time() - t0:.1f} s)")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
