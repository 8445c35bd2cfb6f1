"""The batch API: worker safety limits, dedupe, the on-disk cache, grade_many and cluster_many."""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest

from reasoneval.errors import UserError
from reasoneval.scoring.maths import GRADER_VERSION, Grade, GradeItem, GradingPool


def _children() -> set[int]:
    """Pids of this process's live (non-zombie) children."""
    me = os.getpid()
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            out.add(int(d))
    return out


@pytest.fixture(scope="module")
def pool() -> GradingPool:
    with GradingPool(workers=2, timeout_s=5.0) as p:
        yield p


def test_wall_time_limit_kills_and_replaces_the_worker() -> None:
    with GradingPool(workers=1, timeout_s=1.0) as p:
        t = time.monotonic()
        res = p.run_jobs([("sleep", (30,)), ("verify", ("\\frac{1}{2}", "0.5", None, 1000))])
        elapsed = time.monotonic() - t
        assert res[0] == ("timeout", None)
        assert res[1] == ("ok", True)  # the replacement worker carries on with the batch
        assert elapsed < 15


def test_memory_limit_turns_a_huge_allocation_into_an_error() -> None:
    with GradingPool(workers=1, timeout_s=10.0, memory_mb=512) as p:
        res = p.run_jobs([("alloc", (2048,)), ("alloc", (8,))])
        assert res[0][0] == "error"
        assert res[1] == ("ok", 8 * 1024 * 1024)


def test_grade_many_keeps_order_and_statuses(pool: GradingPool) -> None:
    items = [
        GradeItem("so the answer is \\boxed{\\dfrac{1}{2}}", "0.5"),
        GradeItem("so the answer is \\boxed{3}", "4"),
        GradeItem("<think> still thinking about it and then", "4", finish_reason="length"),
        GradeItem("The answer is (B).", "B", kind="choice"),
        GradeItem("The answer is (B).", "C", kind="choice"),
        GradeItem("we get \\boxed{x^2+2x+1}", "(x+1)^2"),
    ]
    assert pool.grade_many(items) == [
        Grade(True, "\\dfrac{1}{2}", "ok"),
        Grade(False, "3", "ok"),
        Grade(False, None, "no_answer"),
        Grade(True, "B", "ok"),
        Grade(False, "B", "ok"),
        Grade(True, "x^2+2x+1", "ok"),
    ]


def test_each_distinct_pair_is_verified_once(pool: GradingPool) -> None:
    before = dict(pool.stats)
    items = [GradeItem(f"Thus \\boxed{{\\sqrt{{{n}}}}}", "\\sqrt{4}") for n in (4, 4, 4, 9, 9)] * 20
    grades = pool.grade_many(items)
    assert [g.correct for g in grades[:5]] == [True, True, True, False, False]
    assert pool.stats["symbolic"] - before["symbolic"] <= 2


def test_cache_is_reused_and_versioned(tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "grades.jsonl"
    items = [GradeItem("\\boxed{\\sqrt{2}/2}", "\\frac{1}{\\sqrt{2}}"), GradeItem("\\boxed{\\sqrt{3}}", "\\frac{1}{\\sqrt{2}}")]
    with GradingPool(workers=1, cache_path=cache) as p:
        first = p.grade_many(items)
        assert p.stats["symbolic"] == 2
    assert [g.correct for g in first] == [True, False]
    lines = [json.loads(x) for x in cache.read_text().splitlines()]
    assert {d["grader_version"] for d in lines} == {GRADER_VERSION}
    # A torn last line (a crash mid-write) is skipped; the complete lines still count.
    with open(cache, "a") as f:
        f.write('{"grader_version": "' + GRADER_VERSION + '", "pred": "\\\\sqrt{5')
    with GradingPool(workers=1, cache_path=cache) as p:
        again = p.grade_many(items)
        assert p.stats["symbolic"] == 0 and p.stats["cache_hits"] == 2
        assert p.worker_pids() == []  # nothing needed a worker
    assert again == first
    # Entries written by another grader version are ignored.
    text = cache.read_text().replace(f'"grader_version": "{GRADER_VERSION}"', '"grader_version": "old"')
    cache.write_text(text)
    with GradingPool(workers=1, cache_path=cache) as p:
        p.grade_many(items)
        assert p.stats["symbolic"] == 2


def test_cluster_many_groups_equivalent_answers(pool: GradingPool) -> None:
    groups = [
        (["0.5", "\\frac{1}{2}", None, "\\dfrac12", "2", "1/2", "x+1", "1+x"], "math"),
        (["A", "(A)", "B", None], "choice"),
    ]
    assert pool.cluster_many(groups) == [[0, 0, None, 0, 1, 0, 2, 2], [0, 0, 1, None]]


def test_bad_arguments_are_user_errors() -> None:
    with pytest.raises(UserError):
        GradingPool(workers=0)
    with pytest.raises(UserError):
        GradingPool(timeout_s=0)
    with GradingPool(workers=1) as p, pytest.raises(UserError):
        p.grade_many([GradeItem("\\boxed{1}", "1", kind="code")])


@pytest.mark.slow
def test_adversarial_inputs_finish_within_limits_without_leaking_workers() -> None:
    with GradingPool(workers=1) as warm:  # start-up cost outside the measured part
        warm.run_jobs([("verify", ("1", "1", None, 10))])
    before = _children()
    matrix = "\\begin{pmatrix}" + "\\\\".join("&".join(str(i * j) for j in range(200)) for i in range(200)) + "\\end{pmatrix}"
    answers = [
        "{" * 5000 + "1" + "}" * 5000,
        "\\boxed{" + "x+" * 500_000 + "1}",  # a 1 MB response
        "\\boxed{9^{9^{9^{9}}}}",
        "\\boxed{\\frac{1}{0}}",
        "\\boxed{" + matrix + "}",
        "\\boxed{\\frac{1}{2",
        "\\boxed{\\left( \\sqrt{ \\frac{ }",
        "\\boxed{1\x00\x07\x1b[31m2}",
        "\\boxed{٣ + ३ + 三 + Ⅲ}",
        "\\boxed{10^{10^{10^{10}}} - 10^{10^{10^{10}}}}",
    ]
    timeout_s = 3.0
    with GradingPool(workers=2, timeout_s=timeout_s, max_symbolic_chars=50_000) as p:
        t = time.monotonic()
        grades = p.grade_many([GradeItem(a, "7") for a in answers])
        elapsed = time.monotonic() - t
        assert len(p.worker_pids()) == 2
    assert all(not g.correct for g in grades)
    assert all(g.status in ("ok", "no_answer", "timeout", "error") for g in grades)
    # Each input gets at most its own time limit (plus a worker restart); two run side by side.
    assert elapsed < len(answers) * (timeout_s + 3) / 2 + 5
    time.sleep(0.2)
    assert _children() == before


def test_a_worker_that_cannot_start_is_a_clear_error() -> None:
    # 1 MiB of address space cannot even hold the interpreter's imports: the pool must say so, not spin.
    before = _children()
    with GradingPool(workers=1, memory_mb=1) as p, pytest.raises(UserError, match="grading worker"):
        p.run_jobs([("verify", ("1", "2", None, 10))])
    time.sleep(0.2)
    assert _children() == before


def test_grades_jsonl_keeps_its_bytes_and_reads_the_old_lines(tmp_path: pathlib.Path) -> None:
    # grades.jsonl is a typed record (GradeLine) now; a cache written before keeps its bytes line for line, and lines of
    # the version before approx/units (grader 2, which this grader skips) or torn by a kill are left out.
    from reasoneval.scoring.maths.pool import GradeLine

    fixtures = pathlib.Path(__file__).parents[2] / "fixtures" / "runs"
    current = (fixtures / "pre_layout" / "grades.jsonl").read_text()
    cache = tmp_path / "grades.jsonl"
    cache.write_text(current + (fixtures / "v0_1_0" / "grades.jsonl").read_text() + '{"grader_version": "3", "pr')
    pool = GradingPool(workers=1, cache_path=cache)
    assert len(pool._cache) == 3
    again = tmp_path / "again.jsonl"
    GradingPool(workers=1, cache_path=again)._store(list(pool._cache.items()))
    assert again.read_text() == current
    line = json.loads(current.splitlines()[0])
    assert GradeLine.from_json_dict(line).to_json_dict() == line
    assert GradeLine.from_json_dict({**line, "approx": None, "units": None}).key()[4:] == ("digits", "ignore")
