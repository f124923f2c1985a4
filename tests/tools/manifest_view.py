"""A manifest's kernels as whole entries: each kernel's own fields and those of
its module's entry, but the module's name and specialization constants
(docs/manifest.md, "Kernels and modules"); what an engine reads."""

MODULE_OWN = ("name", "specialization_constants")


def kernels(manifest):
    modules = {m["name"]: m for m in manifest["modules"]}
    out = []
    for k in manifest["kernels"]:
        inherited = {f: v for f, v in modules[k["module"]].items() if f not in MODULE_OWN}
        both = set(inherited) & set(k)
        assert not both, f"{k['name']}: {sorted(both)} both in the kernel and its module"
        out.append({**k, **inherited})
    return out
