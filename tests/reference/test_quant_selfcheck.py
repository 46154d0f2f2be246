#!/usr/bin/python3
"""Self-tests of the reference's NVFP4 / FP8 side (quant_np, quantize_np, compare_checkpoints,
the quantized paths of qwen3_ref and compare.py) without tern.

Run: /usr/bin/python3 tests/reference/test_quant_selfcheck.py [-v] [-k SUBSTRING]
The last line reads "N passed, M failed"; the exit status is non-zero when a test fails.

Expected values are written out by hand from shared/specs/qwen-models-and-nvfp4.md §4 (E2M1
table and rounding boundaries, nibble order, E4M3 = 2^(e-7)·(1+m/8)), or computed by a second,
deliberately different method (brute-force nearest value, scalar loops), never by calling the
code under test to make its own expectation.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare_checkpoints  # noqa: E402
import quant_np as qn  # noqa: E402
import quantize_np  # noqa: E402
import qwen3_ref  # noqa: E402
from safetensors_np import Checkpoint, decode_f8_e4m3  # noqa: E402
from tiny_checkpoint import fuse_experts, random_weights, tiny_config, write_model, write_safetensors  # noqa: E402

TESTS = []
_TMP = tempfile.TemporaryDirectory(prefix="tern-quant-test-")


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def expect_error(exc, fn, *words):
    try:
        fn()
    except exc as e:
        for w in words:
            check(w in str(e), f"error {e!r} does not name {w!r}")
        return
    raise AssertionError(f"no {exc.__name__} raised")


def tmpdir():
    return tempfile.mkdtemp(dir=_TMP.name)


def f32(x):
    return np.float32(x).tobytes()


# ----------------------------------------------------------------------------------------------
# Code tables, by hand from the spec


@test
def e2m1_table_from_spec():
    # spec §4.3: sign = bit 3, m = c & 7, val = 0, .5, 1, 1.5, 2, 3, 4, 6
    want = [0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6]
    got = qn.decode_e2m1(np.arange(16))
    check(list(got) == want, f"E2M1 table {list(got)}")
    check(np.signbit(got[8]) and not np.signbit(got[0]), "0x8 is -0, 0x0 is +0")


@test
def e2m1_rounding_from_spec():
    # spec §4.3 boundaries (ties to even): 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4,
    # above 5 -> 6, saturating. Codes: value index m (sign in bit 3, set for x < 0 as in _cast_fp4).
    cases = [(0.0, 0), (0.25, 0), (0.2500001, 1), (0.5, 1), (0.7499, 1), (0.75, 2), (1.25, 2), (1.2501, 3),
             (1.75, 4), (2.5, 4), (2.51, 5), (3.0, 5), (3.5, 6), (4.9, 6), (5.0, 6), (5.0001, 7), (6.0, 7),
             (100.0, 7), (-0.1, 8), (-0.0, 0), (-0.75, 10), (-5.5, 15), (-1e9, 15)]
    xs = np.array([c[0] for c in cases])
    got = qn.encode_e2m1(xs)
    for (x, code), g in zip(cases, got):
        check(int(g) == code, f"e2m1({x}) = {int(g)}, spec says {code}")


@test
def e2m1_matches_modelopt_bounds_rule():
    # ModelOpt's _cast_fp4, restated as scalar code: ord = #{bounds < |x|} + [|x| in odd bounds],
    # bounds (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5), odd bounds (0.75, 1.75, 3.5); sign = x < 0.
    bounds, odd = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0), (0.75, 1.75, 3.5)
    rng = np.random.default_rng(2)
    xs = np.concatenate([rng.standard_normal(2000) * 3, np.array(bounds + odd) * rng.choice([-1, 1], 10),
                         rng.integers(-28, 28, 200) / 4.0])
    got = qn.encode_e2m1(xs)
    for x, g in zip(xs, got):
        a = abs(float(x))
        want = sum(b < a for b in bounds) + (a in odd) + (8 if x < 0 else 0)
        check(int(g) == want, f"e2m1({x!r}) = {int(g)}, ModelOpt rule gives {want}")


@test
def e4m3_decoding_by_hand():
    # E4M3 "fn": s eeee mmm, bias 7; e = 0: m/8 * 2^-6; 1111.111 is NaN; no infinities.
    cases = {0x00: 0.0, 0x01: 2.0 ** -9, 0x07: 7 * 2.0 ** -9, 0x08: 2.0 ** -6, 0x38: 1.0, 0x39: 1.125,
             0x3F: 1.875, 0x40: 2.0, 0x70: 128.0, 0x77: 240.0, 0x7E: 448.0, 0x80: -0.0, 0xB8: -1.0,
             0xFE: -448.0}
    for code, v in cases.items():
        got = float(decode_f8_e4m3(np.array([code], np.uint8))[0])
        check(got == v and math.copysign(1, got) == math.copysign(1, v), f"E4M3 {code:#x}: {got} != {v}")
    check(np.isnan(decode_f8_e4m3(np.array([0x7F, 0xFF], np.uint8))).all(), "0x7f / 0xff are NaN")


def _brute_e4m3(x):
    """Nearest finite E4M3 magnitude by scanning all codes; ties to the even code. Different
    algorithm from quant_np.encode_e4m3 (which bisects)."""
    best, best_d = None, None
    for c in range(0x7F):
        v = float(decode_f8_e4m3(np.array([c], np.uint8))[0])
        d = abs(abs(x) - v)
        if best is None or d < best_d or (d == best_d and c % 2 == 0):
            best, best_d = c, d
    return best | (0x80 if math.copysign(1, x) < 0 else 0)


@test
def e4m3_encoding_ties_and_range():
    cases = [(1.0625, 0x38), (1.0625 + 2 ** -20, 0x39), (1.1875, 0x3A), (448.0, 0x7E), (460.0, 0x7E),
             (464.0, 0x7E), (464.5, 0x7F), (2.0 ** -10, 0x00), (3 * 2.0 ** -10, 0x02),
             (2.0 ** -6 * (1 + 1 / 16), 0x08), (-1.0, 0xB8), (-0.0, 0x80), (-1e-6, 0x80)]
    got = qn.encode_e4m3(np.array([c[0] for c in cases]))
    for (x, code), g in zip(cases, got):
        check(int(g) == code, f"e4m3({x!r}) = {int(g):#x}, want {code:#x}")
    check(int(qn.encode_e4m3(np.array([1000.0]), saturate=True)[0]) == 0x7E, "saturate")
    codes = np.array([c for c in range(256) if c not in (0x7F, 0xFF)], np.uint8)
    check(np.array_equal(qn.encode_e4m3(decode_f8_e4m3(codes)), codes), "encode(decode(c)) == c")
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.standard_normal(300) * 50, rng.standard_normal(100) * 2 ** -7,
                         (rng.integers(0, 900, 100) / 2.0) * 2.0 ** -10])  # many exact ties
    got = qn.encode_e4m3(xs)
    for x, g in zip(xs, got):
        check(int(g) == _brute_e4m3(float(x)), f"e4m3({x!r}) = {int(g):#x}, brute force {_brute_e4m3(float(x)):#x}")


@test
def nibble_order_low_first():
    # spec §4.3: byte = q[2j+1] << 4 | q[2j]; element 2j is the LOW nibble
    check(list(qn.pack_nibbles(np.array([[1, 2, 0xF, 0x8]]))[0]) == [0x21, 0x8F], "pack")
    check(list(qn.unpack_nibbles(np.array([[0xA3, 0x70]], np.uint8))[0]) == [3, 0xA, 0, 7], "unpack")
    # one NVFP4 row of 32 (two blocks) dequantized by hand: byte 0xA3 -> [1.5, -1.0]
    w = np.zeros((1, 16), np.uint8)
    w[0, 0] = 0xA3
    w[0, 8] = 0x7F  # element 16 (block 1) = code 0xF (-6), element 17 = code 7 (6)
    scales = np.array([[0x38, 0x40]], np.uint8)  # 1.0, 2.0
    deq = qn.dequant_nvfp4(w, scales, 0.5)
    want = np.zeros(32)
    want[0], want[1] = 1.5 * 1.0 * 0.5, -1.0 * 1.0 * 0.5
    want[16], want[17] = -6 * 2.0 * 0.5, 6 * 2.0 * 0.5
    check(np.array_equal(deq[0], want), f"dequant {deq[0][:2]} {deq[0][16:18]}")


# ----------------------------------------------------------------------------------------------
# Quantizers


@test
def nvfp4_quantize_by_hand():
    # amax 2.625 = 2688 * 2^-10 makes weight_scale_2 exactly 2^-10. Block 0 holds the amax:
    # r = 2.625 / (6 * 2^-10) = 448 -> 0x7e, S = 448 * 2^-10 = 0.4375; W/S = 6, -3, 1.5, 0.25(tie->0),
    # -0.2 -> -0 (code 0x8), 0.8 -> 1.0 (code 2), 5 -> 4 (tie, code 6), rest 0.
    S = 0.4375
    row0 = [6 * S, -3 * S, 1.5 * S, 0.25 * S, -0.2 * S, 0.8 * S, 5 * S] + [0.0] * 9
    codes0 = [7, 0xD, 3, 0, 8, 2, 6] + [0] * 9
    # block 1: amax 0.75 -> r = 0.75 / (6 * 2^-10) = 128 -> 0x70, S = 0.125; W/S = 6, 0.5, -1
    row1 = [0.75, 0.0625, -0.125] + [0.0] * 13
    codes1 = [7, 1, 0xA] + [0] * 13
    # block 2: all zero -> scale 1.0 (0x38); block 3: amax 1e-7 -> r < 2^-9, clamped -> 0x01
    row2 = [0.0] * 16
    row3 = [1e-7] + [0.0] * 15
    w = np.array([row0 + row1 + row2 + row3], np.float32)
    packed, scale, wsf2 = qn.quantize_nvfp4(w)
    check(wsf2 == np.float32(2.0 ** -10), f"weight_scale_2 {wsf2!r}")
    check(list(scale[0]) == [0x7E, 0x70, 0x38, 0x01], f"block scales {[hex(s) for s in scale[0]]}")
    codes = codes0 + codes1 + [0] * 32
    # block 3: S = 2^-9 * 2^-10 = 2^-19; 1e-7 / 2^-19 = 0.0524 -> 0
    want_bytes = [codes[2 * j] | (codes[2 * j + 1] << 4) for j in range(32)]
    check(list(packed[0]) == want_bytes, f"packed {list(packed[0][:12])} want {want_bytes[:12]}")


def _halfstep(v):
    """Half the E2M1 spacing around |v| (0.25 below 2, 0.5 below 4, 1 up to 6)."""
    a = np.abs(v)
    return np.where(a < 2, 0.25, np.where(a < 4, 0.5, 1.0))


@test
def nvfp4_round_trip_within_bound():
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((48, 96)) * 0.05).astype(np.float32)
    w[5, 7] = 0.9   # an outlier
    w[9, 16:32] = 0  # a zero block
    packed, scale, wsf2 = qn.quantize_nvfp4(w)
    deq = qn.dequant_nvfp4(packed, scale, wsf2)
    s_block = np.repeat(decode_f8_e4m3(scale) * float(wsf2), 16, axis=1)  # effective scale per element
    v = w.astype(np.float64) / s_block
    bound = s_block * np.where(np.abs(v) > 6, np.abs(v) - 6 + 1.0, _halfstep(v)) * (1 + 1e-6)
    err = np.abs(deq - w)
    check(np.all(err <= bound), f"NVFP4 error {np.max(err / bound):.3f} x bound")
    # the block scale is within E4M3's relative step (2^-4) of block_amax / 6 (unless clamped)
    bamax = np.max(np.abs(w.reshape(48, 6, 16)), axis=-1)
    ideal = bamax / (6 * float(wsf2))
    dec = decode_f8_e4m3(scale)
    live = ideal >= 2.0 ** -6
    check(np.all(np.abs(dec[live] / ideal[live] - 1) <= 2.0 ** -4), "block scale rounding")
    rel = np.sqrt(np.mean((deq - w) ** 2) / np.mean(w.astype(np.float64) ** 2))
    check(rel < 0.15, f"NVFP4 relative RMS error {rel:.3f}")


def _e4m3_halfulp(v):
    a = np.maximum(np.abs(v), 2.0 ** -6)
    return 2.0 ** (np.floor(np.log2(a)) - 4)  # half of 2^(e-3)


@test
def fp8_round_trip_within_bound():
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((40, 72)) * 0.1).astype(np.float32)
    q, s = qn.quantize_fp8(w)
    check(s == np.float32(np.float32(np.max(np.abs(w))) / np.float32(448)), "weight_scale = amax/448")
    deq = qn.dequant_fp8(q, s)
    bound = float(s) * _e4m3_halfulp(w / float(s)) * (1 + 1e-6)
    check(np.all(np.abs(deq - w) <= bound), "FP8 per-tensor error bound")
    # block: 130 x 200 with 128 x 128 blocks -> scale [2, 2], partial edge blocks, one zero block
    w = (rng.standard_normal((130, 200)) * 0.1).astype(np.float32)
    w[128:, 128:] = 0
    q, sinv = qn.quantize_fp8_block(w)
    check(sinv.shape == (2, 2), f"scale_inv shape {sinv.shape}")
    check(sinv[1, 1] == 1.0, "an all-zero block gets scale 1")
    check(sinv[0, 1] == np.float32(np.float32(np.max(np.abs(w[:128, 128:]))) / np.float32(448)), "block amax/448")
    deq = qn.dequant_fp8_block(q, sinv)
    full = np.repeat(np.repeat(sinv.astype(np.float64), 128, 0), 128, 1)[:130, :200]
    bound = full * _e4m3_halfulp(w / full) * (1 + 1e-6)
    check(np.all(np.abs(deq - w) <= bound), "FP8 block error bound")
    expect_error(ValueError, lambda: qn.dequant_fp8_block(q, sinv[:, :1]), "weight_scale_inv shape")


@test
def w4a4_activation_by_hand():
    # input_scale 1/64 -> gs = 64. Block amax 0.75: s = e4m3(64*0.75/6 = 8) = 8; x*64/8 = 8x:
    # 0.75 -> 6, -0.375 -> -3, 0.1 -> 0.8 -> 1, 0.03125 -> 0.25 -> 0 (tie to even);
    # dequant = xq * 8 / 64.
    x = np.zeros((2, 32))
    x[0, :4] = [0.75, -0.375, 0.1, 0.03125]
    # row 1 block 0: amax 100 -> 64*100/6 > 448 clamps s to 448; 100*64/448 = 14.3 saturates to 6
    x[1, 0], x[1, 1] = 100.0, 3.5
    got = qn.fake_quant_nvfp4_activation(x, np.float32(1 / 64))
    want = np.zeros((2, 32))
    want[0, :4] = [0.75, -0.375, 0.125, 0.0]
    want[1, 0] = 6 * 448 / 64
    want[1, 1] = 0.5 * 448 / 64  # 3.5*64/448 = 0.5 exactly -> code 1
    check(np.array_equal(got, want), f"w4a4 {got[0, :4]} {got[1, :2]}")


@test
def w4a8_activation_fake_quant_by_hand():
    # Block 0: amax 127 -> e = 0, unit steps (0.5 ties to 0, 1.5 to 2, -2.5 to -2). Block 1: amax just
    # over 127 -> e = 1, steps of 2 (3 -> 4, 1 -> 0, amax -> 128). Block 2: amax 1 -> 127*2^-7 < 1 <=
    # 127*2^-6: e = -6 (0.3 -> 19/64). Block 3: zeros. Block 4: amax 127*2^-140, under the floor:
    # e = -133, 127*2^-140 = 0.99 units -> 1 unit = 2^-133.
    x = np.zeros((1, 80))
    x[0, :4] = [127.0, 0.5, 1.5, -2.5]
    x[0, 16:19] = [float(np.nextafter(np.float32(127), np.float32(200))), 3.0, 1.0]
    x[0, 32:34] = [1.0, 0.3]
    x[0, 64] = 127.0 * 2.0 ** -140
    got = qn.fake_quant_int8_activation(x)
    want = np.zeros((1, 80))
    want[0, :4] = [127.0, 0.0, 2.0, -2.0]
    want[0, 16:19] = [128.0, 4.0, 0.0]
    want[0, 32:34] = [1.0, 19 / 64]
    want[0, 64] = 2.0 ** -133
    check(np.array_equal(got, want), f"w4a8 {got[0, :4]} {got[0, 16:19]} {got[0, 32:34]} {got[0, 64]}")


# ----------------------------------------------------------------------------------------------
# Exclusion and configuration


@test
def exclusion_wildcards():
    ex = qn.module_excluded
    check(ex("lm_head", ["lm_head"]) and not ex("model.lm_head_x", ["lm_head"]), "exact name")
    check(ex("model.layers.0.mlp.gate", ["*mlp.gate"]) and not ex("model.layers.0.mlp.gate_proj", ["*mlp.gate"]),
          "router pattern does not catch gate_proj")
    check(ex("model.layers.1.mlp", ["model.layers.1*"]) and ex("model.layers.10.mlp", ["model.layers.1*"]),
          "plain fnmatch: a prefix wildcard also matches layer 10 (ModelOpt never writes one that would)")
    check(not ex("Model.layers.1", ["model.*"]), "case-sensitive")
    quantized = ["model.layers.0.self_attn.q_proj", "model.layers.0.mlp.experts.0.gate_proj",
                 "model.layers.1.mlp.experts.0.up_proj"]
    unquantized = ["lm_head", "model.layers.0.mlp.gate", "model.layers.1.self_attn.q_proj",
                   "model.layers.1.self_attn.k_proj"]
    got = qn.summarize_excludes(unquantized, quantized)
    check(got == ["lm_head", "model.layers.0.mlp.gate", "model.layers.1.self_attn*"], f"summary {got}")
    check(qn.summarize_excludes(["a.b.y"], ["a.bc.x"]) == ["a.b.*"], "pair {a.b, a.b.*} is written a.b.*")
    for q in quantized:
        check(not ex(q, got), f"{q} must stay quantized")
    for u in unquantized:
        check(ex(u, got), f"{u} must be excluded")


@test
def config_forms():
    hf = {"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head", "*gate"]}}
    qc = {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["*gate", "lm_head"],
          "config_groups": {"group_0": {"weights": {"group_size": 16}}},
          "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}}
    for c in (qn.QuantConfig.from_dicts(hf, None), qn.QuantConfig.from_dicts(None, qc), qn.QuantConfig.from_dicts(hf, qc)):
        check(c.method == "modelopt" and c.quant_algo == "NVFP4" and c.group_size == 16, vars(c))
        check(c.kv_cache_quant_algo == "FP8", f"kv {c.kv_cache_quant_algo}")
        check(c.allowed_formats("model.layers.0.self_attn.q_proj") == {"nvfp4"}, "q_proj allowed nvfp4")
        check(c.allowed_formats("model.layers.0.mlp.gate") == set(), "router excluded")
    expect_error(ValueError, lambda: qn.QuantConfig.from_dicts(hf, dict(qc, quant_algo="FP8")), "disagree")
    expect_error(ValueError, lambda: qn.QuantConfig.from_dicts(hf, dict(qc, ignore=["lm_head"])), "disagree")
    expect_error(NotImplementedError, lambda: qn.QuantConfig.from_dicts(None, dict(qc, quant_algo="INT4_AWQ")))
    mixed = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.mlp.experts.0.gate_proj": {"quant_algo": "NVFP4", "group_size": 16},
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}}}}
    c = qn.QuantConfig.from_dicts(mixed, None)
    check(c.allowed_formats("model.layers.0.mlp.experts.0.gate_proj") == {"nvfp4"}, "mixed nvfp4")
    check(c.allowed_formats("model.layers.0.self_attn.q_proj") == {"fp8"}, "mixed fp8")
    check(c.allowed_formats("model.layers.0.self_attn.k_proj") == set(), "unlisted is unquantized")
    c = qn.QuantConfig.from_dicts(None, {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                         "weight_block_size": [128, 128]})
    check(c.method == "fp8" and c.weight_block_size == (128, 128), vars(c))
    check(c.allowed_formats("model.layers.0.mlp.down_proj") == {"fp8_block"}, "fp8 block allowed")


def _hand_checkpoint(tensors, config=None, hf=None):
    d = tmpdir()
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config or {}, f)
    if hf is not None:
        with open(os.path.join(d, "hf_quant_config.json"), "w") as f:
            json.dump(hf, f)
    return d, Checkpoint(d)


@test
def detection_and_load_errors():
    m = "model.layers.0.mlp.down_proj"
    nv = {m + ".weight": ("U8", [2, 8], bytes(16)), m + ".weight_scale": ("F8_E4M3", [2, 1], bytes([0x38, 0x40])),
          m + ".weight_scale_2": ("F32", [], f32(0.5)), m + ".input_scale": ("F32", [], f32(0.25))}
    d, ck = _hand_checkpoint(nv)
    check(qn.linear_format(ck, m) == "nvfp4", "U8 + E4M3 scale is NVFP4")
    w, fmt, s = qn.load_linear(ck, m)
    check(w.shape == (2, 16) and s == 0.25, f"{w.shape} {s}")
    bad = dict(nv)
    bad[m + ".weight_scale"] = ("F32", [2, 1], f32(1.0) + f32(1.0))
    d, ck = _hand_checkpoint(bad)
    expect_error(ValueError, lambda: qn.linear_format(ck, m), m + ".weight", "weight_scale")
    bad = dict(nv)
    bad[m + ".weight_scale"] = ("F8_E4M3", [2, 2], bytes(4))
    d, ck = _hand_checkpoint(bad)
    expect_error(ValueError, lambda: qn.load_linear(ck, m), m + ".weight_scale", "[2, 1]")
    d, ck = _hand_checkpoint({m + ".weight": ("F8_E4M3", [2, 2], bytes(4))})
    expect_error(ValueError, lambda: qn.linear_format(ck, m), m + ".weight")
    d, ck = _hand_checkpoint({m + ".weight": ("F8_E4M3", [2, 2], bytes([0x38] * 4)),
                              m + ".weight_scale_inv": ("F32", [1, 1], f32(2.0))})
    check(qn.linear_format(ck, m) == "fp8_block", "F8 + weight_scale_inv")
    d, ck = _hand_checkpoint({m + ".weight": ("F8_E4M3", [2, 2], bytes([0x38] * 4)),
                              m + ".weight_scale": ("F32", [], f32(3.0))})
    check(qn.load_linear(ck, m)[0].tolist() == [[3.0, 3.0], [3.0, 3.0]], "FP8 per-tensor")
    # an excluded module stored quantized is an error naming the tensor
    hf = {"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["*down_proj"]}}
    d, ck = _hand_checkpoint(nv, hf=hf)
    qc = qn.QuantConfig.from_model_dir(d)
    expect_error(ValueError, lambda: qn.load_linear(ck, m, qc), m + ".weight", "excluded")
    hf = {"quantization": {"quant_algo": "FP8", "exclude_modules": []}}
    d, ck = _hand_checkpoint(nv, hf=hf)
    expect_error(ValueError, lambda: qn.load_linear(ck, m, qn.QuantConfig.from_model_dir(d)), "quant_algo FP8")


# ----------------------------------------------------------------------------------------------
# quantize_np end to end

SMALL_MOE = dict(moe_intermediate_size=32, intermediate_size=48)


def _bf16_model(arch, seed=21, fused=False, **overrides):
    cfg = tiny_config(arch, **(SMALL_MOE if arch == "qwen3_moe" else {}), **overrides)
    w = random_weights(cfg, seed)
    d = tmpdir()
    write_model(d, cfg, fuse_experts(w) if fused else w, dtype="BF16")
    return d, cfg


IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4]


@test
def quantize_np_nvfp4_layout_and_sharing():
    d, cfg = _bf16_model("qwen3_moe")
    out = tmpdir()
    quantize_np.quantize_dir(d, out, "nvfp4", calibration_ids=IDS, log=lambda *a: None)
    ck, src = Checkpoint(out), Checkpoint(d)
    with open(os.path.join(out, "hf_quant_config.json")) as f:
        hf = json.load(f)
    with open(os.path.join(out, "config.json")) as f:
        qc = json.load(f)["quantization_config"]
    q = hf["quantization"]
    check(q["quant_algo"] == "NVFP4" and q["group_size"] == 16 and "kv_cache_quant_algo" in q, q)
    check(q["exclude_modules"] == ["lm_head", "model.layers.0.mlp.gate", "model.layers.1.mlp.gate"], q)
    check(qc["quant_method"] == "modelopt" and qc["ignore"] == q["exclude_modules"], qc)
    check(ck.info("model.layers.0.mlp.gate.weight")["dtype"] == "BF16", "router stays BF16")
    check(ck.info("lm_head.weight")["dtype"] == "BF16", "lm_head stays BF16")
    p = "model.layers.0."
    info = ck.info(p + "self_attn.q_proj.weight")
    check(info["dtype"] == "U8" and info["shape"] == (64, 16), f"q_proj {info}")
    check(ck.info(p + "self_attn.q_proj.weight_scale")["shape"] == (64, 2), "block scales [N, K/16]")
    check(ck.info(p + "self_attn.q_proj.weight_scale_2")["shape"] == (), "scalar")
    # q/k/v share weight_scale_2 = max amax / 2688
    amax = max(float(np.max(np.abs(src.get_f64(p + f"self_attn.{x}_proj.weight")))) for x in "qkv")
    for x in "qkv":
        s2 = float(ck.get_f64(p + f"self_attn.{x}_proj.weight_scale_2"))
        check(s2 == float(np.float32(np.float32(amax) / np.float32(2688))), f"{x}_proj weight_scale_2 {s2}")
    # input_scale of layer 0's q_proj from an independent amax: rms_norm(embed[ids]) by hand
    emb = src.get_f64("model.embed_tokens.weight")[IDS]
    g = src.get_f64(p + "input_layernorm.weight")
    x = g * emb / np.sqrt(np.mean(emb * emb, axis=-1, keepdims=True) + 1e-6)
    want = np.float32(np.float32(np.max(np.abs(x))) / np.float32(2688))
    check(float(ck.get_f64(p + "self_attn.q_proj.input_scale")) == float(want), "input_scale = amax/2688")
    # experts: gate/up share weight_scale_2; every expert shares input_scale per projection
    for e in range(cfg["num_experts"]):
        ep = p + f"mlp.experts.{e}."
        check(float(ck.get_f64(ep + "gate_proj.weight_scale_2")) == float(ck.get_f64(ep + "up_proj.weight_scale_2")),
              f"expert {e} gate/up weight_scale_2")
        for proj in ("gate_proj", "up_proj", "down_proj"):
            check(float(ck.get_f64(ep + proj + ".input_scale")) ==
                  float(ck.get_f64(p + f"mlp.experts.0.{proj}.input_scale")), f"expert {e} {proj} input_scale")
    # every quantized weight dequantizes within the NVFP4 bound of its BF16 source
    for name in src.names():
        if ck.info(name)["dtype"] != "U8":
            continue
        m = name[: -len(".weight")]
        w = src.get_f64(name)
        deq = qn.load_linear(ck, m)[0]
        s = np.repeat(decode_f8_e4m3(ck.raw(m + ".weight_scale")) * float(ck.get_f64(m + ".weight_scale_2")), 16, 1)
        v = w / s
        bound = s * np.where(np.abs(v) > 6, np.abs(v) - 5, _halfstep(v)) * (1 + 1e-6)
        check(np.all(np.abs(deq - w) <= bound), f"{name}: error bound")
    # the reference runs it; W4A16 and W4A4 both stay close to BF16
    ref = qwen3_ref.forward(d, IDS)
    for w4a4 in (False, True):
        got = qwen3_ref.forward(out, IDS, w4a4=w4a4)
        rel = np.sqrt(np.mean((got - ref) ** 2) / np.mean(ref ** 2))
        check(0 < rel < 0.5, f"w4a4={w4a4}: logits relative error {rel}")


@test
def quantize_np_fused_experts_match_per_expert():
    for fmt in ("nvfp4", "fp8", "fp8-block"):
        outs = []
        for fused in (False, True):
            d, _ = _bf16_model("qwen3_moe", seed=22, fused=fused)
            out = tmpdir()
            quantize_np.quantize_dir(d, out, fmt, calibration_ids=IDS, block=(16, 16), log=lambda *a: None)
            outs.append(out)
        msgs = []
        ok = compare_checkpoints.compare_dirs(outs[0], outs[1], rtol=0.0, out=msgs.append)[0]
        check(ok, f"{fmt}: fused-expert input gives a different checkpoint: {msgs}")


@test
def quantize_np_fp8_forms():
    d, cfg = _bf16_model("qwen3_moe", seed=23)
    out = tmpdir()
    quantize_np.quantize_dir(d, out, "fp8", calibration_ids=IDS, log=lambda *a: None)
    ck, src = Checkpoint(out), Checkpoint(d)
    with open(os.path.join(out, "hf_quant_config.json")) as f:
        q = json.load(f)["quantization"]
    check(q["quant_algo"] == "FP8" and "group_size" not in q, q)
    p = "model.layers.1.mlp.experts.3."
    check(ck.info(p + "gate_proj.weight")["dtype"] == "F8_E4M3", "FP8 weight")
    amax = max(float(np.max(np.abs(src.get_f64(p + f"{x}_proj.weight")))) for x in ("gate", "up"))
    for x in ("gate", "up"):
        check(float(ck.get_f64(p + f"{x}_proj.weight_scale")) == float(np.float32(np.float32(amax) / np.float32(448))),
              f"expert {x}_proj weight_scale from the shared gate/up amax")
    a = [float(np.max(np.abs(src.get_f64(f"model.layers.0.self_attn.{x}_proj.weight")))) for x in "qk"]
    sq, sk = (float(ck.get_f64(f"model.layers.0.self_attn.{x}_proj.weight_scale")) for x in "qk")
    check(sq == float(np.float32(np.float32(a[0]) / np.float32(448))) and sq != sk, "FP8 q/k keep their own scales")
    # block form with 16x16 blocks (the tiny dims are not multiples of 128)
    out = tmpdir()
    quantize_np.quantize_dir(d, out, "fp8-block", block=(16, 16), exclude=["model.layers.1.self_attn.o_proj"],
                             log=lambda *a: None)
    with open(os.path.join(out, "config.json")) as f:
        qc = json.load(f)["quantization_config"]
    check(qc == {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [16, 16],
                 "ignored_layers": ["model.layers.1.self_attn.o_proj"]}, qc)
    check(not os.path.exists(os.path.join(out, "hf_quant_config.json")), "no hf_quant_config.json")
    ck = Checkpoint(out)
    check(ck.info("model.layers.0.mlp.experts.0.down_proj.weight_scale_inv")["shape"] == (2, 2), "[32/16, 32/16]")
    check(ck.info("model.layers.1.self_attn.o_proj.weight")["dtype"] == "BF16", "--exclude keeps BF16")
    ref = qwen3_ref.forward(d, IDS)
    got = qwen3_ref.forward(out, IDS)
    check(np.sqrt(np.mean((got - ref) ** 2) / np.mean(ref ** 2)) < 0.1, "fp8-block logits close")


@test
def quantize_np_exclude_pattern_and_reference_check():
    d, _ = _bf16_model("qwen3", seed=24)
    out = tmpdir()
    quantize_np.quantize_dir(d, out, "nvfp4", exclude=["model.layers.1.self_attn*"], calibration_ids=IDS,
                             log=lambda *a: None)
    ck = Checkpoint(out)
    for x in ("q", "k", "v", "o"):
        check(ck.info(f"model.layers.1.self_attn.{x}_proj.weight")["dtype"] == "BF16", f"{x}_proj excluded")
        check(ck.info(f"model.layers.0.self_attn.{x}_proj.weight")["dtype"] == "U8", f"layer 0 {x}_proj quantized")
    with open(os.path.join(out, "hf_quant_config.json")) as f:
        hf = json.load(f)
    check(hf["quantization"]["exclude_modules"] == ["lm_head", "model.layers.1.self_attn*"], hf)
    qwen3_ref.forward(out, IDS)
    # a config that excludes a module stored quantized is rejected, naming the tensor
    hf["quantization"]["exclude_modules"].append("model.layers.0.self_attn.q_proj")
    with open(os.path.join(out, "hf_quant_config.json"), "w") as f:
        json.dump(hf, f)
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"]["ignore"] = hf["quantization"]["exclude_modules"]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    expect_error(ValueError, lambda: qwen3_ref.forward(out, IDS), "model.layers.0.self_attn.q_proj.weight", "excluded")


@test
def w4a4_applies_to_nvfp4_linears_only():
    d, _ = _bf16_model("qwen3_moe", seed=25)
    out = tmpdir()
    quantize_np.quantize_dir(d, out, "nvfp4", exclude=["model.layers.1.mlp.experts.*"], calibration_ids=IDS,
                             log=lambda *a: None)
    seen = []
    real = qn.fake_quant_nvfp4_activation
    qn.fake_quant_nvfp4_activation = lambda x, s: (seen.append(x.shape[1]), real(x, s))[1]
    try:
        m = qwen3_ref.Model(out, w4a4=True)
        m.forward(IDS[:6])
    finally:
        qn.fake_quant_nvfp4_activation = real
    # layer 0: q,k,v,o + routed experts' gate/up/down; layer 1: q,k,v,o only; never router/lm_head
    names = set()
    m2 = qwen3_ref.Model(out, w4a4=True, observer=lambda n, x: names.add(n))
    m2.forward(IDS[:6])
    nv = {n for n in names if Checkpoint(out).info(n + ".weight")["dtype"] == "U8"}
    check("lm_head" in names and "model.layers.1.mlp.experts.0.gate_proj" not in nv, "observer names")
    check(len(seen) == len(nv), f"{len(seen)} fake-quant calls for {len(nv)} NVFP4 Linears")


# ----------------------------------------------------------------------------------------------
# compare_checkpoints and compare.py


@test
def compare_checkpoints_exact_and_tolerant():
    d, _ = _bf16_model("qwen3", seed=26)
    a, b = tmpdir(), tmpdir()
    quantize_np.quantize_dir(d, a, "nvfp4", calibration_ids=IDS, log=lambda *a: None)
    quantize_np.quantize_dir(d, b, "nvfp4", calibration_ids=IDS, log=lambda *a: None)
    quiet = []
    check(compare_checkpoints.compare_dirs(a, b, out=quiet.append)[0], f"identical runs: {quiet}")
    # rewrite b's tensors with edits, keeping its configs
    ck = Checkpoint(b)

    def rewrite(edit):
        t = {n: (ck.info(n)["dtype"], list(ck.info(n)["shape"]), bytearray(ck.raw(n).tobytes())) for n in ck.names()}
        edit(t)
        c = tmpdir()
        for f in ("config.json", "hf_quant_config.json"):
            shutil.copy(os.path.join(b, f), c)
        write_safetensors(os.path.join(c, "model.safetensors"), {n: (v[0], v[1], bytes(v[2])) for n, v in t.items()})
        msgs = []
        ok = compare_checkpoints.compare_dirs(a, c, rtol=1e-3, out=msgs.append)[0]
        return ok, "\n".join(msgs)

    w = "model.layers.0.mlp.down_proj.weight"

    def flip_code(t):
        t[w][2][0] ^= 0x01

    ok, msg = rewrite(flip_code)
    check(not ok and w in msg and "codes differ" in msg, msg)

    def zero_sign(t):  # turn a +0 code into -0 in the first zero nibble
        raw = t[w][2]
        j = next(i for i in range(len(raw)) if raw[i] & 0xF == 0)
        raw[j] |= 0x8

    ok, msg = rewrite(zero_sign)
    check(not ok and "sign of zero" in msg, msg)
    s = "model.layers.0.self_attn.q_proj.input_scale"

    def nudge(factor):
        def edit(t):
            t[s][2][:] = np.float32(np.frombuffer(bytes(t[s][2]), "<f4")[0] * factor).tobytes()
        return edit

    check(rewrite(nudge(1 + 1e-5))[0], "input_scale within rtol passes")
    ok, msg = rewrite(nudge(1.01))
    check(not ok and s in msg, msg)

    def scale2(t):
        n = "model.layers.1.mlp.up_proj.weight_scale_2"
        t[n][2][:] = np.float32(np.frombuffer(bytes(t[n][2]), "<f4")[0] * (1 + 2 ** -23)).tobytes()

    ok, msg = rewrite(scale2)
    check(not ok and "weight_scale_2" in msg, msg)


FAKE_TERN = r'''#!/usr/bin/python3
# Fake "tern generate" that honours --quant-numerics (or ignores it under FAKE_IGNORE=1).
import argparse, json, os, sys
import numpy as np
sys.path.insert(0, {here!r})
import qwen3_ref
ap = argparse.ArgumentParser()
ap.add_argument("cmd"); ap.add_argument("--model"); ap.add_argument("--prompt-ids")
ap.add_argument("--max-tokens", type=int); ap.add_argument("--temperature", type=float)
ap.add_argument("--logits-out"); ap.add_argument("--quant-numerics", default="w4a16")
a = ap.parse_args()
w4a4 = a.quant_numerics == "w4a4" and os.environ.get("FAKE_IGNORE") != "1"
ids, logits = qwen3_ref.Model(a.model, w4a4=w4a4).greedy([int(t) for t in a.prompt_ids.split(",")], a.max_tokens)
np.save(a.logits_out, logits.astype(np.float32))
print(json.dumps(ids))
'''


@test
def compare_passes_quant_numerics():
    d, _ = _bf16_model("qwen3", seed=27)
    out = tmpdir()
    quantize_np.quantize_dir(d, out, "nvfp4", calibration_ids=IDS, log=lambda *a: None)
    fake = os.path.join(tmpdir(), "tern")
    with open(fake, "w") as f:
        f.write(FAKE_TERN.replace("{here!r}", repr(HERE)))
    os.chmod(fake, 0o755)

    def run(extra, env=None):
        p = subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--tern", fake, "--model", out,
                            "--prompt-ids", "5,6,7,8", "--steps", "5"] + extra, capture_output=True, text=True,
                           env=dict(os.environ, **(env or {})), timeout=300)
        return p.returncode, p.stdout + p.stderr

    for extra in ([], ["--quant-numerics", "w4a16"], ["--quant-numerics", "w4a4"]):
        rc, text = run(extra)
        check(rc == 0 and text.strip().endswith("PASS"), f"{extra}: {text}")
    rc, text = run(["--quant-numerics", "w4a4"], {"FAKE_IGNORE": "1"})
    check(rc == 1, f"a tern that ignores w4a4 must fail the comparison:\n{text}")


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
