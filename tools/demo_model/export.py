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


def write_safetensors(path, tensors, metadata=None):
    """tensors: [(name, float32 tensor)] -> BF16 safetensors file (round to nearest even)."""
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        b = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
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
    """Round every parameter to BF16 in place (the exported weights), keeping float32 storage."""
    with torch.no_grad():
        for p in model.parameters():
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
    write_safetensors(os.path.join(args.out, "model.safetensors"), hf_tensors(model),
                      {"format": "pt", "step": str(ck["step"])})
    print(f"step {ck['step']} -> {args.out} ({os.path.getsize(os.path.join(args.out, 'model.safetensors')) / 1e6:.1f} MB BF16)")
    if not args.no_goldens:
        bf16_round_(model)
        model.quant = False
        cases = write_goldens(model, tok, os.path.join(args.out, "goldens.json"))
        judged = [c for c in cases if c["judged_ok"] is not None]
        print(f"goldens: {len(cases)} prompts; torch judges {sum(c['judged_ok'] for c in judged)}/{len(judged)} right")
        if args.nvfp4_goldens:
            apply_nvfp4_(model)
            cases = write_goldens(model, tok, os.path.join(args.out, "goldens_nvfp4.json"))
            judged = [c for c in cases if c["judged_ok"] is not None]
            print(f"NVFP4 goldens: torch judges {sum(c['judged_ok'] for c in judged)}/{len(judged)} right")


if __name__ == "__main__":
    main()
