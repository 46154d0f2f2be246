#!/usr/bin/env python3
"""Converts a Hugging Face Qwen3 / Qwen3-MoE checkpoint (as `tern synth` or `tern quantize`
writes it) into a GGUF file that llama.cpp loads, so that both engines run the same weights.

Needs NumPy and llama.cpp's own `gguf` package (its gguf-py folder): pass --gguf-py DIR or put
DIR on PYTHONPATH. torch, transformers and safetensors are not used.

  checkpoint  config.json, tokenizer.json (byte-level BPE), tokenizer_config.json,
              model.safetensors or shards listed in model.safetensors.index.json
  weights     BF16 / F16 / F32, or ModelOpt NVFP4 (U8 `weight` with E4M3 `weight_scale`
              [out, in/16], F32 `weight_scale_2` and `input_scale`)
  output      --outtype bf16: every matrix as stored (BF16 stays BF16, copied bit for bit);
              norms and the MoE router in F32, as llama.cpp's convert_hf_to_gguf.py writes them.
              An NVFP4 checkpoint is repacked losslessly into ggml's NVFP4 blocks (64 values:
              4 UE4M3 sub-block scales + 32 bytes of E2M1 codes) with `weight_scale_2` as a
              separate `.scale` tensor, the layout convert_hf_to_gguf.py writes for ModelOpt.

Layout facts taken from llama.cpp (conversion/qwen.py, conversion/base.py, gguf-py), checked
at the build this was written against (b10573):
  - Qwen2/Qwen3 q_proj/k_proj are NOT permuted (only the llama family is); qwen3 uses NEOX rope.
  - Per-expert `mlp.experts.{e}.{gate,up,down}_proj` are stacked into [n_expert, out, in].
  - The tokenizer is tokenizer.ggml.model "gpt2" with pre-tokenizer "qwen2"; ids missing from
    tokenizer.json up to config.vocab_size become "[PAD{i}]" of type UNUSED.
  - llama.cpp's qwen3moe always renormalizes the top-k router weights (norm_topk_prob=true).
Writing is streamed (tensor infos first, then one tensor at a time), so peak memory is one
stacked expert tensor, not the model.
"""

import argparse
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np

_STORAGE = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "U8": np.uint8,
            "F8_E4M3": np.uint8, "I64": np.int64, "I32": np.int32}

# Qwen2's pre-tokenizer regex; llama.cpp implements it as pre-tokenizer "qwen2".
_QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

_SIDE_SUFFIXES = (".weight_scale", ".weight_scale_2", ".input_scale", ".k_scale", ".v_scale",
                  ".weight_scale_inv", ".rotary_emb.inv_freq")


class Checkpoint:
    """Memory-mapped view of model.safetensors or a sharded set; get() returns a read-only
    array in the stored dtype (BF16 and F8 as unsigned integers)."""

    def __init__(self, model_dir: Path):
        index = model_dir / "model.safetensors.index.json"
        if index.exists():
            files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        else:
            files = ["model.safetensors"]
        self.entries = {}  # name -> (file, dtype, shape, begin, end)
        self._maps = {}
        for f in files:
            path = model_dir / f
            with open(path, "rb") as fh:
                n = struct.unpack("<Q", fh.read(8))[0]
                header = json.loads(fh.read(n))
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                if info["dtype"] not in _STORAGE:
                    raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
                b, e = info["data_offsets"]
                self.entries[name] = (path, info["dtype"], tuple(info["shape"]), 8 + n + b, 8 + n + e)

    def dtype(self, name):
        return self.entries[name][1]

    def shape(self, name):
        return self.entries[name][2]

    def get(self, name) -> np.ndarray:
        path, dtype, shape, begin, end = self.entries[name]
        if path not in self._maps:
            self._maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        return self._maps[path][begin:end].view(_STORAGE[dtype]).reshape(shape)


def to_f32(ckpt: Checkpoint, name: str) -> np.ndarray:
    a, dt = ckpt.get(name), ckpt.dtype(name)
    if dt == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


_E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def _e4m3_to_f32(b: np.ndarray) -> np.ndarray:
    b = b.astype(np.int32)
    exp, mant = (b >> 3) & 0xF, (b & 7).astype(np.float32)
    mag = np.where(exp == 0, mant * 2.0 ** -9, (1 + mant / 8) * np.exp2(exp.astype(np.float32) - 7))
    return np.where(b & 0x80, -mag, mag).astype(np.float32)


def nvfp4_dequant(w: np.ndarray, scale: np.ndarray, scale2: float) -> np.ndarray:
    """ModelOpt NVFP4 -> f32 [out, in]: element 2i in the low nibble, blocks of 16 share a scale."""
    out = w.shape[0]
    vals = np.stack([_E2M1[w & 0x0F], _E2M1[w >> 4]], axis=-1).reshape(out, -1, 16)
    return (vals * _e4m3_to_f32(scale)[:, :, None] * np.float32(scale2)).reshape(out, -1)


def nvfp4_repack(w: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """ModelOpt NVFP4 [out, in/2] u8 + E4M3 [out, in/16] -> ggml block_nvfp4 rows [out, in/64*36]:
    per 64 values, 4 UE4M3 scales (sign bit dropped) then 4x8 bytes, byte j of a 16-value
    sub-block holding value j (low nibble) and value j+8 (high nibble)."""
    out, n_blocks = scale.shape
    vals = np.stack([w & 0x0F, w >> 4], axis=-1).reshape(out, n_blocks, 16)
    qs = (vals[:, :, :8] | (vals[:, :, 8:] << 4)).astype(np.uint8)
    d = (scale.view(np.uint8) & 0x7F).reshape(out, n_blocks // 4, 4)
    qs = qs.reshape(out, n_blocks // 4, 32)
    return np.concatenate([d, qs], axis=-1).reshape(out, n_blocks // 4 * 36)


class Plan:
    """Tensors to write: (gguf name, numpy shape, numpy dtype, nbytes, ggml raw type, producer)."""

    def __init__(self, gguf):
        self.gguf, self.items = gguf, []

    def add(self, name, shape, dtype, raw_type, producer):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        self.items.append((name, tuple(shape), np.dtype(dtype), nbytes, raw_type, producer))


def plan_matrix(plan, ckpt, srcs, gname, force_f32=False):
    """srcs: one HF weight name, or one per expert (stacked on a new first axis)."""
    Q = plan.gguf.GGMLQuantizationType
    first = srcs[0]
    stack = (lambda fn: (lambda: np.stack([fn(s) for s in srcs]))) if len(srcs) > 1 else (lambda fn: (lambda: fn(first)))
    lead = (len(srcs),) if len(srcs) > 1 else ()
    dt, shape = ckpt.dtype(first), ckpt.shape(first)
    scale_name = first.removesuffix(".weight") + ".weight_scale"
    is_nvfp4 = dt == "U8" and scale_name in ckpt.entries and len(ckpt.shape(scale_name)) == 2
    if dt == "F8_E4M3":
        raise SystemExit(f"{first}: FP8 weights are not supported (llama.cpp has no FP8 type); "
                         "convert the BF16 checkpoint and quantize it with llama-quantize (Q8_0)")

    def side(s, suffix):  # F32 scalar beside weight s, 1.0 where absent
        n = s.removesuffix(".weight") + suffix
        return float(to_f32(ckpt, n).reshape(-1)[0]) if n in ckpt.entries else 1.0

    if is_nvfp4:
        out, in_ = shape[0], shape[1] * 2
        if in_ % 64 == 0:
            plan.add(gname, lead + (out, in_ // 64 * 36), np.uint8, Q.NVFP4,
                     stack(lambda s: nvfp4_repack(ckpt.get(s), ckpt.get(s.removesuffix(".weight") + ".weight_scale"))))
            for suffix, gsuffix in ((".weight_scale_2", ".scale"), (".input_scale", ".input_scale")):
                vals = np.array([side(s, suffix) for s in srcs], dtype=np.float32)
                if not np.allclose(vals, 1.0, atol=1e-6):  # as convert_hf_to_gguf.py: trivial scales omitted
                    plan.add(gname.removesuffix(".weight") + gsuffix, vals.shape, np.float32, None, lambda v=vals: v)
            return
        # ggml's NVFP4 block is 64 wide; narrower rows (tiny presets only) are dequantized.
        print(f"note: {gname}: row of {in_} is not a multiple of 64, written as F32", file=sys.stderr)
        plan.add(gname, lead + (out, in_), np.float32, None, stack(lambda s: nvfp4_dequant(
            ckpt.get(s), ckpt.get(s.removesuffix(".weight") + ".weight_scale"), side(s, ".weight_scale_2"))))
        return
    if force_f32 or len(shape) <= 1 or dt == "F32":
        plan.add(gname, lead + shape, np.float32, None, stack(lambda s: to_f32(ckpt, s)))
    elif dt == "BF16":
        plan.add(gname, lead + shape, np.uint16, Q.BF16, stack(lambda s: np.asarray(ckpt.get(s))))
    elif dt == "F16":
        plan.add(gname, lead + shape, np.float16, None, stack(lambda s: np.asarray(ckpt.get(s))))
    else:
        raise SystemExit(f"{first}: unsupported weight dtype {dt}")


def build_plan(gguf, arch, cfg, ckpt) -> Plan:
    n_layer = cfg["num_hidden_layers"]
    tmap = gguf.get_tensor_name_map(arch, n_layer)
    plan = Plan(gguf)
    experts = {}  # (layer, proj) -> {expert: name}
    expert_re = re.compile(r"^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$")

    def layer_key(n):
        m = re.search(r"\.layers\.(\d+)\.", n)
        return (int(m.group(1)) if m else (-1 if "embed" in n else 1 << 30), n)

    for name in sorted(ckpt.entries, key=layer_key):
        if name.endswith(_SIDE_SUFFIXES):
            continue
        if "mlp.experts." in name and not expert_re.match(name):
            raise SystemExit(f"{name}: only per-expert MoE weights (experts.N.*_proj) are supported")
        m = expert_re.match(name)
        if m:
            experts.setdefault((int(m.group(1)), m.group(3)), {})[int(m.group(2))] = name
            continue
        gname = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
        if gname is None:
            raise SystemExit(f"{name}: no GGUF name for this tensor")
        router = gname.endswith("ffn_gate_inp.weight")  # llama.cpp keeps the MoE router in F32
        plan_matrix(plan, ckpt, [name], gname, force_f32=router or gname.endswith("_norm.weight"))

    n_expert = cfg.get("num_experts", 0)
    for (layer, proj), by_id in sorted(experts.items()):
        if sorted(by_id) != list(range(n_expert)):
            raise SystemExit(f"layer {layer} {proj}: experts {sorted(by_id)[:4]}... != 0..{n_expert - 1}")
        gname = tmap.get_name(f"model.layers.{layer}.mlp.experts.{proj}", try_suffixes=()) + ".weight"
        plan_matrix(plan, ckpt, [by_id[e] for e in range(n_expert)], gname)
    return plan


def add_vocab(gguf, w, model_dir: Path, n_vocab: int):
    tok = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    model = tok["model"]
    if model.get("type") != "BPE":
        raise SystemExit(f"tokenizer.json: model type {model.get('type')}, expected byte-level BPE")
    pre = json.dumps(tok.get("pre_tokenizer"))
    if "ByteLevel" not in pre or json.dumps(_QWEN2_REGEX)[1:-1] not in pre:
        print("warning: pre-tokenizer differs from Qwen2's; writing pre 'qwen2' anyway", file=sys.stderr)
    Tt = gguf.TokenType
    text = {i: s for s, i in model["vocab"].items()}
    added = {t["id"]: t for t in tok.get("added_tokens", [])}
    tokens, types = [], []
    for i in range(n_vocab):
        if i in added:
            t = added[i]
            c = t["content"]
            tokens.append(c)
            special = t.get("special") or (c.startswith("<|") and c.endswith("|>"))
            types.append(Tt.CONTROL if special else Tt.USER_DEFINED)
        elif i in text:
            tokens.append(text[i])
            types.append(Tt.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(Tt.UNUSED)
    if max(list(text) + list(added)) >= n_vocab:
        raise SystemExit(f"tokenizer has ids >= vocab_size {n_vocab}")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    special = gguf.SpecialVocab(model_dir, load_merges=True, n_vocab=n_vocab)
    special.add_to_gguf(w, quiet=True)
    if "bos" not in special.add_special_token:
        w.add_add_bos_token(False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="output .gguf file")
    ap.add_argument("--gguf-py", type=Path, help="llama.cpp's gguf-py folder (else from PYTHONPATH)")
    args = ap.parse_args()
    if args.gguf_py:
        sys.path.insert(0, str(args.gguf_py))
    try:
        import gguf
    except ImportError:
        raise SystemExit("cannot import gguf: pass --gguf-py /path/to/llama.cpp/gguf-py")

    cfg = json.loads((args.model_dir / "config.json").read_text())
    cfg = {**cfg, **cfg.get("text_config", {})}
    archs = {"Qwen3ForCausalLM": gguf.MODEL_ARCH.QWEN3, "Qwen3MoeForCausalLM": gguf.MODEL_ARCH.QWEN3MOE}
    hf_arch = (cfg.get("architectures") or ["?"])[0]
    if hf_arch not in archs:
        raise SystemExit(f"architecture {hf_arch} is not supported (only {', '.join(archs)})")
    arch = archs[hf_arch]
    is_moe = arch == gguf.MODEL_ARCH.QWEN3MOE
    if is_moe and cfg.get("norm_topk_prob", True) is False:
        print("warning: norm_topk_prob=false, but llama.cpp's qwen3moe always renormalizes", file=sys.stderr)
    if is_moe and (cfg.get("mlp_only_layers") or cfg.get("decoder_sparse_step", 1) != 1):
        raise SystemExit("qwen3moe with dense layers (mlp_only_layers / decoder_sparse_step) is not supported")

    ckpt = Checkpoint(args.model_dir)
    plan = build_plan(gguf, arch, cfg, ckpt)
    nvfp4 = any(raw == gguf.GGMLQuantizationType.NVFP4 for *_, raw, _ in plan.items)

    w = gguf.GGUFWriter(args.out, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(args.model_dir.name)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    head_dim = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(cfg.get("rope_theta", 1e6))
    if cfg.get("rope_scaling"):
        raise SystemExit("rope_scaling is not supported by this converter")
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    if is_moe:
        w.add_expert_count(cfg["num_experts"])
        w.add_expert_used_count(cfg["num_experts_per_tok"])
        w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
    ft = gguf.LlamaFileType
    w.add_file_type(ft.MOSTLY_NVFP4 if nvfp4 else ft.MOSTLY_BF16)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_vocab(gguf, w, args.model_dir, cfg["vocab_size"])

    for name, shape, dtype, nbytes, raw, _ in plan.items:
        w.add_tensor_info(name, shape, dtype, nbytes, raw_dtype=raw)
    w.write_header_to_file(args.out)
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    total = 0
    for name, shape, dtype, nbytes, raw, produce in plan.items:
        data = np.ascontiguousarray(produce(), dtype=dtype)
        if data.shape != shape:
            raise SystemExit(f"{name}: produced {data.shape}, planned {shape}")
        w.write_tensor_data(data)
        total += nbytes
    w.close()
    print(f"wrote {args.out}: {len(plan.items)} tensors, {total / 2**20:.1f} MiB, "
          f"{'NVFP4' if nvfp4 else 'BF16'} matrices, arch {gguf.MODEL_ARCH_NAMES[arch]}")


if __name__ == "__main__":
    main()
