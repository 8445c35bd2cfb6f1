"""The sample keeper's forker (sandbox/watch.py, Test.start_forker): outside the sandbox, in a user namespace of
its own (for the namespaces each test gets), on the programs' interpreter, with the keeper's text as the sandbox
runs it. Each test's process is the sample keeper's child, made by the forker; a forker that dies leaves the rest of
the sample's tests to the sample keeper, with the same records; the forker ends with the sample."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from reasoneval.scoring.programs.sandbox.interpreter import default_python
from reasoneval.scoring.programs.sandbox.texts import HERE, with_prelude

KEEPER = with_prelude((HERE / "keeper.py").read_text(encoding="utf-8"), "keeper.py")

SCRIPT = KEEPER + '''
import os, signal, time
lim = {"cpu_s": 2.0, "wall_s": 10.0, "memory_mb": 256, "mode": "stdin"}
program = compile("import os\\nprint(input(), os.getpid())\\n", "<solution>", "exec")
test = Test(program, lim, {}, (), [])
test.start_forker()
assert test.forker is not None, "no forker"
forker = test.forker[0]

def one(text):
    head = test.run(bytearray(text.encode()))
    out = b"".join(bytes(v) for v in test.out.views()).decode()
    test.out.clear()
    test.err.clear()
    return head, out

records = []
for i in range(3):
    records.append(one("first %d\\n" % i))
os.kill(forker, signal.SIGKILL)
for i in range(3):
    records.append(one("then %d\\n" % i))
assert test.forker is None, "the forker is still used"
for head, out in records:
    print(head["end"], head.get("code"), out.split()[0], out.split()[1], out.split()[2])
test.close()
print("open", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
'''


@pytest.fixture(scope="module")
def unshare() -> str:
    tool = shutil.which("unshare")
    if tool is None:
        pytest.fail("util-linux's unshare is needed (apt-get install util-linux)")
    return tool


def test_tests_run_on_when_the_forker_dies_and_it_ends_with_the_sample(unshare: str) -> None:
    run = subprocess.run([unshare, "--user", "--map-root-user", default_python(True), "-I", "-c", SCRIPT],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    records = [line.split() for line in lines[:-1]]
    assert [r[2:4] for r in records] == [["first", "0"], ["first", "1"], ["first", "2"], ["then", "0"], ["then", "1"],
                                         ["then", "2"]]
    assert all(r[:2] == ["exit", "0"] for r in records), records
    assert all(r[4] == "1" for r in records)  # each program PID 1 of its own namespace, whoever forked it
    # the forker's pipes and pidfd are closed with it: stdin, stdout, stderr and the listing's own descriptor
    assert lines[-1] == "open [0, 1, 2, 3]", lines[-1]
