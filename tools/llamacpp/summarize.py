#!/usr/bin/env python3
"""Prints side_by_side.sh's results (RESULTS_DIR) as one table.

Reads tern-SHAPE-FMT.json (tern bench --json: medians), llama-SHAPE-FMT.json and
llama-SHAPE-FMT-depth.json (llama-bench -o json; the median of samples_ts is used, to match
tern's medians, with llama-bench's mean in the JSON for reference), bandwidth-*.txt, loadavg.txt.
Ratios are tern / llama.cpp: above 1 means tern is faster.
"""

import json
import re
import statistics
import sys
from pathlib import Path

# NVFP4_H: NVFP4 with the output layer quantized too (tern quantize --quantize-lm-head), the
# counterpart of llama-quantize's Q4_0, which stores its output layer in Q6_K.
PAIRS = [("BF16", "BF16"), ("FP8", "Q8_0"), ("NVFP4", "NVFP4"), ("NVFP4", "Q4_0"), ("NVFP4_H", "Q4_0")]


def llama_rates(path: Path):
    """-> {"pp": tok/s, "tg": tok/s, "size": bytes, "type": str} from one llama-bench JSON."""
    if not path.exists():
        return {}
    out = {}
    for t in json.loads(path.read_text()):
        ts = statistics.median(t["samples_ts"]) if t.get("samples_ts") else t["avg_ts"]
        key = "pp" if t["n_gen"] == 0 else "tg"
        out[key] = ts
        out["size"], out["type"], out["params"] = t["model_size"], t["model_type"], t["model_n_params"]
        out["build"] = f"{t.get('build_commit', '?')} b{t.get('build_number', '?')}"
    return out


def fmt(x, w=9, p=1):
    return f"{x:{w}.{p}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def main():
    res = Path(sys.argv[1])
    if (res / "header.txt").exists():
        print(res.joinpath("header.txt").read_text().rstrip())
    shapes = []
    for f in sorted(res.glob("*.json"), key=lambda f: f.stat().st_mtime):
        m = re.match(r"(tern|llama)-(.+)-([A-Z0-9_]+?)(-depth)?\.json$", f.name)
        if m and m.group(2) not in shapes:
            shapes.append(m.group(2))
    depth = any(res.glob("llama-*-depth.json"))
    busy = {}  # benchmark tag -> why it is suspect (other processes took CPU, training resumed)
    if (res / "contention.txt").exists():
        for line in res.joinpath("contention.txt").read_text().splitlines():
            tag, others, _, stopped = line.split()
            pct = int(others.split("=")[1].rstrip("%"))
            if pct > 5 or stopped.endswith("=0"):
                busy[tag] = f"{tag}: other processes used {pct}% of the CPUs" + (
                    "" if stopped.endswith("=1") else ", training job resumed meanwhile")
    print()
    head = (f"{'shape':<10} {'tern':<7} {'llama.cpp':<9} {'llama size':>10} | "
            f"{'prefill tern':>12} {'llama':>9} {'ratio':>6} | {'decode tern':>11} {'llama':>9} {'ratio':>6}")
    if depth:
        head += f" | {'llama tg@depth':>14} {'ratio':>6}"
    print(head)
    print("-" * len(head))
    builds = set()
    for s in shapes:
        llama_fmts = sorted({re.match(rf"llama-{re.escape(s)}-([A-Z0-9_]+?)(-depth)?\.json$", f.name).group(1)
                             for f in res.glob(f"llama-{s}-*.json")})
        pairs = [p for p in PAIRS if (res / f"tern-{s}-{p[0]}.json").exists() or p[1] in llama_fmts]
        pairs += [("-", q) for q in llama_fmts if all(q != p[1] for p in PAIRS)]
        for tf, lf in pairs:
            tj = res / f"tern-{s}-{tf}.json"
            t = json.loads(tj.read_text()) if tj.exists() else {}
            ll = llama_rates(res / f"llama-{s}-{lf}.json")
            lt = llama_rates(res / f"llama-{s}-{lf}-depth.json")
            if "build" in ll:
                builds.add(ll["build"])
            size = f"{ll['size'] / 2**20:8.0f}Mi" if "size" in ll else f"{'-':>10}"
            tpp, tdc = t.get("prefill_tokens_per_s"), t.get("decode_tokens_per_s")
            line = (f"{s:<10} {tf:<7} {lf if ll else '-':<9} {size} | {fmt(tpp, 12)} {fmt(ll.get('pp'))} "
                    f"{fmt(ratio(tpp, ll.get('pp')), 6, 2)} | {fmt(tdc, 11)} {fmt(ll.get('tg'))} "
                    f"{fmt(ratio(tdc, ll.get('tg')), 6, 2)}")
            if depth:
                line += f" | {fmt(lt.get('tg'), 14)} {fmt(ratio(tdc, lt.get('tg')), 6, 2)}"
            tags = [f"tern-{s}-{tf}", f"llama-{s}-{lf}", f"llama-{s}-{lf}-depth"]
            print(line + ("  !" if any(t in busy for t in tags) else ""))
    if any((res / f"tern-{s}-NVFP4_H.json").exists() for s in shapes):
        print("NVFP4_H: tern's NVFP4 with the output layer in NVFP4 too (tern quantize --quantize-lm-head);"
              " llama.cpp's Q4_0 keeps it in Q6_K")
    if busy:
        print("! measured while other processes ran (llama.cpp's 2-thread decode suffers most):")
        for why in busy.values():
            print("   ", why)
    print()
    print("llama.cpp model sizes and types (llama-bench):")
    for f in sorted(res.glob("llama-*.json")):
        if f.name.endswith("-depth.json"):
            continue
        ll = llama_rates(f)
        if ll:
            print(f"  {f.stem[6:]:<18} {ll['type']:<28} {ll['size'] / 2**20:9.1f} MiB  {ll['params'] / 1e6:8.1f} M params")
    for f in sorted(res.glob("tern-*.json")):
        t = json.loads(f.read_text())
        print(f"  tern {f.stem[5:]:<13} weights read per decoded token {t.get('weight_bytes_per_token', 0) / 2**20:9.1f} MiB")
    if builds:
        print("llama-bench build:", ", ".join(sorted(builds)))
    for tag in ("before", "after"):
        f = res / f"bandwidth-{tag}.txt"
        if f.exists():
            found = re.findall(r"\(([^)]*)\): median ([0-9.]+) GB/s", f.read_text())
            what = ", ".join(f"{g} GB/s ({k.split(', ')[-1]})" for k, g in found) if found else "?"
            print(f"memory read bandwidth {tag}: {what}")
    if (res / "loadavg.txt").exists():
        loads = [l.split()[0] for l in res.joinpath("loadavg.txt").read_text().split("\n") if l.strip()]
        print(f"1-min load average when each benchmark started: {' '.join(loads)}")
    print("prefill = tern prompt tokens/s vs llama-bench pp; decode = tern tokens/s after the prompt "
          "vs llama-bench tg (from an empty context unless tg@depth); ratio = tern / llama.cpp")


if __name__ == "__main__":
    main()
