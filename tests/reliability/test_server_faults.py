"""A faulty server (500s, dropped connections, hung requests, a restart) and one that stays down."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import (
    arith_reply,
    assert_clean_error,
    cli,
    journal,
    journal_lines,
    ok_keys,
    popen_cli,
    run_args,
    write_data,
)

TASKS = {"aime24": 10, "math500": 5}


def _wait_for_journal(results: Path, lines: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = journal(results)
        if path is not None and sum(1 for _ in open(path, "rb")) >= lines:
            return path
        assert proc.poll() is None, f"the run ended early: {proc.returncode}"
        time.sleep(0.01)
    raise AssertionError(f"the journal never reached {lines} lines")


def test_faulty_server_with_a_restart_loses_nothing_and_counts_retries(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", TASKS)
    common = ("--tasks", "aime24,math500", "--n", "8", "--concurrency", "8", "--timeout", "0.5",
              "--max-retries", "8")
    clean = make_openai_server(responder=arith_reply)
    r = cli(*run_args(clean.base_url, tmp_path, *common, "--json", output="clean"))
    assert r.returncode == 0, r.stderr
    reference = json.loads(r.stdout)

    server = make_openai_server(responder=arith_reply, delay_s=0.01, hang_s=30, fault_seed=7,
                                fault_rates={"http500": 0.10, "drop": 0.05, "hang": 0.02})
    results = tmp_path / "results"
    proc = popen_cli(*run_args(server.base_url, tmp_path, *common, "--json"), stdout=subprocess.PIPE)
    try:
        _wait_for_journal(results, 40, proc)
        server.restart()  # in-flight requests are cut off; new ones are refused until it is back
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err.decode()[-2000:]
    summary = json.loads(out)
    lines = journal_lines(journal(results))
    keys = ok_keys(lines)
    assert len(keys) == len(set(keys)) == 120 and all(d["status"] == "ok" for d in lines)
    assert summary["complete"] is True
    assert summary["tasks"] == reference["tasks"] and summary["aggregate"] == reference["aggregate"]

    seen = [q for q in server.requests() if q.path.endswith("completions")]
    faulted = [q for q in seen if q.fault is not None]
    assert {q.fault for q in faulted} == {"http500", "drop", "hang"}
    timing = summary["timing"]
    # Every failed attempt is an error and (nothing failed for good) was retried.
    assert timing["errors"] >= len(faulted) and timing["retries"] == timing["errors"]
    assert timing["requests"] == timing["generated"] + timing["errors"] == sum(d["attempts"] for d in lines)
    assert timing["requests"] >= len(seen)  # requests refused during the restart never reached it
    on_disk = json.loads((journal(results).parent / "summary.json").read_text())
    assert on_disk["timing"]["retries"] == timing["retries"] and on_disk["timing"]["errors"] == timing["errors"]


def test_429_retry_after_is_honoured(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 1})
    server = make_openai_server(responder=arith_reply, retry_after=0.3)
    server.fail_next(1, "http429")
    t0 = time.monotonic()
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "1", "--json"))
    assert r.returncode == 0, r.stderr
    seen = [q for q in server.requests() if q.path.endswith("completions")]
    assert len(seen) == 2 and seen[1].received_at - seen[0].received_at >= 0.3
    assert json.loads(r.stdout)["timing"]["retries"] == 1 and time.monotonic() - t0 < 60


def test_a_server_that_rate_limits_every_request_stops_with_exit_4_after_the_window(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    """Issue 41.7: a server that answers 429 to everything (Retry-After 0.2 s) ran 53 s for 8 samples and exited 3;
    at scale a minute of backoff per wave, for ever. Now every answer a 429 for --rate-limit-window seconds with
    none succeeding stops the run with exit 4, the Retry-After waits honoured in between."""
    write_data(tmp_path / "data", {"aime24": 4})
    server = make_openai_server(responder=arith_reply, fault_rates={"http429": 1.0}, retry_after=0.2)
    t0 = time.monotonic()
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--concurrency", "2",
                      "--rate-limit-window", "2"), timeout=120)
    elapsed = time.monotonic() - t0
    last = assert_clean_error(r, 4, r"the server answered \d+ requests in a row with HTTP 429 \(rate limited\) and none "
                                    r"succeeded for \d+ s \(--rate-limit-window 2\)")
    assert "re-run the same command to resume" in last
    assert 2 <= elapsed < 60, elapsed
    seen = sorted(q.received_at for q in server.requests() if q.path.endswith("completions"))
    # Retry-After honoured: two workers, each at most one request per 0.2 s, for about 2 s.
    assert len(seen) <= 2 * (2 / 0.2 + 2), len(seen)


def test_a_retry_after_longer_than_the_window_stops_at_once(make_openai_server: Callable[..., OpenAIServer],
                                                              tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server(responder=arith_reply, fault_rates={"http429": 1.0}, retry_after=3600)
    t0 = time.monotonic()
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "1", "--rate-limit-window", "60"),
            timeout=120)
    assert_clean_error(r, 4, r"asked to wait 3600 s \(Retry-After\), longer than the --rate-limit-window of 60 s")
    assert time.monotonic() - t0 < 30


def test_a_server_that_rate_limits_for_a_while_then_recovers_completes(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    """More 429s per sample than --max-retries allows, but shorter than the window: every sample completes (a 429
    does not use a retry), exit 0."""
    write_data(tmp_path / "data", {"aime24": 3})
    server = make_openai_server(responder=arith_reply, retry_after=0.05)
    server.fail_next(12, "http429")
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--concurrency", "1",
                      "--max-retries", "1", "--rate-limit-window", "30", "--json"), timeout=120)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["complete"] is True and summary["timing"]["generated"] == 6 and summary["timing"]["failed"] == 0
    assert summary["timing"]["retries"] == 12


def test_server_that_stays_down_stops_the_run_and_the_next_run_resumes(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", TASKS)
    server = make_openai_server(responder=arith_reply, delay_s=0.02)
    args = run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "8", "--concurrency", "4",
                    "--max-retries", "3", "--timeout", "5")
    results = tmp_path / "results"
    proc = popen_cli(*args)
    try:
        _wait_for_journal(results, 30, proc)
        server.stop()
        t_down = time.monotonic()
        _, err_b = proc.communicate(timeout=60)
    finally:
        proc.kill()
    err = err_b.decode()
    assert time.monotonic() - t_down < 30
    r = subprocess.CompletedProcess(proc.args, proc.returncode, "", err)
    assert_clean_error(r, 4, r"the server stopped answering .*re-run the same command to resume")
    path = journal(results)
    assert path is not None
    before = journal_lines(path)
    kept = ok_keys(before)
    assert len(kept) >= 30 and len(kept) == len(set(kept))
    kept_seeds = {d["seed"] for d in before if d["status"] == "ok"}

    server.start()  # the same port: the same --base-url works again
    server.reset()
    r2 = cli(*args, "--json")
    assert r2.returncode == 0, r2.stderr
    keys = ok_keys(journal_lines(path))
    assert len(keys) == len(set(keys)) == 120
    assert keys[:len(kept)] == kept  # what was finished stays, in place
    assert not kept_seeds & set(server.seeds_seen())  # and is not generated again
    assert len(server.seeds_seen()) == 120 - len(kept)
    assert json.loads(r2.stdout)["complete"] is True


def _bad_reply_server(make: Callable[..., OpenAIServer], **kw: Any) -> OpenAIServer:
    return make(responder=arith_reply, **kw)


def test_malformed_replies_are_counted_retried_failures(make_openai_server: Callable[..., OpenAIServer],
                                                         tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 3})
    server = _bad_reply_server(make_openai_server)
    server.fail_next(2, "malformed_json")
    server.fail_next(2, "empty_choices")
    server.fail_next(1, "html")
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--concurrency", "1", "--json"))
    assert r.returncode == 0, r.stderr
    timing = json.loads(r.stdout)["timing"]
    assert timing["errors"] == 5 and timing["retries"] == 5 and timing["generated"] == 6
    log = (journal(tmp_path / "results").parent / "run.log").read_text()  # type: ignore[union-attr]
    assert "Traceback" not in log and "Traceback" not in r.stderr


def test_a_sample_that_keeps_failing_is_counted_not_graded_wrong(make_openai_server: Callable[..., OpenAIServer],
                                                                 tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 3})
    server = _bad_reply_server(make_openai_server)
    server.fail_next(100, "empty_choices", contains="$3 + 1$")  # problem 0, every attempt
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--max-retries", "1", "--json"))
    assert_clean_error(r, 3, r"2 sample\(s\) are missing or failed")
    s = json.loads(r.stdout)
    t = s["tasks"]["aime24"]
    assert s["complete"] is False and t["num_missing"] == 2
    assert s["timing"]["failed"] == 2 and s["timing"]["errors"] == 4
    failed = [d for d in journal_lines(journal(tmp_path / "results")) if d["status"] == "failed"]
    assert len(failed) == 2 and all("no choices" in d["error"] and d["attempts"] == 2 for d in failed)
    # The missing samples are not counted as wrong: problems 1 and 2 are graded on their own samples.
    assert t["num_problems"] == 3


# ---- a server that answers but cannot serve: the breaker, and refusals no retry fixes ----------------------

def test_a_server_that_answers_every_request_with_500_stops_in_under_15_s_with_exit_4(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    """Before the breaker: `--tasks aime24 --n 16` took ~280 s, 3,360 requests and 480 warnings, then exit 3.
    Default retries and backoff, as a user runs it."""
    write_data(tmp_path / "data", {"aime24": 30})
    server = make_openai_server(responder=arith_reply, fault_rates={"http500": 1.0})
    args = [a for a in run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "16") if a not in ("--retry-backoff", "0.01")]
    t0 = time.monotonic()
    r = cli(*args, timeout=120)
    elapsed = time.monotonic() - t0
    last = assert_clean_error(r, 4, r"the server answered \d+ requests in a row with an error and none succeeded for \d+ s")
    assert elapsed < 15, elapsed
    assert "HTTP 500: Internal server error (injected fault)." in last and "(the last was aime24/aime24-" in last
    assert "re-run the same command to resume" in last
    assert server.count_requests() < 480  # not 480 samples x 7 attempts
    assert r.stderr.count(" failed after ") == 0  # no warning per sample


def test_a_permanent_400_stops_at_the_first_response_with_the_servers_message(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 30})
    server = make_openai_server(responder=arith_reply, fault_rates={"max_tokens_too_large": 1.0})
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "16", "--concurrency", "1"))
    last = assert_clean_error(r, 2, r"the server refused aime24/aime24-\d+ sample 0, max_tokens 32768: HTTP 400: "
                                    r"max_tokens is too large: 32768\. This model supports at most 4096 completion tokens")
    assert "lower --max-tokens" in last and "No retry can fix that" in last
    assert server.count_requests() == 1 and r.stderr.count("max_tokens is too large") == 1


def test_a_server_that_answers_half_its_requests_with_503_still_completes(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", TASKS)
    server = make_openai_server(responder=arith_reply, fault_rates={"http503": 0.5}, fault_seed=11)
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "4", "--max-retries", "20", "--json"))
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    assert summary["complete"] is True and summary["timing"]["generated"] == 60 and summary["timing"]["failed"] == 0
    faulted = server.count_requests() - server.count_requests(faulted=False)
    assert summary["timing"]["errors"] == faulted and 0.3 < faulted / server.count_requests() < 0.7
