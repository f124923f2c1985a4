#!/usr/bin/env python3
"""The standard set as a Markdown table, from `qkgen bench --json` files.

    python3 bench/table.py OUT/*.json

One row per case: the fastest correct variant (the JSON's `best`), its time
per dispatch and back to back with their percentages of the copy bandwidth
measured in the same process, its TFLOP/s, a copy of the case's bytes, how
many variants were checked and how many timed in full, and the issue's
target where the case has one. Cases are ordered as `qkgen bench` runs them.

A second table takes each missed target of time or bandwidth against a copy
kernel moving the same bytes in the same process: the target as a time, the
copy's own time, and the least any kernel could take between barriers (the
dispatch floor plus the bytes at the full copy bandwidth). A target below
the copy's time is one that not even a copy of the case's bytes meets."""
import json
import sys

import benchjson

FAMILIES = ["matvec", "matmul", "matvec_id", "matmul_id"]
FORMATS = ["q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "iq4_nl", "mlx4_g64"]


def case_name(r):
    what = {"matvec": "mat-vec", "matmul": "matmul", "matvec_id": "MoE mat-vec",
            "matmul_id": "MoE matmul"}.get(r["family"], r["family"])
    E = r["E"]
    return f"{what} {r['M']}x{r['K']}" + (f" {E}e top-{r['top_k']}" if E else "") + f", {r['T']} tok"


def target(r):
    """The issue's target of this case as (kind, value), or None: kind "pct"
    (at least this share of the copy bandwidth), "us" (at most) or "tflops"
    (at least)."""
    fam, M, K, T, E = r["family"], r["M"], r["K"], r["T"], r["E"]
    if fam == "matvec" and T in (1, 4, 8):
        return "pct", {1: 90, 4: 80, 8: 65}[T]
    if fam == "matmul" and T == 512 and (M, K) == (4096, 14336):
        return "tflops", 200
    if E == 128 and (M, K) == (768, 2048):
        if fam == "matvec_id" and T in (1, 8):
            return "us", {1: 6, 8: 25}[T]
        if fam == "matmul_id" and T == 32:
            return "us", 60
        if fam == "matmul_id" and T == 512:
            return "tflops", 120
    return None


def target_text(kind, want):
    return {"pct": f">= {want}% copy", "us": f"<= {want} us", "tflops": f">= {want} TFLOP/s"}[kind]


def met(r, kind, want):
    return {"pct": r["pct_copy"] >= want, "us": r["us"] <= want, "tflops": r["tflops"] >= want}[kind]


def cases_of(paths):
    """The cases of `qkgen bench --json` files: per case key, how many
    variants were checked (n) and timed in full, the fastest correct one
    (best) and the top of its file (run: device, copy_gbps, floor_us, ...)."""
    runs, cases = [], {}
    for path in paths:
        d = benchjson.load(path)
        runs.append(d)
        for r in d["results"]:
            key = (r["family"], r["format"], r["E"], r["top_k"], r["M"], r["K"], r["T"])
            c = cases.setdefault(key, {"n": 0, "timed": 0, "best": None})
            c["n"] += r["ok"]
            c["timed"] += r["ok"] and r.get("timed", True)
            if r["best"]:
                c["best"] = r
                c["run"] = d
    return runs, cases


def order(key):
    fam, fmt, E, topk, M, K, T = key
    return (FAMILIES.index(fam) if fam in FAMILIES else 9,
            FORMATS.index(fmt) if fmt in FORMATS else 9, -E, M, T)


def render(runs, cases, missed=True):
    """The table's lines (runs: the files' tops; cases: as cases_of gives
    them); missed: also the table of missed targets, else only its count."""
    out = []
    copies = [d["copy_gbps"] for d in runs]
    floors = [d["floor_us"] for d in runs]
    d0 = runs[0]
    out.append(f"Device {d0['device']}, driver {d0['driver']}; {len(runs)} bench processes, "
               f"copy bandwidth {min(copies):.1f}-{max(copies):.1f} GB/s, dispatch floor "
               f"{min(floors):.2f}-{max(floors):.2f} us, seed {d0['seed']}.\n")
    out.append("| format | case | fastest variant | us | copy | b2b us | b2b copy | TFLOP/s "
               "| copy of its bytes, us | checked / timed | target |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    n_met = n_missed = 0
    for key in sorted(cases, key=order):
        fam, fmt, E, topk, M, K, T = key
        c, r = cases[key], cases[key]["best"]
        shape = case_name(r) if r else f"{fam} {M}x{K}, {T} tok"
        if r is None:
            out.append(f"| {fmt} | {shape} | no correct variant | | | | | | | {c['n']} / 0 | |")
            continue
        t = target(r)
        ok = t and met(r, *t)
        if t:
            n_met += ok
            n_missed += not ok
        tt = f"{target_text(*t)}: {'**met**' if ok else 'no'}" if t else ""
        out.append(f"| {fmt} | {shape} | `{r['kernel']}` | {r['us']:.2f} | {r['pct_copy']:.1f}% "
                   f"| {r['us_span']:.2f} | {r['pct_copy_span']:.1f}% | {r['tflops']:.2f} "
                   f"| {r['size_copy_us']:.2f} | {c['n']} / {c['timed']} | {tt} |")
    out.append(f"\n{len(cases)} cases; targets met {n_met}, missed {n_missed}.")
    return out + bounds(cases, missed)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: table.py BENCH.json ...")
    print("\n".join(render(*cases_of(sys.argv[1:]))))


def target_us(r, d, kind, want):
    """The target as a time in microseconds (d: the case's bench run)."""
    if kind == "pct":  # the case's bytes at that share of the copy bandwidth
        return r["bytes"] / (want / 100 * d["copy_gbps"] * 1e3)
    return want


def bounds(cases, table=True):
    """The missed targets of time or bandwidth against a copy of the same
    bytes: a table (with table) and a count, as lines."""
    rows, beyond, within, compute, b2b = [], 0, 0, 0, 0
    for key in sorted(cases, key=order):
        r = cases[key]["best"]
        t = r and target(r)
        if not t or met(r, *t):
            continue
        if t[0] == "tflops":
            compute += 1
            continue
        d = cases[key]["run"]
        tu = target_us(r, d, *t)
        least = d["floor_us"] + r["bytes"] / (d["copy_gbps"] * 1e3)
        over = tu < r["size_copy_us"]
        beyond += over
        within += not over
        b2b += r["us_span"] <= tu
        rows.append(f"| {r['format']} | {case_name(r)} | {tu:.2f} "
                    f"| {r['us']:.2f} | {r['us_span']:.2f} | {r['size_copy_us']:.2f} | {least:.2f} "
                    f"| {'beyond a copy' if over else 'within a copy: %.2fx its time' % (tu / r['size_copy_us'])} |")
    if not rows and not compute:
        return []
    out = []
    if table:
        out += ["\n| format | case | target, us | us | b2b us | copy of its bytes, us "
                "| floor + bytes at copy rate, us | the target |", "|---|---|---|---|---|---|---|---|"]
        out += rows
    out.append(f"\nMissed targets of time or bandwidth: {beyond} beyond a copy of the case's bytes, "
               f"{within} within it; {b2b} of them met back to back. Missed TFLOP/s targets: {compute}.")
    return out


if __name__ == "__main__":
    main()
