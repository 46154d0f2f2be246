#!/usr/bin/python3
"""Compares two quantized checkpoints tensor by tensor (e.g. `tern quantize` output against
quantize_np.py output for the same BF16 model and calibration ids).

  compare_checkpoints.py --a DIR --b DIR [--input-scale-rtol 1e-3] [--verbose]

Compared EXACTLY (bytes of the stored tensor):
  - every quantized weight (NVFP4 packed U8 codes, FP8 E4M3 codes),
  - weight_scale (NVFP4 E4M3 block scales; FP8 F32 per-tensor scale), weight_scale_2,
    weight_scale_inv,
  - every unquantized tensor (embedding, norms, lm_head, routers, ...).
Compared within --input-scale-rtol (relative): input_scale, which comes from calibration
activations (float32 in one producer, float64 in the other); the rest of the quantization does
not depend on activations.
Also checked: the same tensor names, dtypes and shapes; the same quant_algo / group_size; and the
two configs' exclude lists exclude the same Linear modules (evaluated with fnmatch over the
modules present, so differently written but equivalent wildcards pass).
Diagnostics for weight mismatches say whether they are only sign-of-zero codes (0x8 vs 0x0 for
NVFP4, 0x80 vs 0x00 for FP8) and how far apart the differing codes' values are.
Exit status 0 on PASS, 1 on FAIL; the last line is PASS or FAIL.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_np  # noqa: E402
from safetensors_np import Checkpoint, decode_f8_e4m3  # noqa: E402

EXACT_SUFFIXES = (".weight_scale", ".weight_scale_2", ".weight_scale_inv")


def _linear_modules(ckpt):
    return sorted(n[: -len(".weight")] for n in ckpt.names()
                  if n.endswith(".weight") and len(ckpt.info(n)["shape"]) == 2 and "embed_tokens" not in n)


def _weight_diff(name, dtype, ra, rb):
    """-> one line describing how two quantized weights differ."""
    if dtype == "U8":
        ca, cb = quant_np.unpack_nibbles(ra), quant_np.unpack_nibbles(rb)
        va, vb = quant_np.decode_e2m1(ca), quant_np.decode_e2m1(cb)
        zero = {0x0, 0x8}
    else:
        ca, cb = ra, rb
        va, vb = decode_f8_e4m3(ca), decode_f8_e4m3(cb)
        zero = {0x00, 0x80}
    diff = ca != cb
    n = int(np.sum(diff))
    only_zero_sign = bool(np.all(np.isin(ca[diff], list(zero)) & np.isin(cb[diff], list(zero))))
    gap = float(np.max(np.abs(va[diff] - vb[diff]))) if n else 0.0
    return (f"{name}: {n} of {ca.size} codes differ"
            + (" (only the sign of zero: 0x8/0x80 vs 0x0/0x00)" if only_zero_sign else
               f", largest value gap {gap:g} in code units"))


def compare_dirs(a_dir, b_dir, rtol=1e-3, verbose=False, out=print):
    """-> (ok, counts dict). Prints one line per problem."""
    a, b = Checkpoint(a_dir), Checkpoint(b_dir)
    qa, qb = quant_np.QuantConfig.from_model_dir(a_dir), quant_np.QuantConfig.from_model_dir(b_dir)
    problems = []
    for field in ("method", "quant_algo", "group_size", "weight_block_size"):
        if getattr(qa, field) != getattr(qb, field):
            problems.append(f"config {field}: {getattr(qa, field)!r} vs {getattr(qb, field)!r}")
    mods = sorted(set(_linear_modules(a)) | set(_linear_modules(b)))
    ea = {m for m in mods if qa.excluded(m)}
    eb = {m for m in mods if qb.excluded(m)}
    if ea != eb:
        problems.append(f"excluded modules differ: only in a {sorted(ea - eb)}, only in b {sorted(eb - ea)}")
    for m in mods:  # every module's stored format must be consistent with its own config
        for ck, qc, label in ((a, qa, "a"), (b, qb, "b")):
            if m + ".weight" in ck:
                try:
                    quant_np.load_linear(ck, m, qc)
                except ValueError as e:
                    problems.append(f"{label}: {e}")
    names_a, names_b = set(a.names()), set(b.names())
    for n in sorted(names_a - names_b):
        problems.append(f"{n}: only in a")
    for n in sorted(names_b - names_a):
        problems.append(f"{n}: only in b")
    counts = {"exact": 0, "input_scale": 0}
    worst_rel = 0.0
    for n in sorted(names_a & names_b):
        ia, ib = a.info(n), b.info(n)
        if ia["dtype"] != ib["dtype"] or ia["shape"] != ib["shape"]:
            problems.append(f"{n}: {ia['dtype']}{list(ia['shape'])} vs {ib['dtype']}{list(ib['shape'])}")
            continue
        ra, rb = a.raw(n), b.raw(n)
        if n.endswith(".input_scale"):
            va, vb = float(a.get_f64(n).reshape(())), float(b.get_f64(n).reshape(()))
            rel = abs(va - vb) / max(abs(vb), 1e-300)
            worst_rel = max(worst_rel, rel)
            counts["input_scale"] += 1
            if not rel <= rtol:
                problems.append(f"{n}: {va!r} vs {vb!r} (relative difference {rel:.2e} > {rtol:g})")
            elif verbose:
                out(f"{n}: {va!r} vs {vb!r} (relative {rel:.2e})")
            continue
        counts["exact"] += 1
        if np.asarray(ra).tobytes() == np.asarray(rb).tobytes():
            continue
        if n.endswith(".weight") and ia["dtype"] in ("U8", "F8_E4M3"):
            problems.append(_weight_diff(n, ia["dtype"], ra, rb))
        elif n.endswith(EXACT_SUFFIXES):
            fa, fb = a.get_f64(n), b.get_f64(n)
            bad = np.flatnonzero(fa.reshape(-1) != fb.reshape(-1))
            first = int(bad[0]) if bad.size else 0
            problems.append(f"{n}: {bad.size} of {fa.size} values differ (first at flat index {first}: "
                            f"{fa.reshape(-1)[first]!r} vs {fb.reshape(-1)[first]!r})")
        else:
            problems.append(f"{n}: stored bytes differ ({ia['dtype']}{list(ia['shape'])})")
    for p in problems:
        out("FAIL " + p)
    out(f"compared {counts['exact']} tensors exactly and {counts['input_scale']} input_scales "
        f"(worst relative difference {worst_rel:.2e}, tol {rtol:g}); {len(problems)} problems")
    return not problems, counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="first checkpoint directory")
    ap.add_argument("--b", required=True, help="second checkpoint directory")
    ap.add_argument("--input-scale-rtol", type=float, default=1e-3)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    try:
        ok, _ = compare_dirs(args.a, args.b, args.input_scale_rtol, args.verbose)
    except (OSError, ValueError, KeyError, NotImplementedError) as e:
        print(f"FAIL: {type(e).__name__}: {e}")
        ok = False
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
