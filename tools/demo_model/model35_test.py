# Checks model35.py (the PyTorch Qwen3.5-MoE of the second demo model) against the independent
# float64 NumPy reference tests/reference/qwen35_ref.py, through export.py's checkpoint writer:
#   1. logits of a 150-token sequence (three delta-rule chunks) and the MTP head's teacher-forced
#      logits equal the reference's within float32 rounding;
#   2. the chunked and the token-by-token delta rule agree (prefill vs decode);
#   3. batched, left-padded greedy generation equals one-prompt-at-a-time decoding;
#   4. the chained (depth-2) MTP loss equals its definition computed row by row.
# Random weights at O(1) scales (norm weights, decays and gates spread out), rounded to BF16 so
# the export is exact.  Run: /usr/bin/python3 tools/demo_model/model35_test.py  (exit 0: pass)
import os
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "reference"))

import bpe  # noqa: E402
import export  # noqa: E402
import qwen35_ref  # noqa: E402
from model35 import Config35, Qwen35Moe  # noqa: E402


def random_model(seed=3):
    c = Config35(vocab_size=256, hidden_size=64, num_hidden_layers=4, full_attention_interval=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=32, linear_key_head_dim=16,
                 linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, num_experts=8,
                 num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=48,
                 rope_theta=10000.0, delta_chunk=64)
    m = Qwen35Moe(c)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            r = torch.randn(p.shape, generator=g)
            if name.endswith("A_log"):
                p.copy_(torch.rand(p.shape, generator=g) * (np.log(4.0) - np.log(0.005)) + np.log(0.005))
                continue
            if name.endswith("dt_bias"):
                p.copy_(torch.rand(p.shape, generator=g) * 3 - 2)
            elif name.endswith("norm_weight"):
                p.copy_(1 + 0.1 * r)
            elif p.dim() == 1:                                   # zero-centred norms
                p.copy_(0.1 * r)
            elif name.endswith("embed_tokens.weight"):
                p.copy_(r)
            elif name.endswith("conv1d.weight"):
                p.copy_(0.6 * r)
            else:                                                # Linears ~ N(0, 1/in)
                p.copy_(r / np.sqrt(p.shape[-1]))
            p.copy_(p.to(torch.bfloat16).float())
    m.eval()
    return m


def close(a, b, what, tol=2e-4):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    err = np.abs(a - b).max() / max(1e-30, np.abs(b).max())
    print(f"{what}: max |diff| / max |ref| = {err:.2e}")
    if not err <= tol:
        raise SystemExit(f"FAIL {what}")


def main():
    torch.set_num_threads(1)
    m = random_model()
    c = m.c
    rng = np.random.default_rng(0)
    ids = [int(t) for t in rng.integers(0, c.vocab_size, 150)]
    with tempfile.TemporaryDirectory() as d:
        bpe.write_json(os.path.join(d, "config.json"), c.hf_config(bos_token_id=0, eos_token_id=1))
        export.write_safetensors(os.path.join(d, "model.safetensors"), export.hf_tensors35(m))
        ref = qwen35_ref.Model(d)
        ref_logits, ref_h = ref.forward(ids, return_hidden=True)
        ref_mtp = ref.mtp_forward(ref_h[:-1], ids[1:])
    T = len(ids)
    with torch.no_grad():
        pos = torch.arange(T)[None]
        mask = torch.full((T, T), -1e9).triu(1)[None, None]
        h, _ = m.hidden(torch.tensor([ids]), pos, mask)
        logits = m.logits(h[0])
        hm, _ = m.mtp(m.embed_tokens(torch.tensor([ids[1:]])), h[:, :-1], pos[:, :-1], mask[..., :-1, :-1], False)
        mtp_logits = m.logits(hm[0])
    close(logits.numpy(), ref_logits, "logits vs qwen35_ref (chunked, 150 tokens)")
    close(mtp_logits.numpy(), ref_mtp, "MTP logits vs qwen35_ref.mtp_forward")

    # prefill 100 tokens (chunked) then 50 single-token steps (recurrent) == one pass
    with torch.no_grad():
        caches = [{} for _ in m.layers]
        h1, _ = m.hidden(torch.tensor([ids[:100]]), pos[:, :100], mask[..., :100, :100], caches)
        rows = [m.logits(h1[0])]
        for t in range(100, T):
            ht, _ = m.hidden(torch.tensor([[ids[t]]]), pos[:, t:t + 1], None, caches)
            rows.append(m.logits(ht[0]))
    close(torch.cat(rows).numpy(), logits.numpy(), "prefill + token-by-token decode vs one pass", 1e-5)

    # the loss's MTP rows are the teacher-forced head
    prompts = [ids[:37], ids[50:53], ids[60:140]]
    batch = m.generate(prompts, 12, stop_ids=set())
    single = [m.greedy_with_margins(p, 12, set())[0] for p in prompts]
    print("batched left-padded generate == single-prompt greedy:", batch == single)
    if batch != single:
        raise SystemExit("FAIL batched generation")
    # mtp_train_depth 2: the loss gains mtp_loss_weight x the CE of the chained step, built here
    # row by row from its definition (model35.py): step 2 at position p + 1 reads step 1's output
    # at p and token p + 2, predicts token p + 3.
    seq = torch.tensor([ids[:21]])
    inp, tgt, wts = seq[:, :-1], seq[:, 1:], torch.linspace(0.5, 1.5, 20)[None]
    with torch.no_grad():
        m.c.mtp_train_depth = 1
        l1, _ = m.loss(inp, tgt, wts)
        m.c.mtp_train_depth = 2
        l2, _ = m.loss(inp, tgt, wts)
        m.c.mtp_train_depth = 1
        n = inp.shape[1]
        p = torch.arange(n)[None]
        full = torch.full((n, n), -1e9).triu(1)[None, None]
        h, _ = m.hidden(inp, p, full)
        o1, _ = m.mtp(m.embed_tokens(inp[:, 1:]), h[:, :-1], p[:, :-1], full[..., :-1, :-1], False)
        want = 0.0
        for q in range(n - 2):  # row q: position q + 1, causal over rows 0 .. q
            o2, _ = m.mtp(m.embed_tokens(inp[:, 2:q + 3]), o1[:, :q + 1], p[:, 1:q + 2],
                          full[..., :q + 1, :q + 1], False)
            ce = torch.nn.functional.cross_entropy(m.logits(o2[0, -1:]), tgt[0, q + 2:q + 3])
            want += float(ce) * float(wts[0, q + 2])
    got = (float(l2) - float(l1)) / c.mtp_loss_weight
    print(f"depth-2 MTP loss term {got:.6f}, built row by row {want:.6f}")
    if not abs(got - want) <= 1e-4 * abs(want):
        raise SystemExit("FAIL depth-2 MTP loss")
    print("PASS")


if __name__ == "__main__":
    main()
