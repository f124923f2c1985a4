#!/usr/bin/env python3
"""Checks a `qkgen bench --layer --json` file against what the test asked.

Arguments: the file, then FORMAT:T:PATH:GATE_UP[:ROUTER[:DOWN]] entries, one
per layer expected (PATH decode or prefill; GATE_UP fused or split; ROUTER
fused, one router_topk kernel computing the logits, split, or ranked, no
router_topk kernel and gate/up's ranked form ranking the logits; DOWN fused, one
moe_combine kernel computing the slots and no down product, lanes, that kernel
on the int8-dot lanes, or split). Each layer must be
there once, correct, timed (us > 0, runs >= copies >= 1), on that path with
its kernels (moe_route only on the prefill path; a gate_up kernel, or gate
and swiglu), each dispatch timed in its stages. Exit 1 with the first violation."""
import json
import sys


def main():
    path, wanted = sys.argv[1], sys.argv[2:]
    with open(path) as f:
        doc = json.load(f)
    results = doc["results"]
    if len(results) != len(wanted):
        sys.exit(f"{path}: {len(results)} layers, expected {len(wanted)}")
    for want in wanted:
        fmt, tokens, route, gate_up, *rest = want.split(":")
        router, down = rest[:1], rest[1:2]
        found = [r for r in results if r["format"] == fmt and r["T"] == int(tokens)]
        if len(found) != 1:
            sys.exit(f"{want}: {len(found)} results")
        r = found[0]
        k = r["kernels"]
        if not r["ok"] or r["error"] or not r["ids_match"]:
            sys.exit(f"{want}: not ok: {r['error']}")
        if r["nmse_out"] > r["nmse_bound"] or r["nmse_normed"] > r["nmse_bound"]:
            sys.exit(f"{want}: NMSE {r['nmse_out']}, {r['nmse_normed']} over {r['nmse_bound']}")
        if r["us"] <= 0 or r["copies"] < 1 or r["runs"] < max(20, r["copies"]):
            sys.exit(f"{want}: us {r['us']}, runs {r['runs']}, copies {r['copies']}")
        if r["path"] != route or ("route" in k) != (route == "prefill"):
            sys.exit(f"{want}: path {r['path']}, kernels {k}")
        if ("gate_up" in k) != (gate_up == "fused") or ("gate" in k) != ("swiglu" in k):
            sys.exit(f"{want}: gate/up {gate_up} but kernels {k}")
        stages = r["stages"]
        if len(stages) != r["dispatches"] or any(s["us"] <= 0 for s in stages):
            sys.exit(f"{want}: {r['dispatches']} dispatches but stages {stages}")
        ran = {s["kernel"] for s in stages}
        if not set(k.values()) <= ran or any("quantize_q8" not in n for n in ran - set(k.values())):
            sys.exit(f"{want}: stages {stages} are not the kernels {k}")
        ranked = router and router[0] == "ranked"
        if ranked != ("topk" not in k) or ranked != ("-ranked" in k.get("gate_up", "")):
            sys.exit(f"{want}: router {router[0] if router else '-'} but kernels {k}")
        if router and not ranked and (k["router"] == k["topk"]) != (router[0] == "fused"):
            sys.exit(f"{want}: router {router[0]} but kernels {k}")
        if not ranked and k["router"] == k["topk"] and "router_topk-computed" not in k["router"]:
            sys.exit(f"{want}: router and top-k one kernel that does not compute the logits")
        if down and ("down" not in k) != (down[0] in ("fused", "lanes")):
            sys.exit(f"{want}: down {down[0]} but kernels {k}")
        if down and (down[0] == "lanes") != ("moe_combine-lanes" in k["combine"]):
            sys.exit(f"{want}: down {down[0]} but combine {k['combine']}")
        if ("down" in k) == k["combine"].startswith("moe_combine-"):
            sys.exit(f"{want}: a down product and a combine computing the slots, or neither: {k}")
        expect = {"router", "combine"} | ({"down"} if "down" in k else set()) | \
            ({"gate_up"} if ranked else {"topk"})
        if not expect <= set(k):
            sys.exit(f"{want}: kernels {k} lack one of {sorted(expect)}")
    print(f"{len(results)} layers as expected")


if __name__ == "__main__":
    main()
