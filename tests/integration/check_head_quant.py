#!/usr/bin/python3
"""What a quantized checkpoint of a model with a tied output layer says about lm_head, read
from the files (not from the producer's code):

  --kept DIR       quantized without --quantize-lm-head: no lm_head.weight stored, the config
                   still tied, and the exclude list (hf_quant_config.json exclude_modules and
                   config.json quantization_config.ignore) matches "lm_head" under fnmatch, as
                   ModelOpt's export lists a disabled tied head;
  --quantized DIR  with it: lm_head.weight stored as the format's codes (NVFP4: U8 [V, H/2] with
                   E4M3 weight_scale [V, H/16] and weight_scale_2; FP8: F8_E4M3 [V, H] with a
                   scalar weight_scale), an input_scale, tie_word_embeddings false, lm_head not
                   excluded, and the embedding stored as in the kept checkpoint (same bytes).
Exit 0 when every statement holds; each failed one is printed.
"""
import argparse
import fnmatch
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from safetensors_np import Checkpoint  # noqa: E402


def excluded(patterns, module):
    return any(fnmatch.fnmatchcase(module, p) or module.startswith(p + ".") for p in patterns)


def read(d):
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(d, "hf_quant_config.json"), encoding="utf-8") as f:
        hf = json.load(f)
    return cfg, hf["quantization"]["exclude_modules"], cfg["quantization_config"].get("ignore", []), Checkpoint(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kept", required=True)
    ap.add_argument("--quantized", required=True)
    ap.add_argument("--format", required=True, choices=("nvfp4", "fp8"))
    a = ap.parse_args()
    bad = []

    def expect(ok, what):
        print(("ok      " if ok else "FAILED  ") + what)
        if not ok:
            bad.append(what)

    cfg, hf_ex, ignore, ck = read(a.kept)
    expect("lm_head.weight" not in ck.names(), "kept: no lm_head.weight stored")
    expect(cfg.get("tie_word_embeddings") is True, "kept: config.json tie_word_embeddings true")
    if isinstance(cfg.get("text_config"), dict):
        expect(cfg["text_config"].get("tie_word_embeddings") is True, "kept: text_config still tied")
    expect(excluded(hf_ex, "lm_head"), "kept: hf_quant_config exclude_modules covers lm_head")
    expect(excluded(ignore, "lm_head"), "kept: quantization_config.ignore covers lm_head")
    embed_name = next(n for n in ("model.embed_tokens.weight", "model.language_model.embed_tokens.weight")
                      if n in ck.names())
    embed = ck.raw(embed_name).tobytes()
    V, H = ck.info(embed_name)["shape"]

    cfg, hf_ex, ignore, cq = read(a.quantized)
    names = set(cq.names())
    expect(cfg.get("tie_word_embeddings") is False, "quantized: config.json tie_word_embeddings false")
    if isinstance(cfg.get("text_config"), dict):
        expect(cfg["text_config"].get("tie_word_embeddings") is False, "quantized: text_config untied too")
    expect(not excluded(hf_ex, "lm_head"), "quantized: exclude_modules leave lm_head quantized")
    expect(not excluded(ignore, "lm_head"), "quantized: quantization_config.ignore leaves lm_head")
    expect(cq.raw(embed_name).tobytes() == embed, "quantized: embedding bytes as stored")
    info = cq.info("lm_head.weight") if "lm_head.weight" in names else {"dtype": None, "shape": None}
    if a.format == "nvfp4":
        expect(info["dtype"] == "U8" and list(info["shape"]) == [V, H // 2],
               f"quantized: lm_head.weight U8 [{V}, {H // 2}] (is {info['dtype']} {info['shape']})")
        s = cq.info("lm_head.weight_scale") if "lm_head.weight_scale" in names else {}
        expect(s.get("dtype") == "F8_E4M3" and list(s.get("shape", [])) == [V, H // 16],
               "quantized: lm_head.weight_scale F8_E4M3 [V, H/16]")
        expect("lm_head.weight_scale_2" in names, "quantized: lm_head.weight_scale_2")
    else:
        expect(info["dtype"] == "F8_E4M3" and list(info["shape"]) == [V, H],
               f"quantized: lm_head.weight F8_E4M3 [{V}, {H}] (is {info['dtype']} {info['shape']})")
        expect("lm_head.weight_scale" in names and list(cq.info("lm_head.weight_scale")["shape"]) == [],
               "quantized: scalar lm_head.weight_scale")
    expect("lm_head.input_scale" in names, "quantized: lm_head.input_scale (calibrated)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
