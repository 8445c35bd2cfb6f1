"""Shared by the reliability tests, scripts/soak.py and bench/: the CLI in a subprocess, data files,
a deterministic scripted model, and journal reading."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from reasoneval.results.store import iter_jsonl

ROOT = Path(__file__).resolve().parents[2]
ERROR_PREFIX = "reasoneval: error: "


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT)}
    env.pop("OPENAI_API_KEY", None)
    env.update(extra or {})
    return env


def cli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "reasoneval.cli.main", *args]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120, **kw: Any
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_cmd(*args), capture_output=True, text=True, timeout=timeout, env=cli_env(env),
                          cwd=ROOT, **kw)


def cli_inprocess(argv: Sequence[str], capsys: Any) -> subprocess.CompletedProcess[str]:
    """reasoneval.cli.main.main(argv) in this process (no interpreter start-up: for the many quick bad-input
    cases), with its exit status and captured output as a CompletedProcess."""
    import logging

    from reasoneval.cli.main import main

    # main() configures the "reasoneval" logger for a process; put it back for the other tests.
    logger = logging.getLogger("reasoneval")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse errors
        code = e.code if isinstance(e.code, int) else 2
    finally:
        logger.handlers[:], logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), code, out, err)


def popen_cli(*args: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen[bytes]:
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(cli_cmd(*args), env=cli_env(env), cwd=ROOT, **kw)


def run_args(base_url: str, work: Path, *extra: str, output: str = "results") -> list[str]:
    return ["run", "--base-url", base_url, "--model", "test-model", "--data-dir", str(work / "data"),
            "--output-dir", str(work / output), "--retry-backoff", "0.01", "--grading-workers", "1",
            "--no-progress", *extra]


def run_in(server: Any, work: Path, capsys: Any, *extra: str) -> subprocess.CompletedProcess[str]:
    """`reasoneval run` in this process against the loopback server, into work/results (run_args)."""
    return cli_inprocess(run_args(server.base_url, work, *extra), capsys)


def only_run_dir(work: Path) -> Path:
    """The one run directory under work/results."""
    (d,) = [p for p in (work / "results").glob("*/*") if p.is_dir() and (p / "config.json").exists()]
    return d


def arith_rows(task: str, count: int, start: int = 0) -> list[dict[str, Any]]:
    """Problems whose answers the scripted model below computes (or gets wrong, by seed)."""
    return [{"id": f"{task}-{i}", "problem": f"What is ${i + 3} + {2 * i + 1}$?", "answer": str(3 * i + 4)}
            for i in range(start, start + count)]


def write_data(data_dir: Path, tasks: dict[str, int]) -> Path:
    """<task>.jsonl files of arith_rows, e.g. {"aime24": 6, "math500": 4}."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for task, count in tasks.items():
        with open(data_dir / f"{task}.jsonl", "w", encoding="utf-8") as f:
            for row in arith_rows(task, count):
                f.write(json.dumps(row) + "\n")
    return data_dir


_SUM = re.compile(r"\$(\d+) \+ (\d+)\$")


def arith_reply(body: dict[str, Any]) -> str:
    """A model that is right for 2 of 3 seeds, answers off by one for the third, and gives no
    answer when seed % 11 == 0: metrics then depend on exactly which seeds were generated."""
    from tests.fixtures.openai_server import problem_text

    m = _SUM.search(problem_text(body))
    seed = body.get("seed") or 0
    if m is None:
        return "I cannot parse this."
    total = int(m.group(1)) + int(m.group(2))
    if seed % 11 == 0:
        return "Let me think. This is hard and I will stop here."
    return f"Adding: {m.group(1)} + {m.group(2)} = \\boxed{{{total if seed % 3 else total + 1}}}."


def journal(results: Path) -> Path | None:
    files = sorted(results.glob("*/*/samples.jsonl")) if results.exists() else []
    return files[0] if files else None


def journal_lines(path: Path | None) -> list[dict[str, Any]]:
    return list(iter_jsonl(path)) if path is not None else []


def ok_keys(lines: Sequence[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(d["task"], d["problem_key"], d["index"]) for d in lines if d.get("status") == "ok"]


def error_line(stderr: str) -> str:
    """The last stderr line, which must be the CLI's one-line error (log lines may precede it)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def assert_clean_error(r: subprocess.CompletedProcess[str], code: int, pattern: str) -> str:
    """Exit status `code`, no traceback, the last stderr line is 'reasoneval: error: ...' matching pattern."""
    assert r.returncode == code, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    last = error_line(r.stderr)
    assert last.startswith(ERROR_PREFIX), r.stderr[-3000:]
    assert re.search(pattern, last), last
    # The error itself is one line: every other stderr line is a timestamped log line.
    for ln in r.stderr.strip().splitlines()[:-1]:
        assert re.match(r"\d\d:\d\d:\d\d (INFO|WARNING|ERROR|DEBUG) ", ln), ln
    return last


def accuracy_of(problem: str) -> float:
    """An AIME-like accuracy per problem, fixed by its text: 40% never solved, 30% always, the rest between."""
    import hashlib

    u = int.from_bytes(hashlib.sha256(problem.encode()).digest()[:8], "big") / 2**64
    return 0.0 if u < 0.4 else 1.0 if u < 0.7 else 0.1 + 0.8 * (u - 0.7) / 0.3


def accuracy_reply(body: dict[str, Any]) -> str:
    """A model right on each problem with that problem's accuracy_of, decided by the request's seed (so a
    sample's verdict depends only on its problem and seed, whatever the order or process)."""
    import hashlib

    from tests.fixtures.openai_server import problem_text

    text = problem_text(body)
    m = _SUM.search(text)
    if m is None:
        return "I cannot parse this."
    total = int(m.group(1)) + int(m.group(2))
    u = int.from_bytes(hashlib.sha256(f"{text}|{body.get('seed')}".encode()).digest()[:8], "big") / 2**64
    return f"The sum is \\boxed{{{total if u < accuracy_of(m.group(0)) else total + 1}}}."
