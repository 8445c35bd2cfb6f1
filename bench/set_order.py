"""How often a set crossing the sandbox's value protocol keeps its iteration order, on sets nobody designed.

A set crosses as its items in the sender's iteration order; the receiver rebuilds one with that order
(scoring/programs/sandbox/driver.py, `set_in_order`). This builds random sets the ways programs and tests build
them (literals, comprehensions, set(), add, union, difference, intersection, copy, removals) of random ints,
small ints, strings, floats and tuples, sends each through encode/decode, and counts (per construction) how
often the rebuilt set iterates like the original, and how often a set made from it (`set(s)`) iterates like a
set made from the original; the reference, measured on the same sets, is a set rebuilt by insertion alone (what
the protocol did before). Prints the worst construction's rate, the overall rate and the slowest rebuild.

    PYTHONPATH=src python bench/set_order.py [--sets 20000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from typing import Any, Callable

from reasoneval.scoring.programs.sandbox import DRIVER_SOURCE


def driver() -> dict[str, Any]:
    """The driver's functions, from its source (it is never imported: it runs inside the sandbox)."""
    ns: dict[str, Any] = {"__name__": "reasoneval_driver"}
    exec(compile(DRIVER_SOURCE, "driver.py", "exec"), ns)  # our own source (driver.py with its prelude)
    return ns


def constructions(rng: random.Random) -> dict[str, Callable[[list[Any]], Any]]:
    def literal(xs: list[Any]) -> Any:
        return eval("{" + ",".join(map(repr, xs)) + "}" if xs else "set()")  # our own generated literal

    def added(xs: list[Any]) -> Any:
        s = set()
        for x in xs:
            s.add(x)
        return s

    def removed(xs: list[Any]) -> Any:
        s = set(xs)
        for x in list(s)[: len(s) // 3]:
            s.discard(x)
        return s

    return {
        "literal": literal, "comprehension": lambda xs: {x for x in xs}, "set(list)": set, "add": added,
        "union": lambda xs: set(xs[: len(xs) // 2]) | set(xs[len(xs) // 2:]),
        "difference": lambda xs: set(xs) - set(xs[: len(xs) // 3]),
        "intersection": lambda xs: set(xs) & set(xs[len(xs) // 4:]), "copy": lambda xs: set(xs).copy(),
        "removals": removed,
    }


def element(kind: str, rng: random.Random) -> Any:
    if kind == "int":
        return rng.randint(-10**6, 10**6)
    if kind == "small int":
        return rng.randint(0, 100)
    if kind == "str":
        return "".join(rng.choice("abcxyz") for _ in range(rng.randint(0, 5)))
    if kind == "float":
        return rng.random() * 100
    return (rng.randint(0, 9), rng.choice("ab"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    d = driver()
    rng = random.Random(a.seed)
    ways = constructions(rng)
    same: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # order kept, set(s) kept, sets, by insertion
    slowest = 0.0
    for _ in range(a.sets):
        kind = rng.choice(["int", "small int", "str", "float", "tuple"])
        xs = [element(kind, rng) for _ in range(rng.randint(0, 60))]
        way = rng.choice(list(ways))
        original = ways[way](xs)
        t = time.perf_counter()
        rebuilt = d["decode"](d["encode"](original))
        slowest = max(slowest, time.perf_counter() - t)
        counts = same[way]
        counts[0] += list(rebuilt) == list(original)
        counts[1] += list(set(rebuilt)) == list(set(original))
        counts[2] += 1
        counts[3] += list(set(list(original))) == list(original)
    print(f"{a.sets} random sets (seed {a.seed}) through encode/decode")
    print(f"{'construction':14} {'sets':>6} {'order kept':>11} {'set(s) too':>11} {'by insertion':>13}")
    for way, (kept, derived, n, inserted) in sorted(same.items()):
        print(f"{way:14} {n:6d} {100 * kept / n:10.2f}% {100 * derived / n:10.2f}% {100 * inserted / n:12.2f}%")
    total = [sum(c[i] for c in same.values()) for i in range(4)]
    worst = min(same.items(), key=lambda kv: kv[1][0] / kv[1][2])
    print(f"overall: order kept {100 * total[0] / total[2]:.2f}% (by insertion alone: {100 * total[3] / total[2]:.2f}%), "
          f"set(s) too {100 * total[1] / total[2]:.2f}%; worst construction: {worst[0]} "
          f"{100 * worst[1][0] / worst[1][2]:.2f}%; slowest rebuild {slowest * 1000:.1f} ms")


if __name__ == "__main__":
    main()
