#!/usr/bin/env python3
"""Two bundles timed in the same device call, case by case.

    python3 bench/compare.py [--tolerance 0.02] BEFORE_DIR AFTER_DIR

Each folder holds `qkgen bench --json` files (bench/standard.sh with
BUNDLES="before bundle" writes FAMILY-FORMAT-before.json and
FAMILY-FORMAT-bundle.json: pass OUT/*-before.json's and OUT/*-bundle.json's
folders, or two folders of copies). For every case timed in both, the
fastest correct variant's time per dispatch before and after, their ratio
(after / before: above 1 is slower) and each winner. Exits 1 when a case is
slower by more than the tolerance (default 2%), so a comparison can gate."""
import argparse
import glob
import json
import os

import benchjson


def best_by_case(paths):
    cases = {}
    for path in paths:
        d = benchjson.load(path)
        for r in d["results"]:
            if not r["best"]:
                continue
            key = (r["family"], r["format"], r["E"], r["top_k"], r["M"], r["K"], r["T"])
            cases[key] = r
    return cases


def files(where, suffix):
    if os.path.isdir(where):
        return benchjson.find(os.path.join(where, "*.json"))
    return benchjson.find(where + "*" + suffix)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("before", help="a folder of bench JSON, or a prefix of such files")
    ap.add_argument("after")
    a = ap.parse_args()
    before = best_by_case(files(a.before, ".json"))
    after = best_by_case(files(a.after, ".json"))
    both = [k for k in after if k in before]
    if not both:
        raise SystemExit("no case was timed in both")
    print("| case | before us | after us | after / before | winner before | winner after |")
    print("|---|---|---|---|---|---|")
    worst, slower = 0.0, 0
    for k in both:
        b, r = before[k], after[k]
        ratio = r["us"] / b["us"]
        worst = max(worst, ratio)
        slower += ratio > 1 + a.tolerance
        fam, fmt, E, top_k, M, K, T = k
        name = f"{fam} {fmt} {M}x{K}" + (f" {E}e top-{top_k}" if E else "") + f" {T} tok"
        flag = " **slower**" if ratio > 1 + a.tolerance else ""
        print(f"| {name} | {b['us']:.2f} | {r['us']:.2f} | {ratio:.3f}{flag} | {b['kernel']} "
              f"| {r['kernel']} |")
    print(f"\n{len(both)} cases; {slower} slower by more than {a.tolerance:.0%}; "
          f"largest ratio {worst:.3f}")
    raise SystemExit(1 if slower else 0)


if __name__ == "__main__":
    main()
