"""IFEval (google/IFEval; data-dir file `ifeval.jsonl`, the source's own fields: key, prompt,
instruction_id_list, kwargs). The whole row is the problem's payload; the `ifeval` scorer checks it."""

from __future__ import annotations

from typing import Any, Mapping

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks.keys import problem_key

SIZE = 541


def map_ifeval(row: Mapping[str, Any]) -> dict[str, Any]:
    """google/IFEval rows verbatim (the Hub fills unused kwargs with nulls; the checker drops them)."""
    return dict(row)


def ifeval_problem(task: str, where: str, row: Mapping[str, Any], default_id: str) -> Problem:
    prompt = row.get("prompt")
    ids = row.get("instruction_id_list")
    kwargs = row.get("kwargs")
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError(f"{where}: IFEval row needs a non-empty 'prompt'")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise UserError(f"{where}: IFEval row needs 'instruction_id_list', a non-empty list of instruction ids")
    if not isinstance(kwargs, list) or len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        raise UserError(f"{where}: IFEval row needs 'kwargs', a list of {len(ids)} objects (one per instruction)")
    pid = str(row.get("id") or default_id)
    payload = {k: v for k, v in row.items() if k != "id"}
    # the key covers the instructions and their arguments: a changed check never reuses old samples
    import json
    key = problem_key(prompt, json.dumps([ids, kwargs], sort_keys=True))
    return Problem(task=task, id=pid, problem=prompt, answer=",".join(ids), key=key, payload=payload,
                   metadata={"source_id": str(row.get("key", pid))})
