"""The contest driver's sessions (sandbox/session.py), in both sandbox modes: one sandbox per grading worker serves
batch after batch and outlives the threads that grade; a batch over its time, or a driver that died, takes its
session with it and the next batch gets a fresh one; nothing of an earlier batch is visible to a later one; a
session dies with the harness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reasoneval.records import SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.contest import Batch, ContestScorer
from reasoneval.scoring.programs.sandbox.run import Limits
from reasoneval.scoring.programs.sandbox.session import SessionSlots
from reasoneval.scoring.programs.sandbox.texts import STDIO_DRIVER_PREAMBLE
from reasoneval.scoring.programs.sandbox.watch import pids_after
from reasoneval.scoring.programs.scorer import sandbox_pool
from tests.scoring.programs.test_contest import SUM, SUM_TESTS, fenced, problem

ROOT = Path(__file__).resolve().parents[3]


def _samples(p: object, codes: list[str]) -> list[SampleRecord]:
    return [SampleRecord(task="t", problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok",  # type: ignore[attr-defined]
                         text=fenced(c)) for i, c in enumerate(codes)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.usefixtures("mode")
def test_one_session_serves_every_batch_of_a_run_and_outlives_the_grading_threads() -> None:
    # a later batch's program looks for what an earlier one left: files, its PID, other processes' clocks
    leaver = "import os\nopen('/tmp/left', 'w').write('x')\nos.mkdir('/dev/shm/d')\n" + SUM
    finder = ("import os, time\nseen = os.path.exists('/tmp/left') or os.path.exists('/dev/shm/d') or os.getpid() != 1"
              "\nfor pid in range(2, 64):\n    try:\n        time.clock_gettime(((~pid) << 3) | 2)\n        seen = True\n"
              "    except OSError:\n        pass\na, b = map(int, input().split())\nprint(a + b + seen)\n")
    with ScoringContext(workers=1) as ctx:
        scorer = create_scorer(TaskScoring("contest", {"time_limit_s": 1.0, "calibrate": False}), ctx)
        sessions = ctx.resource("contest_sessions", lambda: SessionSlots(sandbox_pool(ctx)))
        first = scorer.score_many([problem(SUM_TESTS)] * 2, _samples(problem(SUM_TESTS), [leaver, leaver + "#"]))
        assert [s.details["verdict"] for s in first] == ["passed"] * 2
        session = sessions.sessions[0]
        pid = session.started.proc.pid
        # each score_many grades in a thread pool of its own, gone by now: the session lives on (_Spawner)
        time.sleep(0.2)
        assert session.alive and _alive(pid)
        later = problem(SUM_TESTS + [{"input": "7 7\n", "output": "14\n", "kind": "private"}])
        second = scorer.score_many([later], _samples(later, [finder]))
        assert second[0].details["verdict"] == "passed", second[0].details
        assert sessions.sessions[0] is session and session.batches == 2
    assert not _alive(pid)  # the context closed it


@pytest.mark.usefixtures("mode")
def test_a_batch_over_its_time_takes_its_session_and_the_next_gets_a_fresh_one() -> None:
    with ScoringContext(workers=1) as ctx:
        scorer = ContestScorer(ctx, time_limit_s=1.0, calibrate=False)
        sessions = SessionSlots(sandbox_pool(ctx))
        p = problem(SUM_TESTS)
        batch = Batch((scorer.build(p, fenced(SUM)),))  # type: ignore[arg-type]
        request = batch.stdin()
        limits = batch.limits()
        ok = sessions.run(batch_source(), limits, request, PREAMBLE)
        assert ok.status == "ok" and '"verdict":"passed"' in (ok.channel or "")
        session = sessions.sessions[0]
        pid = session.started.proc.pid
        # half a batch: the driver waits for the rest, past the batch's time
        short = Limits(**{**limits.__dict__, "timeout_s": 1.0})
        start = time.monotonic()
        r = sessions.run(batch_source(), short, request[:len(request) // 2], PREAMBLE)
        assert r.status == "timeout" and time.monotonic() - start < 5
        assert 0 not in sessions.sessions and not _alive(pid)
        again = sessions.run(batch_source(), limits, request, PREAMBLE)
        assert again.status == "ok" and '"verdict":"passed"' in (again.channel or "")
        assert sessions.sessions[0] is not session
        sessions.close()


def batch_source() -> str:
    from reasoneval.scoring.programs.sandbox.texts import STDIO_DRIVER_BOOT
    return STDIO_DRIVER_BOOT


PREAMBLE = STDIO_DRIVER_PREAMBLE  # the driver's text, which a new session's boot reads on IN first


HARNESS = textwrap.dedent("""
    import sys, time
    from reasoneval.records import Problem, SampleRecord
    from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
    p = Problem(task="t", id="p", problem="", answer="", key="p",
                payload={"tests": [{"input": "1 2\\n", "output": "3\\n", "kind": "public"}], "mode": "stdin"})
    ctx = ScoringContext(workers=1)
    scorer = create_scorer(TaskScoring("contest", {"time_limit_s": 1.0, "calibrate": False}), ctx)
    s = SampleRecord(task="t", problem_key="p", problem_id="p", index=0, seed=0, status="ok",
                     text="```python\\na, b = map(int, input().split())\\nprint(a + b)\\n```")
    assert scorer.score_many([p], [s])[0].details["verdict"] == "passed"
    print(ctx.resource("contest_sessions", None).sessions[0].started.proc.pid, flush=True)
    time.sleep(60)
""")


@pytest.mark.usefixtures("mode")
def test_a_session_dies_with_the_harness() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = harness.stdout.readline()  # type: ignore[union-attr]
        pid = int(line)
        assert _alive(pid)
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_the_probe_goes_round_with_the_namespaces_pids() -> None:
    """A session's sandbox gives out PIDs for as long as it lives: past pid_max the kernel starts again from 300
    (kernel/pid.c), and the sample keeper's look for a test's processes follows (32768 is a common pid_max: a
    session wraps after some thousands of tests)."""
    assert pids_after(10, 3, 32768) == [11, 12, 13]
    assert pids_after(32766, 4, 32768) == [32767, 300, 301, 302]
    assert pids_after(32767, 2, 32768) == [300, 301]


# Reads its own memory, all of it that is mapped within 64 MiB of its heap objects (write(2) of each page to a
# pipe tells a readable page from a hole without a fault: EFAULT), for another test's input, output or error text.
MEMORY_READER = """import ctypes, os, sys
line = sys.stdin.readline()
a, b, tag = line.split()
sys.stderr.write("E7f3" + tag + "\\n")
probe_r, probe_w = os.pipe()
page = 4096
found = False
marks = [m.encode() for m in ("Q7f3", "O7f3", "E7f3")]
mine = [(m + tag).encode() for m in ("Q7f3", "O7f3", "E7f3")]
for anchor in {id(object()) // page * page, id(bytearray(1 << 16)) // page * page}:
    for addr in range(anchor - (64 << 20), anchor + (64 << 20), page):
        try:
            os.write(probe_w, (ctypes.c_char * page).from_address(addr))
        except OSError:
            continue
        data = os.read(probe_r, page)
        for m in marks:
            at = data.find(m)
            while at >= 0:
                if data[at:at + len(m) + 2] not in mine and data[at + len(m):at + len(m) + 1].isdigit():
                    found = True
                at = data.find(m, at + 1)
print("O7f3" + tag if found else int(a) + int(b))
"""


@pytest.mark.usefixtures("mode")
def test_no_test_finds_an_earlier_tests_data_in_its_memory() -> None:
    """Each test's process is a copy of the sample's keeper, which read every earlier test's input and the
    program's output and stderr: those bytes are zeroed after each test, so a program reading all of its memory
    finds none of another test's (its own input's tag, and nothing else)."""
    tests = [{"input": f"{i} {i} {i + 10}\n", "output": f"{2 * i}\n", "kind": "private"} for i in range(4)]
    with ScoringContext(workers=1) as ctx:
        scorer = create_scorer(TaskScoring("contest", {"time_limit_s": 5.0, "calibrate": False}), ctx)
        p = problem(tests)
        got = scorer.score_many([p], _samples(p, [MEMORY_READER]))[0]
    assert got.details["verdict"] == "passed", got.details
