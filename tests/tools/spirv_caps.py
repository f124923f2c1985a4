#!/usr/bin/python3
"""Compares each kernel's SPIR-V (OpCapability, OpExtension, read from the
module's words) with its manifest entry: every capability's feature and every
SPIR-V extension's Vulkan extension must be listed (docs/manifest.md's table),
and every listed extension must be one the module uses. Fails on a capability
or SPIR-V extension the table does not know, so new ones get a name first."""
import json
import struct
import sys

import manifest_view

# capability -> the manifest feature it needs (None: core in Vulkan 1.2)
CAPABILITIES = {
    1: ("Shader", None),
    9: ("Float16", "float16"),
    11: ("Int64", "int64"),
    22: ("Int16", "int16"),
    30: ("StorageBufferArrayDynamicIndexing", "dynamic_indexing"),
    39: ("Int8", "int8"),
    61: ("GroupNonUniform", "subgroup_arithmetic"),
    63: ("GroupNonUniformArithmetic", "subgroup_arithmetic"),
    4433: ("StorageBuffer16BitAccess", "storage_16bit"),
    4448: ("StorageBuffer8BitAccess", "storage_8bit"),
    5345: ("VulkanMemoryModel", "vulkan_memory_model"),
    5347: ("PhysicalStorageBufferAddresses", "cooperative_matrix2_nv"),
    5357: ("CooperativeMatrixNV", "cooperative_matrix_nv"),
    5432: ("CooperativeMatrixPerElementOperationsNV", "cooperative_matrix2_nv"),
    5433: ("CooperativeMatrixTensorAddressingNV", "cooperative_matrix2_nv"),
    5434: ("CooperativeMatrixBlockLoadsNV", "cooperative_matrix2_nv"),
    5439: ("TensorAddressingNV", "cooperative_matrix2_nv"),
    6022: ("CooperativeMatrixKHR", "cooperative_matrix_khr"),
    6016: ("DotProductInputAll", "integer_dot_product"),
    6017: ("DotProductInput4x8Bit", "integer_dot_product"),
    6018: ("DotProductInput4x8BitPacked", "integer_dot_product"),
    6019: ("DotProduct", "integer_dot_product"),
}
# SPIR-V extension -> the Vulkan device extension a Vulkan 1.2 device needs
# for it (None: core in 1.2, its feature named by the capability)
EXTENSIONS = {
    "SPV_NV_cooperative_matrix": "VK_NV_cooperative_matrix",
    "SPV_KHR_cooperative_matrix": "VK_KHR_cooperative_matrix",
    "SPV_NV_cooperative_matrix2": "VK_NV_cooperative_matrix2",
    "SPV_NV_tensor_addressing": "VK_NV_cooperative_matrix2",
    "SPV_KHR_physical_storage_buffer": None,
    "SPV_KHR_integer_dot_product": "VK_KHR_shader_integer_dot_product",
    "SPV_KHR_vulkan_memory_model": None,
    "SPV_KHR_16bit_storage": None,
    "SPV_KHR_8bit_storage": None,
    "SPV_KHR_storage_buffer_storage_class": None,
}


def module_needs(path):
    """(capabilities, extensions) declared before the first OpEntryPoint."""
    with open(path, "rb") as f:
        data = f.read()
    words = struct.unpack("<%dI" % (len(data) // 4), data)
    if words[0] != 0x07230203:
        raise ValueError(f"{path}: not SPIR-V")
    caps, exts, at = [], [], 5
    while at < len(words):
        count, op = words[at] >> 16, words[at] & 0xFFFF
        if count == 0 or op == 15:
            break
        if op == 17:
            caps.append(words[at + 1])
        elif op == 10:
            raw = struct.pack("<%dI" % (count - 1), *words[at + 1 : at + count])
            exts.append(raw.split(b"\0")[0].decode())
        at += count
    return caps, exts


def check(bundle):
    """The problems of one bundle, and its kernel count and capabilities seen."""
    with open(f"{bundle}/manifest.json") as f:
        manifest = json.load(f)
    problems, seen_caps = [], set()
    for k in manifest_view.kernels(manifest):
        caps, exts = module_needs(f"{bundle}/{k['spv']}")
        features, listed = set(k["features"]), set(k["extensions"])
        used = set()
        for c in caps:
            if c not in CAPABILITIES:
                problems.append(f"{k['name']}: capability {c} has no feature name in the table")
                continue
            name, feature = CAPABILITIES[c]
            seen_caps.add(name)
            if feature and feature not in features:
                problems.append(f"{k['name']}: declares {name}, its entry lacks '{feature}'")
        for e in exts:
            if e not in EXTENSIONS:
                problems.append(f"{k['name']}: SPIR-V extension {e} is not in the table")
                continue
            if EXTENSIONS[e]:
                used.add(EXTENSIONS[e])
                if EXTENSIONS[e] not in listed:
                    problems.append(f"{k['name']}: uses {e}, its entry lacks {EXTENSIONS[e]}")
        for e in sorted(listed - used):
            problems.append(f"{k['name']}: lists {e}, which its module does not use")
    return problems, len(manifest["kernels"]), seen_caps


def main(argv):
    if len(argv) < 2:
        print("usage: spirv_caps.py BUNDLE_DIR...", file=sys.stderr)
        return 2
    failed = False
    for bundle in argv[1:]:
        problems, count, seen = check(bundle)
        for p in problems[:40]:
            print("FAIL:", p)
        print(f"{bundle}: {count} kernels; capabilities seen: {', '.join(sorted(seen))}; "
              f"{len(problems)} problems")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
