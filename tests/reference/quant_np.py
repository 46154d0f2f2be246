"""NVFP4 and FP8 weight formats, independently, in NumPy: decoding, dequantization, the
quantizers ModelOpt uses, W4A4 activation fake-quantization, and quantization-config parsing.

Part of tern's independent reference (tests/reference). Written from
shared/specs/qwen-models-and-nvfp4.md §4 and from the upstream sources it cites, never from
tern's C++:
  - NVIDIA Model-Optimizer modelopt/torch/quantization/qtensor/nvfp4_tensor.py (NVFP4QTensor:
    get_weights_scaling_factor_2, get_weights_scaling_factor, _cast_fp4, quantize, dequantize);
  - modelopt/torch/export/quant_utils.py (get_activation_scaling_factor = amax/(maxbound·448),
    to_quantized_weight, _prefix_wildcard_summarize_exclude_modules, preprocess_linear_fusion);
  - modelopt/torch/export/unified_export_hf.py (_export_quantized_weight: FP8 weight_scale =
    amax/448) and convert_hf_config.py (the config.json quantization_config form);
  - vLLM vllm/model_executor/layers/quantization/modelopt.py (from_config: hf_quant_config.json
    "quantization" form or config.json form with "ignore"; exclude_modules matched with fnmatch)
    and fp8.py (block FP8: weight F8_E4M3 [N, K], weight_scale_inv F32 [ceil(N/bn), ceil(K/bk)],
    W = w · s per block; quantization_config {"quant_method": "fp8", "weight_block_size": ...}).

Formats (one Linear, out N, in K):
  NVFP4      weight U8 [N, K/2] (two E2M1 codes per byte, LOW nibble = even k), weight_scale
             F8_E4M3 [N, K/16], weight_scale_2 F32 scalar, input_scale F32 scalar;
             W[n, k] = e2m1(code) · e4m3(weight_scale[n, k // 16]) · weight_scale_2.
  FP8        weight F8_E4M3 [N, K], weight_scale F32 scalar, input_scale F32 scalar (ModelOpt);
             W = e4m3(weight) · weight_scale.
  FP8 block  weight F8_E4M3 [N, K], weight_scale_inv F32 [ceil(N/bn), ceil(K/bk)] (Qwen/DeepSeek);
             W[n, k] = e4m3(weight[n, k]) · weight_scale_inv[n // bn, k // bk].
Detection (spec §4.6): NVFP4 iff weight is U8 and weight_scale is F8_E4M3; FP8 iff weight is
F8_E4M3 (block when weight_scale_inv exists, else per-tensor weight_scale); otherwise dense.

Quantizer arithmetic (what quantize_np.py writes), float32 with IEEE round-to-nearest-even in
every step, the order of ModelOpt's NVFP4QTensor (torch CPU semantics):
  NVFP4: wsf2 = f32(amax / 2688); d = f32(6 · wsf2); r = f32(block_amax / d); r == 0 -> 1.0;
         weight_scale = e4m3(clamp(r, 2^-9, 448)); S = f32(e4m3 value · wsf2);
         code = e2m1(f32(W / S)) nearest, ties to even, saturating at 6, sign bit set when the
         quotient is < 0 (so a small negative value gives code 0x8, "-0", as ModelOpt does).
  FP8:   weight_scale = f32(amax / 448); weight = e4m3(f32(W / weight_scale)), nearest-even.
  FP8 block: weight_scale_inv = f32(block_amax / 448) (1.0 for an all-zero block);
         weight = e4m3(f32(W / weight_scale_inv)).
  input_scale = f32(f32(x_amax) / 2688) for NVFP4, f32(f32(x_amax) / 448) for FP8.
Known ways ModelOpt on a GPU may differ (torch CUDA, not reproduced here): a division by a Python
scalar becomes a multiplication by its float32 reciprocal (can move amax/2688 by one ulp), and an
FP8 weight divided in bf16 is rounded to bf16 before E4M3 (a double rounding).
"""

import fnmatch
import json
import os

import numpy as np

from safetensors_np import decode_f8_e4m3

# ----------------------------------------------------------------------------------------------
# Code tables

# E2M1 (FP4): sign = bit 3, magnitude index m = code & 7 (spec §4.3). Written out, not derived.
E2M1_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_VALUES = np.concatenate([E2M1_MAGNITUDES, -E2M1_MAGNITUDES])  # code -> value (0x8 is -0)

E4M3_MAX = 448.0
NVFP4_GROUP = 16
_E4M3_POSITIVE = decode_f8_e4m3(np.arange(0x7F, dtype=np.uint8))  # codes 0x00..0x7e, increasing


def decode_e2m1(codes):
    """uint8 codes (0..15) of any shape -> float64 values."""
    return E2M1_VALUES[np.asarray(codes, dtype=np.uint8) & 0xF]


def _nearest_even(mag, table):
    """mag >= 0 (float64 array); table: increasing float64 values, entry i = code i.
    -> index of the nearest entry, ties to the even index; entries past the table -> len(table)."""
    hi = np.searchsorted(table, mag, side="left")            # first entry >= mag
    hi_c = np.minimum(hi, len(table) - 1)
    lo = np.maximum(hi - 1, 0)
    exact = (hi < len(table)) & (table[hi_c] == mag)
    d_lo = mag - table[lo]
    d_hi = table[hi_c] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi_c % 2 == 0))
    idx = np.where(exact, hi_c, np.where(hi == 0, 0, np.where(pick_hi, hi_c, lo)))
    return np.where(hi >= len(table), len(table), idx)


def encode_e4m3(x, saturate=False):
    """float array -> uint8 E4M3 ("fn": bias 7, no inf, 0x7f/0xff NaN) codes, round to nearest,
    ties to even. The sign bit follows signbit(x) (so -0.0 -> 0x80). |x| past the largest value
    448: with saturate, 448; without (what a plain torch cast does), values in (448, 464] round to
    448 and anything larger is NaN (0x7f), 480 being the next step of the grid. NaN -> 0x7f."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.abs(x)
    if saturate:
        mag = np.minimum(mag, E4M3_MAX)
    table = np.concatenate([_E4M3_POSITIVE, [480.0]])        # 480 stands for the NaN code 0x7f
    idx = _nearest_even(np.nan_to_num(mag, nan=0.0), table)
    idx = np.where(np.isnan(mag) | (idx >= 0x7F), 0x7F, idx).astype(np.uint8)
    sign = np.where(np.signbit(x) & (idx != 0x7F), 0x80, 0).astype(np.uint8)
    return idx | sign


def encode_e2m1(x):
    """float array -> uint8 E2M1 codes (0..15), ModelOpt's _cast_fp4 rule: nearest value, ties to
    even (0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4), saturating at 6; the sign
    bit is set when x < 0 (so -0.1 -> 0x8, and -0.0 -> 0x0)."""
    x = np.asarray(x, dtype=np.float64)
    idx = np.minimum(_nearest_even(np.abs(x), E2M1_MAGNITUDES), 7).astype(np.uint8)
    return idx | np.where(x < 0, 8, 0).astype(np.uint8)


def pack_nibbles(codes):
    """codes [..., K] (K even, values 0..15) -> uint8 [..., K/2], byte = code[2j] | code[2j+1] << 4."""
    codes = np.asarray(codes, dtype=np.uint8)
    if codes.shape[-1] % 2:
        raise ValueError(f"pack_nibbles: last dimension {codes.shape[-1]} is odd")
    return (codes[..., 0::2] & 0xF) | ((codes[..., 1::2] & 0xF) << 4)


def unpack_nibbles(packed):
    """uint8 [..., K/2] -> codes [..., K]: element 2j is the LOW nibble of byte j."""
    packed = np.asarray(packed, dtype=np.uint8)
    out = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.uint8)
    out[..., 0::2] = packed & 0xF
    out[..., 1::2] = packed >> 4
    return out


def round_f32(x):
    """float64 -> nearest float32 (as float32)."""
    return np.asarray(x, dtype=np.float64).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# Dequantization (float64, exact: e2m1 · e4m3 · f32 needs at most 3 + 4 + 24 significand bits)


def dequant_nvfp4(weight_u8, weight_scale_u8, weight_scale_2, group=NVFP4_GROUP):
    """weight_u8 [N, K/2] uint8, weight_scale_u8 [N, K/group] uint8 (E4M3 bits), weight_scale_2
    scalar -> W [N, K] float64."""
    codes = unpack_nibbles(weight_u8)
    n, k = codes.shape
    if weight_scale_u8.shape != (n, k // group) or k % group:
        raise ValueError(f"NVFP4: weight_scale shape {list(weight_scale_u8.shape)}, expected "
                         f"[{n}, {k // group}] for weight [{n}, {k // 2}] (K = {k})")
    scale = decode_f8_e4m3(weight_scale_u8) * float(weight_scale_2)             # [N, K/group]
    return decode_e2m1(codes) * np.repeat(scale, group, axis=1)


def dequant_fp8(weight_u8, weight_scale):
    """weight [N, K] uint8 E4M3 bits, per-tensor scalar scale -> float64."""
    return decode_f8_e4m3(weight_u8) * float(weight_scale)


def block_scale_shape(n, k, block):
    bn, bk = block
    return (-(-n // bn), -(-k // bk))


def dequant_fp8_block(weight_u8, scale_inv, block=(128, 128)):
    """weight [N, K] E4M3 bits, scale_inv [ceil(N/bn), ceil(K/bk)] -> float64 (edge blocks partial)."""
    n, k = weight_u8.shape
    want = block_scale_shape(n, k, block)
    if tuple(scale_inv.shape) != want:
        raise ValueError(f"FP8 block: weight_scale_inv shape {list(scale_inv.shape)}, expected {list(want)} "
                         f"for weight [{n}, {k}] and block {list(block)}")
    full = np.repeat(np.repeat(np.asarray(scale_inv, dtype=np.float64), block[0], axis=0), block[1], axis=1)
    return decode_f8_e4m3(weight_u8) * full[:n, :k]


# ----------------------------------------------------------------------------------------------
# Quantizers (see the module docstring for the exact arithmetic)


def nvfp4_global_scale(amax):
    """weight_scale_2 (or input_scale) = f32(amax / (6·448)) as float32."""
    return np.float32(amax) / np.float32(6.0 * E4M3_MAX)


def quantize_nvfp4(w, amax=None, group=NVFP4_GROUP):
    """w [N, K] (values exactly representable in float32, e.g. widened BF16) ->
    (weight uint8 [N, K/2], weight_scale uint8 E4M3 [N, K/group], weight_scale_2 float32).
    amax: the global amax to use (a fused group's shared max), default max|w|."""
    w32 = np.asarray(w, dtype=np.float32)
    n, k = w32.shape
    if k % group:
        raise ValueError(f"NVFP4 needs the input dimension to be a multiple of {group}, got {k}")
    if amax is None:
        amax = np.max(np.abs(w32)) if w32.size else 0.0
    wsf2 = nvfp4_global_scale(amax)
    blocks = w32.reshape(n, k // group, group)
    block_amax = np.max(np.abs(blocks), axis=-1)                                 # float32 [N, K/g]
    if wsf2 == 0:  # an all-zero tensor: every code is 0, scales 1 (ModelOpt would divide 0 by 0)
        r = np.ones_like(block_amax)
    else:
        r = block_amax / (np.float32(6.0) * wsf2)                                 # float32
        r = np.where(r == 0, np.float32(1.0), r)
    scale_codes = encode_e4m3(np.clip(r, np.float32(2.0 ** -9), np.float32(E4M3_MAX)))
    s = decode_f8_e4m3(scale_codes).astype(np.float32) * wsf2                     # float32 [N, K/g]
    if wsf2 == 0:
        s = np.ones_like(s)
    q = blocks / s[..., None]                                                     # float32
    codes = encode_e2m1(q.reshape(n, k))
    return pack_nibbles(codes), scale_codes, np.float32(wsf2)


def quantize_fp8(w, amax=None):
    """w [N, K] -> (weight uint8 E4M3 [N, K], weight_scale float32): scale = amax/448."""
    w32 = np.asarray(w, dtype=np.float32)
    if amax is None:
        amax = np.max(np.abs(w32)) if w32.size else 0.0
    scale = np.float32(amax) / np.float32(E4M3_MAX)
    if scale == 0:
        scale = np.float32(1.0)
    return encode_e4m3(w32 / scale, saturate=True), np.float32(scale)


def quantize_fp8_block(w, block=(128, 128)):
    """w [N, K] -> (weight uint8 E4M3 [N, K], weight_scale_inv float32 [ceil(N/bn), ceil(K/bk)])."""
    w32 = np.asarray(w, dtype=np.float32)
    n, k = w32.shape
    bn, bk = block
    gn, gk = block_scale_shape(n, k, block)
    padded = np.zeros((gn * bn, gk * bk), dtype=np.float32)
    padded[:n, :k] = np.abs(w32)
    block_amax = padded.reshape(gn, bn, gk, bk).max(axis=(1, 3))                  # [gn, gk]
    scale_inv = block_amax / np.float32(E4M3_MAX)
    scale_inv = np.where(scale_inv == 0, np.float32(1.0), scale_inv).astype(np.float32)
    full = np.repeat(np.repeat(scale_inv, bn, axis=0), bk, axis=1)[:n, :k]
    return encode_e4m3(w32 / full, saturate=True), scale_inv


def activation_scale(amax, fmt):
    """input_scale from a calibration amax: NVFP4 amax/(6·448), FP8 amax/448 (float32)."""
    a = np.float32(amax)
    return a / np.float32(6.0 * E4M3_MAX) if fmt == "nvfp4" else a / np.float32(E4M3_MAX)


def fake_quant_nvfp4_activation(x, input_scale, group=NVFP4_GROUP):
    """Blackwell W4A4 numerics for the activation of an NVFP4 Linear (spec §4.5), float64:
    gs = f32(1/input_scale); per row and 16-block b: s_b = e4m3(min(gs·max|x_b|/6, 448));
    xq = e2m1(clamp(x_b·gs/s_b, -6, 6)); returns xq · s_b · input_scale (0 where s_b is 0).
    x: [T, K] -> [T, K]."""
    x = np.asarray(x, dtype=np.float64)
    t, k = x.shape
    if k % group:
        raise ValueError(f"W4A4: activation width {k} is not a multiple of {group}")
    gs = float(np.float32(1.0) / np.float32(input_scale))
    xb = x.reshape(t, k // group, group)
    amax = np.max(np.abs(xb), axis=-1)                                            # [T, K/g]
    s = decode_f8_e4m3(encode_e4m3(np.minimum(gs * amax / 6.0, E4M3_MAX)))        # [T, K/g]
    safe = np.where(s == 0, 1.0, s)
    xq = decode_e2m1(encode_e2m1(np.clip(xb * gs / safe[..., None], -6.0, 6.0)))
    out = xq * (s * float(input_scale))[..., None]
    return np.where((s == 0)[..., None], 0.0, out).reshape(t, k)


def fake_quant_int8_activation(x, group=NVFP4_GROUP):
    """tern's W4A8 (--quant-numerics w4a8) for the activation of an NVFP4 Linear, float64: per row
    and 16-block b with a = max|x_b| > 0, e = the least integer with a <= 127·2^e (at least -133);
    returns round_half_even(x_b / 2^e) · 2^e (an all-zero block stays zero). x: [T, K] -> [T, K].
    The exponent comes from log2 and is then corrected by comparisons, not from the float bits."""
    x = np.asarray(x, dtype=np.float64)
    t, k = x.shape
    if k % group:
        raise ValueError(f"W4A8: activation width {k} is not a multiple of {group}")
    xb = x.reshape(t, k // group, group)
    amax = np.max(np.abs(xb), axis=-1)                                            # [T, K/g]
    pos = amax > 0
    e = np.where(pos, np.ceil(np.log2(np.where(pos, amax, 1.0) / 127.0)), -133.0)
    e = np.where(127.0 * np.exp2(e) < amax, e + 1, e)                             # log2 rounded down
    e = np.where(pos & (127.0 * np.exp2(e - 1) >= amax), e - 1, e)                # log2 rounded up
    e = np.maximum(e, -133.0)
    unit = np.exp2(e)[..., None]
    return (np.round(xb / unit) * unit).reshape(t, k)                             # np.round: half to even


# ----------------------------------------------------------------------------------------------
# Quantization config: hf_quant_config.json and/or config.json quantization_config


def module_excluded(module, patterns):
    """True when `module` (full module name, e.g. "model.layers.0.mlp.gate") equals a pattern or
    matches it as a case-sensitive fnmatch wildcard (ModelOpt exclude_modules / "ignore")."""
    return any(module == p or fnmatch.fnmatchcase(module, p) for p in patterns)


def summarize_excludes(unquantized, quantized):
    """The exclude_modules list ModelOpt writes (quant_utils._prefix_wildcard_summarize_exclude_modules,
    re-implemented): for each unquantized module, the shortest dotted-prefix wildcard ("a.b*", or
    the pair {"a.b", "a.b.*"}, written as "a.b.*") that no quantized module matches, else the name."""
    negatives = set()
    for q in quantized:
        negatives.add(q)
        negatives.update(q[:i] + "*" for i in range(len(q) + 1))
    result = set()
    for name in unquantized:
        cands = []
        for i, ch in enumerate(name):
            if ch == ".":
                cands.append([name[:i] + "*"])
                cands.append([name[:i], name[:i] + ".*"])
        cands.append([name])
        chosen = []
        for c in cands:
            if any(p in negatives for p in c):
                continue
            if all(p in result for p in c):
                chosen = []
                break
            chosen = c
            break
        if len(chosen) == 2 and chosen[1] == chosen[0] + ".*":
            result.add(chosen[1])
        else:
            result.update(chosen)
    return sorted(result)


class QuantConfig:
    """What a model directory declares about quantization.

    method:   "modelopt" (hf_quant_config.json and/or quantization_config quant_method
              "modelopt"), "fp8" (Qwen/DeepSeek block or per-tensor FP8), or None.
    quant_algo: "NVFP4", "FP8", "MIXED_PRECISION", ... (upper case) or None.
    exclude:  wildcard patterns of modules left unquantized.
    layers:   MIXED_PRECISION {module: quant_algo}.
    group_size, kv_cache_quant_algo, weight_block_size ((bn, bk) or None).
    """

    def __init__(self):
        self.method = None
        self.quant_algo = None
        self.exclude = []
        self.layers = {}
        self.group_size = None
        self.kv_cache_quant_algo = None
        self.weight_block_size = None

    @classmethod
    def from_dicts(cls, hf_quant=None, quantization_config=None, where="model"):
        qc = cls()
        legacy = None
        if hf_quant is not None:
            q = hf_quant.get("quantization") if isinstance(hf_quant, dict) else None
            if not isinstance(q, dict):
                raise ValueError(f"{where}: hf_quant_config.json has no \"quantization\" object")
            legacy = q
        cfg = quantization_config
        if cfg is not None and not isinstance(cfg, dict):
            raise ValueError(f"{where}: quantization_config is not an object")
        cfg_method = str(cfg.get("quant_method", "")).lower() if cfg else ""
        if legacy is not None:
            qc.method = "modelopt"
            qc.quant_algo = str(legacy.get("quant_algo") or "").upper() or None
            qc.exclude = list(legacy.get("exclude_modules") or [])
            qc.group_size = legacy.get("group_size")
            qc.kv_cache_quant_algo = legacy.get("kv_cache_quant_algo")
            qc.layers = {k: str(v.get("quant_algo", "")).upper()
                         for k, v in (legacy.get("quantized_layers") or {}).items()}
        if cfg_method.startswith("modelopt"):
            algo = str(cfg.get("quant_algo") or "").upper() or None
            ignore = list(cfg.get("ignore") or [])
            if legacy is not None:
                if algo != qc.quant_algo:
                    raise ValueError(f"{where}: hf_quant_config.json quant_algo {qc.quant_algo!r} and "
                                     f"config.json quantization_config quant_algo {algo!r} disagree")
                if sorted(ignore) != sorted(qc.exclude):
                    raise ValueError(f"{where}: hf_quant_config.json exclude_modules {sorted(qc.exclude)} and "
                                     f"config.json quantization_config ignore {sorted(ignore)} disagree")
            else:
                qc.method, qc.quant_algo, qc.exclude = "modelopt", algo, ignore
                kv = cfg.get("kv_cache_scheme")
                qc.kv_cache_quant_algo = ("FP8" if isinstance(kv, dict) and kv.get("type") == "float"
                                          and kv.get("num_bits") == 8 else kv if isinstance(kv, str) else None)
                groups = cfg.get("config_groups") or {}
                for g in groups.values():
                    gs = (g.get("weights") or {}).get("group_size") if isinstance(g, dict) else None
                    if gs is not None:
                        qc.group_size = gs
                qc.layers = {k: str(v.get("quant_algo", "")).upper()
                             for k, v in (cfg.get("quantized_layers") or {}).items()}
        elif cfg_method == "fp8":
            if legacy is not None:
                raise ValueError(f"{where}: hf_quant_config.json (ModelOpt) next to a quant_method \"fp8\" config")
            qc.method, qc.quant_algo = "fp8", "FP8"
            block = cfg.get("weight_block_size")
            qc.weight_block_size = tuple(int(b) for b in block) if block else None
            if qc.weight_block_size is not None and len(qc.weight_block_size) != 2:
                raise ValueError(f"{where}: weight_block_size {block!r} is not [bn, bk]")
            qc.exclude = list(cfg.get("ignored_layers") or []) + list(cfg.get("modules_to_not_convert") or [])
        elif cfg_method and legacy is None:
            raise NotImplementedError(f"{where}: quantization_config quant_method {cfg_method!r} is not supported")
        if qc.method == "modelopt":
            if qc.quant_algo not in ("NVFP4", "FP8", "MIXED_PRECISION"):
                raise NotImplementedError(f"{where}: ModelOpt quant_algo {qc.quant_algo!r} is not supported "
                                          "(NVFP4, FP8, MIXED_PRECISION)")
            if qc.quant_algo == "NVFP4" and qc.group_size not in (None, NVFP4_GROUP):
                raise ValueError(f"{where}: NVFP4 group_size {qc.group_size}, only 16 exists")
        return qc

    @classmethod
    def from_model_dir(cls, model_dir, full_config=None):
        hf_path = os.path.join(model_dir, "hf_quant_config.json")
        hf = None
        if os.path.exists(hf_path):
            with open(hf_path, "r", encoding="utf-8") as f:
                hf = json.load(f)
        if full_config is None:
            with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
                full_config = json.load(f)
        qcfg = full_config.get("quantization_config")
        if qcfg is None and isinstance(full_config.get("text_config"), dict):
            qcfg = full_config["text_config"].get("quantization_config")
        return cls.from_dicts(hf, qcfg, where=model_dir)

    def excluded(self, module):
        return module_excluded(module, self.exclude)

    def allowed_formats(self, module):
        """The detected formats this config allows for `module` (a set of "nvfp4", "fp8",
        "fp8_block"); an empty set means the module must be unquantized."""
        if self.method is None:
            return {"nvfp4", "fp8", "fp8_block"}  # no config: trust the tensors' dtypes
        if self.excluded(module):
            return set()
        algo = self.quant_algo
        if algo == "MIXED_PRECISION":
            algo = self.layers.get(module)
            if algo is None:
                return set()
        if self.method == "fp8":
            return {"fp8_block"} if self.weight_block_size else {"fp8"}
        return {"NVFP4": {"nvfp4"}, "FP8": {"fp8"}}.get(algo, set())


# ----------------------------------------------------------------------------------------------
# One Linear in a checkpoint


def linear_format(ckpt, module):
    """Spec §4.6 detection for `module` (full name without ".weight") in a safetensors_np
    Checkpoint -> "nvfp4" | "fp8" | "fp8_block" | "dense". Raises ValueError naming the tensor
    when the tensors are inconsistent (a U8 weight without an E4M3 weight_scale, an FP8 weight
    without any scale)."""
    wname = module + ".weight"
    dtype = ckpt.info(wname)["dtype"]
    if dtype == "U8":
        sname = module + ".weight_scale"
        if sname not in ckpt or ckpt.info(sname)["dtype"] != "F8_E4M3":
            raise ValueError(f"{wname}: U8 weight without an F8_E4M3 {sname} (not NVFP4)")
        return "nvfp4"
    if dtype == "F8_E4M3":
        if module + ".weight_scale_inv" in ckpt:
            return "fp8_block"
        if module + ".weight_scale" in ckpt:
            return "fp8"
        raise ValueError(f"{wname}: F8_E4M3 weight without weight_scale or weight_scale_inv")
    if dtype in ("I8", "F8_E5M2"):
        raise NotImplementedError(f"{wname}: {dtype} weights are not supported")
    return "dense"


def _scalar(ckpt, name):
    info = ckpt.info(name)
    if int(np.prod(info["shape"], dtype=np.int64)) != 1:
        raise ValueError(f"{name}: shape {list(info['shape'])}, expected a scalar")
    if info["dtype"] not in ("F32", "BF16", "F16", "F64"):
        raise ValueError(f"{name}: dtype {info['dtype']}, expected F32")
    return float(ckpt.get_f64(name).reshape(()))


def load_linear(ckpt, module, qcfg=None):
    """-> (W float64 [N, K], fmt, input_scale float or None) for one Linear, dequantized.
    qcfg: QuantConfig; a quantized module it excludes (or does not allow) is a ValueError naming
    the tensor, as is any scale with the wrong shape."""
    fmt = linear_format(ckpt, module)
    wname = module + ".weight"
    if fmt != "dense" and qcfg is not None:
        allowed = qcfg.allowed_formats(module)
        if fmt not in allowed:
            why = ("is listed as excluded" if qcfg.excluded(module)
                   else f"is not allowed by quant_algo {qcfg.quant_algo}")
            raise ValueError(f"{wname}: stored as {fmt} but module {module!r} {why}")
    input_scale = _scalar(ckpt, module + ".input_scale") if module + ".input_scale" in ckpt else None
    raw = ckpt.raw(wname)
    if fmt == "dense":
        return ckpt.get_f64(wname), fmt, None
    if fmt == "nvfp4":
        if raw.ndim != 2:
            raise ValueError(f"{wname}: NVFP4 weight must be 2-D, shape {list(raw.shape)}")
        s = ckpt.raw(module + ".weight_scale")
        n, k = raw.shape[0], raw.shape[1] * 2
        if s.shape != (n, k // NVFP4_GROUP) or k % NVFP4_GROUP:
            raise ValueError(f"{module}.weight_scale: shape {list(s.shape)}, expected [{n}, {k // NVFP4_GROUP}] "
                             f"for weight {list(raw.shape)}")
        if module + ".weight_scale_2" not in ckpt:
            raise ValueError(f"{module}.weight_scale_2: missing for an NVFP4 weight")
        return dequant_nvfp4(raw, s, _scalar(ckpt, module + ".weight_scale_2")), fmt, input_scale
    if fmt == "fp8":
        return dequant_fp8(raw, _scalar(ckpt, module + ".weight_scale")), fmt, input_scale
    block = (qcfg.weight_block_size if qcfg is not None and qcfg.weight_block_size else (128, 128))
    sname = module + ".weight_scale_inv"
    if ckpt.info(sname)["dtype"] not in ("F32", "BF16", "F16"):
        raise ValueError(f"{sname}: dtype {ckpt.info(sname)['dtype']}, expected F32")
    try:
        return dequant_fp8_block(raw, ckpt.get_f64(sname), block), fmt, input_scale
    except ValueError as e:
        raise ValueError(f"{sname}: {e}") from None
