"""A manifest's kernels as whole entries: each kernel's own fields and those of
its module's entry, but the module's name and specialization constants
(docs/manifest.md, "Kernels and modules"); what an engine reads."""

MODULE_OWN = ("name", "specialization_constants")


def join(kernel, module):
    """The kernel with its module's fields, and the fields both entries have
    (which a valid manifest never has)."""
    inherited = {f: v for f, v in module.items() if f not in MODULE_OWN}
    return {**kernel, **inherited}, sorted(set(inherited) & set(kernel))


def kernels(manifest):
    modules = {m["name"]: m for m in manifest["modules"]}
    out = []
    for k in manifest["kernels"]:
        joined, both = join(k, modules[k["module"]])
        assert not both, f"{k['name']}: {both} both in the kernel and its module"
        out.append(joined)
    return out
