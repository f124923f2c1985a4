#!/usr/bin/env python3
"""qkgen against the peer (llama.cpp's Vulkan backend) measured in the same
device call, as markdown tables.

    python3 bench/side_by_side.py DIR

DIR holds what such a call returned:
  decode/, decode-mlx/  bench/formats-gpu.sh gguf and mlx: `qkgen bench --json`
            files and the peer's peer.txt;
  prefill/  `qkgen bench --json` files (the fastest correct variant of each
            case is the one marked best) and the peer's peer-on.txt
            (the peer harness's RESULT lines with kern_us, ggml-vulkan's
            own per-op GPU time) and gpu.txt;
  layer/    `qkgen bench --layer --json` (layer.json) and the peer's
            layer-on.txt / layer-off.txt (bench/peer/run-layer.sh);
  layer-*/  the same from other calls (each table from its own call).
Either may be missing. Ratios are the peer's time over ours (above 1: qkgen
is faster)."""
import glob
import json
import os
import re
import sys

import benchjson


def results(path):
    """RESULT lines of a peer log as dicts."""
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        if line.startswith("RESULT "):
            out.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
    return out


def gpu_name(d):
    p = os.path.join(d, "gpu.txt")
    if not os.path.exists(p):
        return ""
    lines = [l.strip() for l in open(p) if l.strip() and not l.startswith("name")]
    return lines[-1] if lines else ""


def best_cases(d):
    """The fastest correct, fully timed variant of each case of the bench
    JSON files in d, keyed (family, format, M, K, T, E), and the device."""
    best, device = {}, ""
    for p in benchjson.find(os.path.join(d, "*.json")):
        j = benchjson.load(p)
        device = j.get("device", device)
        for r in j.get("results", []):
            if not r.get("ok") or not r.get("timed") or r.get("us", 0) <= 0:
                continue
            key = (r["family"], r["format"], r["M"], r["K"], r["T"], r.get("E", 0))
            if key not in best or r["us"] < best[key]["us"]:
                best[key] = r
    return best, device


def prefill(d):
    best, device = best_cases(d)
    peer = {}
    for r in results(os.path.join(d, "peer-on.txt")):
        if r.get("part") == "prefill":
            peer[("matmul", r["type"], int(r["m"]), int(r["k"]), int(r["n"]), 0)] = r
        elif r.get("part") == "moe" and int(r["n"]) >= 32:
            peer[("matmul_id", r["type"], int(r["m"]), int(r["k"]), int(r["n"]), int(r["E"]))] = r
    if not best:
        return []
    out = [f"Device {device} ({gpu_name(d) or 'see gpu.txt'}). Ours: the fastest correct "
           "variant of `qkgen bench` (per dispatch, between barriers); the peer: `kern_us` "
           "(ggml-vulkan's per-op GPU time). Both in one device call.", "",
           "| case | format | qkgen variant | qkgen us | qkgen TFLOP/s | peer us | peer TFLOP/s "
           "| peer / qkgen |", "|---|---|---|---|---|---|---|---|"]
    for key in sorted(best, key=lambda k: (k[0], k[2], k[1])):
        r = best[key]
        fam, fmt, m, k, t, e = key
        case = f"{fam} {m}x{k}, {t} tok" + (f", {e} experts top-{r['top_k']}" if e else "")
        pk = ("matmul" if fam == "matmul" else "matmul_id", fmt, m, k, t, e)
        pr = peer.get(pk)
        ps = (f"{float(pr['kern_us']):.1f} | {float(pr['tflops_kern']):.1f} | "
              f"{float(pr['kern_us']) / r['us']:.2f}x") if pr else "- | - | -"
        out.append(f"| {case} | {fmt} | `{r['kernel']}` | {r['us']:.1f} | {r['tflops']:.1f} | {ps} |")
    return out


def decode(d):
    """Every format's decode cases (bench/formats-gpu.sh gguf|mlx): qkgen's
    fastest correct variant per case against the peer's kern_us (peer.txt)
    and against the copy of the same bytes back to back; for MLX, the time
    per weight byte against mlx4_g64's on the same case."""
    cases, device = best_cases(d)
    best = {(f, fam, m, k, t, e): r for (fam, f, m, k, t, e), r in cases.items()}
    if not best:
        return []
    peer = {}
    for r in results(os.path.join(d, "peer.txt")):
        fam = "matvec_id" if int(r["E"]) else "matvec"
        peer[(r["type"], fam, int(r["m"]), int(r["k"]), int(r["n"]), int(r["E"]))] = r
    mlx = any(k[0].startswith("mlx") for k in best)
    out = [f"Device {device} ({gpu_name(d) or 'see gpu.txt'}). qkgen: the fastest correct variant "
           "of `qkgen bench` (us per dispatch between barriers; b2b: back to back, against a copy "
           "of the same bytes back to back)" + ("; per byte: its time per weight byte over "
           "mlx4_g64's on the same case" if mlx else "; the peer: `kern_us`, ggml-vulkan's "
           "per-op GPU time; ratio: peer us / qkgen us (above 1: qkgen faster)") + ". One device "
           "call.", ""]
    if mlx:
        out += ["| format | case | qkgen us | b2b us | b2b / copy | per byte vs mlx4_g64 |",
                "|---|---|---|---|---|---|"]
    else:
        out += ["| format | case | qkgen us | peer us | ratio | b2b us | b2b / copy |",
                "|---|---|---|---|---|---|---|"]
    for key in sorted(best, key=lambda k: (k[0], k[1], k[2], k[4])):
        r = best[key]
        fmt, fam, m, k, t, e = key
        case = (f"MoE {m}x{k} {e}e top-{r['top_k']}" if e else f"{m}x{k}") + f", {t} tok"
        b2b = "- | -"
        if r.get("us_span") and r.get("size_copy_span_us"):
            b2b = f"{r['us_span']:.2f} | {100 * r['size_copy_span_us'] / r['us_span']:.0f}%"
        if mlx:
            ref = best.get(("mlx4_g64",) + key[1:])
            rel = (f"{(r['us'] / r['bytes']) / (ref['us'] / ref['bytes']):.2f}x"
                   if ref and r.get("bytes") and ref.get("bytes") else "-")
            out.append(f"| {fmt} | {case} | {r['us']:.2f} | {b2b} | {rel} |")
        else:
            pr = peer.get(key)
            ps = (f"{float(pr['kern_us']):.2f} | {float(pr['kern_us']) / r['us']:.2f}x"
                  if pr else "- | -")
            out.append(f"| {fmt} | {case} | {r['us']:.2f} | {ps} | {b2b} |")
    return out


def layer(d, intro=True):
    p = benchjson.path(os.path.join(d, "layer.json"))
    if not p:
        return []
    j = benchjson.load(p)
    on = {(r["type"], int(r["tokens"])): r for r in results(os.path.join(d, "layer-on.txt"))}
    off = {(r["type"], int(r["tokens"])): r for r in results(os.path.join(d, "layer-off.txt"))}
    lay = j.get("layer", {})
    out = [f"Device {j.get('device', '')}. A Qwen3-30B-A3B-like MoE FFN layer (hidden "
           f"{lay.get('H')}, expert ffn {lay.get('F')}, {lay.get('E')} experts top-"
           f"{lay.get('top_k')}): router, top-k, routing, gate/up with SwiGLU, down, weighted sum "
           "with residual and RMSNorm. Ours: `qkgen bench --layer` on the model's tuned bundle "
           "(`qkgen tune --model`, `qkgen build --tuned`), one command buffer; `chain us` is per "
           "layer of layers back to back. The peer: one ggml graph of the same ops "
           "(bench/peer/peerlayer.c); `wall us` per layer of chained layers, `kern us` the sum "
           "of its per-op GPU times (a barrier after each op).", ""] if intro else []
    out += ["| format | tokens | qkgen us/layer | qkgen chain us | peer wall us | peer kern us "
            "| peer wall / qkgen chain | dispatches (qkgen) |", "|---|---|---|---|---|---|---|---|"]
    for r in j.get("results", []):
        if not r.get("ok"):
            continue
        key = (r["format"], r["T"])
        a, b = off.get(key), on.get(key)
        wall = float(a["wall_us"]) if a else None
        kern = float(b["kern_us"]) if b else None
        ratio = f"{wall / r['us_chain']:.2f}x" if wall else "-"
        out.append(f"| {r['format']} | {r['T']} | {r['us']:.1f} | {r['us_chain']:.1f} | "
                   f"{wall if wall else '-'} | {kern if kern else '-'} | {ratio} | "
                   f"{r['dispatches']} |")
    return out


def others(dirs):
    """One table of several layer folders: per format and tokens, each
    folder's chain us, its peer's wall over it and its dispatches."""
    cols, keys = [], []
    for d in dirs:
        p = benchjson.path(os.path.join(d, "layer.json"))
        if not p:
            continue
        off = {(r["type"], int(r["tokens"])): r for r in results(os.path.join(d, "layer-off.txt"))}
        cell = {}
        for r in benchjson.load(p).get("results", []):
            if not r.get("ok"):
                continue
            key = (r["format"], r["T"])
            a = off.get(key)
            ratio = f", {float(a['wall_us']) / r['us_chain']:.2f}x" if a else ""
            cell[key] = f"{r['us_chain']:.1f}{ratio}, {r['dispatches']}"
            if key not in keys:
                keys.append(key)
        cols.append((os.path.basename(os.path.normpath(d)), cell))
    if not cols:
        return []
    out = ["Each cell: qkgen chain us per layer, the peer's wall us over it (its own call's "
           "peer run), dispatches.", "",
           "| format | tokens | " + " | ".join(f"`{n}/`" for n, _ in cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for key in sorted(keys):
        out.append(f"| {key[0]} | {key[1]} | " + " | ".join(c.get(key, "-") for _, c in cols) + " |")
    return out


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: side_by_side.py DIR")
    d = sys.argv[1]
    out = []
    for part in ("decode", "decode-mlx"):
        t = decode(os.path.join(d, part))
        if t:
            out += [f"### Decode: every format{' (MLX)' if part.endswith('mlx') else ''}", ""] + t + [""]
    t = prefill(os.path.join(d, "prefill"))
    if t:
        out += ["### Prefill: matmul and MoE matmul, 512 tokens", ""] + t + [""]
    t = layer(os.path.join(d, "layer"))
    if t:
        out += ["### The MoE layer", ""] + t + [""]
    # further layers of the same day beside it: layer-NAME/, another call or
    # another path of the same call (the folder's notes.md says which), each
    # with the peer's run of its call (a folder of call logs without
    # layer.json is skipped): one table, a column each
    t = others([sub for sub in sorted(glob.glob(os.path.join(d, "layer-*", "")))])
    if t:
        out += ["### The MoE layer's other paths", ""] + t + [""]
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
