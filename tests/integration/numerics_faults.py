#!/usr/bin/python3
"""Writes a copy of a checkpoint that differs from it in one place, for `tern check --suite numerics`.

Usage: numerics_faults.py --model models/demo --out DIR --fault perturb|block-scale|rope [--seed 1]

  perturb      one layer's weights (layer 1) perturbed by 2%: every BF16 tensor of the layer (norms,
               router) times (1 + 0.02 N(0,1)) elementwise, and the per-tensor global scale
               (weight_scale_2) of every NVFP4 Linear of the layer times (1 + 0.02 N(0,1)) (NVFP4's
               E2M1 codes and E4M3 block scales cannot move by 2%: a scale can).
  block-scale  the E4M3 block scales of one expert (layer 2, expert 3, down_proj) halved: exponent
               minus one, as a kernel reading the wrong scale would apply them.
  rope         rope_theta in config.json off by 10% (times 1.1).

Everything else is copied byte for byte. Written with NumPy from the safetensors layout (the
8-byte header length, the JSON header, the data), independent of tern.
"""

import argparse
import json
import os
import shutil
import struct

import numpy as np


def edit_tensors(path, edit):
    """edit(name, dtype, shape, raw bytes) -> new bytes of the same length, or None to keep."""
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8 : 8 + n])
    base = 8 + n
    changed = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        new = edit(name, info["dtype"], info["shape"], bytes(blob[base + b : base + e]))
        if new is not None:
            assert len(new) == e - b, name
            blob[base + b : base + e] = new
            changed.append(name)
    with open(path, "wb") as f:
        f.write(blob)
    return changed


def bf16_to_f32(raw):
    return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()  # round to nearest even


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fault", required=True, choices=["perturb", "block-scale", "rope"])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    shutil.copytree(a.model, a.out)
    rng = np.random.default_rng(a.seed)
    weights = os.path.join(a.out, "model.safetensors")
    if a.fault == "rope":
        cfg_path = os.path.join(a.out, "config.json")
        cfg = json.load(open(cfg_path))
        cfg["rope_theta"] = cfg.get("rope_theta", 10000.0) * 1.1
        json.dump(cfg, open(cfg_path, "w"), indent=2)
        print(f"rope_theta -> {cfg['rope_theta']}")
        return
    if a.fault == "perturb":
        prefix = "model.layers.1."

        def edit(name, dtype, shape, raw):
            if not name.startswith(prefix):
                return None
            if dtype == "BF16":
                x = bf16_to_f32(raw)
                return f32_to_bf16(x * (1 + 0.02 * rng.standard_normal(x.shape)))
            if name.endswith("weight_scale_2") and dtype == "F32":
                x = np.frombuffer(raw, "<f4")
                return (x * (1 + 0.02 * rng.standard_normal(x.shape))).astype("<f4").tobytes()
            return None
    else:
        target = "model.layers.2.mlp.experts.3.down_proj.weight_scale"

        def edit(name, dtype, shape, raw):
            if name != target:
                return None
            assert dtype == "F8_E4M3", dtype
            codes = np.frombuffer(raw, np.uint8).copy()
            exp = (codes >> 3) & 0xF
            # Halve: exponent - 1 for normal values; a subnormal or the smallest normal halves its mantissa.
            normal = exp > 1
            codes[normal] -= 1 << 3
            low = ~normal & ((codes & 0x7F) != 0)
            mag = codes[low] & 0x7F
            codes[low] = (codes[low] & 0x80) | (mag >> 1)
            return codes.tobytes()
    changed = edit_tensors(weights, edit)
    if not changed:
        raise SystemExit(f"{a.fault}: no tensor changed")
    print(f"{a.fault}: changed {len(changed)} tensors ({changed[0]}{', ...' if len(changed) > 1 else ''})")


if __name__ == "__main__":
    main()
