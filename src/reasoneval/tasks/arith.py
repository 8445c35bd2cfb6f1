"""The `arith` task: generated one- and two-digit additions and subtractions.

Generated in code from a fixed seed (no file, no download), for demos and the embedded CPU
model (SmolLM2-135M). Problems are short so a tiny model partly solves them: single-digit
items are easy for it, two-digit ones with carries/borrows much less so. Subtractions never
go negative, so every answer is a plain non-negative integer.
"""

from __future__ import annotations

import random
from typing import Any

SEED = 20250101
SIZE = 200


def generate(n: int = SIZE, seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    seen: set[tuple[int, str, int]] = set()
    while len(rows) < n:
        # Mix of difficulty: both operands one-digit, one two-digit, or both two-digit.
        level = rng.choice((1, 2, 3))
        a = rng.randint(1, 9) if level == 1 else rng.randint(10, 99)
        b = rng.randint(1, 9) if level < 3 else rng.randint(10, 99)
        op = rng.choice("+-")
        if op == "-" and b > a:
            a, b = b, a
        if (a, op, b) in seen:
            continue
        seen.add((a, op, b))
        result = a + b if op == "+" else a - b
        rows.append({
            "id": f"arith-{len(rows)}",
            "problem": f"What is {a} {op} {b}?",
            "answer": str(result),
            "level": level,
        })
    return rows
