"""`doubles`: N + N for N = 1..20, generated in code (no file, no download), scored as math answers."""

from typing import Any

from reasoneval.scoring import TaskScoring
from reasoneval.tasks import TaskSpec


def rows() -> list[dict[str, Any]]:
    # Uniform rows: id, problem, answer; `level` is optional metadata (the table breaks results down by it).
    return [{"id": f"doubles-{n}", "problem": f"What is {n} + {n}?", "answer": str(2 * n), "level": 1 + n // 10}
            for n in range(1, 21)]


DOUBLES = TaskSpec("doubles", "N + N for N = 1..20 (an example task)", size=20, generate=rows,
                   scoring=TaskScoring("math"), prompt="boxed")
