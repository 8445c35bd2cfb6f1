"""Worker processes: what every helper process the harness starts (math grading, IFEval checks, the local
engine's workers, the launch engine's llama.cpp server) shares.

- `spawn(module, ...)` starts `python -m module` with `worker_env()`: a fresh interpreter that imports this
  same reasoneval (it may be running uninstalled, from src/). Never a multiprocessing child: nothing of the
  harness (threads, locks) is inherited, and a script that calls `reasoneval.evaluate` needs no
  `if __name__ == "__main__"` guard (spawn would re-run the caller's script in every child).
- `JsonLines`: the transport, one JSON value per line over file descriptors (a worker's stdin/stdout pipes, or
  a socket); `channel_to_parent()` keeps a worker's stdout for it; `ask()` is one request and its reply under a
  deadline.
- `stop(proc)`: a worker killed, reaped, its pipes closed.
- `exit_description(code)`: how a process ended, for an error message ("was killed by SIGILL").
- `StderrTail`: a worker's stderr drained in a thread, its last lines kept (bounded) for an error message.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])


def worker_env(**overrides: str) -> dict[str, str]:
    """This process's environment with this reasoneval's folder first on PYTHONPATH (it may be running
    uninstalled, from src/), plus `overrides`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.update(overrides)
    return env


def module_command(module: str, *args: str) -> list[str]:
    """The command line of `python -m module args` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def spawn(module: str, *args: str, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen[bytes]:
    """Start `python -m module args` as a worker: `worker_env(**env)` as its environment, the other keyword
    arguments as `subprocess.Popen`'s (pipes, pass_fds, start_new_session...)."""
    return subprocess.Popen(module_command(module, *args), env=worker_env(**(env or {})), **popen)


def stop(proc: subprocess.Popen[Any]) -> None:
    """Kill a worker, reap it, and close the pipes the Popen holds to it."""
    proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def exit_description(code: int | None) -> str:
    """`was killed by SIGSEGV`, `exited with code 1`: how a process ended, for an error message."""
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


# ---------------------------------------------------------------------------- JSON lines


class JsonLines:
    """One JSON value per line over file descriptors: a pipe pair or both ends of one socket.

    A line that is not JSON (a library's stray print) is skipped. `recv` raises EOFError at the end of the
    stream and TimeoutError past its timeout; every call on a closed channel raises OSError. One thread
    reads at a time; sends are serialised by a lock (one value is one write sequence).
    """

    def __init__(self, read_fd: int | None, write_fd: int | None, own: bool = True) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.own = own  # close the descriptors in close(); False where file objects own them
        self._buf = bytearray()
        self._send_lock = threading.Lock()
        self._closed = False

    @classmethod
    def to_process(cls, proc: subprocess.Popen[Any]) -> JsonLines:
        """The channel to a worker started with stdin=PIPE, stdout=PIPE (the Popen keeps owning the pipes)."""
        assert proc.stdout is not None and proc.stdin is not None
        return cls(proc.stdout.fileno(), proc.stdin.fileno(), own=False)

    def _check(self, fd: int | None) -> int:
        if self._closed or fd is None:
            raise OSError("the JSON-lines channel is closed")
        return fd

    def send(self, value: Any) -> None:
        data = memoryview((json.dumps(value) + "\n").encode("utf-8"))
        with self._send_lock:
            fd = self._check(self.write_fd)
            while data:
                data = data[os.write(fd, data):]

    def _next_value(self) -> tuple[bool, Any]:
        """(True, value) for the first complete JSON line in the buffer, else (False, None)."""
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                return False, None
            line = bytes(self._buf[:end])
            del self._buf[:end + 1]
            try:
                return True, json.loads(line)
            except ValueError:
                continue

    def _fill(self, fd: int) -> bool:
        """One read into the buffer; False at the end of the stream."""
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        self._buf += chunk
        return True

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a line (or the end of the stream) can be read now, waiting up to `timeout` seconds."""
        fd = self._check(self.read_fd)
        if b"\n" in self._buf:
            return True
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)

    def recv(self, timeout: float | None = None) -> Any:
        """The next value; waits up to `timeout` seconds for it (None: for ever)."""
        fd = self._check(self.read_fd)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            found, value = self._next_value()
            if found:
                return value
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError(f"no reply within {timeout:.1f} s")
            if not self._fill(fd):
                raise EOFError("the other end closed the channel")

    def recv_ready(self) -> list[Any] | None:
        """The values one read brings (call it when the descriptor is readable, e.g. from a selector, or make it
        non-blocking); None at the end of the stream."""
        fd = self._check(self.read_fd)
        try:
            if not self._fill(fd):
                return None
        except BlockingIOError:
            return []
        out: list[Any] = []
        while True:
            found, value = self._next_value()
            if not found:
                return out
            out.append(value)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.own:
            for fd in {self.read_fd, self.write_fd}:
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass


def channel_to_parent() -> JsonLines:
    """In a worker: the channel to its parent over stdin/stdout. The real stdout is kept for the protocol and
    file descriptor 1 (and sys.stdout) point at stderr, so that nothing a library prints corrupts the replies."""
    out_fd = os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return JsonLines(0, out_fd)


def ask(proc: subprocess.Popen[Any], channel: JsonLines, message: Any, timeout_s: float) -> Any:
    """Send one message to a worker and return its one-line reply; None when the worker died or ran past
    timeout_s (sending included: a stuck worker can block the write), in which case it is killed."""
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        channel.send(message)
        return channel.recv()
    except (OSError, EOFError):
        return None
    finally:
        timer.cancel()


# ---------------------------------------------------------------------------- stderr


STDERR_KEEP_LINES = 200
STDERR_LINE_CHARS = 2000


class StderrTail:
    """Drains a process's stderr pipe in a daemon thread (a full pipe would block the worker), keeping the last
    `keep` lines, each cut to `line_chars`; `on_line` sees every line (e.g. for a debug log)."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str, keep: int = STDERR_KEEP_LINES,
                 line_chars: int = STDERR_LINE_CHARS, on_line: Callable[[str], None] | None = None) -> None:
        assert proc.stderr is not None
        self.proc = proc
        self.lines: deque[str] = deque(maxlen=keep)
        self.line_chars = line_chars
        self.on_line = on_line
        self.thread = threading.Thread(target=self._drain, name=name, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        try:
            for raw in self.proc.stderr:
                line = raw[:self.line_chars].decode("utf-8", "replace").rstrip()
                if line:
                    self.lines.append(line)
                    if self.on_line is not None:
                        self.on_line(line)
        except (OSError, ValueError):  # the pipe was closed under us
            pass

    def join(self, timeout: float = 2.0) -> None:
        """Wait (up to timeout) until the pipe is drained: after the process ended, its last lines are in."""
        self.thread.join(timeout)

    def summary(self, n: int = 8, limit: int = 1500) -> str:
        """The tail on one line, for an error message (the process is gone: the pipe is drained first)."""
        self.join()
        return summarize_stderr(list(self.lines), n, limit)

    def close(self) -> None:
        """Drain what is left and close the pipe (after the process ended)."""
        self.join()
        try:
            assert self.proc.stderr is not None
            self.proc.stderr.close()
        except OSError:
            pass


def summarize_stderr(lines: list[str], n: int = 8, limit: int = 1500) -> str:
    """The last n lines joined with " | ", at most `limit` characters. Where Python's faulthandler dumped a
    crash, what was printed before it, the error, and the innermost frames (not its list of extension modules)."""
    lines = [ln.strip() for ln in lines if ln.strip()]
    fatal = [i for i, ln in enumerate(lines) if ln.startswith("Fatal Python error")]
    if fatal:
        i = fatal[-1]
        frames = [ln for ln in lines[i + 1:] if ln.startswith("File ")][:2]
        kept = lines[max(0, i - 3):i + 1] + frames
    else:
        kept = lines[-n:]
    out = " | ".join(kept)
    return out[-limit:] if out else "(nothing on stderr)"
