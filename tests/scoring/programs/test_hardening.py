"""What one program may leave for the next, or for the next reasoneval process (issue 31), in both sandbox modes:
the uid locks live where no program can plant, squat or link anything, and a planted lock file never stops
the next process; no state survives from one sample to the next (a private, empty /var/tmp and every other
world-writable directory, a read-only file system in the fallback); and no process of a sandbox outlives a
harness that was SIGKILLed."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from reasoneval.records import Problem
from reasoneval.scoring.programs.sandbox import Limits, Sandbox
from reasoneval.scoring.programs.sandbox.processes import FIRST_BLOCK, LOCK_DIR_ENV, SLOT_UID_BASE, UID_BLOCK, lock_dir
from reasoneval.tasks.loading import load_task
from tests.scoring.programs.judging import alive, descendants, fenced, score_counting_runs
from tests.scoring.programs.test_sandbox import _sandboxed_processes

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def he0() -> Problem:
    return load_task("humaneval")[1][0]


def _block_of_a_new_process(mode: str, locks: Path) -> tuple[int, str]:
    """(the uid block a fresh reasoneval process takes with `locks` as its lock directory, what its program
    printed)."""
    code = ("from reasoneval.scoring.programs.sandbox.processes import uid_base\n"
            "from reasoneval.scoring.programs.sandbox.run import Sandbox\n"
            f"r = Sandbox({mode!r}).run('print(6 * 7)')\nprint(uid_base(), r.stdout.strip())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**ENV, LOCK_DIR_ENV: str(locks)})
    assert out.returncode == 0, out.stderr[-2000:]
    base, printed = out.stdout.split()
    return (int(base) - SLOT_UID_BASE) // UID_BLOCK - FIRST_BLOCK, printed


def test_planted_squatted_or_linked_lock_files_never_stop_the_next_process(mode: str, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("uid blocks (and their locks) exist only as root; as a user the sandbox runs as the user")
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    assert _block_of_a_new_process(mode, locks) == (0, "42")  # control: a clean directory gives block 0
    (locks / "uids-0.lock").unlink()
    (locks / "uids-0.lock").mkdir()  # planted: a directory where a lock file goes
    target = tmp_path / "created-through-the-link"
    (locks / "uids-1.lock").symlink_to(target)  # linked: a lock file that points elsewhere
    os.mkfifo(locks / "uids-2.lock")  # not a file at all
    with open(locks / "uids-3.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # squatted: held by another process (this one)
        assert _block_of_a_new_process(mode, locks) == (4, "42")
    assert not target.exists(), "a lock file was created through a planted link"
    # a lock directory that is itself a link, or that others may write, is not used: the process goes on
    linked = tmp_path / "linked-locks"
    linked.symlink_to(locks)
    shared = tmp_path / "shared-locks"
    shared.mkdir()
    shared.chmod(0o777)
    for bad in (linked, shared):
        assert _block_of_a_new_process(mode, bad)[1] == "42"
    assert list(shared.iterdir()) == []


def test_a_program_cannot_plant_anything_where_the_locks_live(mode: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("uid blocks (and their locks) exist only as root; as a user the sandbox runs as the user")
    where = Path(lock_dir())
    legacy = Path("/run/lock")
    # (other processes on this machine use these directories: only the names the program tries are compared)
    before = {d / n: (d / n).is_symlink() or (d / n).exists() for d in (where, legacy) for n in
              [f"uids-{i}.lock" for i in range(4)] + [f"reasoneval-sandbox-uids-{i}.lock" for i in range(4)]
              + [f"uids-{i}.lock.new" for i in range(4)]}
    plant = ("import os\nmade = []\n"
             f"for d in ({str(where)!r}, {str(legacy)!r}):\n"
             "    for i in range(4):\n"
             "        for how, path in (('dir', 'uids-%d.lock' % i), ('link', 'reasoneval-sandbox-uids-%d.lock' % i),\n"
             "                          ('file', 'uids-%d.lock.new' % i)):\n"
             "            p = os.path.join(d, path)\n"
             "            try:\n"
             "                if how == 'dir':\n                    os.mkdir(p)\n"
             "                elif how == 'link':\n                    os.symlink('/etc/passwd', p)\n"
             "                else:\n                    open(p, 'w').close()\n"
             "                made.append(p)\n"
             "            except OSError:\n                pass\n"
             "print(made)\n")
    r = Sandbox(mode).run(plant, Limits(timeout_s=10))
    assert r.status == "ok" and r.stdout.strip() == "[]", r
    assert {p: p.is_symlink() or p.exists() for p in before} == before
    assert _sandboxed_processes() == []


# A program that learns the expected answers of HumanEval/0's seven calls across samples: it guesses True, and
# keeps in a file what it saw (a guess followed by another call was right; the last guess of a run that ended
# early was wrong). With its file surviving from one sample to the next it passes from the fourth sample on.
LEARNER = '''
import json, os
PLACES = {places!r}


def _load():
    for d in PLACES:
        try:
            with open(os.path.join(d, "reasoneval-learner-{token}.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
    return {{"known": {{}}, "pending": None}}


def _save(state):
    for d in PLACES:
        try:
            with open(os.path.join(d, "reasoneval-learner-{token}.json"), "w") as f:
                json.dump(state, f)
        except OSError:
            pass


STATE = _load()
if STATE["pending"] is not None:  # the previous run stopped after this guess: it was wrong
    STATE["known"][STATE["pending"][0]] = not STATE["pending"][1]
    STATE["pending"] = None
_save(STATE)


def has_close_elements(numbers, threshold):
    if STATE["pending"] is not None:  # another call came: the previous guess was right
        STATE["known"][STATE["pending"][0]] = STATE["pending"][1]
    key = repr([numbers, threshold])
    answer = STATE["known"].get(key, True)
    STATE["pending"] = None if key in STATE["known"] else [key, answer]
    _save(STATE)
    return answer
'''


def test_no_state_survives_from_one_sample_to_the_next(mode: str, he0: Problem, tmp_path: Path) -> None:
    token = os.urandom(6).hex()
    places = ["/var/tmp", "/tmp", "/dev/shm", "/run/lock", "/run", "/var/lock", "/"]
    # eight samples, each its own text (else the cache would run it once), one after another
    scores = []
    for i in range(8):
        (score,), runs = score_counting_runs([he0], [fenced(LEARNER.format(places=places, token=token)
                                                            + f"# sample {i}\n")], workers=1)
        scores.append(score.details["result"])
    assert scores == ["failed"] * 8, scores
    assert [d for d in places if os.path.exists(os.path.join(d, f"reasoneval-learner-{token}.json"))] == []
    # control: the same learner given a directory that does survive (this test's, outside any sandbox, as
    # MBPP's own way runs it: program then tests in one interpreter) learns, and passes from the fourth sample
    program = LEARNER.format(places=[str(tmp_path)], token=token) + he0.payload["test"] + "\ncheck(has_close_elements)\n"
    passed = [subprocess.run([sys.executable, "-I", "-c", program], capture_output=True, timeout=60).returncode == 0
              for _ in range(8)]
    assert passed == [False] * 3 + [True] * 5, passed


def test_the_private_directories_are_writable_empty_and_the_rest_read_only(mode: str) -> None:
    deep = Path(tempfile.mkdtemp(prefix="reasoneval-deep-", dir="/var/lib")) / "a" / "b" / "c"
    deep.mkdir(parents=True)
    for d in [deep, *deep.parents][:4]:
        d.chmod(0o777)  # world-writable, deeper than the fallback's scan for such directories
    try:
        prog = ("import os\nfor d in ('/tmp', '/var/tmp', '/dev/shm', '/run/lock', " + repr(str(deep)) + "):\n"
                "    try:\n        listing = os.listdir(d)\n    except OSError:\n        listing = None\n"
                "    try:\n        open(os.path.join(d, 'mine'), 'w').write('x')\n        wrote = True\n"
                "    except OSError:\n        wrote = False\n"
                "    print(d, listing, wrote)\n")
        r = Sandbox(mode).run(prog, Limits(timeout_s=10))
        lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        assert r.status == "ok", r
        # its own, empty, and writable (a little); /run/lock empty; the deep one not writable (or not there)
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            assert lines[d] == "[] True", (d, lines[d])
        assert lines["/run/lock"] in ("[] False", "None False"), lines["/run/lock"]
        assert lines[str(deep)].endswith("False"), lines[str(deep)]
        assert list(deep.iterdir()) == []
    finally:
        shutil.rmtree(deep.parents[2])


HARNESS = """
import sys
from reasoneval.scoring.programs.sandbox import Limits, SandboxPool
pool = SandboxPool(workers=2, mode=sys.argv[1])
sleeper = "import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n    time.sleep(60)\\ntime.sleep(60)\\n"
print("started", flush=True)
pool.run_many([sleeper, sleeper], Limits(timeout_s=60))
"""


def test_no_process_outlives_a_harness_that_was_sigkilled(mode: str) -> None:
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, mode], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert harness.stdout is not None and harness.stdout.readline().strip() == "started"
        for _ in range(600):  # both programs and their setsid children are up
            below = descendants(harness.pid)
            if len([p for p in _sandboxed_processes(everyone=True) if p in below]) >= 4:
                break
            time.sleep(0.05)
        below = descendants(harness.pid)
        assert len([p for p in _sandboxed_processes(everyone=True) if p in below]) >= 4, "the programs did not start"
        time.sleep(0.3)
        assert all(alive(p) for p in below)  # control: they were running, and would for a minute
        harness.send_signal(signal.SIGKILL)
        harness.wait(10)
        time.sleep(2.0)
        assert [p for p in below if alive(p)] == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


def test_the_lock_directory_is_this_users_alone() -> None:
    if os.geteuid() != 0:
        pytest.skip("uid blocks (and their locks) exist only as root")
    where = os.lstat(lock_dir())
    assert where.st_uid == os.geteuid() and not where.st_mode & 0o022
