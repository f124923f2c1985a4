#!/usr/bin/python3
"""The exported header's select table and qkb_select against select_eval.py
(docs/manifest.md's rule, evaluated independently): a copy of BUNDLE gets a
random select table over its kernels, is exported, and both answer the same
queries (devices known, known with another driver, siblings of a family,
other chips of a vendor, unknown; shapes inside, between and beyond the
ranges), with the level each answer comes from."""
import json
import os
import random
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import manifest_view  # noqa: E402
import select_eval  # noqa: E402


def rule(rng, k):
    def rng_range():
        lo = rng.choice([1, 1, 2, 17, 100])
        return [lo, rng.choice([None, lo + rng.randint(0, 300)])]
    # a fused kernel's op is "family/fusion" (docs/manifest.md, "Selection")
    fusion = k.get("fusion") or "none"
    op = k["family"] if fusion == "none" else k["family"] + "/" + fusion
    r = {"op": op, "format": k["format"], "format_variant": k["format_variant"],
         "kernel": k["name"], "precision": k["precision"],
         "M": rng_range(), "K": rng_range(), "T": rng_range()}
    if k.get("activation", "f32") != "f32":  # version 2: the rule names them
        r["activations"] = k["activation"]
    return r


def main(argv):
    qkgen, bundle, scratch, seed = argv[1], argv[2], argv[3], int(argv[4])
    rng = random.Random(seed)
    copy = os.path.join(scratch, "selected")
    shutil.copytree(bundle, copy)
    with open(os.path.join(copy, "manifest.json")) as f:
        man = json.load(f)
    ks = [k for k in manifest_view.kernels(man) if k["family"] in ("matvec", "matvec_id", "matmul", "matmul_id")]
    # two drivers of 0x2301 (the second without family_mask: its device only),
    # a sibling 0x2305, another chip 0x2684 and another vendor's device
    ids = [(4318, 0x2301, 100, True), (4318, 0x2301, 200, False), (4318, 0x2305, 1, True),
           (4318, 0x2684, 1, True), (4319, 0x2301, 1, True)]
    devices = [{"vendor_id": v, "device_id": d, "driver_version": drv, "cache_uuid": "0" * 32,
                "name": f"device {d:#x} {drv}", "rules": [rule(rng, rng.choice(ks)) for _ in range(8)]}
               for v, d, drv, _ in ids]
    for d, (_, _, _, mask) in zip(devices, ids):
        if mask:
            d["family_mask"] = 0xffffff00
    man["select"] = {"version": 2, "devices": devices,
                     "default": [rule(rng, rng.choice(ks)) for _ in range(8)]}
    with open(os.path.join(copy, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    header = os.path.join(scratch, "qkb_bundle.h")
    subprocess.run([qkgen, "export", copy, "--c", header], check=True)
    exe = os.path.join(scratch, "select_check")
    src = os.path.join(os.path.dirname(__file__), "select_check.c")
    flags = ["-Wall", "-Wextra", "-pedantic", "-Werror", "-I", scratch]
    subprocess.run(["cc", "-std=c99", *flags, src, "-o", exe], check=True)
    shutil.copy(src, os.path.join(scratch, "select_check.cpp"))
    subprocess.run(["c++", "-std=c++11", *flags, os.path.join(scratch, "select_check.cpp"), "-o",
                    exe + "_cpp"], check=True)
    with open(header) as f:
        text = f.read()
    listed = re.search(r"shape_names\[\w+\] = \{([^}]*)\}", text).group(1)
    names = [n.strip().strip('"') for n in listed.split(",")]
    queries, expected = [], []
    for _ in range(600):
        r = rng.choice([r for d in devices for r in d["rules"]] + man["select"]["default"])
        dev = rng.choice([(4318, 0x2301, 100), (4318, 0x2301, 200), (4318, 0x2301, 300),
                          (4318, 0x2302, 1), (4318, 0x2305, 1), (4318, 0x2700, 1),
                          (4319, 0x2301, 1), (4319, 0x1000, 1), (1, 2, 3)])
        variant = rng.choice(["-", r["format_variant"]])
        shape = {n: rng.randint(1, 8) for n in names}
        shape.update(M=rng.randint(1, 450), K=rng.choice([32, 64, 256, 320, 33]),
                     T=rng.randint(1, 450), ne11=1, top_k=2, E=8)
        shape["max_per_expert"] = shape["T"]
        fmt = r["format"] + ("" if variant == "-" else "/" + variant)
        act = rng.choice(["f32", "f16", r.get("activations", "f32")])
        kernel, level = select_eval.select(man, dev, r["op"], fmt, shape, act)
        want = f"{kernel}:{level}" if level else "-"
        queries.append(" ".join(str(x) for x in (*dev, r["op"], r["format"],
                                                 variant if variant else "-", act)) + " " +
                       " ".join(str(shape[n]) for n in names))
        expected.append(want)
    run = subprocess.run([exe], input="\n".join(queries) + "\n", capture_output=True, text=True)
    got = run.stdout.split()
    wrong = [(q, w, g) for q, w, g in zip(queries, expected, got) if w != g]
    for q, w, g in wrong[:10]:
        print(f"FAIL: {q}\n  select_eval: {w}\n  header:      {g}")
    picked = sum(w != "-" for w in expected)
    levels = {lv: sum(w.endswith(":" + lv) for w in expected) for lv in select_eval.LEVELS}
    print(f"seed {seed}: {len(queries)} queries ({picked} pick a kernel; by level {levels}), "
          f"{len(wrong) + abs(len(got) - len(expected))} differ")
    return 1 if wrong or len(got) != len(expected) or run.returncode or not all(
        levels.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
