"""Bad input of every kind is a one-line error (exit 2) naming what is wrong -- never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import pytest

from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import (
    ERROR_PREFIX,
    arith_reply,
    assert_clean_error,
    cli,
    cli_inprocess,
    run_args,
    write_data,
)

GOOD = json.dumps({"id": "a", "problem": "What is $3 + 1$?", "answer": "4"})


def _data_file(tmp_path: Path, content: bytes) -> Path:
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    path = d / "aime24.jsonl"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("content,pattern", [
    ((GOOD + "\n{not json\n").encode(), r"aime24\.jsonl:2: invalid JSON"),
    ((GOOD + "\n" + json.dumps({"id": "b", "problem": "x"}) + "\n").encode(), r"aime24\.jsonl:2: missing key 'answer'"),
    ((GOOD + "\n" + json.dumps({"id": "b", "answer": "3"}) + "\n").encode(), r"aime24\.jsonl:2: missing key 'problem'"),
    ((json.dumps({"id": "b", "problem": "x", "answer": ["3"]}) + "\n").encode(),
     r"aime24\.jsonl:1: 'answer' must be a string or a number, got (a )?list"),
    ((json.dumps({"id": "b", "problem": 7, "answer": "3"}) + "\n").encode(), r"aime24\.jsonl:1: 'problem' must be a string"),
    ((json.dumps([1, 2]) + "\n").encode(), r"aime24\.jsonl:1: expected a JSON object"),
    (b"", r"aime24\.jsonl: file is empty"),
    (b"\xff\xfe\x00garbage\n", r"aime24\.jsonl: not UTF-8"),
    ((GOOD + "\n" + GOOD + "\n").encode(), r"duplicate id 'a'"),
], ids=["bad-json", "no-answer", "no-problem", "answer-list", "problem-int", "not-object", "empty", "not-utf8",
        "duplicate-id"])
def test_malformed_dataset_file(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path, content: bytes,
                                pattern: str, capsys: pytest.CaptureFixture[str]) -> None:
    _data_file(tmp_path, content)
    server = make_openai_server()
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24"), capsys)
    assert_clean_error(r, 2, pattern)
    assert server.count_requests() == 0  # nothing was sent for a bad dataset


def test_a_100_mb_line(tmp_path: Path) -> None:
    """A 100 MB unterminated line: read, rejected with its line number, no traceback."""
    path = _data_file(tmp_path, b"")
    with open(path, "wb") as f:
        f.write(GOOD.encode() + b"\n")
        f.write(b'{"id": "b", "problem": "' + b"a" * 100_000_000 + b"\n")
    r = cli("run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--tasks", "aime24", "--data-dir",
            str(path.parent), "--output-dir", str(tmp_path / "r"), "--no-progress")
    last = assert_clean_error(r, 2, r"aime24\.jsonl:2: invalid JSON")
    assert len(last) < 400  # the 100 MB line is not echoed


@pytest.mark.parametrize("extra,pattern", [
    (["--n", "-5"], r"--n must be at least 1 \(got -5\)"),
    (["--n", "0"], r"--n must be at least 1"),
    (["--concurrency", "0"], r"--concurrency must be at least 1"),
    (["--concurrency", "-1"], r"--concurrency must be at least 1"),
    (["--limit", "0"], r"--limit must be at least 1"),
    (["--max-retries", "-1"], r"--max-retries must be 0 or more"),
    (["--timeout", "0"], r"--timeout must be positive"),
    (["--max-tokens", "0"], r"--max-tokens must be at least 1"),
    (["--top-p", "1.5"], r"--top-p must be in \(0, 1\]"),
    (["--prompt-template", "/nonexistent/template.txt"], r"cannot read --prompt-template"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_bad_option_values(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path, extra: list[str],
                           pattern: str, capsys: pytest.CaptureFixture[str]) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server()
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", *extra), capsys)
    assert_clean_error(r, 2, pattern)
    assert server.count_requests() == 0


@pytest.mark.parametrize("argv,pattern", [
    (["run", "--bogus-option"], r"unrecognized arguments: --bogus-option"),
    (["run", "--n", "abc"], r"argument --n: invalid int value: 'abc'"),
    (["run", "--extra-body", "{nope"], r"argument --extra-body: not valid JSON"),
    (["run", "--api", "grpc"], r"argument --api: invalid choice: 'grpc'"),
    (["frobnicate"], r"invalid choice: 'frobnicate'"),
])
def test_unknown_options_and_bad_types(argv: list[str], pattern: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_inprocess(argv, capsys)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    # argparse's form: the usage, then one "reasoneval ...: error: ..." line naming the problem.
    last = r.stderr.strip().splitlines()[-1]
    assert re.search(r"^reasoneval( run)?: error: ", last) and re.search(pattern, last), r.stderr


def test_base_url_that_is_an_html_page(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server(not_openai=True)
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24"))
    assert_clean_error(r, 2, r"returned an HTML page: this is not an OpenAI-compatible server")
    assert len(r.stderr.strip().splitlines()) == 1


def test_base_url_without_v1(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server()
    r = cli(*run_args(server.url, tmp_path, "--tasks", "aime24"))  # http://host:port, no /v1
    assert_clean_error(r, 2, r"answered HTTP 404, not a model list .*include /v1")


def test_report_on_a_directory_that_is_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_inprocess(["report", str(tmp_path)], capsys)
    assert_clean_error(r, 2, r"is not a reasoneval run directory")


def test_generation_endpoint_answering_html_is_a_counted_failure(make_openai_server: Callable[..., OpenAIServer],
                                                                 tmp_path: Path) -> None:
    """/models works but generation returns an HTML page: retried, counted, then a failed sample (exit 3)."""
    write_data(tmp_path / "data", {"aime24": 1})
    server = make_openai_server(responder=arith_reply)
    server.fail_next(100, "html")
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--max-retries", "2", "--json"))
    assert_clean_error(r, 3, r"2 sample\(s\) are missing or failed")
    s = json.loads(r.stdout)
    assert s["timing"]["errors"] == 6 and s["timing"]["retries"] == 4 and s["timing"]["failed"] == 2
    assert s["tasks"]["aime24"]["num_missing"] == 2 and s["complete"] is False
    assert r.stderr.strip().splitlines()[-1].startswith(ERROR_PREFIX)
