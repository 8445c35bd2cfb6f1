"""The trusted side is total (issue 48, item 4): every parse and comparison of bytes a program controls (its output,
the frames its process can write, the files it leaves) is a verdict for that program only, never an exception that
turns its batch into `sandbox_error`. Property tests drive the comparisons and the frame readers with arbitrary
input; in the real sandbox (both modes) an honest program graded right after each crash-route program, in the same
batch, keeps its verdict."""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from typing import Any, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.contest import judge
from reasoneval.scoring.programs.sandbox import ProgramResult
from reasoneval.scoring.programs.sandbox.prelude import loads
from reasoneval.scoring.programs.sandbox.processes import _child_pid
from reasoneval.scoring.programs.sandbox.scratch import _remove
from reasoneval.scoring.programs.sandbox.session import SessionSlots
from reasoneval.scoring.programs.sandbox.stdio_driver import (
    RUNTIME,
    WRONG,
    call_reply,
    compare_call,
    compare_lcb,
    compare_tokens,
    failure_of,
)
from reasoneval.scoring.programs.sandbox.watch import recv
from reasoneval.scoring.programs.scorer import sandbox_pool

VERDICT_CLASSES = {"wrong_answer", "time_limit", "memory_limit", "runtime_error"}
# tokens that reach Decimal's traps and limits: signalling and quiet NaNs, infinities, exponents past Emax and past
# what a Decimal can hold at all, non-ASCII digits, a lone surrogate
NASTY = ["sNaN", "-sNaN", "sNaN123", "NaN", "-nan", "Infinity", "-Inf", "1e999999999", "1e-999999999",
         "1e9999999999999999999999", "9" * 5000, "0.0", "-0", "\u0663", "\ud800", "1_000", "0x10", "1e", ""]
token = st.one_of(st.sampled_from(NASTY), st.text(max_size=12))
line = st.lists(token, max_size=5).map(" ".join)
output = st.one_of(st.text(max_size=200), st.lists(line, max_size=5).map("\n".join))
HEADS = st.fixed_dictionaries({"end": st.sampled_from(["exit", "reply", "gone", "cpu", "wall", "output"])},
                              optional={"code": st.integers(0, 255), "sig": st.integers(0, 64), "err": st.text(),
                                        "rss_kb": st.integers(0, 1 << 40), "cpu": st.floats(0, 100)})
LIM = {"cpu_s": 1.0, "wall_s": 11.0, "memory_mb": 256, "max_output": 1 << 20, "calls": 3}


def _is_failure(f: Any) -> bool:
    return f is None or (isinstance(f, tuple) and len(f) == 2 and f[0] in VERDICT_CLASSES and isinstance(f[1], str))


@settings(max_examples=200, deadline=None)
@given(output, output)
def test_stdio_comparisons_never_raise(got: str, expected: str) -> None:
    assert compare_lcb(got, expected) in (True, False, None)
    assert compare_tokens(got, expected) in (True, False)


def test_decimal_traps_are_lcb_runners_verdicts() -> None:
    # lcb_runner compares the lines' Decimals with ==, which raises on a signalling NaN: its runtime error
    assert compare_lcb("sNaN\n", "3\n") is None and compare_lcb("3\n", "sNaN") is None
    assert compare_lcb("sNaN", "sNaN") is True  # equal lines are equal before any Decimal
    assert compare_lcb("NaN", "3") is False and compare_lcb("1e9999999999999999999999", "3") is False
    assert compare_lcb("1e999999999", "1E+999999999") is True
    assert failure_of({"end": "exit", "code": 0}, b"sNaN\n", "3\n", "stdin", "lcb", LIM)[0] == RUNTIME
    assert failure_of({"end": "exit", "code": 0}, b"\xff\xfe3\n", "3\n", "stdin", "lcb", LIM)[0] == WRONG


@settings(max_examples=200, deadline=None)
@given(HEADS, st.binary(max_size=300), output, st.sampled_from(["stdin", "call"]), st.sampled_from(["lcb", "tokens",
                                                                                                     "apps"]))
def test_one_tests_failure_is_total_on_any_bytes(head: dict[str, Any], out: bytes, expected: str, mode: str,
                                                 style: str) -> None:
    assert _is_failure(failure_of(head, out, expected, mode, style, LIM))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)).map(
        lambda v: repr(v).encode("ascii", "replace"))))
def test_call_reply_frames_are_total(frame: bytes) -> None:
    reply = call_reply(frame)
    assert reply is None or set(reply) in ({"value"}, {"error", "message"}, {"deep"})
    assert _is_failure(failure_of({"end": "reply"}, frame, "[1, 2]", "call", "lcb", LIM))


def test_deep_and_malformed_replies() -> None:
    deep = b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert failure_of({"end": "reply"}, deep, "[1]", "call", "lcb", LIM) == (WRONG, "wrong answer (a result nested "
                                                                                   "too deep)")
    for frame in (b"\xff\xfe", b"123", b"[]", b'{"error": 5, "message": ""}', b'{"value": 1, "x": 2}', b""):
        assert failure_of({"end": "reply"}, frame, "1", "call", "lcb", LIM)[0] == RUNTIME, frame
    assert failure_of({"end": "reply"}, b'{"value": [1]}', "[1]", "call", "lcb", LIM) is None
    assert compare_call([[1]], "[" * 50_000, "lcb") is False


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=300), st.sampled_from(["[" * 100_000, '{"a":' * 50_000, "NaN", "1e99999"])))
def test_strict_json_raises_only_value_error(text: str) -> None:
    try:
        loads(text)
    except ValueError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_frames_read_from_any_bytes(data: bytes) -> None:
    """recv: a frame, or EOFError (truncated) / ValueError (over the size bound); nothing else."""
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.close(w)
        w = -1
        try:
            frame = recv(r)
        except (EOFError, ValueError):
            return
        (n,) = struct.unpack(">I", data[:4])
        assert frame == data[4:4 + n]
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=300), st.sampled_from(["[" * 4000, '{"verdicts": ' + "[" * 3000, "\udcff"])),
       st.integers(1, 8))
def test_verdict_channel_of_any_text_is_an_outcome_per_program(channel: str, count: int) -> None:
    r = ProgramResult("ok", 0, "", "", 0.1, channel)
    got = judge(r, 3, count)
    assert len(got) == count and all(o.verdict in VERDICT_CLASSES | {"passed", "sandbox_error"} for o in got)
    assert all(-1 <= o.first_failure < 3 for o in got)


def test_verdict_with_a_first_failure_out_of_range_is_malformed() -> None:
    line = '{"verdicts": [{"verdict": "wrong_answer", "passed": 0, "ran": 1, "total": 3, "first": 7, "cpu": 0.1, ' \
           '"detail": ""}]}'
    assert judge(ProgramResult("ok", 0, "", "", 0.1, line), 3, 1)[0].verdict == "sandbox_error"


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_bwrap_info_of_any_bytes(data: bytes) -> None:
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    try:
        pid = _child_pid(r)
    finally:
        os.close(r)
    assert pid is None or isinstance(pid, int)


def test_removing_a_tree_deeper_than_the_recursion_limit_and_locked() -> None:
    top = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)  # a tmpfs, as in the sandbox
    try:
        fd = os.open(top, os.O_RDONLY)
        for _ in range(1500):  # deeper than the recursion limit, and every path longer than PATH_MAX
            os.mkdir("dd", dir_fd=fd)
            child = os.open("dd", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w") as f:
            f.write("x")
        os.chmod(f"/proc/self/fd/{fd}", 0)  # the innermost directory: no mode bit for anyone
        os.close(fd)
        os.symlink("/etc/hostname", os.path.join(top, "dd", "link"))
        _remove(os.path.join(top, "dd"))
        assert os.listdir(top) == []
        assert os.path.exists("/etc/hostname")
    finally:
        shutil.rmtree(top, ignore_errors=True)


# --- in the real sandbox: each crash route, then an honest program, in one batch ---

SUM_TESTS = [{"input": "1 2\n", "output": "3\n", "kind": "public"},
             {"input": "10 20\n", "output": "30\n", "kind": "private"}]
SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
TAKE_TESTS = [{"input": "[1, 2, 3]\n2", "output": "[1, 2]", "kind": "public"},
              {"input": "[5, 6]\n0", "output": "[]", "kind": "private"}]
TAKE = "class Solution:\n    def takeK(self, nums, k):\n        return nums[:k]\n"
# a call-mode program that writes `frame` on every pipe its process can write except stdout/stderr: the reply pipe
WRITE_FRAME = ("import os, stat, fcntl, struct, time\nclass Solution:\n    def takeK(self, nums, k):\n"
               "        for fd in range(3, 64):\n            try:\n"
               "                if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == 1:\n"
               "                    os.write(fd, struct.pack('>I', len(FRAME)) + FRAME)\n"
               "            except OSError:\n                pass\n        time.sleep(3)\n")


def _score_batch(p: Problem, codes: Sequence[str]) -> tuple[list[str], int]:
    """Verdicts of `codes` scored together (one batch: the samples of one problem) and how many batches ran."""
    runs = [0]
    with ScoringContext(workers=1) as ctx:
        scorer = create_scorer(TaskScoring("contest", {"time_limit_s": 1.0, "calibrate": False}), ctx)
        sessions = ctx.resource("contest_sessions", lambda: SessionSlots(sandbox_pool(ctx)))
        real = sessions.run

        def counting(source: str, limits: Any, request: bytes, preamble: bytes = b"") -> Any:
            runs[0] += 1
            return real(source, limits, request, preamble)

        sessions.run = counting  # type: ignore[method-assign]
        samples = [SampleRecord(task="t", problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok",
                                text=f"```python\n{c}\n```") for i, c in enumerate(codes)]
        return [s.details["verdict"] for s in scorer.score_many([p] * len(codes), samples)], runs[0]


@pytest.mark.usefixtures("mode")
def test_stdin_crash_routes_are_their_own_verdicts() -> None:
    p = Problem(task="t", id="sum", problem="", answer="", key="sum", payload={"tests": SUM_TESTS, "mode": "stdin"})
    routes = {
        "snan": "print('sNaN')",  # Decimal's == raises on it (lcb_runner: runtime error)
        "huge_exponent": "print('1e9999999999999999999999 1e999999999')",
        "invalid_utf8": "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\x80 3\\n')",
        # a directory tree deeper than the recursion limit, its innermost level locked, left for the cleanup
        "deep_tree": "import os\nfd = os.open('/tmp', os.O_RDONLY)\nfor _ in range(1500):\n"
                     "    os.mkdir('d', dir_fd=fd)\n    c = os.open('d', os.O_RDONLY, dir_fd=fd)\n    os.close(fd)\n"
                     "    fd = c\nos.fchmod(fd, 0)\n" + SUM,  # (fchmod: a contest sandbox has no /proc)
    }
    codes, expected = [], []
    for i, (name, code) in enumerate(routes.items()):
        codes += [code, f"# honest {i}\n" + SUM]
        expected += [{"snan": "runtime_error", "deep_tree": "passed"}.get(name, "wrong_answer"), "passed"]
    got, runs = _score_batch(p, codes)
    assert got == expected
    assert runs == 1  # one sandbox: no program broke the batch (none ran again alone)


@pytest.mark.usefixtures("mode")
def test_call_crash_routes_are_their_own_verdicts() -> None:
    p = Problem(task="t", id="take", problem="", answer="", key="take",
                payload={"tests": TAKE_TESTS, "mode": "call", "func_name": "takeK"})
    routes = {
        "not_ascii": ("runtime_error", "FRAME = b'\\xff\\xfe{\"value\": [1, 2]}'\n" + WRITE_FRAME),
        "not_a_record": ("runtime_error", "FRAME = b'[1, 2]'\n" + WRITE_FRAME),
        "too_deep_frame": ("wrong_answer", "FRAME = b'{\"value\": ' + b'[' * 200000 + b'}'\n" + WRITE_FRAME),
        "too_deep_result": ("wrong_answer", "class Solution:\n    def takeK(self, nums, k):\n        x = []\n"
                                            "        for _ in range(5000):\n            x = [x]\n        return x\n"),
    }
    codes, expected = [], []
    for i, (verdict, code) in enumerate(routes.values()):
        codes += [code, f"# honest {i}\n" + TAKE]
        expected += [verdict, "passed"]
    got, runs = _score_batch(p, codes)
    assert got == expected
    assert runs == 1
