#!/usr/bin/env python3
"""Checks a `qkgen bench --json` file written with --finalists N (N > 0).

For each case (family, format, shape): every correct variant has a screen
time; the N fastest of the screen (or all, where there are no more) were
timed in full and the rest were not; exactly one timed variant is marked
best, and it is the fastest timed one. Exit 1 with the first violation."""
import json
import sys


def main():
    path, finalists = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        results = json.load(f)["results"]
    cases = {}
    for r in results:
        key = (r["family"], r["format"], r["M"], r["K"], r["T"], r["E"], r["top_k"])
        cases.setdefault(key, []).append(r)
    if not cases:
        sys.exit(f"{path}: no results")
    for key, rs in cases.items():
        ok = [r for r in rs if r["ok"]]
        timed = [r for r in ok if r["timed"]]
        name = " ".join(str(k) for k in key)
        if not ok:
            sys.exit(f"{name}: no correct variant")
        if len(ok) > finalists:  # screened: every correct variant has a screen time
            bad = [r["kernel"] for r in ok if r["screen_us"] <= 0]
            if bad:
                sys.exit(f"{name}: no screen time for {bad[0]}")
            fastest = sorted(ok, key=lambda r: r["screen_us"])[:finalists]
            if {r["kernel"] for r in timed} != {r["kernel"] for r in fastest}:
                sys.exit(f"{name}: timed {[r['kernel'] for r in timed]}, "
                         f"the screen's fastest were {[r['kernel'] for r in fastest]}")
        elif len(timed) != len(ok):
            sys.exit(f"{name}: {len(ok)} correct variants, {len(timed)} timed")
        if any(r["us"] <= 0 for r in timed) or any(r["us"] > 0 for r in ok if not r["timed"]):
            sys.exit(f"{name}: a time on a variant not timed, or none on a timed one")
        best = [r for r in rs if r["best"]]
        if len(best) != 1 or best[0]["us"] != min(r["us"] for r in timed):
            sys.exit(f"{name}: {len(best)} best, not the fastest timed variant")
    print(f"{path}: {len(cases)} cases, {len(results)} variants, screen and finalists consistent")


if __name__ == "__main__":
    main()
