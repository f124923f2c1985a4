#!/usr/bin/env python3
# Writes tests/specs_bad/inputs/: the bad .npy files, manifests and tuning
# databases that the corpus's cli_*.args command lines read (run it again
# after changing a case; the files are committed, so tests need no numpy).
import hashlib, json, os, shutil, struct, sys

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "inputs")


def put(name, data):
    path = os.path.join(out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# ---- .npy: version 1.0, a header padded to 64 bytes (numpy's layout)
def npy(header, data=b"", magic=b"\x93NUMPY", version=(1, 0), hlen=None):
    h = header.encode()
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * (pad % 64) + b"\n"
    n = len(h) if hlen is None else hlen
    return magic + bytes(version) + struct.pack("<H", n) + h + data


def arr(descr, shape, data, fortran="False"):
    return npy("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape), data)


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


K = 32  # one q4_0 block a row: 18 bytes
W = arr("|u1", "(4, 18)", bytes(4 * 18))
put("w_q4_0.npy", W)
put("x_k32.npy", arr("<f4", "(32,)", f32(*([0.5] * 32))))
put("x_t2_k32.npy", arr("<f4", "(2, 32)", f32(*([0.5] * 64))))
put("ids_t2_top1.npy", arr("<i4", "(2, 1)", struct.pack("<2i", 0, 1)))
put("w_e2_q4_0.npy", arr("|u1", "(2, 4, 18)", bytes(2 * 4 * 18)))
npys = {
    "npy_empty.npy": b"",
    "npy_magic.npy": b"PK\x03\x04" + bytes(60),
    "npy_short.npy": b"\x93NUMPY\x01\x00",
    "npy_version.npy": npy("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 18), }", bytes(72), version=(9, 0)),
    "npy_header_long.npy": npy("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 18), }", bytes(72), hlen=60000),
    "npy_header_cut.npy": npy("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 18), }")[:40],
    "npy_header_nul.npy": npy("{'descr': '|u1', 'fortran_order': False,\0 'shape': (4, 18), }", bytes(72)),
    "npy_no_shape.npy": npy("{'descr': '|u1', 'fortran_order': False, }", bytes(72)),
    "npy_no_descr.npy": npy("{'fortran_order': False, 'shape': (4, 18), }", bytes(72)),
    "npy_descr_int.npy": npy("{'descr': 7, 'fortran_order': False, 'shape': (4, 18), }", bytes(72)),
    "npy_big_endian.npy": arr(">f4", "(4, 18)", bytes(288)),
    "npy_complex.npy": arr("<c8", "(4, 18)", bytes(576)),
    "npy_object.npy": arr("|O", "(4, 18)", bytes(576)),
    "npy_fortran.npy": arr("|u1", "(4, 18)", bytes(72), fortran="True"),
    "npy_shape_negative.npy": arr("|u1", "(-4, 18)", bytes(72)),
    "npy_shape_letters.npy": arr("|u1", "(4, x)", bytes(72)),
    "npy_shape_unclosed.npy": arr("|u1", "(4, 18", bytes(72)),
    "npy_shape_dim_overflow.npy": arr("|u1", "(99999999999999999999, 18)", bytes(72)),
    "npy_shape_count_overflow.npy": arr("|u1", "(4611686018427387908, 18)", bytes(72)),
    "npy_shape_bytes_overflow.npy": arr("<f8", "(4611686018427387904,)", bytes(8)),
    "npy_shape_9_dims.npy": arr("|u1", "(1, 1, 1, 1, 1, 1, 1, 4, 18)", bytes(72)),
    "npy_data_short.npy": arr("|u1", "(4, 18)", bytes(71)),
    "npy_data_long.npy": arr("|u1", "(4, 18)", bytes(73)),
    "npy_w_float32.npy": arr("<f4", "(4, 18)", bytes(288)),
    "npy_w_row_19.npy": arr("|u1", "(4, 19)", bytes(76)),
    "npy_w_1d.npy": arr("|u1", "(72,)", bytes(72)),
    "npy_w_m_zero.npy": arr("|u1", "(0, 18)", b""),
    "npy_w_k_zero.npy": arr("|u1", "(4, 0)", b""),
    "npy_x_k48.npy": arr("<f4", "(48,)", bytes(192)),
    "npy_x_f64.npy": arr("<f8", "(32,)", bytes(256)),
    "npy_x_int32.npy": arr("<i4", "(32,)", bytes(128)),
    "npy_x_3d.npy": arr("<f4", "(1, 1, 32)", bytes(128)),
    "npy_x_t_zero.npy": arr("<f4", "(0, 32)", b""),
    "npy_x_scalar.npy": arr("<f4", "()", bytes(4)),
    "npy_ids_range.npy": arr("<i4", "(2, 1)", struct.pack("<2i", 0, 2)),
    "npy_ids_negative.npy": arr("<i4", "(2, 1)", struct.pack("<2i", 0, -1)),
    "npy_ids_float.npy": arr("<f4", "(2, 1)", f32(0, 1)),
    "npy_ids_rows.npy": arr("<i4", "(3, 1)", struct.pack("<3i", 0, 1, 0)),
}
for name, data in npys.items():
    put(name, data)

# ---- C headers for qkgen layout
put("blocks.h", "#include <stdint.h>\nstruct block_x {\n    uint16_t d;\n    uint8_t qs[16];\n};\n")
put("broken.h", "#include <stdint.h>\nstruct block_x {\n    uint16_t d\n    uint8_t qs[16];\n};\n")

# ---- manifests: a one-kernel bundle of the runtime's schema, then broken
good = {
    "schema": "qkgen-bundle/3",
    "generator": {"name": "qkgen", "version": "0", "hash": ""},
    "kernels": [{
        "name": "k", "family": "matvec", "format": "q4_0", "activation": "f32",
        "module": "k", "entry_point": "main",
        "workgroup_size": [64, 1, 1], "vulkan_version": "1.2", "extensions": [], "features": [],
        "weights": {"layout": "block", "block_elements": 32, "block_bytes": 18},
        "bindings": [
            {"set": 0, "binding": 0, "count": 1, "name": "w", "role": "weights", "type": "u32", "access": "read"},
            {"set": 0, "binding": 1, "count": 1, "name": "y", "role": "output", "type": "f32", "access": "write"}],
        "push_constants": [{"name": "M", "offset": 0, "type": "u32"}],
        "push_constant_size": 4,
        "dispatch": {"grid": ["M", "1", "1"]},
        "constraints": ["M >= 1"],
        "specialization_constants": [],
    }],
    "modules": [{"name": "k", "spv": "k.spv", "spv_sha256": "0" * 64}],
}


# a module whose hash the manifests give, a header and the entry point they
# name: the loader reads it, hashes it and finds "main" before the checks that
# come after (reflection refuses it later: it has no workgroup size)
SPV = struct.pack("<8I", 0x07230203, 0x00010500, 0, 8, 0, (5 << 16) | 15, 5, 1) + b"main\0\0\0\0"


def manifest(name, edit=None, text=None, spv=SPV):
    if text is None:
        m = json.loads(json.dumps(good))
        m["modules"][0]["spv_sha256"] = hashlib.sha256(spv).hexdigest()
        edit(m, m["kernels"][0])
        text = json.dumps(m, indent=1) + "\n"
        if name != "spv_absent":
            put(f"manifest_{name}/k.spv", spv)
    put(f"manifest_{name}/manifest.json", text)


def setk(key, value):
    return lambda m, k: k.__setitem__(key, value)


def delk(key):
    return lambda m, k: k.__delitem__(key)


def setm(key, value):  # of the kernel's module
    return lambda m, k: m["modules"][0].__setitem__(key, value)


manifest("empty", text="")
manifest("not_json", text="schema: qkgen-bundle/3\n")
manifest("array", text="[]\n")
manifest("trailing", text=json.dumps(good) + " x\n")
manifest("unclosed", text=json.dumps(good)[:-1] + "\n")
manifest("nul", text='{"schema": "qkgen-bundle/3",\0 "kernels": []}\n')
manifest("deep", text="[" * 5000 + "]" * 5000 + "\n")
manifest("number_huge", text=json.dumps(good).replace('"push_constant_size": 4', '"push_constant_size": 1e999'))
manifest("schema_missing", lambda m, k: m.__delitem__("schema"))
manifest("schema_other", lambda m, k: m.__setitem__("schema", "qkgen-bundle/9"))
manifest("kernels_missing", lambda m, k: m.__delitem__("kernels"))
manifest("kernels_object", lambda m, k: m.__setitem__("kernels", {}))
manifest("kernel_number", lambda m, k: m.__setitem__("kernels", [7]))
manifest("kernels_dup_name", lambda m, k: m["kernels"].append(dict(k)))
manifest("name_missing", delk("name"))
manifest("name_number", setk("name", 5))
manifest("spv_missing", lambda m, k: m["modules"][0].__delitem__("spv"))
manifest("spv_dotdot", setm("spv", "../k.spv"))
manifest("spv_absolute", setm("spv", "/etc/passwd"))
manifest("modules_missing", lambda m, k: m.__delitem__("modules"))
manifest("module_missing", delk("module"))
manifest("module_unknown", setk("module", "elsewhere"))
manifest("module_dup_name", lambda m, k: m["modules"].append(dict(m["modules"][0])))
manifest("field_twice", lambda m, k: m["modules"][0].__setitem__("bindings", k["bindings"]))
manifest("spv_absent", lambda m, k: None)
manifest("wg_two", setk("workgroup_size", [64, 1]))
manifest("wg_zero", setk("workgroup_size", [0, 1, 1]))
manifest("wg_negative", setk("workgroup_size", [-64, 1, 1]))
manifest("wg_fraction", setk("workgroup_size", [64.5, 1, 1]))
manifest("bindings_missing", delk("bindings"))
manifest("binding_count_huge", lambda m, k: k["bindings"][0].__setitem__("count", 4294967295))
manifest("binding_count_zero", lambda m, k: k["bindings"][0].__setitem__("count", 0))
manifest("binding_dup", lambda m, k: k["bindings"][1].__setitem__("binding", 0))
manifest("binding_set_1", lambda m, k: k["bindings"][0].__setitem__("set", 1))
manifest("binding_access", lambda m, k: k["bindings"][0].__setitem__("access", "rw"))
manifest("bindings_33", setk("bindings", [{"binding": i, "name": f"b{i}"} for i in range(33)]))
manifest("push_size_300", setk("push_constant_size", 300))
manifest("push_size_6", setk("push_constant_size", 6))
manifest("push_offset_out", lambda m, k: k["push_constants"][0].__setitem__("offset", 4))
manifest("push_type", lambda m, k: k["push_constants"][0].__setitem__("type", "f64"))
manifest("block_bytes_zero", lambda m, k: k["weights"].__setitem__("block_bytes", 0))
manifest("grid_syntax", setk("dispatch", {"grid": ["(M + 1", "1", "1"]}))
manifest("grid_two", setk("dispatch", {"grid": ["M", "1"]}))
manifest("constraint_not_condition", setk("constraints", ["M + 1"]))
manifest("feature_unknown", setk("features", ["warp_drive"]))
manifest("vulkan_version", setk("vulkan_version", "one"))
manifest("hash_wrong", setm("spv_sha256", "0" * 64))
manifest("hash_short", setm("spv_sha256", "abc"))
manifest("spv_odd_size", lambda m, k: None, spv=SPV[:6])
manifest("spv_not_spirv", lambda m, k: None, spv=b"\0" * 20)
manifest("entry_missing", setk("entry_point", "nomain"))


def spec(*constants, tile=None):
    def edit(m, k):
        k["specialization_constants"] = [{"id": i, "name": n, "type": "u32", "value": v} for i, n, v in constants]
        if tile:
            k["tile"] = tile
    return edit


manifest("spec_off_tile", spec((2, "NR1", 100000), tile={"NR0": 1, "NR1": 1, "NK": 8}))
manifest("spec_no_tile", spec((1, "NR0", 4)))
manifest("spec_unknown", spec((9, "ROWS", 7)))
manifest("spec_instance", spec((6, "INSTANCE", 8)))
manifest("spec_sk_zero", spec((5, "SK", 0)))

# select tables (docs/manifest.md, "Selection") that libqkrt and qkgen export refuse
def rule(**changes):
    r = {"op": "matvec", "format": "q4_0", "format_variant": "", "kernel": "k", "precision": "f32",
         "M": [1, None], "K": [1, None], "T": [1, None]}
    r.update(changes)
    return r


def select(name, version=1, default=None, devices=None):
    table = {"version": version, "devices": devices if devices is not None else [],
             "default": default if default is not None else [rule()]}
    manifest("select_" + name, lambda m, k: m.__setitem__("select", table))


select("kernel_format", default=[rule(format="q8_0")])
select("kernel_option", default=[rule(format_variant="bf16")])
select("kernel_family", default=[rule(op="matmul")])
select("kernel_activations", version=2, default=[rule(activations="f16")])
select("kernel_unknown", default=[rule(kernel="nowhere")])
select("activations_v1", default=[rule(activations="f32")])
select("activations_bf16", version=2, default=[rule(activations="bf16")])
select("range_hi_negative", default=[rule(M=[1, -5])])
select("range_inverted", default=[rule(K=[10, 2])])
select("range_lo_negative", default=[rule(T=[-1, None])])
select("range_fraction", default=[rule(M=[1.5, None])])
select("range_one", default=[rule(K=[1])])
select("range_missing", default=[{k: v for k, v in rule().items() if k != "T"}])
select("op_missing", default=[{k: v for k, v in rule().items() if k != "op"}])
select("version_3", version=3)
manifest("select_default_missing", lambda m, k: m.__setitem__("select", {"version": 1, "devices": []}))
manifest("select_default_object", lambda m, k: m.__setitem__(
    "select", {"version": 1, "devices": [], "default": {"op": "matvec"}}))
select("device_vendor_string", devices=[{"vendor_id": "nvidia", "device_id": 1, "driver_version": 1,
                                         "rules": []}])
select("device_rule_format", devices=[{"vendor_id": 1, "device_id": 1, "driver_version": 1,
                                       "cache_uuid": "0" * 32, "name": "x",
                                       "rules": [rule(format="q8_0")]}])
select("rule_number", default=[7])

# ---- tuning databases, read by `qkgen tune --report`: a good record, then broken ones
rec = {"v": 1, "device": {"vendor_id": 65541, "device_id": 0, "driver_version": 1,
                          "cache_uuid": "76616c2d257300000000000000000000", "name": "llvmpipe"},
       "variant": "matvec_q4_0_f32_nr1x1x8_wg64", "family": "matvec", "spv_sha256": "0" * 64,
       "case": {"op": "matvec", "format": "q4_0", "format_variant": "", "M": 64, "K": 256, "T": 1,
                "E": 0, "top_k": 0},
       "precision": "f32", "nmse": 1e-14, "status": "ok", "stage": "full", "us": 10.0,
       "us_min": 9.0, "us_max": 11.0, "runs": 20, "note": "", "time": 1764081000}
line = json.dumps(rec)


def db(name, bad, torn=False):
    put(f"tunedb_{name}.jsonl", line + "\n" + bad + ("" if torn else "\n"))


def edited(f):
    r = json.loads(line)
    f(r)
    return json.dumps(r)


db("torn", line[:100], torn=True)
db("torn_ended", line[:100] + "\n" + line.replace("matvec_q4_0_f32_nr1x1x8_wg64", "other"))
db("not_json", "not json")
db("array", "[1, 2]")
db("empty_line", "")
db("newer", edited(lambda r: r.__setitem__("v", 3)))
db("time_infinite", line.replace('"time": 1764081000', '"time": 1e999'))  # JSON has no inf
db("activations_bad", edited(lambda r: r["case"].__setitem__("activations", "bf16")))
db("device_missing", edited(lambda r: r.__delitem__("device")))
db("device_string", edited(lambda r: r.__setitem__("device", "h100")))
db("vendor_negative", edited(lambda r: r["device"].__setitem__("vendor_id", -1)))
db("vendor_fraction", edited(lambda r: r["device"].__setitem__("vendor_id", 1.5)))
db("vendor_huge", edited(lambda r: r["device"].__setitem__("vendor_id", 4294967296)))
db("uuid_long", edited(lambda r: r["device"].__setitem__("cache_uuid", "0" * 40)))
db("case_missing", edited(lambda r: r.__delitem__("case")))
db("case_m_string", edited(lambda r: r["case"].__setitem__("M", "64")))
db("op_long", edited(lambda r: r["case"].__setitem__("op", "x" * 40)))
db("variant_missing", edited(lambda r: r.__delitem__("variant")))
db("status_bad", edited(lambda r: r.__setitem__("status", "maybe")))
db("stage_bad", edited(lambda r: r.__setitem__("stage", "final")))
db("precision_bad", edited(lambda r: r.__setitem__("precision", "f64")))
db("nmse_string", edited(lambda r: r.__setitem__("nmse", "small")))
db("runs_negative", edited(lambda r: r.__setitem__("runs", -20)))
# names, hashes and times that reach a manifest, a header and a report (issue 43)
db("uuid_quote", edited(lambda r: r["device"].__setitem__("cache_uuid", '0"}, "x": {"')))
db("uuid_backslash", edited(lambda r: r["device"].__setitem__("cache_uuid", "a\\b")))
db("uuid_short", edited(lambda r: r["device"].__setitem__("cache_uuid", "7661")))
db("uuid_upper", edited(lambda r: r["device"].__setitem__("cache_uuid", "76616C2D257300000000000000000000")))
db("variant_script", edited(lambda r: r.__setitem__("variant", "<script>alert(1)</script>")))
db("variant_quote", edited(lambda r: r.__setitem__("variant", 'matvec"q4')))
db("variant_empty", edited(lambda r: r.__setitem__("variant", "")))
db("family_space", edited(lambda r: r.__setitem__("family", "mat vec")))
db("op_slash", edited(lambda r: r["case"].__setitem__("op", "../matvec")))
db("format_star", edited(lambda r: r["case"].__setitem__("format", "q4_0*/")))
db("sha_short", edited(lambda r: r.__setitem__("spv_sha256", "abc")))
# a device name that is not UTF-8 (a writer would change it): line 2, as db() puts it
put("tunedb_name_not_utf8.jsonl", (line + "\n").encode() + line.replace(
    "matvec_q4_0_f32_nr1x1x8_wg64", "other").encode().replace(b"llvmpipe", b"llvm\xffpipe") + b"\n")
db("case_m_zero", edited(lambda r: r["case"].__setitem__("M", 0)))
db("us_huge", edited(lambda r: r.__setitem__("us", 1e60)))
db("us_past_max", edited(lambda r: r.__setitem__("us", 1.5e9)))
db("us_infinite", line.replace('"us": 10.0', '"us": 1e999'))
db("us_negative", edited(lambda r: r.__setitem__("us", -1.0)))
db("us_min_huge", edited(lambda r: r.__setitem__("us_min", 1e300)))
db("nmse_negative", edited(lambda r: r.__setitem__("nmse", -0.5)))
db("repeated", line)
db("trailing", line + " x")
db("unterminated", line[:-20])
db("deep", "[" * 5000 + "]" * 5000)
put("tunedb_all_bad.jsonl", "garbage\n" + line[:100])  # nothing a reader can use
put("tunedb_empty.jsonl", "")

# ---- model specs that load but name what the specs lack (tune --model checks
# them against the specs; a spec loader alone cannot)
put("model_unknown_kernel.yaml", """# a kernel that no spec defines: only the fallbacks would be tuned
model: unknown_kernel
formats: [q4_0]
tokens: { decode: [1] }
kernels: [matvec, matvec_nope]
ops:
  - { name: proj, m: 64, k: 256 }
""")
shutil.rmtree(out + "_", ignore_errors=True)
print(f"wrote {len(os.listdir(out))} inputs into {out}")
