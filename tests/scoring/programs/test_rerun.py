"""A program must never earn its own re-run (issue 40), in both sandbox modes.

Once the driver has written `started` on its verdict channel (before any code of the candidate's runs), the verdict
stands: no exit status, stderr text, OOM kill or exit of any process of the sandbox makes it run again. Only a run
whose candidate never started runs again. The three routes a coin-flip program used to re-roll a losing flip
(patching the sandbox's init through /proc, faking bwrap's start failure on stderr, filling memory inside a
memory-bounded cgroup) each leave it at the coin's rate, run once per sample; no process of the sandbox but the
candidate's own can be opened from inside; a candidate's StopIteration cannot end a test's loop."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest
from scipy.stats import binomtest

from reasoneval.records import Problem
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.sandbox import DRIVER_SOURCE
from reasoneval.scoring.programs.sandbox import run as sandbox_run
from reasoneval.scoring.programs.sandbox.cgroup import host_oom_kills
from reasoneval.scoring.programs.scorer import sandbox_pool
from reasoneval.tasks.keys import problem_key
from reasoneval.tasks.loading import load_task
from tests.scoring.programs.judging import HE0_HEAD, HE0_RIGHT, fenced, sample, score_counting_runs
from tests.scoring.programs.test_sandbox import _sandboxed_processes

N = 48  # scorings per route and mode (issue 40: at least 48)


@pytest.fixture(scope="module")
def he0() -> Problem:
    return load_task("humaneval")[1][0]


def humaneval_shaped(entry: str, prompt: str, test: str) -> Problem:
    """A problem with HumanEval's fields, for a test that needs its own check()."""
    return Problem(task="humaneval", id=f"issue40-{entry}", problem=prompt, answer="", key=problem_key(prompt, entry),
                   payload={"prompt": prompt, "test": test, "entry_point": entry})


def _coin(i: int, tails: str) -> str:
    """Right on heads; on tails, `tails` (the re-roll attempt) at import, and a wrong answer."""
    return fenced(f"import os, sys, signal\nHEADS = os.urandom(1)[0] & 1  # scoring {i}\n"
                  f"if not HEADS:\n    {tails}()\n" + HE0_HEAD + "    if HEADS:\n" + "    " + HE0_RIGHT
                  + "    return None\n")


def _assert_coins_rate(scores: Sequence[Any], runs: int, n: int) -> None:
    passes = sum(s.correct for s in scores)
    assert {s.details["result"] for s in scores} <= {"passed", "failed"}, [s.details for s in scores]
    assert runs == n, f"{runs} sandbox runs for {n} scorings: a program was run again"
    p = float(binomtest(passes, n, 0.5).pvalue)
    assert p > 0.001, f"{passes} of {n} passed (p = {p:.2g}): not a fair coin's rate"


# --- route 1: patch the sandbox's init (or any process it can open) so that it exits 1 after the driver ---

PATCH_EVERY_PROCESS = '''
def reroll():
    """A guess at the audit's patch (not public), for every process this candidate can open for writing:
    bubblewrap's init (PID 1 of the sandbox before issue 40, dumpable, of the candidate's uid) exits with its
    child's status only when `wait` returns the child's PID, else 1; every other process's PID on its stack is
    overwritten. An exit 1 with bwrap's start failure first on stderr read as a sandbox that never started."""
    import struct
    os.write(2, b"bwrap: Creating new namespace failed: Resource temporarily unavailable\\n")
    me = os.readlink("/proc/self")
    numbers = [int(p) for p in os.listdir("/proc") if p.isdigit() and p != me]
    for p in numbers:
        try:
            fd = os.open("/proc/%d/mem" % p, os.O_RDWR)
        except OSError:
            continue
        try:
            for line in open("/proc/%d/maps" % p):
                fields = line.split()
                if fields[-1] != "[stack]":
                    continue
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                stack = os.pread(fd, hi - lo, lo)
                for q in numbers:
                    if q == p:
                        continue
                    needle = struct.pack("<i", q)
                    at = stack.find(needle)
                    while at >= 0:
                        if at % 4 == 0:
                            os.pwrite(fd, struct.pack("<i", 0x7ffffff0), lo + at)
                        at = stack.find(needle, at + 1)
        except OSError:
            pass
        os.close(fd)
'''


@pytest.fixture
def a_patched_init(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the audit's patch of bubblewrap's init achieved, made by the test (no process is left to patch, and
    this test's own patch is cruder than the audit's): once the driver is done, the sandbox's first process exits 1
    whenever the program's stderr starts with bwrap's text."""
    real = sandbox_run.Sandbox.command
    script = '"$@"; rc=$?; case "$(head -c 6 /proc/self/fd/2)" in bwrap:) exit 1;; esac; exit $rc'

    def command(self: Any, *args: Any, **kwargs: Any) -> list[str]:
        return ["/bin/sh", "-c", script, "sh"] + real(self, *args, **kwargs)

    monkeypatch.setattr(sandbox_run.Sandbox, "command", command)


def test_patching_the_sandboxs_processes_cannot_reroll_a_coin(mode: str, he0: Problem) -> None:
    """The patch itself, from inside: nothing to patch (else the rate would show it)."""
    texts = [_coin(i, "reroll").replace("import os, sys, signal\n", "import os, sys, signal\n" + PATCH_EVERY_PROCESS)
             for i in range(N)]
    scores, runs = score_counting_runs([he0] * N, texts, workers=2)
    _assert_coins_rate(scores, runs, N)


def test_a_patched_init_exiting_1_after_the_verdict_cannot_reroll_a_coin(mode: str, he0: Problem,
                                                                       a_patched_init: None) -> None:
    """The patch's effect, as if it had worked: the sandbox exits 1 after the driver's verdict, bwrap's start
    failure first on stderr, on every tails. Before issue 40 the harness ran each such program again (a sandbox
    that never started); now the `started` line says the candidate ran, and its verdict stands."""
    texts = [_coin(i, "reroll").replace("import os, sys, signal\n", "import os, sys, signal\n" + PATCH_EVERY_PROCESS)
             for i in range(N)]
    scores, runs = score_counting_runs([he0] * N, texts, workers=2)
    _assert_coins_rate(scores, runs, N)


# --- route 2: fake a start failure on stderr (and end the run as a failed start would) ---

FAKE_START_FAILURE = '''
def reroll():
    """What a sandbox that failed to start writes, first thing on stderr, then the end of every process it can
    signal: its own PID 1 (the candidate's init) and itself."""
    os.write(2, b"bwrap: Creating new namespace failed: Resource temporarily unavailable\\n")
    os.write(2, b"unshare: fork failed: Resource temporarily unavailable\\n")
    for pid in (1, -1, 0):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(1)
'''


def test_faking_a_start_failure_cannot_reroll_a_coin(mode: str, he0: Problem) -> None:
    texts = [_coin(i, "reroll").replace("import os, sys, signal\n", "import os, sys, signal\n" + FAKE_START_FAILURE)
             for i in range(N)]
    scores, runs = score_counting_runs([he0] * N, texts, workers=2)
    _assert_coins_rate(scores, runs, N)


# --- route 3: fill memory inside a memory-bounded cgroup, so that the OOM killer counts a kill ---

FILL_MEMORY = '''
def reroll():
    """Three children of 160 MiB each (under RLIMIT_AS) in a sandbox whose cgroup allows 320 MiB: the OOM killer
    ends one of them, and the machine's OOM kill count rises; then the candidate kills itself."""
    kids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            try:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("1000")
            except OSError:
                pass
            block = bytearray(160 << 20)
            for j in range(0, len(block), 4096):
                block[j] = 1
            import time
            time.sleep(0.5)
            os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)
    os.kill(os.getpid(), signal.SIGKILL)
'''

V1_MEMORY = Path("/sys/fs/cgroup/memory")


def _bounded_cgroup(limit: int) -> Iterator[Path]:
    """A memory cgroup of `limit` bytes (cgroup v1's memory controller; else v2 under this process's own cgroup),
    removed afterwards."""
    if (V1_MEMORY / "cgroup.procs").exists():
        path = V1_MEMORY / f"reasoneval-test-{os.getpid()}"
        limit_file = "memory.limit_in_bytes"
    else:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        rel = next((line[3:] for line in own if line.startswith("0::")), None)
        base = Path("/sys/fs/cgroup") / (rel or "/").lstrip("/")
        if rel is None or "memory" not in (base / "cgroup.subtree_control").read_text():
            pytest.skip("no memory cgroup this test may make (cgroup v1 memory or a delegated v2 memory controller)")
        path = base / f"reasoneval-test-{os.getpid()}"
        limit_file = "memory.max"
    try:
        path.mkdir(exist_ok=True)
        (path / limit_file).write_text(str(limit))
        # as root the sandbox's first process runs as the slot's uid already (bwrap mode): it joins by itself
        (path / "cgroup.procs").chmod(0o666)
    except OSError as e:
        pytest.skip(f"cannot make a memory cgroup here ({e})")
    try:
        yield path
    finally:
        for _ in range(50):
            try:
                path.rmdir()
                break
            except OSError:
                import time
                time.sleep(0.1)


@pytest.fixture
def bounded_sandboxes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every sandbox of this test starts inside one memory-bounded cgroup (a container with its own memory limit,
    as the issue's audit ran in): its first process joins it before anything else runs."""
    gen = _bounded_cgroup(320 << 20)
    path = next(gen)
    real = sandbox_run.Sandbox.command

    def command(self: Any, *args: Any, **kwargs: Any) -> list[str]:
        return ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(path / "cgroup.procs")] + real(self, *args, **kwargs)

    monkeypatch.setattr(sandbox_run.Sandbox, "command", command)
    yield path
    monkeypatch.undo()
    for _ in gen:
        pass


def test_filling_a_bounded_cgroup_cannot_reroll_a_coin(mode: str, he0: Problem, bounded_sandboxes: Path) -> None:
    texts = [_coin(i, "reroll").replace("import os, sys, signal\n", "import os, sys, signal\n" + FILL_MEMORY)
             for i in range(N)]
    before = host_oom_kills()
    scores, runs = score_counting_runs([he0] * N, texts, workers=1)  # one at a time: a tails never kills a heads
    assert host_oom_kills() > before, "no OOM kill happened: the route was not exercised"
    _assert_coins_rate(scores, runs, N)


# --- what may still run again: a run whose candidate never started ---

def _score_with_a_broken_first_run(he0: Problem, broken: str) -> tuple[str, int]:
    """The right answer to HumanEval/0 scored with `broken` as the driver of its first run: (result, runs)."""
    calls = [0]
    with ScoringContext(workers=1) as ctx:
        scorer = create_scorer(TaskScoring("code", {}), ctx)
        pool = sandbox_pool(ctx)
        real = pool.run_many

        def first_broken(sources: Sequence[str], limits: Any = None, stdins: Any = None) -> Any:
            calls[0] += 1
            return real([broken if calls[0] == 1 else s for s in sources], limits, stdins)

        pool.run_many = first_broken  # type: ignore[method-assign]
        scores = scorer.score_many([he0], [sample(he0, fenced(HE0_HEAD + HE0_RIGHT))])
    return str(scores[0].details["result"]), calls[0]


def test_a_failure_before_the_start_runs_again_and_only_that(mode: str, he0: Problem) -> None:
    """The first run's candidate side dies before it says ready (no code of the candidate's has run: the driver
    writes no `started`): the program runs again and passes. The same death one step later, after `started`,
    is final (failed, once)."""
    broken_before = DRIVER_SOURCE.replace('            _send(resp_w, {"ready": True})\n',
                                          '            os._exit(0)\n')
    broken_after = DRIVER_SOURCE.replace('            os.close(go_r)\n            candidate_main(',
                                         '            os.kill(os.getpid(), 9)\n            candidate_main(')
    assert broken_before != DRIVER_SOURCE and broken_after != DRIVER_SOURCE
    for broken, want, want_runs in ((broken_before, "passed", 2), (broken_after, "failed", 1)):
        result, runs = _score_with_a_broken_first_run(he0, broken)
        assert (result, runs) == (want, want_runs)
    assert _sandboxed_processes() == []


# --- no process of the sandbox but its own is open to the candidate ---

WALK = '''
import os, signal, time

def _openable(p):
    """Which of /proc/p's mem (read, write), fd/, environ, syscall this process can open."""
    got = []
    for name, how in (("mem", os.O_RDONLY), ("mem", os.O_RDWR), ("environ", os.O_RDONLY),
                      ("syscall", os.O_RDONLY)):
        try:
            os.close(os.open("/proc/%s/%s" % (p, name), how))
            got.append(name + ("+w" if how == os.O_RDWR else ""))
        except OSError:
            pass
    try:
        for fd in os.listdir("/proc/%s/fd" % p):
            got.append("fd")
            try:
                os.close(os.open("/proc/%s/fd/%s" % (p, fd), os.O_RDONLY))
                got.append("fd/" + fd)
            except OSError:
                pass
    except OSError:
        pass
    return got


def walk():
    """Every process this candidate can see but its own (itself and a child it forks): what it can open."""
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    mine = {os.readlink("/proc/self")}
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.readlink("/proc/%s/ns/pid" % p) == os.readlink("/proc/self/ns/pid"):
                nspid = [l for l in open("/proc/%s/status" % p) if l.startswith("NSpid:")][0].split()
                if int(nspid[-1]) == child:
                    mine.add(p)
        except (OSError, IndexError):
            pass
    seen, foreign = [], {}
    for p in sorted(os.listdir("/proc")):
        if p.isdigit():
            seen.append(p)
            got = _openable(p)
            if p not in mine and got:
                foreign[p] = got
    own = all("mem" in _openable(p) for p in mine)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return {"foreign": foreign, "own_open": own and len(mine) == 2, "seen": len(seen)}
'''


def test_a_walk_of_proc_opens_no_process_but_the_candidates_own(mode: str) -> None:
    """From inside the candidate: every /proc entry it sees, its mem (read and write), fd/ (and each fd), environ
    and syscall. None opens but its own processes' (the control: its own and its child's mem opens)."""
    prompt = 'def walk():\n    """What this process can open of the others."""\n'
    problem = humaneval_shaped("walk", prompt, "def check(candidate):\n    r = candidate()\n"
                               "    assert r['own_open'] and r['seen'] >= 2, r\n    assert r['foreign'] == {}, r\n")
    scores, runs = score_counting_runs([problem], [fenced(WALK)])
    assert scores[0].details["result"] == "passed", scores[0].details
    assert runs == 1


# --- exceptions that steer control flow ---

DOUBLE = 'def double(x):\n    """Twice x."""\n'
MAP_TEST = "def check(candidate):\n    assert all(map(lambda x: candidate(x) == 2 * x, range(5)))\n"


@pytest.mark.parametrize("name", ["StopIteration", "StopAsyncIteration", "GeneratorExit", "KeyboardInterrupt",
                                  "SystemExit", "BaseException"])
def test_a_candidates_control_flow_exception_fails_a_test_that_loops(mode: str, name: str) -> None:
    """A candidate's StopIteration inside `map` in a test ended the loop quietly (the test passed); it crosses as
    CandidateError now, as do the other exceptions that steer control flow and any BaseException."""
    problem = humaneval_shaped("double", DOUBLE, MAP_TEST)
    named = humaneval_shaped("double", DOUBLE, "def check(candidate):\n    try:\n        candidate(1)\n"
                             "    except Exception as e:\n        assert type(e).__name__ == 'CandidateError' and "
                             f"{name!r} in str(e), e\n    else:\n        assert False\n")
    raising = fenced(f"def double(x):\n    raise {name}\n")
    scores, runs = score_counting_runs([problem, problem, named], [raising, fenced("def double(x):\n    return 2 * x\n"),
                                                                  raising])
    assert [s.details["result"] for s in scores] == ["failed", "passed", "passed"], [s.details for s in scores]
    assert runs == 3


def test_bwrap_mode_has_no_init_process_beside_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under bubblewrap the sandbox's PID 1 is the driver (non-dumpable), as in the fallback: bubblewrap's own init,
    which ran as the candidate's uid and was dumpable, is not started (`--as-pid-1`)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setenv("REASONEVAL_SANDBOX", "bwrap")
    prompt = 'def first():\n    """The name of PID 1 and whether it is dumpable."""\n'
    code = ("import os\ndef first():\n    status = open('/proc/1/status').read()\n"
            "    name = [l.split()[1] for l in status.splitlines() if l.startswith('Name:')][0]\n"
            "    try:\n        os.close(os.open('/proc/1/mem', os.O_RDONLY))\n        return name, True\n"
            "    except OSError:\n        return name, False\n")
    problem = humaneval_shaped("first", prompt, "def check(candidate):\n    name, opened = candidate()\n"
                               "    assert name.startswith('python') and not opened, (name, opened)\n")
    scores, runs = score_counting_runs([problem], [fenced(code)])
    assert scores[0].details["result"] == "passed", scores[0].details
