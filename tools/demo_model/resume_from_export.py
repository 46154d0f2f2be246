# Rebuilds a Qwen3.5 demo run folder from a shipped export, for when the run folder that produced
# it is gone (a new machine): the exported weights become the checkpoint, so the run continues from
# where the bundled model stands instead of from step 0.
#
#   /usr/bin/python3 tools/demo_model/resume_from_export.py --from models/demo-qwen35 --dir RUN \
#       --step 750 [--set KEY=JSON ...]
#   /usr/bin/python3 tools/demo_model/train.py --dir RUN --extend N
#
# What carries over, exactly: the weights as tern serves them (NVFP4 Linears dequantized to the
# E2M1 x E4M3 x scale_2 values the run's quantization-aware steps trained towards; BF16 tensors
# widened; A_log in f32), the tokenizer (the export's tokenizer.json), the hyperparameters
# (train.py's qwen3_5_moe defaults with --set, as the card's command line gives them), the step.
# What does not: AdamW's moments (fresh: the --extend warm restart ramps the learning rate up again,
# which is what a fresh optimizer needs) and the float weights' sub-quantization detail.
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import data  # noqa: E402
import export  # noqa: E402
import train  # noqa: E402
import warm_start  # noqa: E402


def load_export_into(model, export_dir):
    """Copy an export's tensors into model's parameters through export.hf_tensors35's naming (each
    exported tensor is a view of a parameter, so writing it writes the parameter). Every parameter
    must be written and every tensor used, each with the model's shape (a run.json that does not
    match the export's config.json fails here, naming the tensor)."""
    weights = warm_start.load_hf_weights(export_dir)
    with torch.no_grad():
        views = _param_views(model)
        names = {n for n, _ in views}
        extra = sorted(set(weights) - names)
        missing = sorted(names - set(weights))
        if extra or missing:
            raise SystemExit(f"resume_from_export.py: {export_dir}: tensors not in the model {extra[:6]}, "
                             f"model tensors not in the export {missing[:6]}")
        for n, view in views:
            w = weights[n]
            if tuple(w.shape) != tuple(view.shape):
                raise SystemExit(f"resume_from_export.py: {n}: export shape {tuple(w.shape)}, model {tuple(view.shape)}")
            view.copy_(w)
    return len(views)


def _param_views(model):
    """export.hf_tensors35's list with the tensors as views of the parameters (checked: the data of
    each lies inside one parameter's storage), so that copy_ into it writes the model."""
    spans = [(p.data_ptr(), p.data_ptr() + p.numel() * p.element_size()) for p in model.parameters()]
    out = []
    for name, t in export.hf_tensors35(model):
        ptr = t.data_ptr()
        if t.dtype != torch.float32 or not any(b <= ptr < e for b, e in spans):
            raise SystemExit(f"resume_from_export.py: {name} is not a view of a float32 parameter")
        out.append((name, t))
    return out


def main():
    ap = argparse.ArgumentParser(description="Rebuild a Qwen3.5 demo run folder from its export.")
    ap.add_argument("--from", dest="src", default="models/demo-qwen35", help="the exported model directory")
    ap.add_argument("--dir", required=True, help="the new run folder (must not hold a ckpt.pt)")
    ap.add_argument("--step", type=int, required=True, help="the step the export was taken at (its model card)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="run.json overrides the run was created with (the card's warm_start.py --set values)")
    args = ap.parse_args()

    ckpt_path = os.path.join(args.dir, "ckpt.pt")
    if os.path.exists(ckpt_path):
        raise SystemExit(f"resume_from_export.py: {ckpt_path} exists; this rebuilds a missing run")
    os.makedirs(args.dir, exist_ok=True)
    run = json.loads(json.dumps(train.ARCHS["qwen3_5_moe"]))
    train.apply_sets(run, args.set)
    run["steps"] = max(run["steps"], args.step)
    tok = warm_start.install_tokenizer(args.src, args.dir, run)
    run["model"] = dict(run["model"], vocab_size=-(-tok.size // 64) * 64)
    data.configure(run.get("style", "qwen3"))
    model = train.make_model(run)
    n = load_export_into(model, args.src)
    opt = train.make_optimizer(model, run)
    torch.manual_seed(run["seed"] * 1000 + args.step)
    bpe.write_json(os.path.join(args.dir, "run.json"), run)
    train.save_checkpoint(ckpt_path, model, opt, args.step, run)
    with open(os.path.join(args.dir, "train.log"), "a", encoding="utf-8") as f:
        f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + f"rebuilt from {args.src} (tools/demo_model/resume_from_export.py): "
                f"{n} tensors, step {args.step}, fresh AdamW state\n")
    print(f"wrote {ckpt_path}: {n} tensors from {args.src} at step {args.step}; continue with "
          f"train.py --dir {args.dir} --extend N")
    return 0


if __name__ == "__main__":
    sys.exit(main())
