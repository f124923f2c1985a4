#!/usr/bin/python3
"""Validates bundle manifests against docs/manifest.schema.json (JSON Schema
2020-12, Debian's python3-jsonschema); with --self-test, first shows that the
schema rejects broken copies of the first manifest."""
import copy
import json
import sys

import jsonschema


def errors(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def where(e):
    return "/".join(str(p) for p in e.absolute_path) or "(root)"


def self_test(validator, doc):
    """Each mutation must be refused, or the schema checks nothing there."""
    k = 0
    mutations = {
        "no bindings": lambda d: d["kernels"][k].pop("bindings"),
        "unknown feature": lambda d: d["kernels"][k]["features"].append("warp_magic"),
        "grid of two": lambda d: d["kernels"][k]["dispatch"]["grid"].pop(),
        "binding in set 1": lambda d: d["kernels"][k]["bindings"][0].update(set=1),
        "negative workgroup": lambda d: d["kernels"][k]["workgroup_size"].__setitem__(0, -1),
        "short hash": lambda d: d["kernels"][k].update(spv_sha256="abc"),
        "expression with ;": lambda d: d["kernels"][k]["dispatch"]["grid"].__setitem__(0, "M; T"),
        "push constant off 4": lambda d: d["kernels"][k]["push_constants"][0].update(offset=2),
        "unknown precision": lambda d: d["kernels"][k].update(precision="fp8"),
    }
    for what, mutate in mutations.items():
        bad = copy.deepcopy(doc)
        mutate(bad)
        if not errors(validator, bad):
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
    failed = 0
    for i, path in enumerate(args[1:]):
        with open(path) as f:
            doc = json.load(f)
        if i == 0 and "--self-test" in argv and not self_test(validator, doc):
            return 1
        errs = errors(validator, doc)
        for e in errs[:20]:
            print(f"{path}: {where(e)}: {e.message[:300]}")
        print(f"{path}: {len(doc.get('kernels', []))} kernels, {len(errs)} schema errors")
        failed += bool(errs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
