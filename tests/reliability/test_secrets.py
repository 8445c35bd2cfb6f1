"""The API key is sent to the server and never written: not in config.json, run.log, samples.jsonl,
the store's other files, stdout or error messages -- including on the error paths."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, assert_clean_error, cli, run_args, write_data

SECRET = "sk-proj-SECRET-0123456789abcdef"


def _assert_nowhere(tmp_path: Path, *texts: str) -> None:
    for text in texts:
        assert SECRET not in text
    files = [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path


def test_key_is_sent_and_never_written_even_when_requests_fail(make_openai_server: Callable[..., OpenAIServer],
                                                               tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 4})
    server = make_openai_server(responder=arith_reply, api_key=SECRET, fault_seed=3,
                                fault_rates={"http500": 0.3, "malformed_json": 0.1})
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "4", "--max-retries", "0",
                      "--json"), env={"OPENAI_API_KEY": SECRET})
    assert r.returncode == 3, r.stderr  # some samples failed: their errors are journaled and logged
    gen = [q for q in server.requests() if q.path.endswith("completions")]
    assert gen and all(q.authorization == f"Bearer {SECRET}" for q in gen)
    run_dir = next((tmp_path / "results" / "test-model").iterdir())
    assert "failed" in (run_dir / "samples.jsonl").read_text()
    assert "OPENAI_API_KEY" in (run_dir / "config.json").read_text()  # the variable's name only
    _assert_nowhere(tmp_path, r.stdout, r.stderr)


def test_key_from_a_named_variable(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server(responder=arith_reply, api_key=SECRET)
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "1", "--api-key-env", "MY_KEY"),
            env={"MY_KEY": SECRET})
    assert r.returncode == 0, r.stderr
    _assert_nowhere(tmp_path, r.stdout, r.stderr)


def test_a_refused_key_is_not_echoed(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server(api_key="the-right-key")
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24"), env={"OPENAI_API_KEY": SECRET})
    assert_clean_error(r, 2, r"refused the API key \(HTTP 401\)")
    _assert_nowhere(tmp_path, r.stdout, r.stderr)


def test_key_not_in_connection_errors(tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    r = cli("run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--tasks", "aime24", "--data-dir",
            str(tmp_path / "data"), "--output-dir", str(tmp_path / "results"), "--no-progress",
            env={"OPENAI_API_KEY": SECRET})
    assert_clean_error(r, 2, r"cannot reach http://127\.0\.0\.1:9/v1/models")
    _assert_nowhere(tmp_path, r.stdout, r.stderr)
