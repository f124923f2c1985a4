#!/usr/bin/env python3
"""Writes bench/RESULTS.md from the measurements committed under bench/results/.

    python3 bench/results.py [RUN_DIR] > bench/RESULTS.md

RUN_DIR (default: the newest folder of bench/results/ with JSON files at its
top) holds what a device call of bench/standard.sh returned: `qkgen bench --json` files named
FAMILY-FORMAT[-BUNDLE].json (or .json.gz: bench/benchjson.py), commit.txt (the commit the package was built
from) and gpu.txt (nvidia-smi's name and driver), and optionally notes.md, a
few lines on what the run was. The page is generated, never edited by hand:
the current table per family (bench/table.py), the comparison of two bundles
where the run timed two (bench/compare.py), the side-by-side tables against
the peer of the newest two folders with prefill/ and of the newest with
layer/ (bench/side_by_side.py; the others listed), the autotuner against
the exhaustive search per format and part (the folders of bench/tune-gpu.sh,
bench/tune_compare.py), the method, the device and how to reproduce. The story of each experiment is in git history and the issues."""
import glob
import os
import subprocess
import sys

import benchjson
import tune_compare

HERE = os.path.dirname(os.path.abspath(__file__))


def run(*args):
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    return p.stdout.rstrip()


def tuner(added):
    """The section on issue 26's target: per device, format and part of the
    standard set, each case's newest measurement by bench/tune-gpu.sh (a
    folder with its times.txt) and their sums."""
    latest = {}  # (device, format, case) -> (row, folder)
    folders = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(HERE, "results", "**", "times.txt"),
                                                           recursive=True)})
    for f in sorted(folders, key=lambda f: (added(f), f)):
        gpus = sorted(glob.glob(os.path.join(f, "gpu*.txt")))
        names = [l.split(",")[0].strip() for g in gpus for l in open(g) if l.strip() and not l.startswith("name")]
        try:
            rows = tune_compare.compare(f)
        except (ValueError, KeyError, AttributeError, IndexError):
            continue  # not a folder of tune-gpu.sh's
        if not names:
            continue
        for r in rows:
            if "missing" not in r:
                latest[(names[-1], r["format"], r["name"])] = (r, os.path.relpath(f, os.path.dirname(HERE)))
    if not latest:
        return []
    parts = {}
    for (dev, fmt, _), (r, f) in latest.items():
        parts.setdefault((dev, fmt, r["part"]), []).append((r, f))
    out = ["## The autotuner against an exhaustive search", "",
           "`bench/tune-gpu.sh FORMAT PART` tunes each case of a part of the standard set "
           "(`qkgen tune`, candidates built on demand) and then times the same candidates "
           "exhaustively (`qkgen bench --finalists 0`), in the same device call. The target: "
           "in every case the tune's pick within 3% of the exhaustive best (both timed in the "
           "exhaustive run), the tune taking at most a quarter of the exhaustive device time. "
           "Each case's newest measurement per device; `python3 bench/tune_compare.py FOLDER` "
           "gives a folder's cases.", "",
           "| device | format | part | within 3% | largest ratio | tune s | exhaustive s | share | folders |",
           "|---|---|---|---|---|---|---|---|---|"]
    order = {"decode": 0, "moe": 1, "prefill": 2}
    for (dev, fmt, part) in sorted(parts, key=lambda k: (k[0], k[1], order.get(k[2], 9))):
        rows = parts[(dev, fmt, part)]
        ok = sum(r["ratio"] <= 1.03 for r, _ in rows)
        ts = sum(r["tune_s"] for r, _ in rows)
        bs = sum(r["bench_s"] for r, _ in rows)
        where = sorted({f for _, f in rows})
        worst = max(rows, key=lambda rf: rf[0]["ratio"])[0]
        mark = " †" if worst["ratio"] > 1.03 and "splitk" in worst["pick"] else ""
        out.append(f"| {dev} | {fmt} | {part} | {ok} of {len(rows)} | "
                   f"{worst['ratio']:.3f}{mark} | {ts:.0f} | {bs:.0f} | "
                   f"{100 * ts / bs:.0f}% | {', '.join('`' + w + '`' for w in where)} |")
    if any("†" in l for l in out):
        out += ["", "†: the case missed is a split-K pick. Until 90e9c27 the tune's finalists "
                "timed split-K kernels too fast where two of them shared a scratch buffer "
                "(bench/results/2026-11-26f-h100/notes.md); such a case stands until it is "
                "measured again."]
    return out + [""]


def main():
    folders = sorted(glob.glob(os.path.join(HERE, "results", "*", "")))
    runs = [f for f in folders if benchjson.find(os.path.join(f, "*.json"))]
    # the side-by-side folders, oldest first by the commit that added them
    # (a folder not yet committed: its files' time)
    def added(f):
        t = subprocess.run(["git", "log", "--diff-filter=A", "--format=%ct", "--", f],
                           capture_output=True, text=True, cwd=HERE).stdout.split()
        return int(t[-1]) if t else int(max(os.path.getmtime(p) for p in glob.glob(f + "**", recursive=True)))
    sides = sorted((f for f in folders
                    if os.path.isdir(os.path.join(f, "prefill")) or os.path.isdir(os.path.join(f, "layer"))),
                   key=lambda f: (added(f), os.path.basename(os.path.normpath(f))))
    # the current tables: the newest folder of each kind; the others listed
    # the newest two prefill calls (a call may time a few formats only) and
    # the newest layer call
    keep = [f for f in sides if os.path.isdir(os.path.join(f, "prefill"))][-2:]
    keep += [f for f in sides if os.path.isdir(os.path.join(f, "layer"))][-1:]
    shown = [f for f in sides if f in keep]
    older = [f for f in sides if f not in shown]
    where = sys.argv[1] if len(sys.argv) > 1 else (runs[-1] if runs else None)
    if not where or not os.path.isdir(where):
        sys.exit("usage: results.py [RUN_DIR] (no folder under bench/results/)")
    name = os.path.basename(os.path.normpath(where))
    jsons = benchjson.find(os.path.join(where, "*.json"))
    bundles = sorted({benchjson.name(p).rsplit("-", 1)[1][:-5] for p in jsons
                      if benchjson.name(p).count("-") >= 2})
    current = [p for p in jsons if benchjson.name(p).endswith("-bundle.json")] or jsons
    rel = os.path.relpath(where, os.path.dirname(HERE))

    def read(f):
        p = os.path.join(where, f)
        return open(p).read().strip() if os.path.exists(p) else ""

    commit, gpu, notes = read("commit.txt"), read("gpu.txt"), read("notes.md")
    out = ["# Benchmarks on the NVIDIA H100 (and H200)", "",
           f"Generated by `bench/results.py` from `{rel}/`"
           + "".join(f" and `{os.path.relpath(s, os.path.dirname(HERE))}/`" for s in shown[::-1])
           + " (do not edit by hand).", ""]
    # a known fault of the method the committed runs were measured with, kept
    # here until a run made after its fix replaces them
    out += ["**Split-K figures are suspect.** Rows whose kernel is a split-K one "
            "(`splitk` in its name) were timed before 90e9c27: where the bench's halving "
            "rounds or finals timed a split kernel after one with a larger SK on the same "
            "scratch, its runs skipped their final sums and timed too fast (by 9% in the one "
            "case re-measured, bench/results/2026-11-26f-h100/tune-splitk-q4_0). They stand "
            "until the standard set is run again.", ""]
    for side in shown[::-1]:  # newest first
        snotes = os.path.join(side, "notes.md")
        out += ["## Side by side with llama.cpp's Vulkan backend, same device call "
                f"(`{os.path.basename(os.path.normpath(side))}`)", ""]
        if os.path.exists(snotes):
            out += [open(snotes).read().strip(), ""]
        out += [run(os.path.join(HERE, "side_by_side.py"), side), ""]
    if older:
        out += ["Earlier side-by-side calls (`python3 bench/side_by_side.py DIR` prints their tables):", ""]
        for f in older[::-1]:
            n = os.path.join(f, "notes.md")
            first = open(n).read().strip().split("\n\n")[0].replace("\n", " ") if os.path.exists(n) else ""
            out += [f"- `{os.path.relpath(f, os.path.dirname(HERE))}/`: {first}"]
        out += [""]
    out += [f"## The standard set (`{rel}/`)", ""]
    if notes:
        out += [notes, ""]
    out += tuner(added)
    out += ["## Device and method", "",
            f"- Device: {gpu.splitlines()[-1] if gpu else 'see gpu.txt'} (lent as nvidia-h100-x1).",
            "- Kernels (the commits the packages were built from): "
            + ("; ".join(l.strip() for l in commit.splitlines() if l.strip()) if commit
               else "see commit.txt") + ".",
            "- `qkgen bench` (cli/bench.c): every variant checked against the float64 CPU reference "
            "on the device first; weights rotating past 4x the L2; a one-second warm-up before each "
            "case; Vulkan timestamps; a 10-dispatch screen of every correct variant, then the 3 "
            "fastest timed in full (median of 30 runs, each dispatch alone between barriers, and "
            "back to back); the copy bandwidth and the dispatch floor measured in the same process.",
            "- `us` is per dispatch; `copy` the case's bytes over that time against the copy "
            "bandwidth; `b2b` back to back.", ""]
    out += ["## Current table", "", run(os.path.join(HERE, "table.py"), *current), ""]
    if len(bundles) == 2 and "bundle" in bundles:
        other = [b for b in bundles if b != "bundle"][0]
        before = [p for p in jsons if benchjson.name(p).endswith(f"-{other}.json")]
        if before:
            tmp = os.path.join(where, ".compare")
            os.makedirs(os.path.join(tmp, "a"), exist_ok=True)
            os.makedirs(os.path.join(tmp, "b"), exist_ok=True)
            for p in before:
                dst = os.path.join(tmp, "a", os.path.basename(p))
                if not os.path.exists(dst):
                    os.symlink(os.path.abspath(p), dst)
            for p in current:
                dst = os.path.join(tmp, "b", os.path.basename(p))
                if not os.path.exists(dst):
                    os.symlink(os.path.abspath(p), dst)
            out += [f"## `{other}` against `bundle`, same device call", "",
                    run(os.path.join(HERE, "compare.py"), os.path.join(tmp, "a"),
                        os.path.join(tmp, "b")), ""]
            for sub in ("a", "b"):
                for p in glob.glob(os.path.join(tmp, sub, "*")):
                    os.unlink(p)
                os.rmdir(os.path.join(tmp, sub))
            os.rmdir(tmp)
    out += ["## Reproduce", "",
            "On this machine (Debian 12, the set-up done):", "",
            "    bash ../shared/gpu/fetch-loader.sh      # the Vulkan loader for the GPU machine, into .gpu/",
            "    bash bench/build-gpu.sh                 # static qkgen + the bundle of specs/sets/standard.yaml, build-gpu/pkg", "",
            "On the GPU machine, carrying `.gpu` and `build-gpu/pkg`, a part per call:", "",
            "    . .gpu/enter.sh && OUT=$OUT/run bash build-gpu/pkg/standard.sh decode   # or moe, prefill", "",
            "and the autotuner against the exhaustive search, a format's part per call:", "",
            "    . .gpu/enter.sh && OUT=/tmp/t PACK=$OUT/t.tgz bash bench/tune-gpu.sh q4_0 prefill", "",
            "and the MoE layer beside the peer's (`bash bench/peer/build.sh` here first; carry "
            "`.gpu`, `.peer` and `build-gpu/pkg/qkgen`):", "",
            "    . .gpu/enter.sh && MODEL=bench/layer/qwen3-moe.yaml OUT=/tmp/l PACK=$OUT/l.tgz "
            "bash bench/layer-gpu.sh", "",
            f"Then copy the returned JSON, commit.txt and gpu.txt into a new folder of "
            f"bench/results/ and run `python3 bench/results.py > bench/RESULTS.md`. "
            f"The page before this generator (runs 1-100, one section each) is "
            f"`git show 4c2ac14:bench/RESULTS.md`.", ""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
