#!/usr/bin/python3
"""examples/engine's expression evaluator against tests/export/check_header.py's
on random expressions of docs/manifest.md's grammar: values near int64's
limits, division and modulo by zero and negative operands included."""
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "export"))
from check_header import Overflow, evaluate  # noqa: E402


def gen(rng, depth):
    """A random expression; comparisons only where the grammar allows one."""
    def value(d):
        r = rng.random()
        if d <= 0 or r < 0.3:
            return rng.choice(["M", "K", "T", str(rng.choice([0, 1, 2, 3, 7, 32, 255])),
                               str(rng.choice([2**31, 2**62, 9223372036854775807]))])
        if r < 0.45:
            return rng.choice(["-", "+", "!"]) + value(d - 1)
        if r < 0.6:
            return "(" + cond(d - 1) + ")"
        return value(d - 1) + " " + rng.choice("+-*/%") + " " + value(d - 1)

    def cond(d):
        r = rng.random()
        if r < 0.5:
            return value(d)
        if r < 0.8:
            return value(d) + " " + rng.choice(["==", "!=", "<=", ">=", "<", ">"]) + " " + value(d)
        return cond(d - 1) + " " + rng.choice(["&&", "||"]) + " " + cond(d - 1)

    return cond(depth)


def main(argv):
    exe, seed = argv[1], int(argv[2])
    rng = random.Random(seed)
    cases = []
    for _ in range(3000):
        env = {n: rng.choice([0, 1, 5, 4096, -3, 2**40, -(2**63), 2**63 - 1]) for n in "MKT"}
        cases.append((env, gen(rng, rng.randint(0, 5))))
    text = "".join(f"{e['M']} {e['K']} {e['T']} {x}\n" for e, x in cases)
    out = subprocess.run([exe], input=text, capture_output=True, text=True).stdout.split("\n")
    wrong = 0
    for (env, x), got in zip(cases, out):
        try:
            want = str(evaluate(x, env))
        except Overflow:
            want = "error"
        if want != got:
            wrong += 1
            if wrong <= 10:
                print(f"FAIL: {x} with {env}: engine {got}, reference {want}")
    errors = sum(1 for g in out if g == "error")
    print(f"seed {seed}: {len(cases)} expressions ({errors} errors), {wrong} differ")
    return 1 if wrong or len(out) < len(cases) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
