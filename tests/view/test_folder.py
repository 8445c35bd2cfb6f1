"""The folder scan and the journal reader behind `reasoneval view`: partial last lines, interim figures over only
the problems whose samples are all in, a finished run's page that reads no sample, 500 runs listed fast."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reasoneval.analysis.outcomes import read_problem_rows
from reasoneval.metrics import mean_stderr_ci
from reasoneval.report.runs import list_runs, table_rows
from reasoneval.results.schema import load_config
from reasoneval.run_files import CONFIG_FILE, SAMPLES_FILE, SUMMARY_FILE
from reasoneval.view import live, pages
from reasoneval.view.folder import COMPLETE, FAILED, Folder
from reasoneval.view.live import Interim, Journal
from tests.analysis.runs import make_run
from tests.view.helpers import get, snapshot, viewing

Q, K = 8, 4


def right(i: int, j: int) -> bool:
    return j < i % 5


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.analysis.runs import loopback_servers

    tmp = tmp_path_factory.mktemp("folder")
    with loopback_servers() as make:
        return make_run(make, tmp, "org/model-a", right, q=Q, n=K)


def test_journal_follows_appends_and_partial_lines(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    lines = (finished / SAMPLES_FILE).read_bytes().splitlines(keepends=True)
    assert len(lines) == Q * K
    config = load_config(run)
    journal = Journal(run, config)
    (run / SAMPLES_FILE).write_bytes(b"".join(lines[:10]) + lines[10][:25])  # the writer is midway through line 11
    journal.update()
    p = journal.progress()
    assert p["done"] == 10 and p["wanted"] == Q * K and journal.bad_lines == 0
    with open(run / SAMPLES_FILE, "ab") as f:  # the line is finished, more follow
        f.write(lines[10][25:] + b"".join(lines[11:28]))
    journal.update()
    assert journal.progress()["done"] == 28 and journal.bad_lines == 0
    # interim: only the problems whose K samples are all in, each graded as the finished run graded it
    complete = journal.complete_problems()["math500"]
    keys_done: dict[str, set[int]] = {}
    for line in lines[:28]:
        d = json.loads(line)
        keys_done.setdefault(d["problem_key"], set()).add(d["index"])
    assert sorted(complete) == sorted(k for k, v in keys_done.items() if len(v) == K)
    assert 0 < len(complete) < Q  # 28 of 32 samples: some problems have all K, some not
    before = snapshot(run)
    figures = Interim(run, config).update(journal.complete_problems(), {"math500": K})
    assert snapshot(run) == before  # graded without the grade cache: nothing written into the run
    final = {r.problem_key: r.accuracy for r in read_problem_rows(finished)}
    accs = [final[k] for k in complete]
    assert figures["math500"]["problems"] == len(complete) and figures["math500"]["of"] == Q
    assert figures["math500"]["mean"] == pytest.approx(sum(accs) / len(accs))
    assert figures["math500"]["stderr"] == pytest.approx(float(mean_stderr_ci(np.array(accs))[1]), nan_ok=True)


def test_rates_and_eta(finished: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    now = time.time()
    out = []
    for n, line in enumerate((finished / SAMPLES_FILE).read_bytes().splitlines()[:8]):
        d = json.loads(line)
        d.update(time=now - 8 + n, completion_tokens=100, attempts=2 if n == 0 else 1)
        out.append(json.dumps(d))
    out.append(json.dumps({**json.loads(out[0]), "status": "failed", "index": 0, "text": None, "attempts": 1}))
    (run / SAMPLES_FILE).write_text("\n".join(out) + "\n")
    journal = Journal(run, load_config(run))
    journal.update()
    p = journal.progress(now=now)
    assert p["done"] == 8 and p["failed"] == 1 and p["retries"] == 1
    assert p["samples_per_s"] == pytest.approx(1.0) and p["tokens_per_s"] == pytest.approx(100.0)
    assert p["eta_s"] == pytest.approx(Q * K - 8)


def test_finished_run_page_reads_no_sample(finished: Path, monkeypatch: Any) -> None:
    root = finished.parents[1]
    monkeypatch.setattr(live.Journal, "update", lambda self: pytest.fail("a finished run's page read its journal"))
    with viewing(root) as (url, base):
        status, body, _ = get(base, "/api/run/" + finished.relative_to(root).as_posix())
        assert status == 200
        d = json.loads(body)
        assert d["status"] == COMPLETE and d["progress"] is None and d["headline"][0]["problems"] == Q


def test_a_run_that_stopped_before_scoring_is_failed(finished: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    run = root / "m" / "r1"
    shutil.copytree(finished, run)
    (run / SUMMARY_FILE).unlink()
    old = time.time() - 3600
    import os

    os.utime(run / SAMPLES_FILE, (old, old))
    [r] = Folder(root).runs()
    assert r.status == FAILED and r.result is None
    payload = pages.runs_payload([r])
    assert payload["rows"][0]["cells"] == {} and payload["rows"][0]["status"] == FAILED


def test_500_runs_list_in_under_a_second(finished: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    config = json.loads((finished / CONFIG_FILE).read_text())
    summary = json.loads((finished / SUMMARY_FILE).read_text())
    for i in range(500):
        d = root / f"train{i % 5}--checkpoint-{i}" / f"run{i:04d}"
        d.mkdir(parents=True)
        cfg = {**config, "run_id": f"run{i:04d}", "settings": {**config["settings"], "model": f"train{i % 5}/checkpoint-{i}"}}
        (d / CONFIG_FILE).write_text(json.dumps(cfg))
        (d / SUMMARY_FILE).write_text(json.dumps({**summary, "run_id": f"run{i:04d}", "model": cfg["settings"]["model"],
                                                  "config": cfg}))
    with viewing(root) as (url, base):
        first = time.perf_counter()
        status, body, _ = get(base, "/api/runs")
        first = time.perf_counter() - first
        assert status == 200 and len(json.loads(body)["rows"]) == 500
        times = []
        for _ in range(3):
            t = time.perf_counter()
            status, body, _ = get(base, "/")
            times.append(time.perf_counter() - t)
            assert status == 200
        print(f"500 runs: first scan {first:.2f} s, then {min(times):.3f} s a page")
        assert min(times) < 1.0
    # the same rows, in the same order, as `reasoneval runs`
    head, cells, _ = table_rows(list_runs(root))
    rows = json.loads(get_rows(root))["rows"]
    assert [r["run_id"] for r in rows] == [c[head.index("run id")] for c in cells]
    assert [r["cells"]["math500"] for r in rows] == [c[head.index("math500 pass@1 ± SE (%)")] for c in cells]


def get_rows(root: Path) -> str:
    return json.dumps(pages.runs_payload(Folder(root).runs()))


def test_status_running_while_a_writer_holds_the_store(finished: Path, tmp_path: Path) -> None:
    from reasoneval.results.store.sample_store import SampleStore

    root = tmp_path / "results"
    run = root / "m" / "r1"
    shutil.copytree(finished, run)
    folder = Folder(root)
    assert [r.status for r in folder.runs()] == [COMPLETE]
    with SampleStore(run):  # what `run` holds while it generates
        assert [r.status for r in folder.runs()] == ["running"]
    assert [r.status for r in folder.runs()] == [COMPLETE]
