#!/usr/bin/env python3
"""Writes bench/RESULTS.md from the summaries in bench/results/.

    python3 bench/results.py > bench/RESULTS.md

The summaries (one CSV per table and index.json) are written once from the
raw device runs by bench/summarise.py; the raw runs themselves stay out of
the repository. The page is generated, never edited by hand: the current
tables, the method, the device and how to reproduce. The story of each
experiment is in git history and the issues."""
import csv
import json
import os
import textwrap

import table

HERE = os.path.dirname(os.path.abspath(__file__))
RES = os.path.join(HERE, "results")
RAW_COMMIT = "ba7f535"  # the last commit with the raw runs under bench/results/
NUMERIC = {"E", "top_k", "M", "K", "T", "checked", "timed", "dispatches", "bytes"}


def rows(name):
    out = []
    for r in csv.DictReader(open(os.path.join(RES, name))):
        d = {}
        for k, v in r.items():
            if v == "" or k in ("kernel", "kernel_f16", "format", "family", "path", "kernels",
                                "device", "part", "name", "pick", "folder"):
                d[k] = v
            else:
                d[k] = int(v) if k in NUMERIC else float(v)
        out.append(d)
    return out


def path_of(kernel):
    """matmul_tensor's weight path from a kernel name (decode, shared, ...)."""
    head = kernel.split("_")[0] + "_" + kernel.split("_")[1] if kernel.startswith("matmul_tensor") else ""
    return head.split("-", 1)[1] if "-" in head else "decode"


def prefill(meta):
    out = [f"## Prefill at 512 tokens beside llama.cpp's Vulkan backend", "",
           f"{meta['gpu']}, one device call (raw run `{meta['source']}`, kernels of "
           f"{meta['commit'].split()[1][:7]}). qkgen: the fastest correct `matmul_tensor` "
           "variant of `qkgen bench` per dispatch, on f32 and on f16 activations; the peer: "
           "ggml-vulkan's own per-op GPU time. Ratio: peer over qkgen (above 1: qkgen faster). "
           "Dense 4096 x 14336; MoE 768 x 2048, 128 experts, top-8.", "",
           "| case | format | path | qkgen us f32 | f16 | TFLOP/s f32 | peer us | peer TFLOP/s "
           "| peer / f32 | peer / f16 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows("prefill.csv"):
        case = "dense" if r["family"] == "matmul" else "MoE"
        p = r["peer_kern_us"]
        f16 = r["us_f16"]
        out.append(f"| {case} | {r['format']} | {path_of(r['kernel'])} | {r['us']:.1f} | "
                   + (f"{f16:.1f}" if f16 != "" else "-") + f" | {r['tflops']:.1f} | "
                   + (f"{p:.1f} | {r['peer_tflops']:.1f} | {p / r['us']:.2f}x | "
                      + (f"{p / f16:.2f}x" if f16 != "" else "-") if p != "" else "- | - | - | -")
                   + " |")
    return out + [""]


def layer(meta):
    lay = meta["layer"]
    out = ["## The MoE layer beside the peer", "",
           f"{meta['gpu'].split(',')[0]} (raw run `{meta['source']}`). A Qwen3-30B-A3B-like MoE "
           f"FFN layer (hidden {lay['H']}, expert ffn {lay['F']}, {lay['E']} experts top-"
           f"{lay['top_k']}, router to RMSNorm) by `qkgen bench --layer` on the model's tuned "
           "bundle, one command buffer (`chain`: per layer, layers back to back; layer.csv "
           "names the kernels); the peer: one ggml graph of the same ops (bench/peer/), wall "
           "time per chained layer and the sum of its per-op GPU times.", "",
           "| format | tokens | path | qkgen us/layer | chain us | peer wall us | peer kern us "
           "| peer wall / chain | dispatches |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows("layer.csv"):
        w = r["peer_wall_us"]
        out.append(f"| {r['format']} | {r['T']} | {r['path']} | {r['us']:.1f} | "
                   f"{r['us_chain']:.1f} | {w if w != '' else '-'} | {r['peer_kern_us'] or '-'} | "
                   + (f"{w / r['us_chain']:.2f}x" if w != "" else "-") + f" | {r['dispatches']} |")
    return out + [""]


def tuner():
    parts = {}
    for r in rows("tuner.csv"):
        parts.setdefault((r["device"], r["format"], r["part"]), []).append(r)
    out = ["## The autotuner against an exhaustive search", "",
           "`bench/tune-gpu.sh FORMAT PART` tunes each case of a part of the standard set, then "
           "times the same candidates exhaustively (`qkgen bench --finalists 0`) in the same "
           "call. Target: each pick within 3% of the exhaustive best, the tune at most a "
           "quarter of the exhaustive time. Newest measurement per case; tuner.csv has each.", "",
           "| device | format | part | within 3% | largest ratio | tune s | exhaustive s | share |",
           "|---|---|---|---|---|---|---|---|"]
    for (dev, fmt, part), rs in parts.items():
        ok = sum(r["ratio"] <= 1.03 for r in rs)
        ts, bs = sum(r["tune_s"] for r in rs), sum(r["bench_s"] for r in rs)
        worst = max(r["ratio"] for r in rs)
        out.append(f"| {dev} | {fmt} | {part} | {ok} of {len(rs)} | {worst:.3f} | {ts:.0f} | "
                   f"{bs:.0f} | {100 * ts / bs:.0f}% |")
    return out + [""]


def standard(meta):
    cases = {}
    for r in rows("standard.csv"):
        key = (r["family"], r["format"], r["E"], r["top_k"], r["M"], r["K"], r["T"])
        best = r if r.get("kernel") else None
        cases[key] = {"n": r["checked"], "timed": r["timed"], "best": best,
                      "run": {"copy_gbps": r["copy_gbps"], "floor_us": r["floor_us"]} if best else None}
    commits = " and ".join(l.split()[0] for l in meta["commit"].splitlines() if l.strip())
    out = ["## The standard set", "",
           f"`qkgen bench`'s default cases on specs/sets/standard.yaml's bundle (raw run "
           f"`{meta['source']}`: q4_0, q4_K, mlx4_g64 decode; kernels of {commits}). `us` per "
           "dispatch, `copy` its share of the copy bandwidth, `b2b` back to back. Split-K rows "
           "predate 90e9c27's fix of a shared split-K scratch (up to 9% too fast).", ""]
    # the device line goes to the method; the counts form one paragraph
    lines = "\n".join(table.render(meta["runs"], cases, missed=False)).split("\n")
    body = [l for l in lines[1:] if l.strip()]
    meta["device_line"] = lines[0]
    return out + [l for l in body if l.startswith("|")] + [""] + \
        [" ".join(l for l in body if not l.startswith("|"))] + [""]


def main():
    meta = json.load(open(os.path.join(RES, "index.json")))
    out = ["# Benchmarks on the NVIDIA H100 (and H200)", "",
           "Generated by bench/results.py from bench/results/, the summaries of raw device runs "
           f"(bench/summarise.py). Raw runs to 2026-11-27: `git show {RAW_COMMIT}:bench/results/`.", ""]
    out += prefill(meta["prefill"]) + layer(meta["layer"]) + tuner() + standard(meta["standard"])
    out += ["## Method", "",
            "- `qkgen bench` (docs/cli.md): each variant checked against the float64 reference "
            "first; weights rotating past 4x the L2; a warm-up; Vulkan timestamps; a 10-dispatch "
            "screen, then the 3 fastest timed in full (median of at least 20 runs).",
            "- Standard set: " + meta["standard"].get("device_line", "").replace("Device ", ""),
            "", "## Reproduce", "",
            "Here (the set-up done, the GPU machine's Vulkan loader in `.gpu/`), then on the GPU "
            "machine carrying `.gpu` and `build-gpu/pkg`, a part per call:", "",
            "    bash bench/build-gpu.sh      # static qkgen + the standard set's bundle, build-gpu/pkg",
            "    . .gpu/enter.sh && OUT=$OUT/run bash build-gpu/pkg/standard.sh decode  # moe, prefill",
            "    . .gpu/enter.sh && OUT=/tmp/t PACK=$OUT/t.tgz bash bench/tune-gpu.sh q4_0 prefill",
            "    . .gpu/enter.sh && MODEL=bench/layer/qwen3-moe.yaml OUT=/tmp/l PACK=$OUT/l.tgz \\",
            "        bash bench/layer-gpu.sh   # the layer beside the peer (bench/peer/build.sh first)",
            "", "Put what comes back (with commit.txt and gpu.txt) in a folder of bench/raw/, "
            "which git ignores, name it in bench/summarise.py's SOURCES, then:", "",
            "    python3 bench/summarise.py bench/raw && python3 bench/results.py > bench/RESULTS.md",
            "    python3 bench/table.py RUN/*.json   # or compare, side_by_side, tune_compare, variants",
            ""]
    # prose wrapped at 100 characters; tables and code as they are
    lines = []
    for line in "\n".join(out).split("\n"):
        if line.startswith(("|", "    ")) or len(line) <= 100:
            lines.append(line)
        else:
            lead = "  " if line.startswith("- ") else ""
            lines += textwrap.wrap(line, 100, subsequent_indent=lead, break_on_hyphens=False)
    text = "\n".join(lines).rstrip()
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    print(text)


if __name__ == "__main__":
    main()
