#!/usr/bin/env python3
"""Bundles timed in the same device call, variant by variant, with the driver's
registers and binary size: the table of a template experiment.

    python3 bench/variants.py DIR BASE OTHER [OTHER ...]

DIR holds `qkgen bench --json` files named FAMILY-FORMAT-BUNDLE.json, as
bench/standard.sh writes them with BUNDLES="BASE OTHER ..." (in DIR or its
subfolders: rounds in opposite orders average). For every variant timed in
BASE, its time there and each bundle's time over it, with "registers/binary
bytes" from the bench's `pipeline` field where the driver reports them
(VK_KHR_pipeline_executable_properties)."""
import glob
import json
import os
import re
import statistics
import sys

import benchjson


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__.split("\n\n")[1])
    where, bundles = sys.argv[1], sys.argv[2:]
    times, stats = {}, {}
    for b in bundles:
        paths = benchjson.find(os.path.join(where, "**", f"*-{b}.json"), recursive=True)
        if not paths:
            raise SystemExit(f"no *-{b}.json under {where}")
        for path in paths:
            for r in benchjson.load(path)["results"]:
                if not r.get("timed") or not r.get("ok"):
                    continue
                key = (r["family"], r["format"], r["M"], r["K"], r["T"], r["E"], r["kernel"])
                times.setdefault((key, b), []).append(r["us"])
                m = re.search(r"Register Count=(\d+); Binary Size=(\d+)", r.get("pipeline", ""))
                if m:
                    stats[(key, b)] = "%s/%s" % m.groups()
    base = bundles[0]
    keys = sorted({k for k, b in times if b == base})
    print("| case | kernel | %s us | %s |" % (base, " | ".join(bundles)))
    print("|---|---|---|" + "---|" * len(bundles))
    for k in keys:
        fam, fmt, M, K, T, E, kernel = k
        ref = statistics.mean(times[(k, base)])
        cells = []
        for b in bundles:
            if (k, b) not in times:
                cells.append("-")
                continue
            s = stats.get((k, b))
            cells.append("%.3f%s" % (statistics.mean(times[(k, b)]) / ref, f" ({s})" if s else ""))
        case = f"{fam} {fmt} {M}x{K}" + (f" {E}e" if E else "") + f" {T} tok"
        print(f"| {case} | {kernel} | {ref:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
