# Trains the demo Qwen3-MoE on data.py's synthetic chats; resumable, one command:
#
#   /usr/bin/python3 tools/demo_model/train.py --dir .train/demo [--steps N] [options]
#
# The first run writes DIR/run.json (every hyperparameter) and the tokenizer (DIR/tokenizer/,
# trained by bpe.py); later runs with the same --dir resume from DIR/ckpt.pt exactly where it
# stopped (model, optimizer, step, data position, RNG) and ignore the other options except
# --steps / --until-step, which may extend or shorten the run. Step s trains on samples
# [s*B, (s+1)*B) of the data stream, so the data position is the step. Every --ckpt-minutes the
# state is written to ckpt.pt.tmp and renamed over ckpt.pt (the previous one is kept as
# ckpt-prev.pt); also on SIGTERM/SIGINT and at the end. Logs go to stdout and DIR/train.log, the
# periodic greedy evaluation (evaluate.py) to DIR/eval.jsonl.
#
# Each step: B samples are tokenized, sorted by length and cut into micro-batches of about
# --micro-tokens padded tokens (conversations of similar length together, right-padded, causal
# mask, positions from 0), gradients accumulated; the loss is the cross entropy on assistant
# tokens (weighted per sample) averaged over the step, plus the load-balancing loss. AdamW,
# linear warmup then cosine decay to --final-lr-frac. From --qat-from on (fraction of the
# steps), attention and expert weights are fake-quantized to NVFP4 in the forward pass.
import argparse
import dataclasses
import fcntl
import json
import math
import os
import signal
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import data  # noqa: E402
import evaluate  # noqa: E402
from model import Config, Qwen3Moe, count_params, nvfp4_bytes  # noqa: E402
from model35 import Config35, Qwen35Moe, count_params35, nvfp4_bytes35  # noqa: E402

DEFAULTS = dict(
    arch="qwen3_moe", style="qwen3", seed=1, vocab=2048, steps=6000, batch=128, micro_tokens=2048, max_len=448, lr=2e-3, warmup=200,
    final_lr_frac=0.05, weight_decay=0.05, beta2=0.95, grad_clip=1.0, qat_from=0.9, holdout_until=0.75,
    eval_every=300, ckpt_minutes=4.0, log_every=20, threads=1,
    model=dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2, head_dim=32,
               num_experts=16, num_experts_per_tok=2, moe_intermediate_size=192, rope_theta=10000.0,
               tie_word_embeddings=False, router_aux_loss_coef=0.01),
)

# The second demo model (models/demo-qwen35): Qwen3.5-MoE with both layer kinds, a shared expert
# and one MTP layer trained jointly (model35.py), on the same tasks in Qwen3.5's chat style.
DEFAULTS_35 = dict(DEFAULTS, arch="qwen3_5_moe", style="qwen3_5", steps=6000,
                   model=dict(hidden_size=192, num_hidden_layers=4, full_attention_interval=2,
                              num_attention_heads=6, num_key_value_heads=2, head_dim=32,
                              partial_rotary_factor=0.25, rope_theta=10000.0, linear_conv_kernel_dim=4,
                              linear_key_head_dim=32, linear_value_head_dim=32, linear_num_key_heads=2,
                              linear_num_value_heads=4, num_experts=16, num_experts_per_tok=2,
                              moe_intermediate_size=192, shared_expert_intermediate_size=192,
                              mtp_num_hidden_layers=1, mtp_loss_weight=0.3, router_aux_loss_coef=0.01))
ARCHS = {"qwen3_moe": DEFAULTS, "qwen3_5_moe": DEFAULTS_35}


def make_model(run):
    """-> the PyTorch model of run.json's arch and model config."""
    if run.get("arch", "qwen3_moe") == "qwen3_5_moe":
        return Qwen35Moe(Config35(**run["model"]))
    return Qwen3Moe(Config(**run["model"]))


def model_size(model):
    """-> (total, active without embeddings, NVFP4 checkpoint bytes)."""
    if isinstance(model, Qwen35Moe):
        return (*count_params35(model), nvfp4_bytes35(model))
    return (*count_params(model), nvfp4_bytes(model))


class Log:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")

    def __call__(self, msg):
        line = time.strftime("%Y-%m-%d %H:%M:%S ") + msg
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


def encode_sample(tok, s, max_len):
    """-> (inputs, targets, weights) lists for one sample, or None if longer than max_len."""
    p = tok.encode(s.prompt_text())
    c = tok.encode(s.completion_text())
    ids = p + c
    if len(ids) - 1 > max_len:
        return None
    w = [0.0] * (len(p) - 1) + [s.weight] * len(c)
    return ids[:-1], ids[1:], w


def micro_batches(encoded, micro_tokens):
    """Sort by length and group so that each group's padded size stays near micro_tokens.
    -> list of (ids, targets, weights) tensors [b, T]."""
    encoded = sorted(encoded, key=lambda e: len(e[0]))
    groups, cur = [], []
    for e in encoded:
        if cur and (len(cur) + 1) * len(e[0]) > micro_tokens:
            groups.append(cur)
            cur = []
        cur.append(e)
    if cur:
        groups.append(cur)
    out = []
    for g in groups:
        T = max(len(e[0]) for e in g)
        ids = torch.zeros(len(g), T, dtype=torch.long)
        tgt = torch.zeros(len(g), T, dtype=torch.long)
        wts = torch.zeros(len(g), T)
        for i, (a, b, w) in enumerate(g):
            ids[i, :len(a)] = torch.tensor(a)
            tgt[i, :len(b)] = torch.tensor(b)
            wts[i, :len(w)] = torch.tensor(w)
        out.append((ids, tgt, wts))
    return out


def lr_at(run, step):
    if step < run["warmup"]:
        return run["lr"] * (step + 1) / run["warmup"]
    t = min(1.0, (step - run["warmup"]) / max(1, run["steps"] - run["warmup"]))
    f = run["final_lr_frac"]
    lr = run["lr"] * (f + (1 - f) * 0.5 * (1 + math.cos(math.pi * t)))
    # A run extended past its end (--extend) ramps up again to the longer schedule's rate.
    r = run.get("rewarm")
    if r and r[0] <= step < r[1]:
        lr *= (step - r[0] + 1) / (r[1] - r[0])
    return lr


def make_optimizer(model, run):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if name.endswith("norm.weight") or "embed_tokens" in name else decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": run["weight_decay"]},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=run["lr"], betas=(0.9, run["beta2"]), eps=1e-8)


def save_checkpoint(path, model, opt, step, run):
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step, "run": run,
             "torch_rng": torch.get_rng_state()}
    tmp = path + ".tmp"
    torch.save(state, tmp)
    if os.path.exists(path):
        os.replace(path, os.path.join(os.path.dirname(path), "ckpt-prev.pt"))
    os.replace(tmp, path)


def load_model(ckpt_path):
    """-> (model, checkpoint dict) from a ckpt.pt (for evaluate.py / export.py)."""
    ck = torch.load(ckpt_path, map_location="cpu")
    data.configure(ck["run"].get("style", "qwen3"))
    model = make_model(ck["run"])
    model.load_state_dict(ck["model"])
    model.eval()
    return model, ck


def apply_sets(run, sets):
    """--set KEY=JSON overrides into the run dict (dotted keys reach into model)."""
    for kv in sets:
        k, v = kv.split("=", 1)
        tgt = run
        *path, last = k.split(".")
        for p in path:
            tgt = tgt[p]
        tgt[last] = json.loads(v)


def main():
    ap = argparse.ArgumentParser(description="Train (or resume) the tern demo model.")
    ap.add_argument("--dir", required=True, help="run folder: run.json, tokenizer/, ckpt.pt, train.log")
    ap.add_argument("--steps", type=int, help=f"total optimizer steps (default {DEFAULTS['steps']}); "
                                               "may be changed on resume (moves the cosine schedule)")
    ap.add_argument("--until-step", type=int, help="stop (with a checkpoint) at this step this time")
    ap.add_argument("--extend", type=int, metavar="N",
                    help="continue a run past its current step to N steps in all: the cosine schedule is "
                         "recomputed for N and the learning rate ramps up to it again over `warmup` steps "
                         "(a warm restart; --steps alone would jump to the longer schedule's rate)")
    ap.add_argument("--arch", choices=sorted(ARCHS), default="qwen3_moe",
                    help="at creation: the model family and its defaults (qwen3_5_moe: the Qwen3.5 demo model)")
    ap.add_argument("--mtp-depth", type=int, metavar="D",
                    help="qwen3_5_moe: train the MTP head over D chained steps from now on (model35.py; "
                         "may be changed on resume: the parameters are the same)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="override a run.json field at creation, e.g. --set lr=0.001 --set model.num_experts=8")
    args = ap.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    # One trainer per run folder: two would interleave their checkpoints.
    lock = open(os.path.join(args.dir, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"train.py: another train.py is running on {args.dir}")
    log = Log(os.path.join(args.dir, "train.log"))
    run_path = os.path.join(args.dir, "run.json")
    ckpt_path = os.path.join(args.dir, "ckpt.pt")
    if os.path.exists(run_path):
        with open(run_path) as f:
            run = json.load(f)
    else:
        run = json.loads(json.dumps(ARCHS[args.arch]))
        apply_sets(run, args.set)
    if args.steps:
        run["steps"] = args.steps
    if args.mtp_depth is not None:
        if run.get("arch") != "qwen3_5_moe" or args.mtp_depth < 1:
            sys.exit("train.py: --mtp-depth takes 1 or more, on a qwen3_5_moe run")
        run["model"]["mtp_train_depth"] = args.mtp_depth
    bpe.write_json(run_path, run)
    torch.set_num_threads(run["threads"])
    data.configure(run.get("style", "qwen3"))

    tok_dir = os.path.join(args.dir, "tokenizer")
    tok_path = os.path.join(tok_dir, "tokenizer.json")
    if not os.path.exists(tok_path):
        log(f"training the tokenizer (vocab {run['vocab']}) -> {tok_dir}")
        os.system(f"{sys.executable} {os.path.join(HERE, 'bpe.py')} --out {tok_dir} --vocab {run['vocab']} "
                  f"--seed {run['seed']} --style {run.get('style', 'qwen3')}")
    tok = bpe.Tokenizer.load(tok_path)
    mc = dict(run["model"])
    mc["vocab_size"] = -(-tok.size // 64) * 64
    run["model"] = mc
    bpe.write_json(run_path, run)
    model = make_model(run)
    opt = make_optimizer(model, run)
    step = 0
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        torch.set_rng_state(ck["torch_rng"])
        step = ck["step"]
        log(f"resumed from {ckpt_path} at step {step}")
    if args.extend:
        if args.extend <= step:
            sys.exit(f"train.py: --extend {args.extend}: the run is at step {step} already")
        run["steps"] = args.extend
        run["rewarm"] = [step, step + run["warmup"]]
        bpe.write_json(run_path, run)
        log(f"extended to {args.extend} steps, the learning rate ramping up again over steps {step}-{step + run['warmup']}")
    total, active, nvfp4 = model_size(model)
    log(f"model {run.get('arch', 'qwen3_moe')} {mc}: {total / 1e6:.2f}M parameters, {active / 1e6:.2f}M active per "
        f"token (without embeddings), NVFP4 checkpoint about {nvfp4 / 1e6:.2f} MB; run {json.dumps({k: v for k, v in run.items() if k != 'model'})}")

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    until = min(run["steps"], args.until_step if args.until_step is not None else run["steps"])
    last_ckpt = time.time()
    t_log, tokens_log, real_log, loss_log, aux_log, n_log = time.time(), 0, 0, 0.0, 0.0, 0
    # MTP head, per chained step ("mtp", "mtp2", ...): weighted CE sum, weight sum, top-1 hits, rows
    def new_mtp_log():
        return {"mtp" + ("" if d == 1 else str(d)): [0.0, 0.0, 0, 0]
                for d in range(1, max(1, run["model"].get("mtp_train_depth", 1)) + 1)}
    mtp_log = new_mtp_log()
    evaluator = evaluate.Evaluator(tok)
    model.train()
    while step < until and not stop["now"]:
        model.quant = step >= run["qat_from"] * run["steps"]
        holdout = step < run["holdout_until"] * run["steps"]
        B = run["batch"]
        encoded = []
        for i in range(step * B, (step + 1) * B):
            e = encode_sample(tok, data.make_sample(run["seed"], i, holdout), run["max_len"])
            if e is not None:
                encoded.append(e)
        wsum = sum(sum(e[2]) for e in encoded)
        ntok = sum(len(e[0]) for e in encoded)
        lr = lr_at(run, step)
        for g in opt.param_groups:
            g["lr"] = lr
        step_loss = step_aux = 0.0
        mbs = micro_batches(encoded, run["micro_tokens"])
        padded = sum(ids.numel() for ids, _, _ in mbs)
        for ids, tgt, wts in mbs:
            loss_sum, aux = model.loss(ids, tgt, wts)
            share = ids.numel() / padded  # the load-balancing loss is averaged over tokens
            loss = loss_sum / wsum + run["model"]["router_aux_loss_coef"] * aux * share
            loss.backward()
            step_loss += float(loss_sum) / wsum
            step_aux += float(aux) * share
            last = getattr(model, "last", {})
            for key, acc in mtp_log.items():
                if last.get(f"{key}_rows"):
                    for i, f in enumerate(("", "_weight", "_top1", "_rows")):
                        acc[i] += last[key + f]
        torch.nn.utils.clip_grad_norm_(model.parameters(), run["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens_log += padded
        real_log += ntok
        loss_log += step_loss
        aux_log += step_aux
        n_log += 1
        if step % run["log_every"] == 0 or step == until:
            dt = time.time() - t_log
            parts = [f"{k} ce {a[0] / a[1]:.4f} top1 {a[2] / a[3]:.3f}" for k, a in mtp_log.items() if a[3]]
            mtp = f" (main+{model.c.mtp_loss_weight}*each mtp step; {'; '.join(parts)})" if parts else ""
            mtp_log = new_mtp_log()
            log(f"step {step}/{run['steps']} loss {loss_log / n_log:.4f}{mtp} aux {aux_log / n_log:.3f} lr {lr:.2e} "
                f"{real_log / dt:.0f} tok/s ({tokens_log / dt:.0f} padded) {dt / n_log:.2f} s/step"
                f"{' qat' if model.quant else ''}{' holdout' if holdout else ''}")
            t_log, tokens_log, real_log, loss_log, aux_log, n_log = time.time(), 0, 0, 0.0, 0.0, 0
        if step % run["eval_every"] == 0 or step == run["steps"]:
            model.eval()
            t0 = time.time()
            res = evaluator.run(model, quick=True)
            model.train()
            res.update(step=step, time=time.strftime("%Y-%m-%d %H:%M:%S"), seconds=round(time.time() - t0, 1),
                       qat=model.quant)
            with open(os.path.join(args.dir, "eval.jsonl"), "a") as f:
                f.write(json.dumps(res) + "\n")
            log("eval " + evaluate.summary(res))
            t_log = time.time()
        if time.time() - last_ckpt > run["ckpt_minutes"] * 60:
            save_checkpoint(ckpt_path, model, opt, step, run)
            last_ckpt = time.time()
            log(f"checkpoint at step {step}")
    save_checkpoint(ckpt_path, model, opt, step, run)
    log(f"checkpoint at step {step}; {'stopped by signal' if stop['now'] else 'done' if step >= run['steps'] else 'paused'}")
    return 0 if step >= run["steps"] else 3


if __name__ == "__main__":
    sys.exit(main())  # 0: the run is complete; 3: paused (signal or --until-step), run again to resume
