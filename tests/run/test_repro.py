"""`reasoneval repro`: the verdict logic on known answers, with the loopback server as the "other setup": the same
server (bitwise reproducible), one whose answers leave the text after N tokens with the same final answer (texts
drift, scores agree within noise), one that also changes the answer (scores differ beyond noise)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reasoneval.analysis import repro as verdicts
from reasoneval.analysis.repro import Pair, first_divergence, paired_difference
from reasoneval.errors import UserError
from reasoneval.run.repro import parse_vary
from tests.reliability._helpers import arith_reply, cli_inprocess, run_args, write_data

PROBLEMS = 8


@pytest.fixture
def made_run(tmp_path: Path, make_openai_server, capsys) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    """A run of 8 problems x 2 samples against the loopback server (arith_reply: right for 2 of 3 seeds)."""
    write_data(tmp_path / "data", {"aime24": PROBLEMS})
    server = make_openai_server(responder=arith_reply)
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--concurrency", "4"),
                      capsys)
    assert r.returncode == 0, r.stderr
    (run,) = [p.parent for p in (tmp_path / "results").glob("*/*/config.json")]
    return run, server.base_url


def _repro(run: Path, capsys, *args: str) -> dict:  # type: ignore[no-untyped-def]
    r = cli_inprocess(["repro", str(run), "--problems", str(PROBLEMS), "--samples", "2", "--json", *args], capsys)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_same_setup_is_bitwise_reproducible_and_kept_apart(made_run: tuple[Path, str], capsys) -> None:  # type: ignore[no-untyped-def]
    run, _ = made_run
    before = (run / "samples.jsonl").read_bytes(), (run / "summary.json").read_bytes()
    report = _repro(run, capsys)
    assert report["pairs"] == 2 * PROBLEMS and report["identical"] == 2 * PROBLEMS
    assert report["verdict"] == verdicts.BITWISE and report["divergence"]["positions"] == []
    assert report["paired"]["difference"] == 0 and report["varied"] == {}
    assert report["fingerprint_differences"] == {}  # the same server, the same settings
    # the regenerated samples live under RUN/repro/same/; the run's own files are untouched
    assert report["repro_dir"] == str(run / "repro" / "same")
    assert len((run / "repro" / "same" / "samples.jsonl").read_text().splitlines()) == 2 * PROBLEMS
    assert ((run / "samples.jsonl").read_bytes(), (run / "summary.json").read_bytes()) == before
    assert json.loads((run / "repro" / "same" / "repro.json").read_text())["verdict"] == verdicts.BITWISE
    r = cli_inprocess(["runs", str(run.parent.parent), "--csv"], capsys)
    assert len(r.stdout.splitlines()) == 2  # the header and the run: the repro is no run of its own


def test_texts_that_drift_after_n_tokens_with_the_same_answers_agree_within_noise(
        made_run: tuple[Path, str], make_openai_server, capsys) -> None:  # type: ignore[no-untyped-def]
    run, _ = made_run
    other = make_openai_server(responder=arith_reply, diverge_after=3, diverge_share=0.5)
    report = _repro(run, capsys, "--base-url", other.base_url)
    drifted = report["pairs"] - report["identical"]
    assert 0 < drifted < report["pairs"]
    # every drifted text leaves the run's after its first 3 tokens (words: no tokenizer for a server's model)
    assert report["divergence"]["unit"] == "word" and report["divergence"]["positions"] == [3] * drifted
    assert report["paired"]["difference"] == 0 and report["verdict"] == verdicts.DRIFT
    assert report["varied"] == {"base_url": other.base_url}
    assert report["fingerprint_differences"]["base_url"][1] == other.base_url


def test_a_changed_answer_is_a_difference_beyond_noise(made_run: tuple[Path, str], make_openai_server, capsys  # type: ignore[no-untyped-def]
                                                       ) -> None:
    run, _ = made_run
    other = make_openai_server(responder=arith_reply, diverge_after=5, diverge_answer=True)
    report = _repro(run, capsys, "--base-url", other.base_url, "--name", "changed")
    assert report["identical"] == 0 and report["divergence"]["minimum"] == 5
    p = report["paired"]
    assert p["score_b"] == 0 < p["score_a"] and p["ci_high"] < 0
    assert report["verdict"] == verdicts.DIFFER
    r = cli_inprocess(["repro", str(run), "--problems", str(PROBLEMS), "--samples", "2", "--base-url", other.base_url,
                       "--name", "changed"], capsys)
    assert "verdict: scores differ beyond noise" in r.stdout and "paired difference -" in r.stdout


def test_vary_concurrency_is_recorded_as_the_one_setup_difference(made_run: tuple[Path, str], capsys) -> None:  # type: ignore[no-untyped-def]
    run, _ = made_run
    report = _repro(run, capsys, "--vary", "concurrency=1", "--problems", "3")
    assert report["pairs"] == 6 and report["varied"] == {"concurrency": "1"}
    assert report["fingerprint_differences"] == {"concurrency": [4, 1]}
    assert report["repro_dir"].endswith("repro/concurrency=1")


def test_bad_input_is_one_line(made_run: tuple[Path, str], capsys) -> None:  # type: ignore[no-untyped-def]
    run, _ = made_run
    r = cli_inprocess(["repro", str(run), "--vary", "temperature=1"], capsys)
    assert r.returncode != 0 and "not something repro can vary" in r.stderr
    r = cli_inprocess(["repro", str(run), "--samples", "3"], capsys)
    assert r.returncode != 0 and "no problem with 3 finished samples" in r.stderr
    r = cli_inprocess(["repro", str(run), "--vary", "engine-arg", "threads"], capsys)
    assert r.returncode != 0 and "KEY=VALUE" in r.stderr


def test_parse_vary() -> None:
    assert parse_vary([["concurrency=1"], ["engine-arg", "threads=2"], ["engine-arg", "parallel=1"]]) == \
        (1, {"threads": "2", "parallel": "1"})
    with pytest.raises(UserError, match="at least 1"):
        parse_vary([["concurrency=0"]])


def test_divergence_positions_and_paired_ci() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 4]) == 2
    assert first_divergence([1, 2], [1, 2, 3]) == 2 and first_divergence([1], [1]) is None
    pairs = [Pair("t", str(i), 0, "a", "a", i % 2 == 0, i % 3 == 0) for i in range(12)]
    d = paired_difference(pairs)
    assert d.problems == 12 and d.score_a == 0.5 and math.isclose(d.score_b, 4 / 12)
    assert d.ci_low < d.difference < d.ci_high
    assert verdicts.verdict(12, 12, d) == verdicts.BITWISE
    assert verdicts.verdict(3, 12, d) == verdicts.DRIFT  # CI [-0.46, +0.13] holds 0
    worse = paired_difference([Pair("t", str(i), 0, "a", "b", True, i == 0) for i in range(12)])
    assert verdicts.verdict(0, 12, worse) == verdicts.DIFFER
