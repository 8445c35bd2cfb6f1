"""problems.jsonl: the problems a run has seen, so `report` and `score` need no dataset and no request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from reasoneval.records import Problem
from reasoneval.results.store.sample_store import iter_jsonl
from reasoneval.run_files import PROBLEMS_FILE
from reasoneval.scoring.base import TaskScoring
from reasoneval.serial import from_json, to_json


def problem_to_dict(p: Problem) -> dict[str, Any]:
    """A problems.jsonl line: the Problem's JSON (reasoneval.serial) with task and key first, as always written."""
    return {"task": p.task, "key": p.key, **to_json(p)}


def problem_from_dict(d: dict[str, Any]) -> Problem:
    if d.get("choices") and "choices" not in (d.get("payload") or {}):  # written before payloads (schema 1)
        d = {**d, "payload": {**(d.get("payload") or {}), "choices": list(d["choices"])}}
    return from_json(Problem, d)


def read_problems(run_dir: Path) -> list[Problem]:
    """All problems of the run, first occurrence of each (task, key), in the order first seen."""
    seen: set[tuple[str, str]] = set()
    out = []
    for d in iter_jsonl(Path(run_dir) / PROBLEMS_FILE):
        k = (d["task"], d["key"])
        if k not in seen:
            seen.add(k)
            out.append(problem_from_dict(d))
    return out


def legacy_scoring(run_dir: Path) -> dict[str, TaskScoring]:
    """How each task of a run written before config.json recorded scoring (schema 1) is scored:
    from the `kind` and `rel_tol` its problems.jsonl lines carry."""
    out: dict[str, TaskScoring] = {}
    for d in iter_jsonl(Path(run_dir) / PROBLEMS_FILE):
        if d["task"] not in out:
            tol = d.get("rel_tol")
            out[d["task"]] = TaskScoring(str(d.get("kind") or "math"), {"rel_tol": tol} if tol is not None else {})
    return out


def add_problems(run_dir: Path, problems: Iterable[Problem]) -> None:
    """Append the problems not yet recorded (called while holding the run's store lock)."""
    path = Path(run_dir) / PROBLEMS_FILE
    known = {(p.task, p.key) for p in read_problems(run_dir)}
    lines = []
    for p in problems:
        if (p.task, p.key) not in known:
            known.add((p.task, p.key))
            lines.append(json.dumps(problem_to_dict(p), ensure_ascii=False) + "\n")
    if lines:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
            f.flush()
