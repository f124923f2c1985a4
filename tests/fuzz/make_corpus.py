#!/usr/bin/python3
# Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<harness>)
# from the repository's own files and a bundle built by qkgen:
#   qkgen build --filter q4_0 --out /tmp/q4_0 && tests/fuzz/make_corpus.py /tmp/q4_0/default
# (--trust writes only the seeds of fuzz_export, fuzz_select and fuzz_tuned)
import hashlib
import io
import json
import os
import shutil
import struct
import sys

try:
    import numpy as np  # the .npy seeds only
except ImportError:
    np = None

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import manifest_view  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
corpus = os.path.join(here, "corpus")
# the module fuzz_manifest.c writes as k.spv: a SPIR-V header and nothing else
module = struct.pack("<5I", 0x07230203, 0x00010300, 0, 1, 0)


def fresh(name):
    d = os.path.join(corpus, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def put(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# a kernel set that fuzz_spec.c's own spec folder takes whole
SET_SEED = """set: seed
kernels: [copy, matvec]
formats: [q4_0, mlx4_g64_bf16]
fusions: [none]
exclude:
  - { family: matvec, when: { mma: scalar }, reason: "not in this set" }
restrict:
  - { family: matvec, when: { routing: ids }, formats: [q4_0], reason: "q4_0 only" }
"""


def specs():
    d = fresh("spec")
    for folder in ["specs/formats", "specs/kernels", "specs/fusions", "specs/models", "specs/sets",
                   "tests/specs_bad", "tests/specs_plan/formats", "tests/specs_plan/kernels", "tests/newformat"]:
        src = os.path.join(root, folder)
        for n in sorted(os.listdir(src)):
            if n.endswith(".yaml"):
                shutil.copy(os.path.join(src, n), os.path.join(d, folder.replace("/", "_") + "_" + n))
    put(d, "set_seed.yaml", SET_SEED)


def pick_kernels(manifest):
    """One kernel of each family, a coopmat one and one with a sized binding."""
    chosen, seen = [], set()
    for k in manifest["kernels"]:
        keys = [k["family"]]
        if k.get("mma") == "coopmat":
            keys.append("coopmat")
        if any(b.get("size") for b in k.get("bindings", [])):
            keys.append("sized")
        if k.get("fusion", "none") != "none":
            keys.append("fusion")
        if any(key not in seen for key in keys):
            seen.update(keys)
            chosen.append(k)
    return chosen


def manifests(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    names = [k["name"] for k in pick_kernels({"kernels": manifest_view.kernels(manifest)})]
    sha = hashlib.sha256(module).hexdigest()
    m, j = fresh("manifest"), fresh("json")
    head = {k: v for k, v in manifest.items() if k not in ("kernels", "modules")}

    def doc(chosen, local):  # those kernels with their modules; local: k.spv as each module
        ks = [k for k in manifest["kernels"] if k["name"] in chosen]
        used = {k["module"] for k in ks}
        mods = [dict(x, spv="k.spv", spv_sha256=sha) if local else x
                for x in manifest["modules"] if x["name"] in used]
        return json.dumps(dict(head, kernels=ks, modules=mods), indent=1) + "\n"

    for n in names:
        put(m, n + ".json", doc([n], True))
        put(j, n + ".json", doc([n], False))
    put(m, "several.json", doc(names, True))
    put(m, "empty.json", doc([], True))
    # small documents for the reader's corners: escapes, numbers, nesting
    put(j, "escapes.json", '{"a": "\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/", "b": ""}')
    put(j, "numbers.json", "[0, -0, 1.5e3, -2E-2, 9223372036854775807, -9223372036854775808, "
        "9223372036854775808, 1e400, 0.1]")
    put(j, "nested.json", '{"x": [[[[{"y": [true, false, null]}]]]], "z": {}}')
    put(j, "duplicate.json", '{"k": 1, "k": 2}')
    return manifest


def expressions(manifest):
    d = fresh("expr")
    seen = []
    for k in manifest_view.kernels(manifest):
        for e in k["dispatch"]["grid"] + k.get("constraints", []) + \
                [b["size"] for b in k["bindings"] if b.get("size")]:
            if e not in seen:
                seen.append(e)
    # operators and names at their limits: the evaluator's arithmetic must be
    # checked, never undefined
    seen += ["big * 0", "small / neg", "small % neg", "-small", "big + 1", "small - 1",
             "(M + 1) / -2", "-7 % 3", "7 % -3", "!(K % 32 == 0) || T >= 1 && E < 2",
             "9223372036854775807", "((((((((((1))))))))))", "M >= 1 && T <= 65535"]
    for i, e in enumerate(seen):
        put(d, "%03d.txt" % i, e)


def npy_bytes(a, version=None):
    f = io.BytesIO()
    np.lib.format.write_array(f, a, version=version)
    return f.getvalue()


def arrays():
    d = fresh("npy")
    rng = np.random.default_rng(28)
    put(d, "f32_3x4.npy", npy_bytes(rng.standard_normal((3, 4)).astype(np.float32)))
    put(d, "f16_5.npy", npy_bytes(rng.standard_normal(5).astype(np.float16)))
    put(d, "u8_empty.npy", npy_bytes(np.zeros(0, np.uint8)))
    put(d, "i32_2x3x4.npy", npy_bytes(np.arange(24, dtype=np.int32).reshape(2, 3, 4)))
    put(d, "f64_scalar.npy", npy_bytes(np.array(2.5)))
    put(d, "i8_64.npy", npy_bytes(rng.integers(-128, 128, 64).astype(np.int8)))
    put(d, "u32_fortran.npy", npy_bytes(np.asfortranarray(np.arange(6, dtype=np.uint32).reshape(2, 3))))
    put(d, "f32_big_endian.npy", npy_bytes(np.arange(4, dtype=">f4")))
    put(d, "i64_v2.npy", npy_bytes(np.arange(3, dtype=np.int64), version=(2, 0)))
    put(d, "u16_2x1.npy", npy_bytes(np.array([[1], [2]], dtype=np.uint16)))
    put(d, "bool.npy", npy_bytes(np.array([True, False])))
    put(d, "truncated.npy", npy_bytes(np.arange(16, dtype=np.float32))[:-9])


def tuning_db():
    d = fresh("tunedb")
    dev = {"vendor_id": 4318, "device_id": 8961, "driver_version": 2432729088,
           "cache_uuid": "5c4a2b0f5c4a2b0f5c4a2b0f5c4a2b0f", "name": "NVIDIA H100 80GB HBM3"}

    def rec(variant, stage="full", status="ok", op="matvec", E=0, top_k=0, us=18.52, note=""):
        return json.dumps({
            "v": 1, "device": dev, "variant": variant, "family": op,
            "spv_sha256": hashlib.sha256(variant.encode()).hexdigest(),
            "case": {"op": op, "format": "q4_0", "format_variant": "", "M": 4096, "K": 14336,
                     "T": 1, "E": E, "top_k": top_k},
            "precision": "f32", "nmse": 3.1e-15, "status": status, "stage": stage,
            "us": us, "us_min": us * 0.99, "us_max": us * 1.05, "runs": 50, "note": note,
            "time": 1764081000})

    a = rec("matvec_xs_q4_0_f32_nr2x1x128_wg256_tpr8")
    b = rec("matvec_q4_0_f32_nr1x1x8_wg64", stage="screen", us=25.0)
    c = rec("matvec_q4_0_f32_nr1x1x8_wg128", stage="check", status="wrong", us=0)
    f = rec("matvec_id_q4_0_f32_nr1x1x8_wg64", stage="check", status="failed", op="matvec_id",
            E=8, top_k=2, us=0, note="vkCreateComputePipelines failed: \"x\"\n")
    put(d, "one.jsonl", a + "\n")
    put(d, "stages.jsonl", "\n".join([a, b, c, f]) + "\n")
    put(d, "torn.jsonl", a + "\n" + b[: len(b) // 2])
    put(d, "duplicate.jsonl", a + "\n" + a + "\n")
    put(d, "newer.jsonl", a.replace('"v": 1', '"v": 3') + "\n")
    # version 2: a case on f16 activations (a matmul's f16-activation kernel)
    h = rec("matmul-shared_q4_0_f16_nr32x32x64_wg128_scalar", op="matmul")
    h = h.replace('"v": 1', '"v": 2').replace('"format_variant": ""',
                                              '"format_variant": "", "activations": "f16"')
    put(d, "f16.jsonl", a + "\n" + h + "\n")
    put(d, "empty.jsonl", "")


def trust_seeds():
    """fuzz_export (expressions and strings), fuzz_select (select tables over
    its four kernels) and fuzz_tuned (databases whose variants compute their
    cases by name): issue 43's harnesses."""
    d = fresh("export")
    for i, text in enumerate(["(M + 010 - 1) / 010", "K % 0032 == 0 && M >= 1", "-(T * top_k) / 3",
                              "!(E > 1) || ne11 == 1", "9223372036854775807 + 0",
                              "*/ int x; /* \" ??/ \\", "<script>\u00e9\xff"]):
        put(d, "seed%d" % i, text)
    d = fresh("select")
    r = {"op": "matvec", "format": "q4_0", "format_variant": "", "kernel": "mv", "precision": "f32",
         "M": [1, None], "K": [1, 4096], "T": [1, 1]}
    f16 = dict(r, op="matmul", kernel="mm16", activations="f16", M=[0, 7])
    mlx = dict(r, op="matvec_id", format="mlx4_g64", format_variant="bf16", kernel="mlx")
    dev = {"vendor_id": 4318, "device_id": 8961, "driver_version": 1, "cache_uuid": "0" * 32,
           "name": "x", "rules": [r, mlx]}
    put(d, "v1.json", json.dumps({"version": 1, "devices": [dev], "default": [r]}))
    put(d, "v2.json", json.dumps({"version": 2, "devices": [], "default": [f16, r]}))
    put(d, "bad_range.json", json.dumps({"version": 1, "devices": [], "default": [dict(r, M=[5, -1])]}))
    put(d, "bad_kernel.json", json.dumps({"version": 1, "devices": [], "default": [dict(r, kernel="mm8")]}))
    # the fallback levels: a device, a sibling, another chip, an entry of
    # before the levels; a family_mask past 32 bits
    levels = [dict(dev, device_id=i, family_mask=m, rules=[dict(r, kernel=k)])
              for i, m, k in ((9008, 4294967040, "mv"), (9013, 4294967040, "mv"), (9860, 0, "mv"))]
    put(d, "levels.json", json.dumps({"version": 1, "devices": levels + [dev], "default": [r]}))
    put(d, "bad_mask.json", json.dumps({"version": 1, "devices": [dict(dev, family_mask=2 ** 32)],
                                        "default": [r]}))
    d = fresh("tuned")
    rec = {"v": 1, "device": {"vendor_id": 4318, "device_id": 8961, "driver_version": 1,
                              "cache_uuid": "5c4a2b0f5c4a2b0f5c4a2b0f5c4a2b0f", "name": "H100"},
           "variant": "matvec_q4_0_f32_nr1x1x8_wg64", "family": "matvec", "spv_sha256": "0" * 64,
           "case": {"op": "matvec", "format": "q4_0", "format_variant": "", "M": 4096, "K": 4096,
                    "T": 1, "E": 0, "top_k": 0},
           "precision": "f32", "nmse": 1e-14, "status": "ok", "stage": "full", "us": 18.5,
           "us_min": 18.0, "us_max": 19.0, "runs": 50, "note": "", "time": 1764081000}
    lines = []
    for i, (m, t, us) in enumerate([(4096, 1, 18.5), (14336, 1, 40.25), (4096, 8, 30.0), (1, 512, 7.0)]):
        x = json.loads(json.dumps(rec))
        x["case"]["M"], x["case"]["T"], x["us"] = m, t, us
        x["variant"] = "matvec_q4_0_f32_nr%dx1x8_wg64" % (1 + i % 2)
        lines.append(json.dumps(x))
    put(d, "cases.jsonl", "\n".join(lines) + "\n")
    x = json.loads(json.dumps(rec))
    x["v"], x["case"]["activations"], x["case"]["op"], x["family"] = 2, "f16", "matmul", "matmul"
    x["variant"] = "matmul_q4_0_f16_nr32x32x64"
    put(d, "f16.jsonl", lines[0] + "\n" + json.dumps(x) + "\n")
    x = json.loads(lines[0])
    x["variant"], x["us"] = "matvec_q8_0_f32_nr1x1x8_wg64", 1.0
    put(d, "misfit.jsonl", lines[0] + "\n" + json.dumps(x) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--trust":  # only issue 43's seeds
        trust_seeds()
        sys.exit(0)
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py BUNDLE_DIR (a folder with manifest.json)")
    specs()
    manifest = manifests(sys.argv[1])
    expressions(manifest)
    arrays()
    tuning_db()
    trust_seeds()
    for h in sorted(os.listdir(corpus)):
        n = os.listdir(os.path.join(corpus, h))
        print("%-9s %4d inputs, %7d bytes" % (h, len(n), sum(os.path.getsize(os.path.join(corpus, h, x)) for x in n)))
