from __future__ import annotations

import re

from reasoneval.tasks import load_task
from reasoneval.tasks.arith import generate


def test_arith_is_generated_deterministically_and_correct() -> None:
    spec, probs = load_task("arith")
    assert spec.origin == "generated" and len(probs) == 200
    assert [p.key for p in probs] == [p.key for p in load_task("arith")[1]]
    assert len({p.problem for p in probs}) == 200
    levels = {p.metadata["level"] for p in probs}
    assert levels == {1, 2, 3}
    ops = set()
    for p in probs:
        m = re.fullmatch(r"What is (\d{1,2}) ([+-]) (\d{1,2})\?", p.problem)
        assert m, p.problem
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        ops.add(op)
        assert p.answer == str(a + b if op == "+" else a - b)
        assert int(p.answer) >= 0
    assert ops == {"+", "-"}


def test_arith_ignores_data_dir_and_other_seed_differs(tmp_path) -> None:
    (tmp_path / "arith.jsonl").write_text('{"id": "x", "problem": "p", "answer": "1"}\n')
    _, probs = load_task("arith", data_dir=tmp_path, limit=3)
    assert [p.id for p in probs] == ["arith-0", "arith-1", "arith-2"]
    assert generate(seed=1) != generate()
