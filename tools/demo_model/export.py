# Exports a training checkpoint as a Hugging Face qwen3_moe checkpoint directory:
# config.json (Qwen3MoeForCausalLM), model.safetensors in BF16 (written here: an 8-byte header
# length, the JSON header, raw little-endian tensors; no safetensors package), tokenizer.json,
# tokenizer_config.json, generation_config.json, and goldens.json: for a fixed prompt set (the
# battery's requests and a few dozen arithmetic prompts, thinking on and off) the prompt token
# ids and PyTorch's greedy output ids, computed with the exported BF16 weights in float32 math,
# with the top-1/top-2 logit margin of every step (a CI test comparing tern may accept a
# divergence only after a near-tie); with --nvfp4-goldens also goldens_nvfp4.json, the same with
# the attention and expert weights NVFP4-quantized as ModelOpt does (model.nvfp4_dequantized).
#
#   /usr/bin/python3 tools/demo_model/export.py --dir .train/demo --out OUT [--ckpt FILE]
import argparse
import json
import os
import shutil
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import data  # noqa: E402
import train  # noqa: E402
from model import apply_nvfp4_  # noqa: E402
from model35 import Qwen35Moe, apply_nvfp4_35_  # noqa: E402


def hf_tensors(model):
    """-> [(HF name, float32 tensor)] in Qwen3MoeForCausalLM's naming (per-expert tensors)."""
    c = model.c
    out = [("model.embed_tokens.weight", model.embed_tokens.weight)]
    for i, l in enumerate(model.layers):
        p = f"model.layers.{i}."
        a = l.self_attn
        out += [(p + "input_layernorm.weight", l.input_layernorm.weight),
                (p + "self_attn.q_proj.weight", a.q_proj.weight), (p + "self_attn.k_proj.weight", a.k_proj.weight),
                (p + "self_attn.v_proj.weight", a.v_proj.weight), (p + "self_attn.o_proj.weight", a.o_proj.weight),
                (p + "self_attn.q_norm.weight", a.q_norm.weight), (p + "self_attn.k_norm.weight", a.k_norm.weight),
                (p + "post_attention_layernorm.weight", l.post_attention_layernorm.weight),
                (p + "mlp.gate.weight", l.mlp.gate.weight)]
        inter = c.moe_intermediate_size
        for e in range(c.num_experts):
            q = f"{p}mlp.experts.{e}."
            out += [(q + "gate_proj.weight", l.mlp.gate_up[e, :inter]), (q + "up_proj.weight", l.mlp.gate_up[e, inter:]),
                    (q + "down_proj.weight", l.mlp.down[e])]
    out.append(("model.norm.weight", model.norm.weight))
    if model.lm_head is not None:
        out.append(("lm_head.weight", model.lm_head.weight))
    return [(n, t.detach().float().contiguous()) for n, t in out]


def hf_tensors35(model):
    """-> [(HF name, float32 tensor)] of a Qwen35Moe in the published Qwen3_5MoeForConditionalGeneration
    layout: model.language_model.* (split GDN projections, per-expert tensors), lm_head, mtp.*."""
    c = model.c

    def layer(p, l):
        out = [(p + "input_layernorm.weight", l.input_layernorm.weight),
               (p + "post_attention_layernorm.weight", l.post_attention_layernorm.weight)]
        if l.kind == "linear_attention":
            a, q = l.linear_attn, p + "linear_attn."
            out += [(q + "in_proj_qkv.weight", a.in_proj_qkv.weight), (q + "in_proj_z.weight", a.in_proj_z.weight),
                    (q + "in_proj_b.weight", a.in_proj_b.weight), (q + "in_proj_a.weight", a.in_proj_a.weight),
                    (q + "conv1d.weight", a.conv1d.weight), (q + "dt_bias", a.dt_bias), (q + "A_log", a.A_log),
                    (q + "norm.weight", a.norm_weight), (q + "out_proj.weight", a.out_proj.weight)]
        else:
            a, q = l.self_attn, p + "self_attn."
            out += [(q + n + ".weight", getattr(a, n).weight)
                    for n in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm")]
        m, q = l.mlp, p + "mlp."
        inter = c.moe_intermediate_size
        out.append((q + "gate.weight", m.routed.gate.weight))
        for e in range(c.num_experts):
            x = f"{q}experts.{e}."
            out += [(x + "gate_proj.weight", m.routed.gate_up[e, :inter]),
                    (x + "up_proj.weight", m.routed.gate_up[e, inter:]), (x + "down_proj.weight", m.routed.down[e])]
        out += [(q + "shared_expert.gate_proj.weight", m.shared_gate_proj.weight),
                (q + "shared_expert.up_proj.weight", m.shared_up_proj.weight),
                (q + "shared_expert.down_proj.weight", m.shared_down_proj.weight),
                (q + "shared_expert_gate.weight", m.shared_expert_gate.weight)]
        return out

    out = [("model.language_model.embed_tokens.weight", model.embed_tokens.weight)]
    for i, l in enumerate(model.layers):
        out += layer(f"model.language_model.layers.{i}.", l)
    out.append(("model.language_model.norm.weight", model.norm.weight))
    if model.lm_head is not None:
        out.append(("lm_head.weight", model.lm_head.weight))
    if model.mtp is not None:
        t = model.mtp
        out += [("mtp.fc.weight", t.fc.weight), ("mtp.pre_fc_norm_embedding.weight", t.pre_fc_norm_embedding.weight),
                ("mtp.pre_fc_norm_hidden.weight", t.pre_fc_norm_hidden.weight), ("mtp.norm.weight", t.norm.weight)]
        for k, l in enumerate(t.layers):
            out += layer(f"mtp.layers.{k}.", l)
    return [(n, t.detach().float().contiguous()) for n, t in out]


F32_TENSORS = ("A_log",)  # kept in float32, as the published Qwen3.5 checkpoints keep them


def write_safetensors(path, tensors, metadata=None):
    """tensors: [(name, float32 tensor)] -> safetensors file, BF16 (round to nearest even) except
    names ending in F32_TENSORS, written as F32."""
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        if name.endswith(F32_TENSORS):
            b, dt = t.numpy().astype("<f4").tobytes(), "F32"
        else:
            b, dt = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes(), "BF16"
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = metadata or {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def bf16_round_(model):
    """Round every parameter to BF16 in place (the exported weights, F32_TENSORS excepted), keeping
    float32 storage."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.endswith(F32_TENSORS):
                p.copy_(p.to(torch.bfloat16).float())


def golden_samples():
    """The fixed prompt set: battery requests + arithmetic (thinking off and on) + a few others."""
    out = [(name, s) for name, s in zip(
        ["ok", "mul_off_17x19", "mul_on_17x19", "recall_marigold", "tool_call", "tool_answer", "paris_chat",
         "paris_raw", "sentence", "colors", "ocean", "count"], data.battery_samples())]
    pairs = data.eval_pairs("seen", 16, seed=5) + data.eval_pairs("held_out", 4, seed=5)
    for thinking in (False, True):
        for (a, b), s in zip(pairs, data.mul_eval_samples(pairs, thinking)):
            out.append((f"mul_{'on' if thinking else 'off'}_{a}x{b}", s))
    rng_samples = [data.make_sample(4243, i) for i in range(400)]
    for kind in ("addsub_off", "addsub_on", "echo", "capital", "recall", "tool_call", "tool_answer", "retrieval"):
        for j, s in enumerate([s for s in rng_samples if s.kind == kind][:2]):
            out.append((f"{kind}_{j}", s))
    return out


@torch.no_grad()
def greedy_with_margins(model, prompt, steps, stop):
    """Greedy decode one prompt without padding -> (ids, margins) (top-1 minus top-2 logit per step)."""
    if isinstance(model, Qwen35Moe):
        return model.greedy_with_margins(prompt, steps, stop)
    caches = [{} for _ in model.layers]
    ids, margins = [], []
    x = torch.tensor([prompt])
    pos = torch.arange(len(prompt))[None]
    mask = torch.full((len(prompt), len(prompt)), -1e9).triu(1)[None, None]
    for _ in range(steps):
        h, _ = model.hidden(x, pos, mask, caches)
        logits = model.logits(h[0, -1])
        top = torch.topk(logits, 2)
        nxt = int(top.indices[0])
        ids.append(nxt)
        margins.append(round(float(top.values[0] - top.values[1]), 4))
        if nxt in stop:
            break
        x = torch.tensor([[nxt]])
        pos = pos[:, -1:] + 1
        mask = None
    return ids, margins


def write_goldens(model, tok, path, max_new=96):
    stop = {tok.token_id("<|im_end|>"), tok.token_id("<|endoftext|>")}
    cases = []
    for name, s in golden_samples():
        prompt = tok.encode(s.prompt_text())
        ids, margins = greedy_with_margins(model, prompt, max_new, stop)
        text = tok.decode(ids)
        cases.append({"name": name, "kind": s.kind, "thinking": s.thinking, "chat": s.messages is not None,
                      "prompt_ids": prompt, "output_ids": ids, "margins": margins, "output_text": text,
                      "judged_ok": bool(data.judge(s, text)) if s.kind != "generic" else None})
    doc = {"about": "PyTorch greedy outputs of this checkpoint's BF16 weights (float32 math), for comparison "
                    "with tern; output_ids end at the first <|im_end|>/<|endoftext|> or after max_new_tokens",
           "max_new_tokens": max_new, "stop_ids": sorted(stop), "cases": cases}
    bpe.write_json(path, doc, indent=1)
    return cases


def main():
    ap = argparse.ArgumentParser(description="Export a demo-model checkpoint to a Hugging Face directory.")
    ap.add_argument("--dir", required=True, help="training run folder (run.json, tokenizer/, ckpt.pt)")
    ap.add_argument("--ckpt", help="checkpoint file (default DIR/ckpt.pt)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-goldens", action="store_true")
    ap.add_argument("--nvfp4-goldens", action="store_true",
                    help="also goldens_nvfp4.json: greedy outputs with the BF16 weights NVFP4-quantized as ModelOpt "
                         "does (attention and expert weights; what `tern quantize --format nvfp4` should produce)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, ck = train.load_model(args.ckpt or os.path.join(args.dir, "ckpt.pt"))
    tok_dir = os.path.join(args.dir, "tokenizer")
    tok = bpe.Tokenizer.load(os.path.join(tok_dir, "tokenizer.json"))
    os.makedirs(args.out, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copyfile(os.path.join(tok_dir, f), os.path.join(args.out, f))
    eos = tok.token_id("<|im_end|>")
    cfg = model.c.hf_config(bos_token_id=tok.token_id("<|endoftext|>"), eos_token_id=eos)
    bpe.write_json(os.path.join(args.out, "config.json"), cfg)
    tensors = hf_tensors35(model) if isinstance(model, Qwen35Moe) else hf_tensors(model)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors,
                      {"format": "pt", "step": str(ck["step"])})
    print(f"step {ck['step']} -> {args.out} ({os.path.getsize(os.path.join(args.out, 'model.safetensors')) / 1e6:.1f} MB BF16)")
    if not args.no_goldens:
        bf16_round_(model)
        model.quant = False
        cases = write_goldens(model, tok, os.path.join(args.out, "goldens.json"))
        judged = [c for c in cases if c["judged_ok"] is not None]
        print(f"goldens: {len(cases)} prompts; torch judges {sum(c['judged_ok'] for c in judged)}/{len(judged)} right")
        if args.nvfp4_goldens:
            (apply_nvfp4_35_ if isinstance(model, Qwen35Moe) else apply_nvfp4_)(model)
            cases = write_goldens(model, tok, os.path.join(args.out, "goldens_nvfp4.json"))
            judged = [c for c in cases if c["judged_ok"] is not None]
            print(f"NVFP4 goldens: torch judges {sum(c['judged_ok'] for c in judged)}/{len(judged)} right")


if __name__ == "__main__":
    main()
