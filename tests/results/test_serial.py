"""reasoneval.serial: one serialiser for every persisted dataclass, driven by fields and type hints."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pytest

from reasoneval.errors import UserError
from reasoneval.metrics import GroupMetrics, SEAtK, TaskMetrics, TokenStats
from reasoneval.records import SampleRecord, SamplingParams
from reasoneval.results.identity import RunSettings
from reasoneval.serial import JsonRecord, from_json, json_field, to_json


@dataclass(frozen=True)
class Inner(JsonRecord):
    x: int
    note: str | None = json_field(default=None, omit_none=True)


@dataclass(frozen=True)
class Outer(JsonRecord):
    name: str = ""
    inner: Inner | None = None
    pair: tuple[float, float] | None = None
    words: tuple[str, ...] = ()
    by_k: dict[int, float | None] = field(default_factory=dict)
    nested: dict[str, Inner] = json_field(default_factory=dict, omit_empty=True)
    raw: Mapping[str, Any] = field(default_factory=dict)
    where: Path = json_field(default=Path("."), skip=True)
    # added later to a hashed record: absent at its default, so older records keep their bytes
    later: float = json_field(default=0.5, omit_default=True)


def test_nested_optional_tuples_and_int_keys_round_trip() -> None:
    o = Outer(name="a", inner=Inner(3, "n"), pair=(0.25, 1.0), words=("p", "q"), by_k={1: 0.5, 16: None},
              nested={"i": Inner(1)}, raw={"deep": [1, {"z": None}]})
    d = o.to_json_dict()
    assert d == {"name": "a", "inner": {"x": 3, "note": "n"}, "pair": [0.25, 1.0], "words": ["p", "q"],
                 "by_k": {"1": 0.5, "16": None}, "nested": {"i": {"x": 1}}, "raw": {"deep": [1, {"z": None}]}}
    assert list(d) == ["name", "inner", "pair", "words", "by_k", "nested", "raw"]  # field order; `where` not written
    assert Outer.from_json_dict(json.loads(json.dumps(d))) == o


def test_omitted_defaults_and_unknown_keys() -> None:
    assert to_json(Outer()) == {"name": "", "inner": None, "pair": None, "words": [], "by_k": {}, "raw": {}}
    assert to_json(Outer(later=0.25))["later"] == 0.25 and "later" not in to_json(Outer(later=0.5))
    # an older writer: no optional fields, a null for a field with a default; a newer: an unknown key
    o = from_json(Outer, {"name": "old", "words": None, "future": 1}, where=Path("/r"))
    assert o == Outer(name="old", where=Path("/r"))
    assert from_json(Outer, {"later": 0.25}).later == 0.25
    with pytest.raises(UserError, match="Inner in JSON has no 'x'"):
        from_json(Outer, {"inner": {}})
    with pytest.raises(UserError, match="expected a JSON object"):
        from_json(Inner, [1])


def test_numbers_are_not_coerced_so_bytes_survive_a_round_trip() -> None:
    d = {"x": 2, "note": None}
    assert json.dumps(to_json(from_json(Inner, d))) == json.dumps({"x": 2})


def test_task_metrics_json_is_the_summary_json_shape() -> None:
    m = TaskMetrics(num_problems=2, num_samples=4, num_missing=0, mean=0.5, stderr=0.1, ci95=(0.2, 0.8),
                    stderr_resample=0.05, pass_at_k={1: 0.5, 2: 0.75}, pass_at_k_stderr={1: 0.1, 2: None},
                    maj_at_k={1: 0.5}, tokens=TokenStats(10.0, 9.0, 12.0, 14), truncation_rate=0.0,
                    no_answer_rate=None, se_vs_k={1: SEAtK(0.2, 0.1)}, extra={"strict": GroupMetrics(2, 0.5, None)})
    d = m.to_json_dict()
    assert d["pass_at_k"] == {"1": 0.5, "2": 0.75} and d["ci95"] == [0.2, 0.8]
    assert "macro_mean" not in d and "breakdown" not in d  # None / empty: not written, as before
    assert d["se_vs_k"] == {"1": {"stderr": 0.2, "stderr_resample": 0.1}}
    assert TaskMetrics.from_json_dict(json.loads(json.dumps(d))) == m


def test_run_settings_keep_their_json_and_run_id() -> None:
    s = RunSettings(model="m", model_identity=None, api="chat", system_prompt=None, prompt_template=None,
                    sampling=SamplingParams(stop=("x",)), seed=42)
    assert s.to_json_dict() == {"model": "m", "model_identity": None, "api": "chat", "system_prompt": None,
                                "prompt_template": None,
                                "sampling": {"temperature": 0.6, "top_p": 0.95, "top_k": None, "min_p": None,
                                             "max_tokens": 32768, "stop": ["x"], "extra_body": {}},
                                "seed": 42}
    assert RunSettings.from_json_dict(s.to_json_dict()) == s
    # Pinned: the id of these settings before the serialiser (a changed id would orphan every run directory).
    plain = RunSettings(model="m", api="chat", sampling=SamplingParams(), seed=42)
    assert plain.run_id == "96fb32404eb2"
    # An imported file's settings: only the model is known.
    assert RunSettings.from_json_dict({"model": "gens"}) == RunSettings(model="gens")


def test_sample_record_reads_lines_with_a_version_and_unknown_fields() -> None:
    r = SampleRecord(task="t", problem_key="k", problem_id="p", index=0, seed=1, status="ok", text="hi")
    assert SampleRecord.from_json_dict({"v": 1, **r.to_json_dict(), "later_field": 3}) == r
