"""Issue 52.4 and 52.7: the live page counts against what the running command draws. During a K extension it read
"12 of 12, ETA 0 s" while the new samples were generated (config.json, which it read, describes the headline); an
adaptive run read "72 of wanted 144" (config.json's n is 2 x --max-n, an index bound) where at most 72 can be drawn."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import reasoneval
from reasoneval.run_files import LOCK_FILE, SAMPLES_FILE
from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, write_data
from tests.view.helpers import get, viewing

Q = 3


def _follow(tmp_path: Path, server: OpenAIServer, ks: list[str] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Run `evaluate` (options) in a thread and poll its page's JSON while it runs: the progress records seen (and
    into `ks`, the all-runs table's K of the running run)."""
    root = tmp_path / "results"
    root.mkdir(exist_ok=True)
    done: dict[str, Any] = {}

    def go() -> None:
        try:
            reasoneval.evaluate(base_url=server.base_url, model="test-model", data_dir=str(tmp_path / "data"),
                                tasks=["aime24"], output_dir=str(root), retry_backoff=0.01, grading_workers=1,
                                progress=False, print_table=False, **options)
        except BaseException as e:  # re-raised in the test's thread
            done["error"] = e
        done["end"] = True

    seen = []
    with viewing(root) as (_, base):
        worker = threading.Thread(target=go)
        worker.start()
        deadline = time.monotonic() + 60
        while "end" not in done and time.monotonic() < deadline:
            _, body, _ = get(base, "/api/runs")
            rows = json.loads(body)["rows"] if body.startswith("{") else []
            for row in rows:
                status, page, _ = get(base, "/api" + row["href"])
                d = json.loads(page) if status == 200 else {}
                if d.get("running") and d.get("progress"):
                    seen.append(d["progress"])
                    if ks is not None:
                        ks.append(row["k"])
            time.sleep(0.2)
        worker.join(60)
    assert "error" not in done, done.get("error")
    return seen


def test_a_k_extension_counts_against_the_samples_it_draws(make_openai_server: Callable[..., OpenAIServer],
                                                           tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": Q})
    fast = make_openai_server(responder=arith_reply)
    reasoneval.evaluate(base_url=fast.base_url, model="test-model", data_dir=str(tmp_path / "data"), tasks=["aime24"],
                        n=2, output_dir=str(tmp_path / "results"), grading_workers=1, progress=False, print_table=False)
    slow = make_openai_server(responder=arith_reply, delay_s=0.25, max_concurrent=1)
    seen = _follow(tmp_path, slow, n=6, concurrency=1)
    assert len(seen) >= 3, seen
    for p in seen:
        assert p["wanted"] == Q * 6 and not p["at_most"], p  # the command's K, not the headline's 2
        if p["done"] < Q * 6:
            assert p["eta_s"] is None or p["eta_s"] > 0, p
    assert min(p["done"] for p in seen) < Q * 6 and {p["done"] for p in seen} != {Q * 2}


def test_a_command_that_holds_the_lock_but_has_not_said_what_it_draws_is_starting(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> None:
    """The moment between a command taking a run's lock and writing what it draws: the page says it runs and shows
    no count, rather than one against the headline (CI read "6 of 6" for a K extension from 2 to 6 there)."""
    write_data(tmp_path / "data", {"aime24": Q})
    fast = make_openai_server(responder=arith_reply)
    reasoneval.evaluate(base_url=fast.base_url, model="test-model", data_dir=str(tmp_path / "data"), tasks=["aime24"],
                        n=2, output_dir=str(tmp_path / "results"), grading_workers=1, progress=False, print_table=False)
    run_dir = next((tmp_path / "results").glob("test-model/*/"))
    keys = sorted({json.loads(line)["problem_key"] for line in (run_dir / SAMPLES_FILE).read_text().splitlines()})
    with viewing(tmp_path / "results") as (_, base), open(run_dir / LOCK_FILE, "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert lock.read() == ""  # the first command emptied it as it let go
        href = json.loads(get(base, "/api/runs")[1])["rows"][0]["href"]
        page = json.loads(get(base, "/api" + href)[1])
        assert page["running"] and page["progress"] is None, page
        drawing = {"tasks": {"aime24": {"problems": keys, "per_problem": 6, "adaptive": False}}}
        lock.write(f"pid {os.getpid()}\n{json.dumps(drawing)}\n")
        lock.flush()
        page = json.loads(get(base, "/api" + href)[1])
        assert page["running"] and page["progress"]["wanted"] == Q * 6 and page["progress"]["done"] == Q * 2, page


def test_an_adaptive_run_counts_against_at_most_max_n(make_openai_server: Callable[..., OpenAIServer],
                                                      tmp_path: Path) -> None:
    write_data(tmp_path / "data", {"aime24": Q})
    slow = make_openai_server(responder=arith_reply, delay_s=0.1, max_concurrent=2)
    ks: list[str] = []
    seen = _follow(tmp_path, slow, ks, target_se=1.0, max_n=6, concurrency=2)
    assert seen, "the run was never seen running"
    assert set(ks) == {"at most 6 (adaptive)"}, ks  # the all-runs table: not config.json's n, 2 x --max-n
    for p in seen:
        assert p["wanted"] == Q * 6 and p["at_most"] and p["tasks"][0]["wanted"] == Q * 6, p  # not 2 x --max-n
    assert max(p["done"] for p in seen) <= Q * 6

