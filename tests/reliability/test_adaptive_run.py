"""run --target-se on the loopback server with problem-dependent accuracies (AIME-like: 40% never solved, 30%
always): it plans for the target SE, spends fewer samples than uniform K would for that SE, and a SIGKILL mid-run
loses and repeats nothing and ends with the very result the uninterrupted run has."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from reasoneval.results.identity import sample_seed
from tests.fixtures.openai_server import OpenAIServer, lognormal_delays
from tests.reliability._helpers import accuracy_reply, cli, journal, journal_lines, ok_keys, popen_cli, run_args, write_data

ARGS = ("--tasks", "aime24", "--target-se", "1.0", "--concurrency", "8", "--json")


def _idle_fraction(server: OpenAIServer) -> float:
    """The fraction of the time from the first request to the last one sent with no request open."""
    gen = [q for q in server.requests() if q.path.endswith("completions")]
    first, last = min(q.received_at for q in gen), max(q.received_at for q in gen)
    events = sorted([(q.received_at, 1) for q in gen] + [(q.finished_at or last, -1) for q in gen])
    open_, prev, idle = 0, first, 0.0
    for t, d in events:
        if open_ == 0 and prev < t <= last:
            idle += t - prev
        open_, prev = open_ + d, t
    return idle / (last - first)


def _check_final(summary: dict, lines: list[dict], target: float = 1.0) -> None:
    a = summary["adaptive"]["aime24"]
    assert a["stopped"] == "target" and a["planned_se"] <= target, a  # the plan predicts the target is met
    # the reported SE is the measured one (not forced under the target): it is near the plan's prediction
    assert summary["tasks"]["aime24"]["stderr_resample"] * 100 == pytest.approx(a["se"]) and a["se"] < 1.5 * target
    keys = ok_keys(lines)
    assert len(keys) == len(set(keys)) == a["samples"]  # each sample journaled once
    per_problem = Counter((t, k) for t, k, _ in keys)
    for (t, k), count in per_problem.items():  # each problem's first indices, the samples a uniform run draws
        assert sorted(j for tt, kk, j in keys if (tt, kk) == (t, k)) == list(range(count))
    assert a["n_min"] < a["n_max"]  # uncertain problems got more
    for d in lines:
        assert d["seed"] == sample_seed(42, d["task"], d["problem_key"], d["index"])
    assert sum(summary["adaptive"]["aime24"]["n_histogram"].values()) == 30
    assert max(int(k) for k in summary["tasks"]["aime24"]["pass_at_k"]) == a["n_min"]


def _uniform_samples_for(run_dir: Path, target: float) -> int:
    """Q·K, K = Σ v_i / (Q² S²) with v_i each problem's unbiased c(n-c)/(n(n-1)) from results.parquet."""
    import math

    from reasoneval.analysis.outcomes import read_problem_rows

    rows = read_problem_rows(run_dir)
    v = sum(r.num_correct * (r.n - r.num_correct) / (r.n * (r.n - 1)) for r in rows)
    return len(rows) * math.ceil(v / (len(rows) ** 2 * (target / 100) ** 2))


def test_target_se_stops_at_the_target_and_survives_sigkill(tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 30})
    with OpenAIServer(responder=accuracy_reply, delay_s=lognormal_delays(0.03, 0.5, 0)) as server:
        r = cli(*run_args(server.base_url, tmp_path, *ARGS, output="fresh"), timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        fresh = json.loads(r.stdout)
        _check_final(fresh, journal_lines(journal(tmp_path / "fresh")))
        fresh_dir = next((tmp_path / "fresh").rglob("summary.json")).parent
        assert fresh["adaptive"]["aime24"]["samples"] < _uniform_samples_for(fresh_dir, 1.0)
        # rounds overlap: from the first request to the last one sent, the server is (almost) never idle
        # (measured: 0%, as for a uniform --n 16 run on this server)
        assert _idle_fraction(server) < 0.05

        # killed once its journal has a few rounds, then resumed
        args = run_args(server.base_url, tmp_path, *ARGS, output="killed")
        proc = popen_cli(*args)
        t0 = time.monotonic()
        while len(journal_lines(journal(tmp_path / "killed"))) < fresh["adaptive"]["aime24"]["samples"] // 2:
            assert proc.poll() is None and time.monotonic() - t0 < 120
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        before_lines = journal_lines(journal(tmp_path / "killed"))
        before = set(ok_keys(before_lines))
        before_seeds = {d["seed"] for d in before_lines if d.get("status") == "ok"}
        server.reset()
        r = cli(*args, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert not before_seeds & {q.seed for q in server.requests()}  # nothing journaled is asked for again
        resumed = json.loads(r.stdout)
        lines = journal_lines(journal(tmp_path / "killed"))
        _check_final(resumed, lines)
        assert before <= set(ok_keys(lines))  # nothing lost
        # verdicts depend on the seed only and the plan on the pilot only: the same samples, the same figures
        assert set(ok_keys(lines)) == set(ok_keys(journal_lines(journal(tmp_path / "fresh"))))
        assert resumed["tasks"]["aime24"]["mean"] == fresh["tasks"]["aime24"]["mean"]
        assert resumed["adaptive"]["aime24"]["se"] == fresh["adaptive"]["aime24"]["se"]

        # a smaller target later adds only what is missing
        r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--target-se", "0.7", "--concurrency", "8",
                          "--json", output="fresh"), timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        tighter = json.loads(r.stdout)["adaptive"]["aime24"]
        assert tighter["planned_se"] <= 0.7 and tighter["samples"] > fresh["adaptive"]["aime24"]["samples"]
        keys = ok_keys(journal_lines(journal(tmp_path / "fresh")))
        assert len(keys) == len(set(keys)) == tighter["samples"]
