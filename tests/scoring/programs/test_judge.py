"""The program cannot reach its judge, and a chance pass cannot be re-rolled (issue 31), in both sandbox modes.

The candidate runs in a PID namespace of its own, in its own session (driver.py): it cannot signal, `prlimit` or
ptrace the trusted driver. A program runs again only when its candidate never started (the driver's `started`
line missing); anything else is the program's verdict, run once and cached. Each family has an honest control that passes."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable

import pytest
from scipy.stats import binomtest

from reasoneval.records import Problem
from reasoneval.run_files import CODE_RUNS_FILE
from reasoneval.scoring.programs.sandbox import run as sandbox_run
from reasoneval.tasks.loading import load_task
from tests.scoring.programs.judging import (
    HE0_HEAD,
    HE0_RIGHT,
    HE0_WRONG,
    descendants,
    drivers_of,
    fenced,
    score_counting_runs,
)


@pytest.fixture(scope="module")
def he0() -> Problem:
    return load_task("humaneval")[1][0]


# Every way a program could act on a process outside it, from inside the sandbox: through the process's /proc
# directory (pidfd_send_signal takes a /proc/PID descriptor), by PID (kill, kill of its process group), and
# prlimit. The driver is among the processes whose /proc entry is not of the program's own PID namespace.
REACH = '''
import ctypes, os, resource, signal, time
_libc = ctypes.CDLL(None, use_errno=True)


def foreign():
    """The /proc numbers of the processes outside this program's PID namespace (its driver among them)."""
    mine = os.readlink("/proc/self/ns/pid")
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.readlink("/proc/%s/ns/pid" % p) == mine:
                    continue
            except OSError:
                pass
            out.append(int(p))
    return out


def by_proc_dir(numbers):
    for n in numbers:
        try:
            fd = os.open("/proc/%d" % n, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            _libc.syscall(424, fd, sig, None, 0)  # pidfd_send_signal
        os.close(fd)


def by_prlimit(pids):
    for pid in pids:
        for res in (resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_AS):
            try:
                resource.prlimit(pid, res, (1, 1))
            except (OSError, ValueError):
                pass


def by_pid(pids):
    for pid in pids:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            for target in (pid, -pid):
                try:
                    os.kill(target, sig)
                except OSError:
                    pass


def reach_the_judge():
    """Everything above at every process outside the namespace, and at every PID the program could name but
    its own (1, its namespace's init, and itself)."""
    by_proc_dir(foreign())
    numbers = [n for n in range(2, 200) if n != os.getpid()]
    by_prlimit(numbers)
    by_pid(numbers)
'''


def test_the_candidate_cannot_kill_prlimit_or_interrupt_its_driver(mode: str, he0: Problem, tmp_path: Path) -> None:
    # wrong, then every attack on the judge and a SIGKILL of itself once its wrong answer is out (the exploit:
    # with the judge reachable, each of these made the run count as killed from outside, and run again)
    reroll = ("import threading\n"
              "def _reroll():\n    time.sleep(0.05)\n    reach_the_judge()\n    os.kill(os.getpid(), signal.SIGKILL)\n"
              "threading.Thread(target=_reroll).start()\n")
    attacks = {
        "wrong_then_reach_and_die": REACH + HE0_HEAD + "    " + reroll.replace("\n", "\n    ").rstrip() + "\n"
                                    + HE0_WRONG,
        "reach_at_import_then_wrong": REACH + "reach_the_judge()\n" + HE0_HEAD + HE0_WRONG,
        "wrong_then_sigkill_itself": REACH + HE0_HEAD + "    threading = __import__('threading')\n"
                                     "    threading.Timer(0.02, lambda: os.kill(os.getpid(), 9)).start()\n"
                                     + HE0_WRONG,
        "reach_then_sigkill_itself_in_the_call": REACH + HE0_HEAD + "    reach_the_judge()\n"
                                                 "    os.kill(os.getpid(), signal.SIGKILL)\n",
    }
    # the judge was not touched: the right answer, with the same attacks at import, passes
    right_with_attack = REACH + "reach_the_judge()\n" + HE0_HEAD + HE0_RIGHT
    names = list(attacks)
    texts = [fenced(attacks[n]) for n in names] + [fenced(right_with_attack), fenced(HE0_HEAD + HE0_RIGHT)]
    scores, runs = score_counting_runs([he0] * len(texts), texts, cache_dir=tmp_path)
    got = {n: s.details["result"] for n, s in zip(names + ["right_with_attack", "right"], scores)}
    assert {n: got[n] for n in names} == dict.fromkeys(names, "failed"), got
    assert got["right_with_attack"] == "passed" and got["right"] == "passed", got
    assert runs == len(texts), f"{runs} sandbox runs for {len(texts)} programs: a program was run again"
    cached = [json.loads(line)["outcome"]["result"] for line in (tmp_path / CODE_RUNS_FILE).read_text().splitlines()]
    assert sorted(cached) == sorted(got.values()), cached  # every verdict cached, the failures included


def test_the_same_attacks_do_reach_a_process_of_the_programs_own(mode: str, he0: Problem) -> None:
    """Control: the attack code works. Aimed at decoys the program forks itself (in its own namespace), each
    route ends or limits its decoy, and the program answers right only then."""
    control = REACH + '''
def decoy():
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(30)
        os._exit(0)
    return pid


def proc_number(pid):
    """The /proc entry (outer namespace's number) of our own process `pid`."""
    mine = os.readlink("/proc/self/ns/pid")
    for p in os.listdir("/proc"):
        try:
            status = open("/proc/%s/status" % p).read()
            nspid = [line for line in status.splitlines() if line.startswith("NSpid:")][0].split()[1:]
            if int(nspid[-1]) == pid and os.readlink("/proc/%s/ns/pid" % p) == mine:
                return int(p)
        except (OSError, IndexError, ValueError):
            continue


def killed(pid):
    return os.WIFSIGNALED(os.waitpid(pid, 0)[1])


a, b, c = decoy(), decoy(), decoy()
by_proc_dir([proc_number(a)])
by_pid([b])
by_prlimit([c])
LIMITED = resource.prlimit(c, resource.RLIMIT_NOFILE) == (1, 1)
os.kill(c, signal.SIGKILL)
REACHED = killed(a) and killed(b) and killed(c) and LIMITED
'''
    text = fenced(control + HE0_HEAD + "    if not REACHED:\n        return None\n" + HE0_RIGHT)
    scores, runs = score_counting_runs([he0], [text])
    assert scores[0].details["result"] == "passed", scores[0].details
    assert runs == 1


def _binomial_p(passes: int, n: int) -> float:
    return float(binomtest(passes, n, 0.5).pvalue)


def test_a_coin_flip_program_passes_at_the_coins_rate(mode: str, he0: Problem) -> None:
    """48 scorings of a program that is right on heads, and on tails tries every re-roll in its first call (every
    attack on its judge, then a SIGKILL of itself: the run ends with its candidate killed, which the harness
    used to run again). A re-roll would raise its pass rate from 1/2 to 7/8 (three runs); the pass rate stays
    the coin's (two-sided binomial test, p > 0.001) and each runs once."""
    n = 48
    texts = []
    for i in range(n):
        coin = (REACH + f"HEADS = os.urandom(1)[0] & 1  # scoring {i}\n" + HE0_HEAD
                + "    if HEADS:\n" + "    " + HE0_RIGHT
                + "    reach_the_judge()\n    os.kill(os.getpid(), signal.SIGKILL)\n")
        texts.append(fenced(coin))
    scores, runs = score_counting_runs([he0] * n, texts, workers=2)
    passes = sum(s.correct for s in scores)
    assert {s.details["result"] for s in scores} <= {"passed", "failed"}, [s.details for s in scores]
    assert runs == n, f"{runs} sandbox runs for {n} scorings"
    assert _binomial_p(passes, n) > 0.001, f"{passes} of {n} passed: not a fair coin's rate"


def test_a_kill_everything_routine_gives_the_same_verdict_in_both_modes(mode: str, he0: Problem) -> None:
    """kill(-1, SIGKILL) reaches every process the caller may signal: with the driver in reach it ended the judge
    under bubblewrap (PID 2) and not in the fallback (PID 1). Now it reaches only the program's own processes."""
    everything = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
    texts = [fenced(everything + HE0_HEAD + HE0_RIGHT),
             fenced(HE0_HEAD + "    import os, signal\n    try:\n        os.kill(-1, signal.SIGKILL)\n"
                    "    except OSError:\n        pass\n" + HE0_RIGHT),
             fenced(HE0_HEAD + "    import os, signal\n    os.kill(0, signal.SIGKILL)\n" + HE0_RIGHT)]
    scores, runs = score_counting_runs([he0] * 3, texts)
    # kill(-1) spares its caller: right, and passed; kill(0) ends its own process group, itself included: failed
    assert [s.details["result"] for s in scores] == ["passed", "passed", "failed"], [s.details for s in scores]
    assert runs == 3


# --- an outside process: the harness re-runs only what it can name ---

RUNNING = "the candidate's code runs"


def _slow_right() -> str:
    """Right, after a second at import; it says on stderr when its code runs (after the driver's `started`)."""
    return fenced(f"import sys, time\nsys.stderr.write({RUNNING!r} + '\\n')\nsys.stderr.flush()\ntime.sleep(1.0)\n"
                  + HE0_HEAD + HE0_RIGHT)


def _candidate_running(driver: int) -> bool:
    """The program's stderr (the driver's fd 2, a host file) says that the candidate's code runs."""
    try:
        return RUNNING in Path(os.readlink(f"/proc/{driver}/fd/2")).read_text(errors="replace")
    except OSError:
        return False


def _act_on_the_driver(action: Callable[[int], None], seen: list[int]) -> threading.Thread:
    """A thread that waits for a sandboxed driver of this process whose candidate's code runs (so after the
    driver's `started` line), then does `action` to the driver, once."""
    def run() -> None:
        for _ in range(800):
            for driver in drivers_of(os.getpid()):
                if len(descendants(driver)) >= 2 and _candidate_running(driver):
                    action(driver)
                    seen.append(driver)
                    return
            time.sleep(0.01)

    t = threading.Thread(target=run)
    t.start()
    return t


def test_signals_from_outside_never_stop_the_driver_before_its_verdict(mode: str, he0: Problem) -> None:
    """SIGINT (KeyboardInterrupt), SIGTERM, SIGHUP, SIGUSR1, SIGALRM, SIGPIPE sent to the driver from outside while
    its candidate loads: the driver ignores them and its verdict is the undisturbed one."""
    def interrupt(pid: int) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM, signal.SIGPIPE):
            os.kill(pid, sig)

    seen: list[int] = []
    t = _act_on_the_driver(interrupt, seen)
    scores, runs = score_counting_runs([he0], [_slow_right()])
    t.join()
    assert seen, "the test found no driver to signal"
    assert scores[0].details["result"] == "passed", scores[0].details
    assert runs == 1


def test_a_kill_the_harness_cannot_name_is_the_programs_verdict_run_once(mode: str, he0: Problem,
                                                                          tmp_path: Path) -> None:
    """A SIGKILL of the driver by a process the harness knows nothing of: the candidate cannot be it, and the
    harness cannot tell it from the program's doing, so no re-run: failed, once, cached. Control: the same
    program undisturbed passes."""
    seen: list[int] = []
    t = _act_on_the_driver(lambda pid: os.kill(pid, signal.SIGKILL), seen)
    scores, runs = score_counting_runs([he0], [_slow_right()], cache_dir=tmp_path)
    t.join()
    assert seen, "the test found no driver to kill"
    assert scores[0].details["result"] == "failed" and runs == 1, (scores[0].details, runs)
    assert json.loads((tmp_path / CODE_RUNS_FILE).read_text())["outcome"]["result"] == "failed"
    control, runs = score_counting_runs([he0], [_slow_right()])
    assert control[0].details["result"] == "passed" and runs == 1


def test_an_oom_kill_after_the_start_is_the_programs_verdict_run_once(mode: str, he0: Problem, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The OOM killer ends the driver after its candidate started (the kernel's oom_kill count rises during the
    run): whoever's memory it was, the verdict stands (failed, once, cached); a program that exhausts a memory
    bound must never earn a re-run (issue 40). The kill is real (a SIGKILL of the driver); the OOM count is this
    test's: `host_oom_kills` is the one function replaced (test_rerun.py makes real OOM kills)."""
    ooms = [0]
    monkeypatch.setattr(sandbox_run, "host_oom_kills", lambda: ooms[0])

    def oom_kill(pid: int) -> None:
        ooms[0] += 1
        os.kill(pid, signal.SIGKILL)

    seen: list[int] = []
    t = _act_on_the_driver(oom_kill, seen)
    scores, runs = score_counting_runs([he0], [_slow_right()], cache_dir=tmp_path)
    t.join()
    assert seen and ooms[0] == 1
    assert scores[0].details["result"] == "failed" and runs == 1, (scores[0].details, runs)
    assert json.loads((tmp_path / CODE_RUNS_FILE).read_text())["outcome"]["result"] == "failed"
