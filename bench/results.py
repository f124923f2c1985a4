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


DECODE_CASES = [(4096, 14336, (1, 4, 8), 0), (14336, 4096, (1, 4, 8), 0), (768, 2048, (1, 8, 32), 128)]


def decode(meta):
    """Every GGUF format's decode: the peer over qkgen per case (one row a
    format), and at one token the back-to-back time against a copy."""
    got = {}
    for r in rows("decode.csv"):
        got[(r["format"], int(r["M"]), int(r["K"]), int(r["T"]), int(r["E"]))] = r
    fmts = sorted({k[0] for k in got})
    head = ["format"] + [f"{'MoE ' if e else ''}{m}x{k} {t}" for m, k, ts, e in DECODE_CASES
                         for t in ts] + ["1 tok b2b / copy"]
    out = ["## Decode: every GGUF format beside the peer", "",
           f"{meta['gpu']}; raw runs `{meta['source']}` (each row's ratios of "
           "one call; q3_K and the formats added 2026-11-29 from the second). Peer us (ggml-vulkan's "
           "per-op GPU time) over qkgen us (`qkgen bench`, the fastest correct variant per dispatch "
           "between barriers): above 1, qkgen is faster. Dense m x k at 1, 4 and 8 tokens; MoE 128 "
           "experts top-8 at 1, 8 and 32. Last column: at one token, a copy of the same bytes back to "
           "back over qkgen back to back (4096x14336, 14336x4096). iq2_xxs: the peer cannot quantize "
           "it (ratios -).", "",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for f in fmts:
        cells = []
        for m, k, ts, e in DECODE_CASES:
            for t in ts:
                r = got.get((f, m, k, t, e))
                cells.append(f"{float(r['peer_us']) / float(r['us']):.2f}" if r and r["peer_us"] else "-")
        b2b = []
        for m, k in ((4096, 14336), (14336, 4096)):
            r = got.get((f, m, k, 1, 0))
            b2b.append(f"{100 * float(r['size_copy_span_us']) / float(r['us_span']):.0f}%" if r else "-")
        out.append(f"| {f} | " + " | ".join(cells) + f" | {', '.join(b2b)} |")
    return out + [""]


def decode_mlx(meta):
    """Every MLX configuration: its time per weight byte over mlx4_g64's of
    the same call, and at one token back to back against a copy."""
    got = {}
    for r in rows("decode_mlx.csv"):
        got.setdefault(r["format"], {})[(int(r["M"]), int(r["T"]))] = r
    out = ["## Decode: every MLX configuration against mlx4_g64", "",
           f"{meta['gpu']}; raw runs `{meta['source']}` (2- and 3-bit from the first, the rest from "
           "the third call of 2026-11-29, each against mlx4_g64 in its own call; bf16 scales). Time per "
           "weight byte over mlx4_g64's (target at most 1.25); b2b / copy as above.", "",
           "| format | 4096x14336 1 tok | 8 tok | MoE 768x2048 1 tok | 1 tok us | b2b / copy |",
           "|---|---|---|---|---|---|"]
    def key(f):
        b, g = f[3:].split("_g")
        return int(b), int(g)
    for f in sorted(got, key=key):
        cells = []
        for c in ((4096, 1), (4096, 8), (768, 1)):
            r = got[f].get(c)
            cells.append(f"{(float(r['us']) / float(r['bytes'])) / (float(r['ref_us']) / float(r['ref_bytes'])):.2f}"
                         if r and r["ref_us"] else "-")
        r = got[f].get((4096, 1))
        extra = (f"{float(r['us']):.1f} | {100 * float(r['size_copy_span_us']) / float(r['us_span']):.0f}%"
                 if r else "- | -")
        out.append(f"| {f} | " + " | ".join(cells) + f" | {extra} |")
    return out + [""]


def main():
    meta = json.load(open(os.path.join(RES, "index.json")))
    out = ["# Benchmarks on the NVIDIA H200 and H100", "",
           "Generated by bench/results.py from bench/results/, the summaries of raw device runs "
           f"(bench/summarise.py). Raw runs to 2026-11-27: `git show {RAW_COMMIT}:bench/results/`.", ""]
    out += decode(meta["decode"]) + decode_mlx(meta["decode_mlx"])
    out += prefill(meta["prefill"]) + layer(meta["layer"]) + tuner()
    out += ["## Method", "",
            "- `qkgen bench` (docs/cli.md): each variant checked against the float64 reference "
            "first; weights rotating past 4x the L2; a warm-up; Vulkan timestamps; a 10-dispatch "
            "screen, then the 3 fastest timed in full (median of at least 20 runs).",
            "- The H100 standard-set table of 2026-11-25 (seven formats) is in bench/results/standard.csv"
            " and in git history (bench/RESULTS.md before 2026-11-29); the decode tables above replace it.",
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
