#!/usr/bin/env python3
"""Summarises raw device runs into the compact tables that bench/results.py
turns into bench/RESULTS.md: one CSV per table and an index, in bench/results/.

    python3 bench/summarise.py RAW

RAW is a folder of raw runs, one folder per device call or day, as the GPU
machine returned them (`qkgen bench --json` files, the peer's logs, gpu.txt,
commit.txt, tune-gpu.sh's folders with times.txt); keep it outside the
repository, or in bench/raw/, which git ignores. The raw runs up to
2026-11-27 were committed until ba7f535; to summarise them again:

    git archive ba7f535 bench/results | tar -x -C /tmp && python3 bench/summarise.py /tmp/bench/results

Which run is the current one of each table is set below (SOURCES); a new
run replaces one by its folder name. Written here:

  standard.csv  the standard set: per case the fastest correct variant
                (bench/table.py's columns), checked and timed counts;
  prefill.csv   dense and MoE prefill at 512 tokens beside the peer, with
                the same kernels' f16-activation times of the same call;
  layer.csv     the MoE layer beside the peer (bench/side_by_side.py);
  tuner.csv     the autotuner against the exhaustive search, per case, the
                newest measurement per device (bench/tune_compare.py);
  decode.csv    every GGUF format's decode cases beside the peer, and
  decode_mlx.csv every MLX configuration's against mlx4_g64 (formats-gpu.sh);
  index.json    per table: the raw folder, device, commits and the top of
                each bench file that the tables' captions need."""
import csv
import glob
import json
import os
import sys

import benchjson
import side_by_side
import table
import tune_compare

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results")
SOURCES = {
    "standard": "2026-11-25-h100",  # its *-bundle.json files
    "prefill": "2026-11-27f-h100",  # prefill/ (f32 and the peer) and f16/
    "layer": "2026-11-27c-h100/layer",
    "tuner": "",  # every folder of RAW with a times.txt; the newest wins
    # every format's decode beside the peer (bench/formats-gpu.sh gguf): a
    # later folder's cases replace an earlier one's (each ratio of one call)
    "decode": ["2026-11-29a-h200/decode", "2026-11-29b-h200/decode"],
    # the MLX configurations (formats-gpu.sh mlx), each against mlx4_g64 of
    # its own call
    "decode_mlx": ["2026-11-29a-h200/decode-mlx", "2026-11-29c-h200/decode-mlx"],
}
DECODE = ["format", "M", "K", "T", "E", "top_k", "kernel", "us", "us_span", "size_copy_span_us",
          "bytes", "peer_us", "ref_us", "ref_bytes", "folder"]
STANDARD = ["family", "format", "E", "top_k", "M", "K", "T", "kernel", "us", "pct_copy",
            "us_span", "pct_copy_span", "tflops", "size_copy_us", "bytes"]


def first_line(path):
    """The last data line of an nvidia-smi CSV (gpu.txt), or a file's text."""
    if not os.path.exists(path):
        return ""
    lines = [l.strip() for l in open(path) if l.strip() and not l.startswith("name")]
    return lines[-1] if lines else ""


def write(name, fields, rows):
    with open(os.path.join(OUT, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})


def standard(raw):
    d = os.path.join(raw, SOURCES["standard"])
    paths = [p for p in benchjson.find(os.path.join(d, "*.json"))
             if benchjson.name(p).endswith("-bundle.json")]
    runs, cases = table.cases_of(paths)
    rows = []
    for key in sorted(cases, key=table.order):
        c = cases[key]
        r = dict(c["best"] or dict(zip(STANDARD[:7], key)))
        r.update(checked=c["n"], timed=c["timed"])
        if c["best"]:
            r.update(copy_gbps=c["run"]["copy_gbps"], floor_us=c["run"]["floor_us"])
        rows.append(r)
    write("standard.csv", STANDARD + ["checked", "timed", "copy_gbps", "floor_us"], rows)
    tops = [{k: d_[k] for k in ("device", "driver", "copy_gbps", "floor_us", "seed")} for d_ in runs]
    return {"source": SOURCES["standard"], "gpu": first_line(os.path.join(d, "gpu.txt")),
            "commit": open(os.path.join(d, "commit.txt")).read().strip(), "runs": tops}


def best_per_case(d):
    return side_by_side.best_cases(d)[0]


def prefill(raw):
    d = os.path.join(raw, SOURCES["prefill"])
    f32, f16 = best_per_case(os.path.join(d, "prefill")), best_per_case(os.path.join(d, "f16"))
    peer = {}
    for r in side_by_side.results(os.path.join(d, "prefill", "peer-on.txt")):
        if r.get("part") == "prefill":
            peer[("matmul", r["type"], int(r["m"]), int(r["k"]), int(r["n"]), 0)] = r
        elif r.get("part") == "moe" and int(r["n"]) >= 32:
            peer[("matmul_id", r["type"], int(r["m"]), int(r["k"]), int(r["n"]), int(r["E"]))] = r
    rows = []
    for key in sorted(f32, key=lambda k: (k[0], k[2], k[1])):
        r, h, p = f32[key], f16.get(key), peer.get(key)
        rows.append({"family": key[0], "format": key[1], "M": key[2], "K": key[3], "T": key[4],
                     "E": key[5], "top_k": r.get("top_k", 0), "kernel": r["kernel"],
                     "us": r["us"], "tflops": r["tflops"],
                     "kernel_f16": h["kernel"] if h else "", "us_f16": h["us"] if h else "",
                     "peer_kern_us": float(p["kern_us"]) if p else "",
                     "peer_tflops": float(p["tflops_kern"]) if p else ""})
    write("prefill.csv", ["family", "format", "M", "K", "T", "E", "top_k", "kernel", "us", "tflops",
                          "kernel_f16", "us_f16", "peer_kern_us", "peer_tflops"], rows)
    return {"source": SOURCES["prefill"], "gpu": side_by_side.gpu_name(os.path.join(d, "prefill")),
            "commit": open(os.path.join(d, "prefill", "commit.txt")).read().strip()}


def layer(raw):
    d = os.path.join(raw, SOURCES["layer"])
    j = benchjson.load(benchjson.path(os.path.join(d, "layer.json")))
    on = {(r["type"], int(r["tokens"])): r for r in side_by_side.results(os.path.join(d, "layer-on.txt"))}
    off = {(r["type"], int(r["tokens"])): r for r in side_by_side.results(os.path.join(d, "layer-off.txt"))}
    rows = []
    for r in j.get("results", []):
        if not r.get("ok"):
            continue
        key = (r["format"], r["T"])
        rows.append({"format": r["format"], "T": r["T"], "path": r.get("path", ""), "us": r["us"],
                     "us_chain": r["us_chain"], "dispatches": r["dispatches"],
                     "peer_wall_us": float(off[key]["wall_us"]) if key in off else "",
                     "peer_kern_us": float(on[key]["kern_us"]) if key in on else "",
                     "kernels": " ".join(f"{k}={v}" for k, v in r.get("kernels", {}).items())})
    write("layer.csv", ["format", "T", "path", "us", "us_chain", "dispatches", "peer_wall_us",
                        "peer_kern_us", "kernels"], rows)
    return {"source": SOURCES["layer"], "gpu": side_by_side.gpu_name(d), "layer": j.get("layer", {}),
            "commit": open(os.path.join(d, "commit.txt")).read().strip()}


def tuner(raw):
    """Each case's newest measurement per device, folders taken in the order
    of their names (a day's folder name sorts after the day's earlier ones)."""
    latest = {}
    folders = sorted({os.path.dirname(p) for p in
                      glob.glob(os.path.join(raw, "**", "times.txt"), recursive=True)})
    for f in folders:
        gpus = sorted(glob.glob(os.path.join(f, "gpu*.txt")))
        names = [l.split(",")[0].strip() for g in gpus for l in open(g)
                 if l.strip() and not l.startswith("name")]
        try:
            rows = tune_compare.compare(f)
        except (ValueError, KeyError, AttributeError, IndexError):
            continue  # not a folder of tune-gpu.sh's
        if not names:
            continue
        for r in rows:
            if "missing" not in r:
                latest[(names[-1], r["format"], r["name"])] = dict(
                    r, device=names[-1], folder=os.path.relpath(f, raw))
    order = {"decode": 0, "moe": 1, "prefill": 2}
    rows = sorted(latest.values(), key=lambda r: (r["device"], r["format"], order.get(r["part"], 9),
                                                   r["name"]))
    write("tuner.csv", ["device", "format", "part", "name", "pick", "pick_us", "best_us", "ratio",
                        "tune_s", "bench_s", "folder"], rows)
    return {"source": "every folder with a times.txt"}


def decode(raw, key):
    """decode.csv / decode_mlx.csv: per format and case the fastest correct
    variant, the peer's kern_us of the same call (GGUF) or mlx4_g64's time
    and bytes of the same call (MLX)."""
    cases, folders, gpu = {}, [], ""
    for src in SOURCES[key]:
        d = os.path.join(raw, src)
        best = best_per_case(d)
        if not best:
            continue
        folders.append(src)
        gpu = side_by_side.gpu_name(d) or gpu
        peer = {}
        for r in side_by_side.results(os.path.join(d, "peer.txt")):
            peer[(r["type"], int(r["m"]), int(r["k"]), int(r["n"]), int(r["E"]))] = r
        for (fam, fmt, m, k, t, e), r in best.items():
            ref = best.get((fam, "mlx4_g64", m, k, t, e))
            p = peer.get((fmt, m, k, t, e))
            cases[(fmt, m, k, t, e)] = dict(
                r, E=e, peer_us=float(p["kern_us"]) if p else "", folder=src,
                ref_us=ref["us"] if ref else "", ref_bytes=ref["bytes"] if ref else "")
    if not folders:
        return None
    write(key + ".csv", DECODE, [cases[c] for c in sorted(cases)])
    return {"source": ", ".join(folders), "gpu": gpu}


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit(__doc__.split("\n\n")[1])
    raw = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    # a table whose raw runs RAW lacks keeps its summary and index entry
    old = json.load(open(os.path.join(OUT, "index.json"))) if os.path.exists(
        os.path.join(OUT, "index.json")) else {}
    index = {}
    for key, fn in (("standard", standard), ("prefill", prefill), ("layer", layer),
                    ("tuner", tuner), ("decode", lambda r: decode(r, "decode")),
                    ("decode_mlx", lambda r: decode(r, "decode_mlx"))):
        src = SOURCES[key]
        have = any(os.path.isdir(os.path.join(raw, s)) for s in (src if isinstance(src, list) else [src]))
        index[key] = fn(raw) if have and (key != "tuner" or glob.glob(os.path.join(raw, "**", "times.txt"), recursive=True)) else old.get(key)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
