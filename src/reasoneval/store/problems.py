"""problems.jsonl: the problems a run has seen, so `report` and `score` need no dataset and no request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ..types import Problem
from .sample_store import iter_jsonl

PROBLEMS_FILE = "problems.jsonl"


def problem_to_dict(p: Problem, rel_tol: float | None) -> dict[str, Any]:
    return {"task": p.task, "key": p.key, "id": p.id, "problem": p.problem, "answer": p.answer, "kind": p.kind,
            "choices": list(p.choices) if p.choices is not None else None, "rel_tol": rel_tol,
            "metadata": dict(p.metadata)}


def problem_from_dict(d: dict[str, Any]) -> tuple[Problem, float | None]:
    p = Problem(task=d["task"], id=d["id"], problem=d["problem"], answer=d["answer"], key=d["key"],
                kind=d.get("kind", "math"), choices=tuple(d["choices"]) if d.get("choices") else None,
                metadata=d.get("metadata") or {})
    return p, d.get("rel_tol")


def read_problems(run_dir: Path) -> list[tuple[Problem, float | None]]:
    """All problems of the run, first occurrence of each (task, key), in the order first seen."""
    seen: set[tuple[str, str]] = set()
    out = []
    for d in iter_jsonl(Path(run_dir) / PROBLEMS_FILE):
        k = (d["task"], d["key"])
        if k not in seen:
            seen.add(k)
            out.append(problem_from_dict(d))
    return out


def add_problems(run_dir: Path, problems: Iterable[tuple[Problem, float | None]]) -> None:
    """Append the problems not yet recorded (called while holding the run's store lock)."""
    path = Path(run_dir) / PROBLEMS_FILE
    known = {(p.task, p.key) for p, _ in read_problems(run_dir)}
    lines = []
    for p, tol in problems:
        if (p.task, p.key) not in known:
            known.add((p.task, p.key))
            lines.append(json.dumps(problem_to_dict(p, tol), ensure_ascii=False) + "\n")
    if lines:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
            f.flush()
