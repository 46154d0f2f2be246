#!/usr/bin/python3
"""Independent producer of NVFP4 / FP8 checkpoints in NVIDIA ModelOpt's layout (NumPy only).

  quantize_np.py --model IN --out OUT --format nvfp4|fp8|fp8-block [--exclude PATTERN]...
                 [--calibration-ids 1,2,3] [--block 128,128] [--report]

IN is a BF16/F16/F32 Hugging Face qwen3 / qwen3_moe directory (as `tern synth` or
tiny_checkpoint.py write it) or qwen3_5_moe / qwen3_next one (tiny_qwen35.py; calibrated on
qwen35_ref), with per-expert or fused 3-D experts. OUT gets model.safetensors,
config.json (with quantization_config), hf_quant_config.json (ModelOpt formats) and IN's other
files (tokenizer, generation_config). Written from ModelOpt's export code and spec §4 (see
quant_np.py for the sources and the exact float32 arithmetic), never from tern's C++.

What is quantized: every 2-D "*.weight" Linear except the embedding, what ModelOpt keeps by
default (DEFAULT_DISABLED, copied from modelopt_recipes/configs/ptq/units/
default_disabled_quantizers.yaml and matched like ModelOpt against "<module>.weight_quantizer":
lm_head, MoE routers mlp.gate, shared-expert gates, linear-attention in_proj_a/in_proj_b/conv1d,
mtp.*, vision) and modules matching --exclude (fnmatch on the module name, e.g.
"model.layers.1.self_attn*", the semantics of exclude_modules). Norms and biases stay as stored. Fused experts are
written per expert (mlp.experts.{E}.{gate,up,down}_proj), as ModelOpt exports them.

Tensors written per quantized Linear <m>:
  nvfp4      <m>.weight U8 [N, K/2], <m>.weight_scale F8_E4M3 [N, K/16], <m>.weight_scale_2 F32 [],
             <m>.input_scale F32 []
  fp8        <m>.weight F8_E4M3 [N, K], <m>.weight_scale F32 [], <m>.input_scale F32 []
  fp8-block  <m>.weight F8_E4M3 [N, K], <m>.weight_scale_inv F32 [ceil(N/128), ceil(K/128)]
             (Qwen/DeepSeek form; config.json quantization_config {"quant_method": "fp8",
             "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]})

Scale sharing, as ModelOpt's export does it (unified_export_hf.requantize_resmooth_fused_llm_layers
-> quant_utils.preprocess_linear_fusion for Linears that read the same input, skipped for FP8;
layer_utils.sync_moe_gate_up_amax for experts; core_utils.sync_moe_expert_amax at calibration):
  nvfp4: q/k/v of a layer share weight_scale_2 (from the max of their amaxes) and input_scale;
         gate/up of a dense MLP and of each expert likewise.
  fp8:   gate/up of each expert share weight_scale (max amax); nothing else is merged.
  both:  an expert's input amax is the max over all experts of the layer, per projection
         (gate, up, down), so every expert of a layer has the same input_scale per projection.

Calibration: the float64 reference (qwen3_ref.Model) runs the BF16 model once over the
calibration ids (--calibration-ids, default DEFAULT_CALIBRATION below); each Linear's input amax
is the max |x| over the tokens it saw (experts: only the tokens routed to them). input_scale =
f32(amax)/2688 (nvfp4) or /448 (fp8). fp8-block has dynamic activations: no input_scale.
"""

import argparse
import json
import os
import re
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_np  # noqa: E402
import qwen35_ref  # noqa: E402
import qwen3_ref  # noqa: E402
from safetensors_np import Checkpoint, load_config  # noqa: E402
from tiny_checkpoint import encode, write_safetensors  # noqa: E402

# ModelOpt's default-disabled quantizer-name patterns (spec §4.6, MO-rec), module-type rules
# (BatchNorm, LeakyReLU, Embedding) left out: this producer only considers 2-D Linear weights.
DEFAULT_DISABLED = ["*block_sparse_moe.gate*", "*linear_attn.conv1d*", "*linear_attn.in_proj_a*",
                    "*linear_attn.in_proj_b*", "*lm_head*", "*mixer.conv1d*", "*mlp.gate.*",
                    "*mlp.shared_expert_gate.*", "*output_layer*", "*proj_out.*", "*router*", "mtp.*",
                    "output.*", "*embed_vision*", "*vision_tower*", "*visual*", "*vision_model*",
                    "*multi_modal_projector*"]


def default_disabled(module):
    """True when a ModelOpt default-disabled pattern matches module's weight quantizer name."""
    return quant_np.module_excluded(module + ".weight_quantizer", DEFAULT_DISABLED)
PRODUCER = {"name": "modelopt", "version": "tern tests/reference/quantize_np.py"}


def reference_module(model_dir):
    """The reference for model_dir: qwen35_ref for qwen3_5_moe / qwen3_next, else qwen3_ref."""
    return qwen35_ref if qwen35_ref.is_hybrid_config(load_config(model_dir)[0]) else qwen3_ref


def default_calibration(vocab):
    """48 fixed ids spread over the vocabulary: (7 + 37·i) mod vocab."""
    return [(7 + 37 * i) % vocab for i in range(48)]


def parse_ids(text):
    ids = [int(t) for t in text.split(",") if t.strip()]
    if not ids:
        raise SystemExit("quantize_np.py: --calibration-ids is empty")
    return ids


def read_source(model_dir):
    """-> (ordered {name: ("raw", dtype, shape, bytes) | ("float", float32 array, dtype)}).
    2-D *.weight tensors other than the embedding are "float" (Linear candidates); fused 3-D
    experts are split into per-expert float entries; everything else passes through raw."""
    ckpt = Checkpoint(model_dir)
    out = {}
    for name in ckpt.names():
        info = ckpt.info(name)
        if info["dtype"] not in ("BF16", "F16", "F32", "F64"):
            raise SystemExit(f"quantize_np.py: {name} is {info['dtype']}: the input must be unquantized")
        fused = re.match(r"(.*\.mlp\.experts)\.(gate_up_proj|down_proj)$", name)
        if fused:
            a = ckpt.get_f64(name).astype(np.float32)
            for e in range(a.shape[0]):
                if fused.group(2) == "down_proj":
                    out[f"{fused.group(1)}.{e}.down_proj.weight"] = ("float", a[e], info["dtype"])
                else:
                    inter = a.shape[1] // 2
                    out[f"{fused.group(1)}.{e}.gate_proj.weight"] = ("float", a[e, :inter], info["dtype"])
                    out[f"{fused.group(1)}.{e}.up_proj.weight"] = ("float", a[e, inter:], info["dtype"])
        elif name.endswith(".weight") and len(info["shape"]) == 2 and not name.endswith("embed_tokens.weight"):
            out[name] = ("float", ckpt.get_f64(name).astype(np.float32), info["dtype"])
        else:
            out[name] = ("raw", info["dtype"], list(info["shape"]), ckpt.raw(name).tobytes())
    return out


def calibrate(model_dir, ids):
    """-> {module: float32 input amax} from one float64 reference forward over ids."""
    amax = {}

    def observe(name, x):
        m = float(np.max(np.abs(x))) if x.size else 0.0
        amax[name] = max(amax.get(name, 0.0), m)

    model = reference_module(model_dir).Model(model_dir, observer=observe)
    if max(ids) >= model.cfg.vocab_size or min(ids) < 0:
        raise SystemExit(f"quantize_np.py: calibration id outside [0, {model.cfg.vocab_size})")
    model.forward(ids)
    return {k: np.float32(v) for k, v in amax.items()}


def _group_key(module, fmt):
    """Modules sharing weight_scale_2 / weight_scale: (parent, kind) or None."""
    parent, _, leaf = module.rpartition(".")
    is_expert = re.search(r"\.experts\.\d+$", parent) is not None
    if fmt == "nvfp4":
        if leaf in ("q_proj", "k_proj", "v_proj"):
            return (parent, "qkv")
        if leaf in ("gate_proj", "up_proj"):
            return (parent, "gate_up")
    elif is_expert and leaf in ("gate_proj", "up_proj"):
        return (parent, "gate_up")
    return None


def shared_amaxes(quantized, weights, input_amax, fmt):
    """-> (weight amax {module: f32}, input amax {module: f32 or None}) after ModelOpt's syncs."""
    w_amax = {m: np.float32(np.max(np.abs(weights[m]))) for m in quantized}
    x_amax = {m: input_amax.get(m) for m in quantized}
    # experts: input amax = max over the layer's experts, per projection
    expert_groups = {}
    for m in quantized:
        hit = re.match(r"(.*\.experts)\.\d+\.(\w+)$", m)
        if hit:
            expert_groups.setdefault(hit.groups(), []).append(m)
    for members in expert_groups.values():
        seen = [x_amax[m] for m in members if x_amax[m] is not None]
        if seen:
            for m in members:
                x_amax[m] = max(seen)
    # fused groups: weight amax (and input amax) = max over the group
    groups = {}
    for m in quantized:
        key = _group_key(m, fmt)
        if key is not None:
            groups.setdefault(key, []).append(m)
    for members in groups.values():
        wa = max(w_amax[m] for m in members)
        xs = [x_amax[m] for m in members if x_amax[m] is not None]
        for m in members:
            w_amax[m] = wa
            if xs and fmt == "nvfp4":
                x_amax[m] = max(xs)
    return w_amax, x_amax


def modelopt_configs(fmt, exclude_modules):
    """-> (hf_quant_config.json dict, config.json quantization_config dict)."""
    q = {"quant_algo": "NVFP4" if fmt == "nvfp4" else "FP8", "kv_cache_quant_algo": None}
    if fmt == "nvfp4":
        q["group_size"] = quant_np.NVFP4_GROUP
    q["exclude_modules"] = exclude_modules
    hf = {"producer": PRODUCER, "quantization": q}
    if fmt == "nvfp4":
        group = {"input_activations": {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16},
                 "weights": {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16},
                 "targets": ["Linear"]}
    else:
        group = {"input_activations": {"dynamic": False, "num_bits": 8, "type": "float"},
                 "weights": {"dynamic": False, "num_bits": 8, "type": "float"}, "targets": ["Linear"]}
    qc = {"config_groups": {"group_0": group}, "ignore": exclude_modules, "quant_algo": q["quant_algo"],
          "producer": PRODUCER, "quant_method": "modelopt"}
    return hf, qc


def quantize_dir(model_dir, out_dir, fmt, exclude=(), calibration_ids=None, block=(128, 128), log=print,
                 quantize_lm_head=False):
    """Writes the quantized checkpoint. -> {module: format} of the quantized Linears.
    quantize_lm_head: the output layer is quantized too (TensorRT-LLM's --quantize_lm_head); a head
    tied to the embedding becomes its own lm_head.weight, made from the embedding, and the config
    is untied."""
    if fmt not in ("nvfp4", "fp8", "fp8-block"):
        raise ValueError(f"unknown format {fmt!r}")
    if quantize_lm_head and fmt == "fp8-block":
        raise SystemExit("quantize_np.py: --quantize-lm-head goes with nvfp4 and fp8")
    text_cfg, full_cfg = load_config(model_dir)
    if full_cfg.get("quantization_config") or os.path.exists(os.path.join(model_dir, "hf_quant_config.json")):
        raise SystemExit(f"quantize_np.py: {model_dir} is already quantized")
    cfg = reference_module(model_dir).parse_config(text_cfg)
    src = read_source(model_dir)
    untie = False
    if quantize_lm_head and "lm_head.weight" not in src:
        embed = next((n for n in ("model.embed_tokens.weight", "model.language_model.embed_tokens.weight")
                      if n in src), None)
        if embed is None:
            raise SystemExit("quantize_np.py: --quantize-lm-head: no lm_head.weight and no embedding to untie")
        dtype = src[embed][1]
        src["lm_head.weight"] = ("float", Checkpoint(model_dir).get_f64(embed).astype(np.float32), dtype)
        untie = True
    linears = {n[: -len(".weight")]: v[1] for n, v in src.items() if v[0] == "float"}

    def disabled(m):
        return default_disabled(m) and not (quantize_lm_head and m == "lm_head")

    quantized = [m for m in linears if not (disabled(m) or quant_np.module_excluded(m, list(exclude)))]
    if untie and "lm_head" not in quantized:  # (excluded after all: stays tied, nothing written)
        del src["lm_head.weight"], linears["lm_head"]
        untie = False
    unquantized = [m for m in linears if m not in quantized]
    if not any(m == "lm_head" for m in unquantized):
        unquantized.append("lm_head")  # tied: the module exists (disabled) though its weight is not stored
    input_amax = {}
    if fmt != "fp8-block":
        ids = calibration_ids or default_calibration(cfg.vocab_size)
        input_amax = calibrate(model_dir, ids)
    w_amax, x_amax = shared_amaxes(quantized, linears, input_amax, "nvfp4" if fmt == "nvfp4" else "fp8")

    tensors = {}
    for name, v in src.items():
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        if v[0] == "raw":
            tensors[name] = (v[1], v[2], v[3])
            continue
        w = v[1]
        if module not in quantized:
            # unquantized Linear: keep its dtype (a split fused expert keeps the fused tensor's)
            tensors[name] = encode(v[2], w)
            continue
        n, k = w.shape
        if fmt == "nvfp4" and k % quant_np.NVFP4_GROUP:
            raise SystemExit(f"quantize_np.py: {name} has input dimension {k}, not a multiple of 16 "
                             "(NVFP4); --exclude it or use another format")
        if fmt == "nvfp4":
            packed, scale, wsf2 = quant_np.quantize_nvfp4(w, amax=w_amax[module])
            tensors[name] = ("U8", [n, k // 2], packed.tobytes())
            tensors[module + ".weight_scale"] = ("F8_E4M3", [n, k // 16], scale.tobytes())
            tensors[module + ".weight_scale_2"] = ("F32", [], np.float32(wsf2).astype("<f4").tobytes())
        elif fmt == "fp8":
            q, scale = quant_np.quantize_fp8(w, amax=w_amax[module])
            tensors[name] = ("F8_E4M3", [n, k], q.tobytes())
            tensors[module + ".weight_scale"] = ("F32", [], np.float32(scale).astype("<f4").tobytes())
        else:
            q, scale_inv = quant_np.quantize_fp8_block(w, block)
            tensors[name] = ("F8_E4M3", [n, k], q.tobytes())
            tensors[module + ".weight_scale_inv"] = ("F32", list(scale_inv.shape), scale_inv.astype("<f4").tobytes())
        if fmt != "fp8-block" and x_amax.get(module) is not None:
            s = quant_np.activation_scale(x_amax[module], fmt)
            tensors[module + ".input_scale"] = ("F32", [], np.float32(s).astype("<f4").tobytes())

    os.makedirs(out_dir, exist_ok=True)
    skip = {"config.json", "hf_quant_config.json", "model.safetensors.index.json"}
    for f in sorted(os.listdir(model_dir)):
        p = os.path.join(model_dir, f)
        if os.path.isfile(p) and f not in skip and not f.endswith(".safetensors"):
            shutil.copyfile(p, os.path.join(out_dir, f))
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, {"format": "pt"})
    out_cfg = dict(full_cfg)
    if "lm_head" in quantized:  # a quantized head is never tied, stored or not
        out_cfg["tie_word_embeddings"] = False
        if isinstance(out_cfg.get("text_config"), dict):
            out_cfg["text_config"] = dict(out_cfg["text_config"], tie_word_embeddings=False)
    if fmt == "fp8-block":
        qc = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
              "weight_block_size": list(block)}
        user_excluded = [m for m in unquantized if quant_np.module_excluded(m, list(exclude))]
        if user_excluded:
            qc["ignored_layers"] = sorted(user_excluded)  # vLLM's Fp8Config key (exact module names)
        out_cfg["quantization_config"] = qc
        hf_path = os.path.join(out_dir, "hf_quant_config.json")
        if os.path.exists(hf_path):
            os.remove(hf_path)
    else:
        excl = quant_np.summarize_excludes(unquantized, quantized)
        hf, qc = modelopt_configs(fmt, excl)
        out_cfg["quantization_config"] = qc
        with open(os.path.join(out_dir, "hf_quant_config.json"), "w", encoding="utf-8") as f:
            json.dump(hf, f, indent=2)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(out_cfg, f, indent=2)
    log(f"quantize_np: {len(quantized)} Linears -> {fmt}, {len(unquantized)} kept ({out_dir})")
    return {m: fmt for m in quantized}


def quality(bf16_dir, quant_dir, ids, w4a4=False):
    """-> dict: top-1 agreement, mean KL(bf16 || quant) in nats, max normalised RMS error of the
    logits, over one teacher-forced pass of ids (reported, never asserted)."""
    a = reference_module(bf16_dir).forward(bf16_dir, ids)
    b = reference_module(quant_dir).forward(quant_dir, ids, w4a4=w4a4)
    pa, pb = qwen3_ref.softmax(a), qwen3_ref.softmax(b)
    kl = np.sum(pa * (np.log(pa) - np.log(pb)), axis=-1)
    nrms = np.sqrt(np.mean((a - b) ** 2, axis=-1)) / np.sqrt(np.mean(a * a, axis=-1))
    return {"top1": float(np.mean(np.argmax(a, -1) == np.argmax(b, -1))), "kl": float(np.mean(kl)),
            "nrmse_max": float(np.max(nrms))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="BF16/F16/F32 model directory")
    ap.add_argument("--out", required=True)
    ap.add_argument("--format", required=True, choices=("nvfp4", "fp8", "fp8-block"))
    ap.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                    help="keep modules matching this fnmatch pattern unquantized (repeatable)")
    ap.add_argument("--calibration-ids", help="comma-separated token ids (default: 48 fixed ids)")
    ap.add_argument("--block", default="128,128", help="fp8-block block size bn,bk (default 128,128)")
    ap.add_argument("--quantize-lm-head", action="store_true",
                    help="quantize the output layer too (a tied head gets its own tensor)")
    ap.add_argument("--report", action="store_true", help="print top-1 / KL against the input model")
    args = ap.parse_args(argv)
    ids = parse_ids(args.calibration_ids) if args.calibration_ids else None
    block = tuple(int(b) for b in args.block.split(","))
    quantize_dir(args.model, args.out, args.format, args.exclude, ids, block,
                 quantize_lm_head=args.quantize_lm_head)
    if args.report:
        cfg = reference_module(args.model).parse_config(load_config(args.model)[0])
        q = quality(args.model, args.out, ids or default_calibration(cfg.vocab_size))
        print(f"quality vs input: top-1 agreement {q['top1']:.3f}, mean KL {q['kl']:.3e} nats, "
              f"max logits nrmse {q['nrmse_max']:.3e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
