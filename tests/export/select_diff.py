#!/usr/bin/python3
"""Differential test of the two select evaluators: libqkrt's qkrt_select
(select_qkrt.c) and the exported header's qkb_select (select_header.c,
compiled against each header). For TABLES random select tables over BUNDLE's
kernels, with the integer literals of random grids and constraints rewritten
with leading zeros (the same value to libqkrt's reader), both answer the same
random queries: the same kernel, the same workgroup counts and the same level
(device, family, vendor, default), every time.

usage: select_diff.py QKGEN SELECT_QKRT BUNDLE SCRATCH SEED [TABLES]"""
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

PRODUCTS = ("matvec", "matvec_id", "matmul", "matmul_id")


def zeros(rng, expr):
    """expr with leading zeros before some integer literals: the value
    libqkrt reads is unchanged, C would read them as octal."""
    return re.sub(r"\b\d+\b", lambda m: "0" * rng.choice([0, 0, 1, 2]) + m.group(0), expr)


def rng_range(rng):
    lo = rng.choice([0, 1, 1, 2, 17, 100, 1000, 4096])
    hi = rng.choice([None, None, lo, lo + rng.randint(0, 3000), 2 ** 40])
    return [lo, hi]


def rule(rng, k):
    # a fused kernel's op is "family/fusion" (docs/manifest.md, "Selection")
    fusion = k.get("fusion") or "none"
    op = k["family"] if fusion == "none" else k["family"] + "/" + fusion
    r = {"op": op, "format": k["format"], "format_variant": k.get("format_variant", ""),
         "kernel": k["name"], "precision": k.get("precision", "f32"),
         "M": rng_range(rng), "K": rng_range(rng), "T": rng_range(rng)}
    if (k.get("activation") or "f32") != "f32":
        r["activations"] = k["activation"]
    return r


def table(rng, ks, dev):
    vendor, device, driver = dev
    entries = []
    # the device's own entry, one of the same device with another driver
    # (taken when no entry has this driver), a sibling's (another device id
    # under the family mask), another chip's of the vendor, another vendor's,
    # in random order, each with family_mask or (as tables written before the
    # levels) without
    ids = [(vendor, device, driver), (vendor, device, driver + 1),
           (vendor, device ^ rng.randint(1, 255), driver), (vendor, device ^ 0x100, driver),
           (vendor, device ^ 0x10000, driver), (vendor + 1, device, driver)]
    for ids in rng.sample(ids, rng.randint(0, len(ids))):
        entry = {"vendor_id": ids[0], "device_id": ids[1], "driver_version": ids[2],
                 "cache_uuid": "0" * 32, "name": "device %d" % ids[2],
                 "rules": [rule(rng, rng.choice(ks)) for _ in range(rng.randint(0, 10))]}
        if rng.random() < 0.8:
            entry["family_mask"] = rng.choice([0xffffff00, 0xffffff00, 0xffff0000, 0])
        entries.append(entry)
    default = [rule(rng, rng.choice(ks)) for _ in range(rng.randint(0, 8))]
    rules = default + [r for e in entries for r in e["rules"]]
    version = 2 if any("activations" in r for r in rules) else 1
    # the rules this device's queries reach (its levels' entries), for
    # queries that mostly meet one
    visible = [r for e in select_eval.entries({"devices": entries}, dev) if e
               for r in e["rules"]] + default
    return {"version": version, "devices": entries, "default": default}, visible or rules


def edit_expressions(rng, man):
    """Leading zeros in the grids and constraints of random entries, where
    they are: the kernel's entry or its module's."""
    for entry in man["kernels"] + man["modules"]:
        if rng.random() < 0.5:
            continue
        if "dispatch" in entry:
            entry["dispatch"]["grid"] = [zeros(rng, g) for g in entry["dispatch"]["grid"]]
        if "constraints" in entry:
            entry["constraints"] = [zeros(rng, c) for c in entry["constraints"]]


def in_range(rng, lo, hi, step):
    """A value of [lo, hi] (hi None: no bound), a multiple of step where one is."""
    top = hi if hi is not None else lo + 5000
    v = rng.randint(max(lo, 0), max(lo, min(top, lo + 5000)))
    w = (v + step - 1) // step * step
    return w if w <= top else v


def shape(rng, names, r):
    """Values for names: mostly inside the rule's ranges (K a multiple of 64,
    as the kernels' blocks want), sometimes at, past or outside them."""
    out = {}
    for n in names:
        if n in ("M", "K", "T"):
            lo, hi = r[n]
            pick = rng.choice(["in", "in", "in", "in", "lo", "hi", "past", "any"])
            if pick == "in":
                v = in_range(rng, lo, hi, 64 if n == "K" else 1)
            elif pick == "lo":
                v = lo
            elif pick == "hi":
                v = hi if hi is not None else lo + 5000
            elif pick == "past":
                v = (hi if hi is not None else lo) + 1
            else:
                v = rng.choice([rng.randint(1, 5000), 0, -1, 64 * rng.randint(1, 100)])
        elif n == "ne11":
            v = rng.choice([1, 1, 1, 2])
        else:
            v = rng.randint(1, 8)
        out[n] = v
    if "top_k" in out and "E" in out and rng.random() < 0.8:
        out["top_k"] = min(out["top_k"], out["E"])
    return [out[n] for n in names]


def main(argv):
    qkgen, qkrt_tool, bundle, scratch, seed = argv[1], argv[2], argv[3], argv[4], int(argv[5])
    tables = int(argv[6]) if len(argv) > 6 else 6
    rng = random.Random(seed)
    print(f"seed {seed} (QKGEN_SEED repeats it), {tables} tables over {bundle}")
    info = subprocess.run([qkrt_tool, bundle], input="", capture_output=True, text=True, check=True)
    lines = info.stdout.split("\n")
    dev = tuple(int(x) for x in lines[0].split()[1:4])
    kernel_lines = lines[1:lines.index("end") + 1]
    with open(os.path.join(bundle, "manifest.json")) as f:
        base = json.load(f)
    ks = [k for k in manifest_view.kernels(base) if k["family"] in PRODUCTS]
    src = os.path.join(os.path.dirname(__file__), "select_header.c")
    differ = asked = picked = 0
    levels = {}
    for t in range(tables):
        copy = os.path.join(scratch, f"t{t}")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(bundle, copy)
        man = json.loads(json.dumps(base))
        edit_expressions(rng, man)
        man["select"], rules = table(rng, ks, dev)
        with open(os.path.join(copy, "manifest.json"), "w") as f:
            json.dump(man, f, indent=1)
        # the header and the program beside the bundle, not in it (export
        # refuses an output inside its input)
        inc = os.path.join(scratch, f"h{t}")
        os.makedirs(inc, exist_ok=True)
        header = os.path.join(inc, "qkb_bundle.h")
        subprocess.run([qkgen, "export", copy, "--c", header], check=True)
        exe = os.path.join(inc, "select_header")
        subprocess.run(["cc", "-std=c99", "-O0", "-w", "-I", inc, src, "-o", exe], check=True)
        with open(header) as f:
            names = [n.strip().strip('"') for n in
                     re.search(r"shape_names\[\w+\] = \{([^}]*)\}", f.read()).group(1).split(",")]
        queries = []
        for _ in range(300):
            r = rng.choice(rules) if rules and rng.random() < 0.9 else rule(rng, rng.choice(ks))
            variant = rng.choice(["-", "-", r["format_variant"] or "-", "bf16"])
            act = rng.choice([r.get("activations", "f32")] * 3 + ["f32", "f16"])
            values = shape(rng, names, r)
            queries.append((r["op"], r["format"], variant, act, values))
        q_text = "".join(f"{op} {fmt} {v} {a} " + " ".join(map(str, vals)) + "\n"
                         for op, fmt, v, a, vals in queries)
        lib = subprocess.run([qkrt_tool, copy], input=" ".join(names) + "\n" + q_text,
                             capture_output=True, text=True)
        if lib.returncode:
            print(f"FAIL table {t}: select_qkrt: {lib.stderr.strip()}")
            return 1
        lib_out = lib.stdout.split("\n")
        lib_out = lib_out[lib_out.index("end") + 1:-1]
        hdr_in = "\n".join(kernel_lines) + "\n" + "".join(
            f"{dev[0]} {dev[1]} {dev[2]} " + line for line in q_text.splitlines(keepends=True))
        hdr = subprocess.run([exe], input=hdr_in, capture_output=True, text=True)
        hdr_out = hdr.stdout.split("\n")[:-1]
        if hdr.returncode or len(hdr_out) != len(queries) or len(lib_out) != len(queries):
            print(f"FAIL table {t}: {len(lib_out)} and {len(hdr_out)} answers to {len(queries)} "
                  f"queries (header exit {hdr.returncode})")
            return 1
        for q, a, b in zip(queries, lib_out, hdr_out):
            asked += 1
            picked += a != "-"
            if a != "-":
                levels[a.split()[-1]] = levels.get(a.split()[-1], 0) + 1
            if a != b:
                differ += 1
                if differ <= 10:
                    print(f"FAIL table {t}: {q[0]} {q[1]} {q[2]} {q[3]} "
                          f"{dict(zip(names, q[4]))}\n  libqkrt: {a}\n  header:  {b}")
    print(f"seed {seed}: {tables} tables, {asked} queries ({picked} pick a kernel; by level "
          f"{levels}), {differ} differ")
    return 1 if differ or not picked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
