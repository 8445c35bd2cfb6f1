"""reasoneval.workers: spawning worker interpreters, their JSON-lines transport, exit descriptions, stderr tails."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import reasoneval
from reasoneval.workers import (
    JsonLines,
    StderrTail,
    ask,
    exit_description,
    spawn,
    summarize_stderr,
)

# A worker module as a contributor would write one: its channel to the parent, then one reply per request.
ECHO_WORKER = """
import reasoneval
from reasoneval.workers import channel_to_parent

channel = channel_to_parent()
print("a stray print from a library")  # must not reach the parent as a reply
while True:
    try:
        request = channel.recv()
    except EOFError:
        break
    if request == "sleep":
        import time
        time.sleep(60)
    channel.send({"echo": request, "reasoneval": reasoneval.__file__})
"""


def echo_worker(tmp_path: Path) -> subprocess.Popen[bytes]:
    (tmp_path / "echo_worker.py").write_text(ECHO_WORKER)
    # `python -m` puts the working folder first on sys.path: the module is found there.
    return spawn("echo_worker", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)


def test_a_spawned_worker_imports_this_reasoneval_and_answers_json_lines(tmp_path: Path) -> None:
    proc = echo_worker(tmp_path)
    channel = JsonLines.to_process(proc)
    try:
        values = [{"text": "é, \n and \"quotes\"", "n": [1, 2.5, None]}, "plain", 7]
        for value in values:
            channel.send(value)
        replies = [channel.recv(timeout=60) for _ in values]
        assert [r["echo"] for r in replies] == values
        assert {r["reasoneval"] for r in replies} == {reasoneval.__file__}
        assert proc.stdin is not None
        proc.stdin.close()  # EOF: the worker's loop ends
        with pytest.raises(EOFError):
            channel.recv(timeout=60)
        assert proc.wait(60) == 0
        assert proc.stderr is not None and b"a stray print from a library" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_ask_kills_a_worker_past_its_deadline(tmp_path: Path) -> None:
    proc = echo_worker(tmp_path)
    channel = JsonLines.to_process(proc)
    try:
        assert ask(proc, channel, "hello", timeout_s=60)["echo"] == "hello"
        t0 = time.monotonic()
        assert ask(proc, channel, "sleep", timeout_s=0.5) is None
        assert time.monotonic() - t0 < 30
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_json_lines_round_trip_over_a_socket_pair_skips_non_json_and_times_out() -> None:
    a, b = socket.socketpair()
    left = JsonLines(a.detach(), None)
    fd = b.detach()
    right = JsonLines(fd, fd)
    try:
        assert not left.poll(0)
        with pytest.raises(TimeoutError):
            left.recv(timeout=0.05)
        big = {"text": "x" * 300_000, "nested": {"list": [True, False, None]}}
        os.write(fd, b"not json\n")  # a stray line is skipped
        # Bigger than the socket's buffer: sent from another thread while this one reads.
        sender = threading.Thread(target=lambda: (right.send(big), right.send([1, "two"])))
        sender.start()
        assert left.poll(5)
        assert left.recv(timeout=5) == big
        assert left.recv(timeout=5) == [1, "two"]
        sender.join(5)
        right.close()
        with pytest.raises(EOFError):
            left.recv(timeout=5)
        with pytest.raises(OSError):
            right.send("after close")
    finally:
        left.close()
        right.close()


def test_exit_description_of_a_real_sigkill_and_of_an_exit_code() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.kill()
    assert exit_description(proc.wait(30)) == "was killed by SIGKILL"
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert exit_description(proc.wait(30)) == "exited with code 3"
    assert exit_description(None) == "stopped answering"
    assert exit_description(-signal.SIGILL) == "was killed by SIGILL"


def test_the_stderr_tail_is_bounded_and_keeps_the_last_lines() -> None:
    script = ("import sys\n"
              "for i in range(5000): print(f'line {i}', file=sys.stderr)\n"
              "print('y' * 100000, file=sys.stderr)\n"
              "print('the last line', file=sys.stderr)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    tail = StderrTail(proc, "test-stderr", keep=50, line_chars=1000)
    assert proc.wait(60) == 0
    summary = tail.summary(n=3, limit=1500)
    tail.close()
    lines = list(tail.lines)
    assert len(lines) == 50
    assert lines[-1] == "the last line" and lines[-2] == "y" * 1000 and lines[-3] == "line 4999"
    assert len(summary) <= 1500 and summary.endswith("y | the last line")


def test_the_stderr_summary_of_a_faulthandler_dump_keeps_the_error_and_the_innermost_frames() -> None:
    lines = ["loading", "simulated crash", "Fatal Python error: Segmentation fault", "",
             "Current thread 0x1 (most recent call first):", '  File "decoder.py", line 9 in step',
             '  File "worker.py", line 3 in serve', '  File "worker.py", line 1 in main',
             "Extension modules: numpy, llama_cpp"]
    assert summarize_stderr(lines) == ('loading | simulated crash | Fatal Python error: Segmentation fault | '
                                       'File "decoder.py", line 9 in step | File "worker.py", line 3 in serve')
    assert summarize_stderr([]) == "(nothing on stderr)"
