"""Run directories written by older reasoneval versions still load and report with identical numbers.

tests/fixtures/runs/ holds two real run directories (made against the loopback OpenAI server with scripted
answers, on the synthetic data of tests/fixtures/hub; how: tests/fixtures/runs/README.md):
- v0_1_0: written by 0.1.0 (commit 30f63db^; schema 1: no schema_version, no scoring in config.json);
  arith (6 problems), math500, aime24 (2 each), 4 samples each.
- pre_layout: written just before the issue-23 refactor (commit 12dc819; schema 2); arith (6 problems),
  math500, gsm8k, mbpp, ifeval (2 each) with the lm-eval columns, 4 samples each, the code verdicts cached.
- adaptive_crossfit: a `run --target-se` of the cross-fit design (commit d2d4a3d), before the two-stage one.
- adaptive_two_stage: two `run --target-se` commands of the two-stage design's first plan (commit dfcfac7), before
  the plan sized its margin from the pilot's own spread and planned each problem from the others' pilots.
Their summary.json is the one the old code wrote. `v0_1_0.summary_reported.json` is what `report` of the
commit that moved the layout (a9aa693) wrote for the v0_1_0 copy (schema 2, newer figures added).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from reasoneval.atomic import json_text
from reasoneval.cli.main import main
from reasoneval.metrics.summary import settle
from reasoneval.results.schema import SCHEMA_VERSION, load_config, load_run
from reasoneval.results.store import SampleStore, read_problems
from reasoneval.results.store.problems import problem_to_dict
from reasoneval.run_files import CONFIG_FILE, SUMMARY_FILE

RUNS = Path(__file__).parent.parent / "fixtures" / "runs"


def without_evaluation(written: bytes | str, kinds: dict[str, str]) -> str:
    """summary.json's text without the `evaluation` of each entry (issue 52.1: every entry says which evaluation its
    figures are of, a field the old runs' files predate), after checking it says `kinds[task]` ("fixed"/"adaptive")."""
    d = json.loads(written)
    for task, entry in d["tasks"].items():
        assert entry.pop("evaluation")["kind"] == kinds[task], task
    d["aggregate"].pop("evaluation", None)
    return json_text(d)


def copy_run(name: str, tmp_path: Path) -> Path:
    run_dir = tmp_path / name
    shutil.copytree(RUNS / name, run_dir)
    return run_dir


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    """Every figure of a summary.json: per task and aggregate metrics, K, timing."""
    return {"tasks": summary["tasks"], "aggregate": summary["aggregate"], "timing": summary["timing"],
            "complete": summary["complete"], "model": summary["model"], "run_id": summary["run_id"]}


def assert_contains(new: Any, old: Any, where: str = "") -> None:
    """Every value of `old` is in `new`, equal (new may add keys: figures added since); an old figure as the one
    rounding rule of reported figures (metrics/summary.py's settle) gives it now."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for k, v in old.items():
            assert k in new, f"{where}/{k} is gone"
            assert_contains(new[k], v, f"{where}/{k}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old)):
            assert_contains(a, b, f"{where}/{i}")
    else:
        assert new == (settle(old) if isinstance(old, float) else old), f"{where}: {new!r} != {old!r}"


def _settled(value: Any) -> Any:
    if isinstance(value, float):
        return settle(value)
    if isinstance(value, dict):
        return {k: _settled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_settled(v) for v in value]
    return value


def pinned(summary_text: str | bytes) -> str:
    """The summary.json an older version wrote, its figures (every task's and the aggregate's) under the rounding
    rule: what `report` writes for that run on any machine."""
    summary = json.loads(summary_text)
    for key in FIGURES:
        if key in summary:
            summary[key] = _settled(summary[key])
    return json_text(summary)


# The parts of summary.json that hold computed figures (TaskMetrics, the adaptive SEs): the rest (config, timing, ...)
# is carried as written.
FIGURES = ("tasks", "aggregate", "adaptive")


def _floats(value: Any) -> Iterator[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, list):
        for v in value:
            yield from _floats(v)


@pytest.mark.parametrize("name", ["v0_1_0", "pre_layout", "adaptive_crossfit", "adaptive_two_stage"])
def test_every_pinned_figure_is_the_same_on_a_machine_whose_last_bits_differ(name: str) -> None:
    """A machine whose kernels round differently moves a figure by a few units in the last place: each figure these
    tests pin rounds to the same value from anywhere within 8 units of it (so no pinned byte depends on the CPU)."""
    summary = json.loads((RUNS / name / SUMMARY_FILE).read_text())
    figures = [x for key in FIGURES for x in _floats(summary.get(key)) if math.isfinite(x)]
    assert len(figures) > 20
    for x in figures:
        lo, hi = x, x
        for _ in range(8):
            lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        assert settle(lo) == settle(x) == settle(hi), x
        if x == 0.0:  # a zero reached by cancellation elsewhere: off by rounding errors of the terms, not by ulps of 0
            assert settle(-1e-16) == settle(1e-16) == 0.0


def test_a_0_1_0_run_reports_with_the_same_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = json.loads((RUNS / "v0_1_0" / SUMMARY_FILE).read_text())
    assert "schema_version" not in original  # the fixture is schema 1
    run_dir = copy_run("v0_1_0", tmp_path)
    assert main(["report", str(run_dir), "--grading-workers", "1"]) == 0
    assert "66.7 ± 15.4" in capsys.readouterr().out  # arith's pass@1 ± SE in the table
    written = (run_dir / SUMMARY_FILE).read_text()
    new = json.loads(written)
    assert_contains(figures(new), figures(original))
    assert new["schema_version"] == SCHEMA_VERSION and new["n"] == 4
    # Byte for byte what `report` wrote for it before the serialiser and typed settings (figures settled).
    assert without_evaluation(written, dict.fromkeys(new["tasks"], "fixed")) == \
        pinned((RUNS / "v0_1_0.summary_reported.json").read_text())
    # The config.json 0.1.0 wrote is read, never rewritten by report.
    assert (run_dir / CONFIG_FILE).read_bytes() == (RUNS / "v0_1_0" / CONFIG_FILE).read_bytes()


def test_a_0_1_0_run_regraded_from_scratch_gives_the_same_figures(tmp_path: Path) -> None:
    original = json.loads((RUNS / "v0_1_0" / SUMMARY_FILE).read_text())
    run_dir = copy_run("v0_1_0", tmp_path)
    (run_dir / "grades.jsonl").unlink()  # 0.1.0's grade cache (grader version 2): every sample graded again
    (run_dir / "results.parquet").unlink()
    assert main(["report", str(run_dir), "--grading-workers", "1"]) == 0
    assert_contains(figures(json.loads((run_dir / SUMMARY_FILE).read_text())), figures(original))


def test_a_pre_refactor_run_reports_byte_for_byte(tmp_path: Path) -> None:
    from reasoneval.scoring.ifeval.scorer import IFEVAL_SCORER_VERSION
    from reasoneval.scoring.programs.scorer import CodeScorer

    run_dir = copy_run("pre_layout", tmp_path)
    assert main(["report", str(run_dir), "--grading-workers", "1"]) == 0
    # The same bytes, but for the code and IFEval scorers' versions, which `scorers` records: mbpp's programs and
    # ifeval's checks ran again (each cache is keyed on its scorer's version) and gave the same verdicts and figures.
    old = (RUNS / "pre_layout" / SUMMARY_FILE).read_bytes()
    assert old.count(b'"code": "2.2"') == 1 and old.count(b'"ifeval": "2"') == 1
    written = (run_dir / SUMMARY_FILE).read_bytes()
    assert without_evaluation(written, dict.fromkeys(json.loads(written)["tasks"], "fixed")) == \
        pinned(old.replace(b'"code": "2.2"', f'"code": "{CodeScorer.version}"'.encode())
               .replace(b'"ifeval": "2"', f'"ifeval": "{IFEVAL_SCORER_VERSION}"'.encode()))
    assert (run_dir / CONFIG_FILE).read_bytes() == (RUNS / "pre_layout" / CONFIG_FILE).read_bytes()


@pytest.mark.parametrize(("name", "num_problems"), [("v0_1_0", 10), ("pre_layout", 14)])
def test_load_run_reads_old_runs(name: str, num_problems: int) -> None:
    original = json.loads((RUNS / name / SUMMARY_FILE).read_text())
    result = load_run(RUNS / name)
    assert result.schema_version == SCHEMA_VERSION and result.n == 4 and result.model == "scripted-model"
    assert result.run_id == "b7eb5b4e8900" == result.config.run_id
    assert list(result.tasks) == list(original["tasks"])
    for task, m in result.tasks.items():
        assert m.to_json_dict() == _settled(original["tasks"][task])
    assert result.aggregate.to_json_dict() == _settled(original["aggregate"])
    settings = result.config.settings
    assert settings.sampling is not None and settings.sampling.max_tokens == 1024 and settings.seed == 42
    assert settings.api == "chat" and settings.prompt_style is None
    assert all(result.config.task_version(t) is None for t in result.tasks)  # written before task versions
    assert sum(m.num_problems for m in result.tasks.values()) == result.aggregate.num_problems == num_problems
    assert sum(1 for _ in SampleStore(RUNS / name).records()) == 4 * num_problems


def test_the_figures_are_the_known_ones() -> None:
    """A few figures written out (from the fixtures' README), so a fixture replaced by mistake is noticed."""
    old = load_run(RUNS / "v0_1_0")
    assert old.tasks["arith"].mean == pytest.approx(0.666667, abs=1e-6)
    assert old.tasks["aime24"].pass_at_k[2] == pytest.approx(0.416667, abs=1e-6)
    assert old.aggregate.maj_at_k[4] == pytest.approx(0.65, abs=1e-6)
    assert old.aggregate.stderr == pytest.approx(0.1166667, abs=1e-7)
    pre = load_run(RUNS / "pre_layout")
    assert pre.tasks["gsm8k"].extra["strict-match"].mean == pytest.approx(0.125, abs=1e-6)
    assert pre.tasks["math500"].extra["exact_match"].mean == pytest.approx(0.375, abs=1e-6)
    assert pre.tasks["ifeval"].extra["inst_strict"].mean == pytest.approx(0.416667, abs=1e-6)
    assert pre.aggregate.mean == pytest.approx(0.589286, abs=1e-6)


@pytest.mark.parametrize("name", ["pre_layout"])
def test_config_and_summary_round_trip_byte_for_byte(name: str) -> None:
    """Read and written again by the serialiser: the very bytes the pre-refactor code wrote (figures settled)."""
    config = load_config(RUNS / name)
    assert json_text(config.to_json_dict()) == (RUNS / name / CONFIG_FILE).read_text()
    assert json_text(load_run(RUNS / name).to_json_dict()) == pinned((RUNS / name / SUMMARY_FILE).read_text())
    lines = (RUNS / name / "problems.jsonl").read_text().splitlines()
    assert [json.dumps(problem_to_dict(p), ensure_ascii=False) for p in read_problems(RUNS / name)] == lines


def test_an_adaptive_run_of_the_cross_fit_design_reports_as_it_did(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """adaptive_crossfit: a `run --target-se 1.5` of the design before the two-stage one (commit d2d4a3d): its
    counts followed the cross-fitted streams, so it keeps that estimator (two problems have unequal streams, so
    the cross-fit mean is not c/n) and its posterior SE. It cannot be extended: a one-line error."""
    from tests.reliability._helpers import assert_clean_error, cli_inprocess

    original = json.loads((RUNS / "adaptive_crossfit" / SUMMARY_FILE).read_text())
    run_dir = copy_run("adaptive_crossfit", tmp_path)
    assert main(["report", str(run_dir), "--grading-workers", "1"]) == 0
    capsys.readouterr()
    reported = json.loads((run_dir / SUMMARY_FILE).read_text())
    # Its over-all row had pass@k and maj@k for k up to the most samples any problem got, each over the few problems
    # that reached k (issue 30): now, like the task's row then and now, only for k up to the fewest.
    task_ks = {name: set(original["tasks"]["aime24"][name]) for name in ("pass_at_k", "pass_at_k_stderr", "maj_at_k")}
    for name, ks in task_ks.items():
        top = max(int(k) for k in original["tasks"]["aime24"]["pass_at_k"])
        assert max(int(k) for k in reported["aggregate"][name]) == top and set(original["aggregate"][name]) > ks
        original["aggregate"][name] = {k: v for k, v in original["aggregate"][name].items() if k in ks}
    assert_contains(figures(reported), figures(original))
    assert reported["adaptive"] == _settled(original["adaptive"])
    pooled = sum(r.num_correct for r in _rows(run_dir)) / sum(r.n for r in _rows(run_dir))
    assert original["tasks"]["aime24"]["mean"] != pytest.approx(pooled, abs=1e-6)
    # the same command with a smaller target, in the same run directory (the fixture's data, model and seed)
    from tests.fixtures.openai_server import OpenAIServer
    from tests.reliability._helpers import accuracy_reply, write_data

    write_data(tmp_path / "data", {"aime24": 12})
    out = tmp_path / "out"
    shutil.copytree(RUNS / "adaptive_crossfit", out / "test-model" / load_config(run_dir).run_id)
    with OpenAIServer(responder=accuracy_reply) as server:
        r = cli_inprocess(["run", "--base-url", server.base_url, "--model", "test-model", "--tasks", "aime24",
                           "--data-dir", str(tmp_path / "data"), "--output-dir", str(out), "--target-se", "1",
                           "--concurrency", "4", "--grading-workers", "1", "--no-progress"], capsys)
        assert not [q for q in server.requests() if q.path.endswith("completions")]
    assert_clean_error(r, 2, "earlier --target-se rule .* cannot be extended")


def test_an_adaptive_run_of_the_first_two_stage_plan_reports_byte_for_byte(tmp_path: Path) -> None:
    """adaptive_two_stage: `run --target-se 2`, then `--target-se 1.2` in the same directory, with the first plan of
    the two-stage design (one plan per task from the whole pilot histogram, a margin of 1.5 posterior SDs; commit
    dfcfac7). Its counts followed that plan, so its estimate keeps that plan's weights: `report` writes the very
    summary.json that commit wrote (mean, SE, planned SE, samples)."""
    run_dir = copy_run("adaptive_two_stage", tmp_path)
    original = (RUNS / "adaptive_two_stage" / SUMMARY_FILE).read_bytes()
    adaptive = json.loads(original)["adaptive"]["aime24"]
    assert len(json.loads(original)["config"]["adaptive"]["history"]) == 2 and adaptive["n_max"] > adaptive["n_min"]
    assert main(["report", str(run_dir), "--grading-workers", "1"]) == 0
    assert without_evaluation((run_dir / SUMMARY_FILE).read_bytes(), {"aime24": "adaptive"}) == pinned(original)


def _rows(run_dir: Path) -> list[Any]:
    from reasoneval.analysis.outcomes import read_problem_rows

    return read_problem_rows(run_dir)
