#!/usr/bin/python3
"""Validates bundle manifests against docs/manifest.schema.json (JSON Schema
2020-12, Debian's python3-jsonschema); with --self-test, first shows that the
schema rejects broken copies of the first manifest. Each kernel is also checked
as an engine reads it, its entry joined with its module's (docs/manifest.md,
"Kernels and modules"), against the schema's $defs/kernel."""
import copy
import json
import sys

import jsonschema

import manifest_view


def errors(validator, kernel_validator, doc):
    """(where, message) of each problem: the document's, then each joined kernel's."""
    found = [("/".join(str(p) for p in e.absolute_path) or "(root)", e.message)
             for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))]
    if found or not isinstance(doc.get("modules"), list):
        return found
    modules = {m.get("name"): m for m in doc["modules"]}
    for i, k in enumerate(doc["kernels"]):
        m = modules.get(k.get("module"))
        if m is None:
            found.append((f"kernels/{i}/module", f"{k.get('module')!r} is not in modules"))
            continue
        joined, both = manifest_view.join(k, m)
        for f in both:
            found.append((f"kernels/{i}/{f}", f"also a field of its module {m['name']!r}"))
        for e in kernel_validator.iter_errors(joined):
            path = "/".join(str(p) for p in e.absolute_path)
            found.append((f"kernels/{i} (with its module)/{path}", e.message))
    return found


def self_test(validator, kernel_validator, doc):
    """Each mutation must be refused, or the schema checks nothing there."""
    k = 0
    mutations = {
        "no bindings": lambda d: d["kernels"][k].pop("bindings"),
        "unknown feature": lambda d: d["kernels"][k]["features"].append("warp_magic"),
        "grid of two": lambda d: d["kernels"][k]["dispatch"]["grid"].pop(),
        "binding in set 1": lambda d: d["kernels"][k]["bindings"][0].update(set=1),
        "negative workgroup": lambda d: d["kernels"][k]["workgroup_size"].__setitem__(0, -1),
        "short hash": lambda d: d["modules"][0].update(spv_sha256="abc"),
        "no such module": lambda d: d["kernels"][k].update(module="nowhere"),
        "a field twice": lambda d: d["kernels"][k].update(spv=d["modules"][0]["spv"]),
        "expression with ;": lambda d: d["kernels"][k]["dispatch"]["grid"].__setitem__(0, "M; T"),
        "push constant off 4": lambda d: d["kernels"][k]["push_constants"][0].update(offset=2),
        "unknown precision": lambda d: d["kernels"][k].update(precision="fp8"),
    }
    for what, mutate in mutations.items():
        bad = copy.deepcopy(doc)
        mutate(bad)
        if not errors(validator, kernel_validator, bad):
            print(f"FAIL: the schema accepts a manifest with {what}")
            return False
    print(f"self-test: {len(mutations)} broken manifests refused")
    return True


def main(argv):
    args = [a for a in argv[1:] if a != "--self-test"]
    if len(args) < 2:
        print("usage: manifest_schema.py [--self-test] SCHEMA MANIFEST...", file=sys.stderr)
        return 2
    with open(args[0]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    kernel_validator = cls({"$ref": "#/$defs/kernel", "$defs": schema["$defs"]})
    failed = 0
    for i, path in enumerate(args[1:]):
        with open(path) as f:
            doc = json.load(f)
        if i == 0 and "--self-test" in argv and not self_test(validator, kernel_validator, doc):
            return 1
        errs = errors(validator, kernel_validator, doc)
        for at, message in errs[:20]:
            print(f"{path}: {at}: {message[:300]}")
        print(f"{path}: {len(doc.get('kernels', []))} kernels, {len(errs)} schema errors")
        failed += bool(errs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
