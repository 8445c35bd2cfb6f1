"""Two `reasoneval run` processes with code tasks at once, and sandbox programs of this process beside them
(a fork bomb among them), on the loopback server: every verdict equals the one of a run alone (issue 20:
the sandboxes of different processes never share a uid; cleanup kills only the processes a sandbox started)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from reasoneval.scoring.programs.sandbox import Limits, SandboxPool
from tests.scoring.programs.judging import descendants
from tests.scoring.programs.test_sandbox import _sandboxed_processes

ROOT = Path(__file__).resolve().parents[3]

RIGHT0 = ("```python\ndef has_close_elements(numbers, threshold):\n    return any(abs(a - b) < threshold "
          "for i, a in enumerate(numbers) for j, b in enumerate(numbers) if i != j)\n```")
EXITS1 = "```python\nimport sys\ndef separate_paren_groups(s):\n    return []\nsys.exit(0)\n```"
RIGHT2 = "```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```"
# right, but slow to start: a kill from outside (the other run's cleanup) would catch it (a kill the harness
# cannot name is the program's verdict, not run again: tests/scoring/programs/test_judge.py)
SLOW_RIGHT3 = ("```python\nimport time\ntime.sleep(0.8)\ndef below_zero(operations):\n    b = 0\n"
               "    for op in operations:\n        b += op\n        if b < 0:\n            return True\n"
               "    return False\n```")
# a fork bomb: with shared uids it would use up the process limit of the other run's programs
BOMB4 = ("```python\nimport os\ndef mean_absolute_deviation(numbers):\n    while True:\n        try:\n"
         "            os.fork()\n        except OSError:\n            pass\n```")
SCRIPT: dict[str, Any] = {"has_close_elements": RIGHT0, "separate_paren_groups": EXITS1,
                          "truncate_number": RIGHT2, "below_zero": SLOW_RIGHT3, "mean_absolute_deviation": BOMB4}


def _verdicts(out: Path) -> dict[str, list[str]]:
    import pyarrow.parquet as pq

    run_dir = next((out / "test-model").iterdir())
    rows = pq.read_table(run_dir / "results.parquet").to_pylist()
    return {r["problem"][:60]: [json.loads(d)["result"] for d in r["details"]] for r in rows}


@pytest.mark.parametrize("mode", ["bwrap", "rlimits"])
def test_two_runs_at_once_and_programs_beside_them_give_the_verdicts_of_a_run_alone(
        mode: str, make_openai_server: Any, tmp_path: Path) -> None:
    if mode == "bwrap" and shutil.which("bwrap") is None:
        if os.environ.get("CI"):
            pytest.fail("bubblewrap is not installed: apt-get install -y bubblewrap (CI installs it)")
        pytest.skip("bubblewrap is not installed")
    server = make_openai_server(script=SCRIPT, default="I cannot help with that.")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "REASONEVAL_SANDBOX": mode}

    def cmd(out: Path) -> list[str]:
        return [sys.executable, "-m", "reasoneval", "run", "--tasks", "humaneval", "--limit", "5", "--n", "2",
                "--base-url", server.base_url, "--model", "test-model", "--output-dir", str(out), "--no-progress",
                "--grading-workers", "2", "--retry-backoff", "0.01"]

    alone = subprocess.run(cmd(tmp_path / "alone"), env=env, capture_output=True, text=True, timeout=300)
    assert alone.returncode == 0, alone.stderr[-2000:]
    want = _verdicts(tmp_path / "alone")
    assert sorted(r for rs in want.values() for r in rs).count("passed") == 6, want  # problems 0, 2, 3

    # this process's own sandboxes run beside the two runs, until both finish
    stop = threading.Event()
    beside: list[str] = []

    def programs() -> None:
        pool = SandboxPool(workers=2, mode=mode)
        bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
        try:
            while not stop.is_set():
                rs = pool.run_many([bomb, "import time\ntime.sleep(0.5)\nprint('beside')"],
                                   Limits(timeout_s=1.5, nproc=16))
                beside.append(rs[1].stdout)
        finally:
            pool.close()

    t = threading.Thread(target=programs)
    t.start()
    try:
        runs = [subprocess.Popen(cmd(tmp_path / f"run{i}"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for i in range(2)]
        outs = [p.communicate(timeout=300) for p in runs]
    finally:
        stop.set()
        t.join()
    for p, (_, err) in zip(runs, outs):
        assert p.returncode == 0, err[-2000:]
    assert _verdicts(tmp_path / "run0") == want
    assert _verdicts(tmp_path / "run1") == want
    assert beside and set(beside) == {"beside\n"}, beside
    # the two runs' programs too (their own uid blocks): anything left of them is this process's descendant (the
    # runs and this process are child subreapers), unlike the sandboxes of other processes on a shared machine
    below = set(descendants(os.getpid()))
    assert [p for p in _sandboxed_processes(everyone=True) if p in below] == []
