#!/usr/bin/env python3
"""Checks a `qkgen bench --json` file written with --finalists N.

For each case (family, format, shape), with N > 0: every correct variant has a screen
time; the N fastest of the screen (or all, where there are no more) were
timed in full and the rest were not; exactly one timed variant is marked
best, and it is the fastest timed one. The two-pass candidates of matmul
cases ("twopass:<dequant>+<matmul>") are timed in full outside the screen;
with --two-pass, every matmul case must have one, correct and timed.
Exit 1 with the first violation."""
import json
import sys


def main():
    path, finalists = sys.argv[1], int(sys.argv[2])
    two_pass = "--two-pass" in sys.argv[3:]
    with open(path) as f:
        results = json.load(f)["results"]
    cases = {}
    for r in results:
        key = (r["family"], r["format"], r["M"], r["K"], r["T"], r["E"], r["top_k"])
        cases.setdefault(key, []).append(r)
    if not cases:
        sys.exit(f"{path}: no results")
    for key, rs in cases.items():
        name = " ".join(str(k) for k in key)
        tp = [r for r in rs if r["kernel"].startswith("twopass:")]
        if any(not r["ok"] or not r["timed"] or r["us"] <= 0 for r in tp):
            sys.exit(f"{name}: a two-pass candidate wrong or not timed: {tp}")
        if two_pass and key[0] in ("matmul", "matmul_id") and not tp:
            sys.exit(f"{name}: no two-pass candidate")
        ok = [r for r in rs if r["ok"] and not r["kernel"].startswith("twopass:")]
        timed = [r for r in ok if r["timed"]]
        if not ok:
            sys.exit(f"{name}: no correct variant")
        if finalists and len(ok) > finalists:  # screened (0: every variant timed): every correct variant has a screen time
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
        if len(best) != 1 or best[0]["us"] != min(r["us"] for r in timed + tp):
            sys.exit(f"{name}: {len(best)} best, not the fastest timed variant")
    ntp = sum(r["kernel"].startswith("twopass:") for r in results)
    print(f"{path}: {len(cases)} cases, {len(results)} variants ({ntp} two-pass), "
          "screen and finalists consistent")


if __name__ == "__main__":
    main()
