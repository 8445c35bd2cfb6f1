"""The contest judge's process side against hostile samples, in both sandbox modes (docs/sandbox.md, "Contest
programs"): no sample reaches another's program, all the CPU of a test counts and its processes end with it,
nothing of a test survives it (files, unlistable directories, System V IPC), and an honest program in the same
batch as each hostile one keeps its verdict."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from reasoneval.scoring.programs.sandbox.stdio_driver import FORKER_TESTS
from tests.scoring.programs.test_contest import SUM, SUM_TESTS, problem, score, verdicts
from tests.scoring.programs.test_sandbox import _sandboxed_processes

MARK = "right-program-7f3a"
RIGHT = f"# {MARK}\n" + SUM
# looks for a batch-mate's program everywhere in its own process: every frame up its stack, every object the
# collector tracks (code objects, and the strings inside containers), and runs the first it finds
COPIER = f"""import gc, sys
mark = "{MARK[:5]}" + "{MARK[5:]}"
me = sys._getframe().f_code
found = None
def look(x):
    global found
    if found is not None:
        return
    if type(x) is type(me) and x is not me and x.co_name == "<module>" and any(
            isinstance(c, str) and mark in c for c in x.co_consts):
        found = x
    elif isinstance(x, str) and mark in x and "input()" in x:
        found = compile(x, "<found>", "exec")
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()) + list(f.f_globals.values()):
        look(v)
        if isinstance(v, (list, tuple, dict)):
            for w in (v.values() if isinstance(v, dict) else v):
                look(w)
    f = f.f_back
for o in gc.get_objects():
    look(o)
    if isinstance(o, (list, tuple)):
        for w in o:
            look(w)
    elif isinstance(o, dict):
        for w in o.values():
            look(w)
if found is not None:
    exec(found, {{"__name__": "__main__", "__builtins__": __builtins__}})
else:
    print(0)
"""


@pytest.mark.usefixtures("mode")
def test_a_copier_beside_a_right_batch_mate_is_graded_as_alone() -> None:
    p = problem(SUM_TESTS)
    # a control: the same copier with the right program in its own reach finds and runs it
    planted = COPIER + f"\nkeep = {RIGHT!r}\n"
    planted = f"keep = {RIGHT!r}\n" + COPIER
    batch = [RIGHT] + [COPIER + f"# copier {i}\n" for i in range(6)] + [planted]
    got = verdicts(score(p, batch))
    assert got[0] == "passed" and got[-1] == "passed"
    assert got[1:-1] == ["wrong_answer"] * 6
    assert verdicts(score(p, [COPIER])) == ["wrong_answer"]  # alone: the same verdict


# each child burns 0.45 s of CPU (under the 1 s limit on its own clock), three of them: 1.35 s for the test; the
# parent waits on a pipe and never reaps them
OFFLOAD = """import os, time
def work(share):
    r, w = os.pipe()
    for _ in range({children}):
        if os.fork() == 0:
            t = time.process_time()
            while time.process_time() - t < share:
                pass
            os.write(w, b"x")
            os._exit(0)
    for _ in range({children}):
        os.read(r, 1)
"""
OFFLOAD_STDIN = OFFLOAD + "work({share})\n" + SUM
OFFLOAD_CALL = OFFLOAD + ("class Solution:\n    def takeK(self, nums, k):\n        work({share})\n"
                          "        return nums[:k]\n")


@pytest.mark.usefixtures("mode")
def test_cpu_offloaded_to_unreaped_children_counts() -> None:
    slow = OFFLOAD_STDIN.format(children=3, share=0.45)
    light = OFFLOAD_STDIN.format(children=2, share=0.1)  # the same shape within the limit passes
    got = score(problem(SUM_TESTS), [slow, light, SUM], calibrate=False)
    assert verdicts(got) == ["time_limit", "passed", "passed"]
    assert _sandboxed_processes() == []  # no child outlived its test
    # the children's CPU counted: over the 1 s limit when the test was ended (the record keeps whole ms: >= after rounding)
    assert got[0].details["cpu_s"] >= 1.0 and "CPU" in got[0].details["detail"]
    take = problem([{"input": "[1, 2, 3]\n2", "output": "[1, 2]", "kind": "public"}], mode="call", func="takeK")
    honest = "class Solution:\n    def takeK(self, nums, k):\n        return nums[:k]"
    got = score(take, [OFFLOAD_CALL.format(children=3, share=0.45), OFFLOAD_CALL.format(children=2, share=0.1),
                       honest], calibrate=False)
    assert verdicts(got) == ["time_limit", "passed", "passed"]


FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"


@pytest.mark.usefixtures("mode")
def test_fork_bombs_end_at_their_cpu_limit_not_the_wall_guard() -> None:
    limit = 0.3
    bombs = [FORK_BOMB + f"# {i}\n" for i in range(4)]
    start = time.monotonic()
    got = score(problem(SUM_TESTS), bombs + [SUM], time_limit_s=limit, calibrate=False)
    elapsed = time.monotonic() - start
    assert verdicts(got) == ["time_limit"] * 4 + ["passed"]
    for s in got[:4]:
        # the CPU of all its processes, ended near the limit (a tick or two past it, on a loaded machine a few), not
        # by the wall-clock guard (10 x the limit + 1 s)
        assert s.details["detail"] == "over the CPU time limit", s.details
        assert limit <= s.details["cpu_s"] < 5 * limit, s.details
    assert _sandboxed_processes() == []
    wall_guard = limit * 10 + 1
    assert elapsed < 4 * wall_guard  # the four samples run one after the other in one sandbox


# A yes/no problem whose first answer is NO: a program that always answers YES fails every sample. The learner
# keeps what it saw (the test it answered and its answer) in every place it can write, and learns from whether a
# next test ran: if the next process it sees is the first test of a sample again (and the last was not the last
# test), its last answer was wrong.
YES_NO = [{"input": f"{i} {v}\n", "output": ("NO" if v else "YES") + "\n", "kind": "private"}
          for i, v in enumerate([1, 0, 1, 1, 0, 0, 1, 0])]
LEARNER = """import json, os
SYSV = {sysv}
PLACES = {places}
def load():
    for d in PLACES:
        for path in (os.path.join(d, "state"), os.path.join(d, "locked", "state")):
            try:
                os.chmod(os.path.dirname(path), 0o700)
            except OSError:
                pass
            try:
                with open(path) as f:
                    return json.load(f)
            except (OSError, ValueError):
                pass
    if SYSV:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        shm = libc.shmget(0x5EED, 4096, 0)
        if shm >= 0:
            addr = libc.shmat(shm, None, 0)
            if addr not in (None, ctypes.c_void_p(-1).value):
                raw = ctypes.string_at(addr, 4096).split(b"\\0")[0]
                if raw:
                    return json.loads(raw)
    return {{"known": {{}}, "pending": None}}
def save(state):
    text = json.dumps(state)
    for d in PLACES:
        try:
            with open(os.path.join(d, "state"), "w") as f:
                f.write(text)
            os.makedirs(os.path.join(d, "locked"), exist_ok=True)
            with open(os.path.join(d, "locked", "state"), "w") as f:
                f.write(text)
            os.chmod(os.path.join(d, "locked"), 0)  # a directory the keeper cannot list as it is
        except OSError:
            pass
    if SYSV:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        shm = libc.shmget(0x5EED, 4096, 0o1600)  # IPC_CREAT | 0600
        if shm >= 0:
            addr = libc.shmat(shm, None, 0)
            if addr not in (None, ctypes.c_void_p(-1).value):
                ctypes.memmove(addr, text.encode() + b"\\0", len(text) + 1)
line = input()
index = line.split()[0]
state = load()
known, pending = state["known"], state["pending"]
if pending is not None:
    if index == "0" and pending[0].split()[0] != "7":  # a sample started again: the last answer was wrong
        known[pending[0]] = "NO" if pending[1] == "YES" else "YES"
    else:
        known[pending[0]] = pending[1]
answer = known.get(line, "YES")
state["pending"] = [line, answer]
save(state)
print(answer)
"""
PLACES = ["/tmp", "/var/tmp", "/dev/shm"]


@pytest.mark.usefixtures("mode")
def test_a_cross_test_learner_learns_nothing(tmp_path: Path) -> None:
    learner = LEARNER.format(sysv=True, places=PLACES)
    batch = [learner + f"# sample {i}\n" for i in range(5)] + [SUM.replace("a, b", "a, _b").replace(
        "a + b", "'NO' if int(_b) else 'YES'")]
    got = verdicts(score(problem(YES_NO), batch))
    assert got == ["wrong_answer"] * 5 + ["passed"]  # at chance: the first answer (NO) is never learnt


def test_the_learner_learns_where_its_state_survives(tmp_path: Path) -> None:
    """The control of the test above: the same learner, outside any sandbox with a directory that stays, learns the
    answers (one wrong answer a sample) and passes from the fifth sample on."""
    control = LEARNER.format(sysv=False, places=[str(tmp_path)])
    passed = []
    for _ in range(8):
        ok = True
        for t in YES_NO:
            out = subprocess.run([sys.executable, "-I", "-c", control], input=t["input"], text=True,
                                 capture_output=True, timeout=30).stdout
            if out.strip() != t["output"].strip():
                ok = False
                break
        passed.append(ok)
    assert passed[4:] == [True] * 4 and not passed[0]


DEEP_TREE = """import os
os.chdir("/tmp")
for i in range(3000):  # a path far beyond PATH_MAX, each level unlistable to others
    os.mkdir("d")
    os.chmod("d", 0o300)
    os.chdir("d")
open("f", "w").write("x")
for i in range(200):
    os.mkdir(f"/dev/shm/{i}")
    os.chmod(f"/dev/shm/{i}", 0)
""" + SUM


@pytest.mark.usefixtures("mode")
def test_a_directory_tree_no_cleanup_can_be_stopped_by() -> None:
    # the deep tree in every test, then honest batch-mates, one of which fails if anything was left behind
    left = "import os\nseen = os.listdir('/tmp') + os.listdir('/dev/shm') + os.listdir('/var/tmp')\n" + \
        "a, b = map(int, input().split())\nprint(a + b + len(seen))\n"
    got = verdicts(score(problem(SUM_TESTS), [DEEP_TREE, left, SUM], time_limit_s=2.0, calibrate=False))
    assert got == ["passed", "passed", "passed"]


@pytest.mark.usefixtures("mode")
def test_no_test_sees_the_pid_or_process_of_an_earlier_one() -> None:
    """Every test's program is PID 1 of a namespace of its own, with no /proc to see the sandbox's numbering."""
    probe = "import os\na, b = map(int, input().split())\nprint(a + b + (os.getpid() != 1) + os.path.exists('/proc/1'))\n"
    got = verdicts(score(problem(SUM_TESTS), [probe + f"# {i}\n" for i in range(3)]))
    assert got == ["passed"] * 3


# the number of descriptors open above stderr, added to the answer: a test's process that holds any (the sample
# keeper's pipes, its forker's or the forker's pidfd) gets the sum wrong
DESCRIPTORS = """import os
def extra():
    n = 0
    for fd in range(3, 1024):
        try:
            os.fstat(fd)
            n += 1
        except OSError:
            pass
    return n
"""


# a sample of 3 tests: the sample keeper forks each test's process; of FORKER_TESTS: its forker does
BOTH_PATHS = pytest.mark.parametrize("n_tests", [len(SUM_TESTS), FORKER_TESTS], ids=["forked_by_keeper", "by_forker"])


@BOTH_PATHS
@pytest.mark.usefixtures("mode")
def test_a_tests_process_holds_no_descriptor_but_stdin_stdout_and_stderr(n_tests: int) -> None:
    honest = DESCRIPTORS + "a, b = map(int, input().split())\nprint(a + b + extra())\n"
    control = DESCRIPTORS + "os.open('/dev/null', os.O_RDONLY)\na, b = map(int, input().split())\nprint(a + b + extra())\n"
    p = problem([SUM_TESTS[i % len(SUM_TESTS)] for i in range(n_tests)])
    assert verdicts(score(p, [honest, control, honest + "# 2\n"])) == ["passed", "wrong_answer", "passed"]


# prints 1 where anything up its own stack (the frames its process was forked in, and the objects their locals hold)
# tells of an earlier test: a test's record, the watch's CPU readings or PIDs of a test, output buffers in use
TRACES = """import sys
def tells(v, deep):
    if isinstance(v, dict) and "end" in v and ("cpu" in v or "wall" in v):
        return True
    if isinstance(getattr(v, "chunks", None), list) and v.chunks:
        return True
    d = getattr(v, "__dict__", None)
    if deep and isinstance(d, dict) and not isinstance(v, type(sys)):
        if d.get("seen") or d.get("high"):
            return True
        return any(tells(w, False) for w in list(d.values()))
    return False
f, hit = sys._getframe().f_back, False
while f is not None:
    hit = hit or any(tells(v, True) for v in list(f.f_locals.values()))
    f = f.f_back
input()
print(1 if hit else 0)
"""


@BOTH_PATHS
@pytest.mark.usefixtures("mode")
def test_no_test_finds_an_earlier_ones_traces_up_its_stack(n_tests: int) -> None:
    """Up its own stack a program finds no earlier test's record, CPU readings, PIDs or output buffers, whether the
    sample keeper forked its process (it lets them go first) or its forker did (a copy of the sample keeper from
    before the first test). Where they were there, it would print 1 from the second test on."""
    same = [{"input": "x\n", "output": "0\n", "kind": "public"}] * n_tests
    assert verdicts(score(problem(same), [TRACES, TRACES + "# 2\n"])) == ["passed", "passed"]
