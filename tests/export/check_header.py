#!/usr/bin/python3
"""Runs export_check (the exported header's functions) on random shapes and
compares every kernel's grid, constraints, scratch sizes and push constants
with the manifest's expressions evaluated here, by a third evaluator written
from docs/manifest.md's grammar (int64, checked; / and % round down)."""
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import manifest_view  # noqa: E402

I64 = (-(2**63), 2**63 - 1)


class Overflow(Exception):
    pass


def check(v):
    if not I64[0] <= v <= I64[1]:
        raise Overflow()
    return v


def evaluate(text, env):
    toks = re.findall(r"\d+|[A-Za-z_]\w*|==|!=|<=|>=|&&|\|\||[-+*/%()!<>]", text)
    if "".join(toks) != re.sub(r"\s+", "", text):
        raise ValueError(f"bad characters in {text!r}")
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def primary():
        t = take()
        if t == "(":
            v = disj()
            assert take() == ")"
            return v
        if t == "-":
            return check(-primary())
        if t == "+":
            return primary()
        if t == "!":
            return int(not primary())
        if t.isdigit():
            return check(int(t))
        return env[t]

    def product():
        v = primary()
        while peek() in ("*", "/", "%"):
            op, r = take(), primary()
            if op == "*":
                v = check(v * r)
            elif r == 0:
                raise Overflow()
            else:
                v = check(v // r) if op == "/" else v % r
        return v

    def total():
        v = product()
        while peek() in ("+", "-"):
            op, r = take(), product()
            v = check(v + r if op == "+" else v - r)
        return v

    def comparison():
        v = total()
        ops = {"==": int.__eq__, "!=": int.__ne__, "<=": int.__le__, ">=": int.__ge__,
               "<": int.__lt__, ">": int.__gt__}
        if peek() in ops:
            op = take()
            v = int(ops[op](v, total()))
        return v

    def conj():
        v = comparison()
        while peek() == "&&":
            take()
            r = comparison()
            v = int(bool(v) and bool(r))
        return v

    def disj():
        v = conj()
        while peek() == "||":
            take()
            r = conj()
            v = int(bool(v) or bool(r))
        return v

    v = disj()
    assert pos[0] == len(toks), text
    return v


def expected(k, env):
    out = [k["name"], "grid"]
    try:
        g = [evaluate(e, env) for e in k["dispatch"]["grid"]]
        ok = all(0 <= x <= 2**32 - 1 for x in g)
        out += ["0"] + [str(x) for x in g] if ok else ["-1"]
    except Overflow:
        out += ["-1"]
    verdict = -1
    for i, c in enumerate(k["constraints"]):
        try:
            holds = evaluate(c, env)
        except Overflow:
            holds = 0
        if not holds:
            verdict = i
            break
    out += ["check", str(verdict)]
    for b in k["bindings"]:
        if "size" in b:
            try:
                n = evaluate(b["size"], env)
                out += ["size", "0", str(n)] if n >= 0 else ["size", "-1", "0"]
            except Overflow:
                out += ["size", "-1", "0"]
    words = [0] * (k["push_constant_size"] // 4)
    fits = True
    for p in k["push_constants"]:
        v = env[p["name"]]
        lo, hi = (0, 2**32 - 1) if p["type"] == "u32" else (-(2**31), 2**31 - 1)
        fits &= lo <= v <= hi
        words[p["offset"] // 4] = v & 0xFFFFFFFF
    out += ["push", "0"] + [str(w) for w in words] if fits else ["push", "-1"]
    return " ".join(out)


def main(argv):
    manifest, program, seed = argv[1], argv[2], int(argv[3])
    with open(manifest) as f:
        kernels = manifest_view.kernels(json.load(f))
    rng = random.Random(seed)
    names = subprocess.run([program], input="", capture_output=True, text=True).stdout.split()[1:]
    shapes = []
    for n in range(200):
        # small shapes, shapes near the types' limits, and negative ones
        scale = [8, 4096, 2**31, 2**40, 2**62][n % 5]
        shapes.append([rng.randint(-2 if n % 7 == 0 else 1, scale) for _ in names])
    text = "\n".join(" ".join(str(v) for v in s) for s in shapes) + "\n"
    run = subprocess.run([program], input=text, capture_output=True, text=True)
    lines = run.stdout.splitlines()[1:]
    if run.returncode != 0 or len(lines) != len(shapes) * len(kernels):
        print(f"FAIL: {program} exited {run.returncode} after {len(lines)} lines")
        return 1
    wrong = 0
    for i, s in enumerate(shapes):
        env = dict(zip(names, s))
        for j, k in enumerate(kernels):
            want, got = expected(k, env), lines[i * len(kernels) + j]
            if want != got:
                wrong += 1
                if wrong <= 10:
                    print(f"FAIL: shape {env}\n  header:   {got}\n  manifest: {want}")
    print(f"seed {seed}: {len(shapes)} shapes x {len(kernels)} kernels over {' '.join(names)}; "
          f"{wrong} differ")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
