#!/usr/bin/python3
"""Self-tests of the float64 reference (safetensors_np, qwen3_ref, compare) without tern.

Run: /usr/bin/python3 tests/reference/test_reference_selfcheck.py [-v] [-k SUBSTRING]
Exits non-zero when a test fails; the last line is "N passed, M failed".

  (i)   the safetensors reader decodes hand-written bytes of every dtype (BF16 and FP8 bit
        patterns with known values), metadata, shards, and rejects malformed files;
  (ii)  causal invariance: logits of a prefix equal the first rows for the longer sequence;
  (iii) greedy with the KV cache equals greedy by full recomputation;
  (iv)  hand computation: a pure-Python, loop-by-loop forward (scalars and math.*, no
        numpy algebra) of tiny 1-layer/1-head, GQA+bias and MoE models matches qwen3_ref;
  plus config handling (VLM wrapper, rope_parameters, tie, sparse-step layers), FP8
  block dequantization, and compare.py end to end with a fake tern.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare  # noqa: E402
import qwen3_ref  # noqa: E402
import safetensors_np as stnp  # noqa: E402
from tiny_checkpoint import random_weights, tiny_config, write_model, write_safetensors  # noqa: E402

TESTS = []


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


_TMP_ROOT = tempfile.TemporaryDirectory(prefix="tern-ref-test-")  # removed at exit


def tmpdir():
    return tempfile.mkdtemp(dir=_TMP_ROOT.name)


def make_model(arch="qwen3", seed=0, dtype="F32", shards=1, vlm=False, weights=None, **overrides):
    cfg = tiny_config(arch, **overrides)
    w = weights if weights is not None else random_weights(cfg, seed)
    d = tmpdir()
    write_model(d, cfg, w, dtype=dtype, shards=shards, vlm_wrapper=vlm)
    return d, cfg, w


# ----------------------------------------------------------------------------------------------
# (i) safetensors reader


def _le(fmt, *vals):
    return struct.pack("<" + fmt, *vals)


@test
def reader_decodes_every_dtype():
    nan = float("nan")
    cases = {
        # name: (dtype, shape, raw bytes, expected float64 values)
        "f64": ("F64", [2], _le("2d", 1.0 / 3.0, -1e300), [1.0 / 3.0, -1e300]),
        "f32": ("F32", [2, 2], _le("4I", 0x3FC00000, 0xC0100000, 0x7F7FFFFF, 0x00000001),
                [1.5, -2.25, 3.4028234663852886e38, 2.0 ** -149]),
        "f16": ("F16", [4], _le("4H", 0x3C00, 0xC000, 0x7BFF, 0x0001), [1.0, -2.0, 65504.0, 2.0 ** -24]),
        "bf16": ("BF16", [5], _le("5H", 0x3F80, 0xC040, 0x4049, 0x0001, 0x7F80),
                 [1.0, -3.0, 3.140625, 2.0 ** -133, float("inf")]),
        "e4m3": ("F8_E4M3", [11], bytes([0x7E, 0x38, 0x01, 0x80, 0xFE, 0x08, 0x07, 0x40, 0x7F, 0xFF, 0x3F]),
                 [448.0, 1.0, 2.0 ** -9, -0.0, -448.0, 2.0 ** -6, 7 * 2.0 ** -9, 2.0, nan, nan, 1.875]),
        "e5m2": ("F8_E5M2", [5], bytes([0x3C, 0x7C, 0x7D, 0x01, 0xFB]), [1.0, float("inf"), nan, 2.0 ** -16,
                                                                       -57344.0]),
        "u8": ("U8", [3], bytes([0, 7, 255]), [0, 7, 255]),
        "i8": ("I8", [3], bytes([0x80, 0xFF, 0x05]), [-128, -1, 5]),
        "i32": ("I32", [2], _le("2i", -2 ** 31, 123456789), [-2 ** 31, 123456789]),
        "i64": ("I64", [2], _le("2q", 2 ** 52 + 1, -7), [2 ** 52 + 1, -7]),
        "scalar": ("F32", [], _le("f", 2.5), 2.5),
        "empty": ("BF16", [0, 3], b"", np.zeros((0, 3))),
    }
    d = tmpdir()
    path = os.path.join(d, "t.safetensors")
    write_safetensors(path, {n: (c[0], c[1], c[2]) for n, c in cases.items()}, {"format": "pt", "x": "y"})
    st = stnp.SafetensorsFile(path)
    check(st.metadata == {"format": "pt", "x": "y"}, f"metadata {st.metadata}")
    check(sorted(st.names()) == sorted(cases), f"names {st.names()}")
    for name, (dtype, shape, _, want) in cases.items():
        got = st.get_f64(name)
        want = np.asarray(want, dtype=np.float64).reshape(shape)
        check(got.dtype == np.float64, f"{name}: dtype {got.dtype}")
        check(got.shape == tuple(shape), f"{name}: shape {got.shape}")
        check(np.array_equal(got, want, equal_nan=True), f"{name}: got {got} want {want}")
        check(np.array_equal(np.signbit(got), np.signbit(want)), f"{name}: sign of zero")
    check(st.raw("bf16").dtype == np.uint16 and st.raw("e4m3").dtype == np.uint8, "raw storage dtypes")
    check(st.raw("i64").dtype == np.int64 and int(st.raw("i64")[0]) == 2 ** 52 + 1, "raw i64")


@test
def fp8_e4m3_table_is_monotonic_and_complete():
    codes = np.arange(256, dtype=np.uint8)
    v = stnp.decode_f8_e4m3(codes)
    pos = v[:0x7F]  # 0x00..0x7e: every finite non-negative value, increasing
    check(np.all(np.diff(pos) > 0), "E4M3 codes 0..0x7e must increase")
    check(np.array_equal(v[0x80:0xFF], -pos), "negative half mirrors the positive half")
    check(np.isnan(v[0x7F]) and np.isnan(v[0xFF]) and np.sum(np.isnan(v)) == 2, "only 0x7f/0xff are NaN")
    check(not np.any(np.isinf(v)), "E4M3 has no infinities")
    # every finite value is an integer multiple of 2^-9 (the subnormal step)
    check(np.all(np.mod(pos * 512, 1) == 0), "values on the 2^-9 grid")


@test
def reader_rejects_malformed_files():
    d = tmpdir()

    def expect_error(name, data):
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        try:
            stnp.SafetensorsFile(path)
        except ValueError:
            return
        raise AssertionError(f"{name}: no ValueError")

    def file_with(header, payload=b""):
        h = json.dumps(header).encode()
        return len(h).to_bytes(8, "little") + h + payload

    expect_error("short", b"\x01\x00")
    expect_error("hugelen", (1 << 40).to_bytes(8, "little") + b"{}")
    expect_error("notjson", (4).to_bytes(8, "little") + b"{{{{")
    expect_error("size", file_with({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4))
    expect_error("oob", file_with({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4))
    expect_error("dtype", file_with({"a": {"dtype": "F7", "shape": [1], "data_offsets": [0, 1]}}, b"\0"))
    expect_error("shape", file_with({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}, b"\0"))


@test
def checkpoint_reads_shards_and_index():
    d1, _, _ = make_model("qwen3", dtype="BF16", shards=1)
    d3, _, _ = make_model("qwen3", dtype="BF16", shards=3)
    c1, c3 = stnp.Checkpoint(d1), stnp.Checkpoint(d3)
    check(sorted(c1.names()) == sorted(c3.names()), "same tensor names")
    check(len(set(c3._where.values())) == 3, "three shard files used")
    for n in c1.names():
        check(np.array_equal(c1.get_f64(n), c3.get_f64(n)), f"{n} differs between layouts")
    try:
        c1.get_f64("model.nope")
        raise AssertionError("missing tensor did not raise")
    except KeyError:
        pass


# ----------------------------------------------------------------------------------------------
# (ii) causal invariance, (iii) KV cache


@test
def causal_prefix_invariance():
    for arch in ("qwen3", "qwen3_moe"):
        d, _, _ = make_model(arch, seed=3, dtype="BF16")
        m = qwen3_ref.Model(d)
        ids = [5, 17, 3, 88, 42, 0, 96, 7, 7, 21]
        full = m.forward(ids)
        check(full.shape == (len(ids), 97), f"{arch}: shape {full.shape}")
        for k in (1, 4, 9):
            close(m.forward(ids[:k]), full[:k], 1e-11, f"{arch}: prefix {k}")
        changed = m.forward(ids[:5] + [1] + ids[6:])  # a later token must not affect earlier rows
        close(changed[:5], full[:5], 1e-11, f"{arch}: later token leaked backwards")
        check(np.max(np.abs(changed[5:] - full[5:])) > 1e-3, f"{arch}: changed token had no effect")


@test
def greedy_kv_cache_equals_recompute():
    for arch in ("qwen3", "qwen3_moe"):
        d, _, _ = make_model(arch, seed=4, dtype="BF16")
        m = qwen3_ref.Model(d)
        ids_c, logits_c = m.greedy([3, 1, 4, 1, 5], 12, use_cache=True)
        ids_r, logits_r = m.greedy([3, 1, 4, 1, 5], 12, use_cache=False)
        check(ids_c == ids_r, f"{arch}: {ids_c} vs {ids_r}")
        close(logits_c, logits_r, 1e-10, f"{arch}: cached logits")
        check(qwen3_ref.greedy(d, [3, 1, 4, 1, 5], 12) == ids_c, f"{arch}: module-level greedy")
        # chunked prefill through the cache equals one pass
        cache = qwen3_ref.KVCache(m.cfg.num_hidden_layers)
        seq = [9, 8, 7, 6, 5, 4, 3]
        a = m.forward(seq[:3], cache)
        b = m.forward(seq[3:], cache)
        close(np.concatenate([a, b]), m.forward(seq), 1e-11, f"{arch}: chunked prefill")


# ----------------------------------------------------------------------------------------------
# (iv) hand computation with scalar loops


def _vec(a):
    return [float(x) for x in np.asarray(a).reshape(-1)]


def _mat(a):
    return [[float(x) for x in row] for row in np.asarray(a)]


def _matvec(w, x):
    """w: list of rows [out][in]; x: [in] -> [out]"""
    return [sum(w[o][i] * x[i] for i in range(len(x))) for o in range(len(w))]


def _rmsnorm(x, w, eps):
    ms = sum(v * v for v in x) / len(x)
    inv = 1.0 / math.sqrt(ms + eps)
    return [w[i] * (x[i] * inv) for i in range(len(x))]


def _rope(x, pos, theta):
    """rotate pairs (i, i + d/2) by pos * theta^(-2i/d)"""
    d = len(x)
    out = list(x)
    for i in range(d // 2):
        ang = pos * theta ** (-2.0 * i / d)
        c, s = math.cos(ang), math.sin(ang)
        a, b = x[i], x[i + d // 2]
        out[i] = a * c - b * s
        out[i + d // 2] = b * c + a * s
    return out


def _silu(v):
    return v / (1.0 + math.exp(-v))


def _swiglu(x, gate, up, down):
    h = [_silu(g) * u for g, u in zip(_matvec(gate, x), _matvec(up, x))]
    return _matvec(down, h)


def loop_forward(cfg, w, ids):
    """Independent scalar forward pass. cfg: config dict; w: {HF name: float array}."""
    H, hq, hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, theta = cfg["head_dim"], cfg["rms_norm_eps"], cfg["rope_theta"]
    T = len(ids)
    emb = _mat(w["model.embed_tokens.weight"])
    x = [list(emb[t]) for t in ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        g = lambda n: w[p + n]  # noqa: E731
        a = [_rmsnorm(x[t], _vec(g("input_layernorm.weight")), eps) for t in range(T)]

        def proj(name, t):
            y = _matvec(_mat(g(f"self_attn.{name}.weight")), a[t])
            if cfg.get("attention_bias"):
                y = [v + b for v, b in zip(y, _vec(g(f"self_attn.{name}.bias")))]
            return y

        q = [[None] * hq for _ in range(T)]
        k = [[None] * hkv for _ in range(T)]
        v = [[None] * hkv for _ in range(T)]
        for t in range(T):
            qt, kt, vt = proj("q_proj", t), proj("k_proj", t), proj("v_proj", t)
            for h in range(hq):
                head = _rmsnorm(qt[h * hd:(h + 1) * hd], _vec(g("self_attn.q_norm.weight")), eps)
                q[t][h] = _rope(head, t, theta)
            for h in range(hkv):
                head = _rmsnorm(kt[h * hd:(h + 1) * hd], _vec(g("self_attn.k_norm.weight")), eps)
                k[t][h] = _rope(head, t, theta)
                v[t][h] = vt[h * hd:(h + 1) * hd]
        wo = _mat(g("self_attn.o_proj.weight"))
        for t in range(T):
            concat = []
            for h in range(hq):
                kvh = h // (hq // hkv)
                scores = [sum(q[t][h][i] * k[s][kvh][i] for i in range(hd)) / math.sqrt(hd) for s in range(t + 1)]
                mx = max(scores)
                ex = [math.exp(sc - mx) for sc in scores]
                z = sum(ex)
                concat += [sum(ex[s] / z * v[s][kvh][i] for s in range(t + 1)) for i in range(hd)]
            o = _matvec(wo, concat)
            if cfg.get("attention_bias"):
                o = [val + b for val, b in zip(o, _vec(g("self_attn.o_proj.bias")))]
            x[t] = [x[t][i] + o[i] for i in range(H)]
        for t in range(T):
            m = _rmsnorm(x[t], _vec(g("post_attention_layernorm.weight")), eps)
            num_experts = cfg.get("num_experts", 0) if cfg["model_type"] == "qwen3_moe" else 0
            sparse = (layer not in cfg.get("mlp_only_layers", []) and num_experts > 0
                      and (layer + 1) % cfg.get("decoder_sparse_step", 1) == 0)
            if sparse:
                logits = _matvec(_mat(g("mlp.gate.weight")), m)
                mx = max(logits)
                ex = [math.exp(val - mx) for val in logits]
                probs = [e / sum(ex) for e in ex]
                top = sorted(range(num_experts), key=lambda e: -probs[e])[:cfg["num_experts_per_tok"]]
                wts = [probs[e] for e in top]
                if cfg.get("norm_topk_prob"):
                    wts = [wt / sum(wts) for wt in wts]
                out = [0.0] * H
                for e, wt in zip(top, wts):
                    y = _swiglu(m, _mat(g(f"mlp.experts.{e}.gate_proj.weight")),
                                _mat(g(f"mlp.experts.{e}.up_proj.weight")),
                                _mat(g(f"mlp.experts.{e}.down_proj.weight")))
                    out = [out[i] + wt * y[i] for i in range(H)]
            else:
                out = _swiglu(m, _mat(g("mlp.gate_proj.weight")), _mat(g("mlp.up_proj.weight")),
                              _mat(g("mlp.down_proj.weight")))
            x[t] = [x[t][i] + out[i] for i in range(H)]
    head = emb if cfg.get("tie_word_embeddings") else _mat(w["lm_head.weight"])
    return [_matvec(head, _rmsnorm(x[t], _vec(w["model.norm.weight"]), eps)) for t in range(T)]


def _hand_case(arch, seed, ids, **overrides):
    cfg = tiny_config(arch, **overrides)
    w = random_weights(cfg, seed)  # float32 values: stored exactly as F32
    d, cfg, w = make_model(arch, dtype="F32", weights=w, **overrides)
    want = np.array(loop_forward(cfg, w, ids))
    got = qwen3_ref.forward(d, ids)
    close(got, want, 1e-9, f"{arch} {overrides}")
    return got


@test
def hand_computed_one_layer_one_head():
    _hand_case("qwen3", 11, [3, 0, 9, 4], vocab_size=13, hidden_size=8, intermediate_size=6,
               num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1, head_dim=4,
               rope_theta=100.0)


@test
def hand_computed_gqa_bias_tied():
    _hand_case("qwen3", 12, [1, 2, 3, 4, 5], vocab_size=17, hidden_size=8, intermediate_size=10,
               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=6,
               attention_bias=True, tie_word_embeddings=True, rope_theta=1e6)


@test
def hand_computed_moe_layers():
    # 3 layers, decoder_sparse_step 2, mlp_only_layers [0]: layer 0 dense (listed), layer 1 MoE
    # ((1+1) % 2 == 0), layer 2 dense ((2+1) % 2 != 0).
    small = dict(vocab_size=19, hidden_size=8, intermediate_size=12, num_hidden_layers=3,
                 num_attention_heads=2, num_key_value_heads=1, head_dim=4, num_experts=5,
                 num_experts_per_tok=2, moe_intermediate_size=6, decoder_sparse_step=2, mlp_only_layers=[0])
    for norm in (True, False):
        _hand_case("qwen3_moe", 13, [7, 1, 18, 2], norm_topk_prob=norm, **small)
    cfg = qwen3_ref.parse_config(tiny_config("qwen3_moe", **small))
    check([cfg.is_moe_layer(i) for i in range(3)] == [False, True, False], "sparse-step layer rule")
    cfg = qwen3_ref.parse_config(tiny_config("qwen3_moe", num_hidden_layers=4, mlp_only_layers=[2]))
    check([cfg.is_moe_layer(i) for i in range(4)] == [True, True, False, True], "mlp_only_layers rule")


@test
def moe_routing_norm_topk_changes_output():
    # guards against norm_topk_prob being silently ignored
    base = dict(num_hidden_layers=1)
    d1, _, w = make_model("qwen3_moe", seed=5, norm_topk_prob=True, **base)
    d2, _, _ = make_model("qwen3_moe", weights=w, norm_topk_prob=False, **base)
    a, b = qwen3_ref.forward(d1, [1, 2, 3]), qwen3_ref.forward(d2, [1, 2, 3])
    check(np.max(np.abs(a - b)) > 1e-3, "norm_topk_prob had no effect")


# ----------------------------------------------------------------------------------------------
# Config handling and weight formats


@test
def vlm_wrapper_sharded_bf16_matches_plain():
    for arch in ("qwen3", "qwen3_moe"):
        d1, _, w = make_model(arch, seed=6, dtype="BF16")
        d2, _, _ = make_model(arch, weights=w, dtype="BF16", shards=2, vlm=True)
        with open(os.path.join(d2, "config.json")) as f:
            check("text_config" in json.load(f), "wrapper config written")
        ids = [4, 8, 15, 16, 23, 42]
        close(qwen3_ref.forward(d2, ids), qwen3_ref.forward(d1, ids), 0.0, f"{arch}: wrapper/shards")


@test
def rope_config_forms():
    ids = [1, 2, 3, 4, 5, 6]
    d1, _, w = make_model("qwen3", seed=7, rope_theta=5e5)
    d2, _, _ = make_model("qwen3", weights=w, rope_theta=None,
                          rope_parameters={"rope_type": "default", "rope_theta": 5e5})
    d3, _, _ = make_model("qwen3", weights=w, rope_theta=5e5, rope_scaling={"type": "default"})
    ref = qwen3_ref.forward(d1, ids)
    close(qwen3_ref.forward(d2, ids), ref, 0.0, "rope_parameters")
    close(qwen3_ref.forward(d3, ids), ref, 0.0, "rope_scaling default")
    d4, _, _ = make_model("qwen3", weights=w, rope_theta=1e4)
    check(np.max(np.abs(qwen3_ref.forward(d4, ids) - ref)) > 1e-4, "rope_theta has no effect")
    for bad in ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6}},
                {"rope_scaling": {"type": "linear", "factor": 2.0}}):
        try:
            qwen3_ref.parse_config(tiny_config("qwen3", **bad))
            raise AssertionError(f"{bad} accepted")
        except NotImplementedError:
            pass


@test
def config_defaults_and_errors():
    c = qwen3_ref.parse_config({"model_type": "qwen3", "hidden_size": 64, "num_attention_heads": 32})
    check(c.head_dim == 128 and c.num_key_value_heads == 32 and not c.tie_word_embeddings,
          "qwen3 defaults (Qwen3Config: head_dim 128)")
    c = qwen3_ref.parse_config({"model_type": "qwen3_moe", "hidden_size": 64, "num_attention_heads": 8})
    check(c.head_dim == 8 and c.num_key_value_heads == 4 and c.num_experts == 128 and not c.norm_topk_prob, "qwen3_moe defaults")
    for bad in ({"model_type": "llama"}, {"model_type": "qwen3", "use_sliding_window": True},
                {"model_type": "qwen3", "hidden_act": "gelu"}):
        try:
            qwen3_ref.parse_config(bad)
            raise AssertionError(f"{bad} accepted")
        except NotImplementedError:
            pass


@test
def missing_or_misshapen_weights_are_errors():
    d, cfg, w = make_model("qwen3", seed=8)
    w2 = dict(w)
    del w2["lm_head.weight"]
    d2, _, _ = make_model("qwen3", weights=w2)
    try:
        qwen3_ref.forward(d2, [1])
        raise AssertionError("missing lm_head accepted")
    except KeyError:
        pass
    w3 = dict(w)
    w3["model.layers.1.self_attn.k_proj.weight"] = w["model.layers.1.self_attn.k_proj.weight"][:-1]
    d3, _, _ = make_model("qwen3", weights=w3)
    try:
        qwen3_ref.forward(d3, [1])
        raise AssertionError("bad shape accepted")
    except ValueError as e:
        check("k_proj" in str(e), f"error names the tensor: {e}")
    try:
        qwen3_ref.forward(d, [97])
        raise AssertionError("token id >= vocab accepted")
    except ValueError:
        pass


@test
def fp8_block_dequantization():
    d = tmpdir()
    codes = np.array([[0x38, 0x40, 0xB8], [0x30, 0x7E, 0x01], [0x00, 0x44, 0xC0]], dtype=np.uint8)  # [3,3]
    scale = np.array([[0.5, 2.0], [4.0, 8.0]], dtype=np.float32)  # blocks of [2, 2], ceil(3/2) = 2
    write_safetensors(os.path.join(d, "model.safetensors"), {
        "model.embed_tokens.weight": ("F32", [1, 1], _le("f", 0.0)),
        "model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [3, 3], codes.tobytes()),
        "model.layers.0.mlp.down_proj.weight_scale_inv": ("F32", [2, 2], scale.astype("<f4").tobytes()),
    })
    vals = [[1.0, 2.0, -1.0], [0.5, 448.0, 2.0 ** -9], [0.0, 3.0, -2.0]]
    want = [[vals[i][j] * float(scale[i // 2][j // 2]) for j in range(3)] for i in range(3)]
    w = qwen3_ref.Weights(d, {"quantization_config": {"quant_method": "fp8", "weight_block_size": [2, 2]}})
    close(w.get("layers.0.mlp.down_proj.weight"), want, 0.0, "fp8 block dequant")


# ----------------------------------------------------------------------------------------------
# compare.py


FAKE_TERN = r'''#!/usr/bin/python3
# Fake "tern generate" for testing compare.py: greedy from the float64 reference, float32
# logits, with faults injected by FAKE_TERN_MODE.
import argparse, json, os, sys
import numpy as np
sys.path.insert(0, {here!r})
import qwen3_ref
ap = argparse.ArgumentParser()
ap.add_argument("cmd"); ap.add_argument("--model"); ap.add_argument("--prompt-ids")
ap.add_argument("--max-tokens", type=int); ap.add_argument("--temperature", type=float)
ap.add_argument("--logits-out")
a = ap.parse_args()
mode = os.environ.get("FAKE_TERN_MODE", "ok")
if mode == "crash":
    print("boom", file=sys.stderr); sys.exit(3)
assert a.cmd == "generate" and a.temperature == 0
ids, logits = qwen3_ref.Model(a.model).greedy([int(t) for t in a.prompt_ids.split(",")], a.max_tokens)
logits = logits.astype(np.float32)
if mode == "noise":
    logits[2] += np.random.default_rng(0).standard_normal(logits.shape[1]).astype(np.float32) * 0.05
if mode == "wrongtoken":
    ids[3] = int(np.argsort(logits[3])[-2])
if mode == "short":
    logits = logits[:-1]
np.save(a.logits_out, logits)
print("loading model... done")
print(json.dumps(ids))
'''


def _run_compare(model_dir, mode, steps=6):
    d = tmpdir()
    fake = os.path.join(d, "tern")
    with open(fake, "w") as f:
        f.write(FAKE_TERN.replace("{here!r}", repr(HERE)))
    os.chmod(fake, 0o755)
    env = dict(os.environ, FAKE_TERN_MODE=mode)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--tern", fake,
                           "--model", model_dir, "--prompt-ids", "5,6,7", "--steps", str(steps)],
                          capture_output=True, text=True, env=env, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@test
def compare_cli_with_fake_tern():
    d, _, _ = make_model("qwen3_moe", seed=9, dtype="BF16")
    rc, out = _run_compare(d, "ok")
    check(rc == 0 and out.strip().endswith("PASS"), f"ok run failed:\n{out}")
    for mode, what in (("noise", "NRMS>"), ("wrongtoken", "TOKEN!=REF"), ("crash", "exited with status 3"),
                       ("short", "logits shape")):
        rc, out = _run_compare(d, mode)
        check(rc == 1 and what in out, f"mode {mode}: rc {rc}, expected {what!r} in:\n{out}")


@test
def compare_tie_rule():
    ref = np.array([[1.0, 5.0, 4.9999999, -2.0], [1.0, 5.0, 4.9, 0.0]])
    tern = ref.copy()
    tern[0, 2] = 5.0000001  # tern (legitimately) prefers the tied token 2
    ok, rows = compare.compare([2, 1], tern, ref, tol=1e-3, tie_rel=1e-4)
    check(ok and rows[0]["ref_tie"] and not rows[1]["ref_tie"], f"tie accepted: {rows}")
    tern2 = ref.copy()
    tern2[1, 2] = 5.1
    ok, rows = compare.compare([2, 2], tern2, ref, tol=1.0, tie_rel=1e-4)
    check(not ok and not rows[1]["ref_ok"], "a real mismatch (gap 2%) is not a tie")


def main():
    verbose = "-v" in sys.argv
    only = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None
    passed = failed = 0
    for fn in TESTS:
        if only and only not in fn.__name__:
            continue
        try:
            fn()
            passed += 1
            if verbose:
                print(f"PASS {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
