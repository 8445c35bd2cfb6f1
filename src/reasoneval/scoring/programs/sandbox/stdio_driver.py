"""The trusted driver of contest programs (stdin/stdout scripts and LeetCode-style calls), run inside the sandbox
as `python -I -c <this file's text> IN OUT`; never imported by the harness. Standard library only.

Same isolation as driver.py (docs/sandbox.md): IN (a host file) holds a 12-digit ASCII length, that many bytes of
JSON with the candidate's part ({"code", "mode": "stdin"|"call", "func_name"}), then, up to EOF, JSON with the
trusted part ({"tests": [{"input", "output"}], "compare", "cpu_s", "wall_s", "memory_mb", "all_tests",
"max_output"}). OUT is the verdict channel, one JSON line.

1. The driver ignores every signal it can, makes itself non-dumpable, reads the candidate's part only, gives the
   processes it forks from then on a PID namespace of their own, drops every capability and forks the **keeper**:
   PID 1 of that namespace, in a session of its own, holding the candidate's code and never a test's expected
   output (the trusted part is read only after this fork).
2. For each test the driver sends the keeper the test's *input* (never its output). stdin mode: the keeper
   removes what earlier tests left (every other process of the namespace is killed, the private /tmp, /var/tmp
   and /dev/shm emptied), then forks a fresh process that runs the program as a real script (`__main__`, with
   the test input on a real stdin pipe: `input()`, `sys.stdin.buffer`, `open(0)`, `global` at top level,
   `if __name__ == "__main__":`, `exit()` all work as in a judge), and relays its stdout. call mode: one process
   loads the module (named `__solution__`, so a `__main__` block does not run, as under lcb_runner) and serves
   calls: `Solution().<func_name>(*args)` (or a top-level function), args being `json.loads` of each input line;
   the result crosses as JSON (a top-level tuple as a list; any other non-JSON value as a marker that equals
   nothing). The keeper measures each test's CPU time (/proc, then wait4) against `cpu_s` and its wall time
   against `wall_s`, and kills past either.
3. The driver (trusted) compares each output with the expected one, in its own interpreter, and stops at the
   first failing test unless `all_tests`. The verdict line: {"verdict", "passed", "ran", "total", "first",
   "cpu", "detail"}.
"""
import _json
import os
import select
import stat
import struct
import sys
import time

# <prelude>: in the sandbox this import block is prelude.py's own text (a driver runs as the text of `python -I -c`,
# where no package can be imported: sandbox/texts.py); the harness and the tests import the names from there.
from reasoneval.scoring.programs.sandbox.prelude import (
    TooDeep,
    _harden,
    _ignore_signals,
    _read_exact,
    _read_part,
    _restore_signals,
    loads,
)

# </prelude>

MAX_FRAME = 1 << 30
TICK = 0.01
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
# verdict classes, in the order a sample's failure is named
PASSED, WRONG, TIME, MEMORY, RUNTIME = "passed", "wrong_answer", "time_limit", "memory_limit", "runtime_error"


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(fd, data):
    _write_all(fd, struct.pack(">I", len(data)) + data)


def recv(fd):
    (n,) = struct.unpack(">I", _read_exact(fd, 4))
    if n > MAX_FRAME:
        raise ValueError("frame too large")
    return _read_exact(fd, n)


def dumps(x):
    """JSON of the driver's own small records (None, bool, int, float, str, list, dict with str keys)."""
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    t = type(x)
    if t is int:
        return int.__repr__(x)
    if t is float:
        return float.__repr__(x) if x == x and x not in (float("inf"), float("-inf")) else "null"
    if t is str:
        return _json.encode_basestring_ascii(x)
    if t is list or t is tuple:
        return "[" + ",".join([dumps(v) for v in x]) + "]"
    if t is dict:
        return "{" + ",".join([_json.encode_basestring_ascii(str(k)) + ":" + dumps(v) for k, v in x.items()]) + "}"
    raise ValueError("cannot write a " + t.__name__)


# --- the candidate's side: the keeper (PID 1 of the candidate's namespace) and the processes it forks ---

def _own_namespace():
    """True only in PID 1 of a PID namespace of the driver's making: the only place where killing every other
    process (kill -1) and emptying the scratch directories touch the program's own processes and files."""
    return os.getpid() == 1


def _empty_private_dirs(dirs):
    """Empty the sandbox's private scratch directories: the harness names them with the size of the private tmpfs
    the sandbox mounts there (both modes), and one is emptied only from PID 1 of the candidate's namespace and
    only when it is a file system of exactly that size (never a host directory, should this text ever run
    outside its sandbox)."""
    if not _own_namespace():
        return
    for top, size in dirs:
        if top not in PRIVATE_DIRS:
            continue
        try:
            st = os.statvfs(top)
            if st.f_blocks * st.f_frsize != size:
                continue
            names = os.listdir(top)
        except OSError:
            continue
        for name in names:
            _remove(os.path.join(top, name))


def _remove(path):
    """Remove `path` and, if it is a directory, everything under it, however deep and whatever the modes the
    program gave its directories: no recursion (a tree thousands deep), no path longer than a name (each level is
    opened relative to the one above it), a directory it cannot list made listable first (the keeper's uid owns
    every file the program made). What cannot be removed is left, never an exception."""
    try:
        os.unlink(path)
        return
    except OSError:
        pass
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return
        os.chmod(path, 0o700)
        fd = os.open(path, flags)
    except OSError:
        return
    names = []  # the directories opened below `path`, outermost first (only the innermost one's fd is held)
    skip: list = [set()]  # per level: directories that could not be entered or removed
    budget = 1 << 20  # directory visits: a bound, whatever the program left
    while budget > 0:
        budget -= 1
        entry = None
        try:
            with os.scandir(fd) as it:  # one pass: every file of the level unlinked, the first directory entered
                for e in it:
                    if e.name in skip[-1]:
                        continue
                    try:
                        os.unlink(e.name, dir_fd=fd)
                    except OSError:
                        if entry is None:
                            entry = e.name
        except OSError:
            pass
        if entry is not None:
            try:
                os.chmod(entry, 0o700, dir_fd=fd)
                child = os.open(entry, flags, dir_fd=fd)
            except OSError:
                skip[-1].add(entry)
                continue
            os.close(fd)
            fd = child
            names.append(entry)
            skip.append(set())
            continue
        if not names:
            break
        try:
            parent = os.open("..", flags, dir_fd=fd)
        except OSError:
            break
        os.close(fd)
        fd = parent
        skip.pop()
        name = names.pop()
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError:
            skip[-1].add(name)
    os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _kill_others():
    """Every other process of the namespace (the keeper is its PID 1: kill(-1) reaches all but itself). Never
    outside a namespace of its own, where kill(-1) would reach every process the user may signal."""
    own = _own_namespace()
    while True:
        if own:
            try:
                os.kill(-1, 9)
            except ProcessLookupError:  # no other process: reap what is left and stop
                own = False
            except OSError:
                pass
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
        except ChildProcessError:
            return
        if not own:
            return
        time.sleep(0.001)  # a process forked while kill(-1) ran: kill again


def _cpu_of(pid):
    """A process's CPU time so far (all its threads), from its CPU-time clock: PIDs resolve in the caller's
    namespace (the sandbox's /proc shows another one). None once it is gone."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return None


def _limits_in_child(cpu_s, memory_mb):
    import resource
    soft = int(cpu_s) + 1
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
    except (ValueError, OSError):
        pass
    if memory_mb:
        try:
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            want = memory_mb << 20
            if hard == resource.RLIM_INFINITY or want < hard:
                resource.setrlimit(resource.RLIMIT_AS, (want, want))
        except (ValueError, OSError):
            pass


def _finish_script():
    """What the interpreter does at the end of a script: wait for its threads, run atexit, flush."""
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
    except BaseException:
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _print_traceback():
    try:
        import traceback
        traceback.print_exc()
    except BaseException:
        pass


def run_script(compiled, saved):
    """The test's process (stdin mode): the program as a real script."""
    _restore_signals(saved)
    module = type(sys)("__main__")
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = module
    sys.argv = ["solution.py"]
    code = 0
    try:
        exec(compiled, module.__dict__)
    except SystemExit as e:
        # lcb_runner's wrapper catches SystemExit: the output so far is judged (docs/contests.md)
        if e.code is not None and not isinstance(e.code, int):
            try:
                sys.stderr.write(str(e.code) + "\n")
            except BaseException:
                pass
    except BaseException:
        _print_traceback()
        code = 1
    _finish_script()
    os._exit(code)


_NOT_JSON = {"\u0000not-json": True}  # a marker that equals no value json.loads gives


def _plain(x, top):
    """The call's result as JSON-able data: a top-level tuple as a list (lcb_runner's rule), nested values as they
    are (a nested tuple or a set, which no JSON value equals, becomes the marker)."""
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x if x == x and x not in (float("inf"), float("-inf")) else _NOT_JSON
    if t is list or (top and t is tuple):
        return [_plain(v, False) for v in x]
    if t is dict and all(type(k) is str for k in x):
        return {k: _plain(v, False) for k, v in x.items()}
    return _NOT_JSON


def serve_calls(compiled, func_name, saved, req_r, resp_w):
    """The call mode's process: load the module once, then one call per request."""
    _restore_signals(saved)
    import json
    module = type(sys)("__solution__")
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__solution__"] = module
    try:
        exec(compiled, module.__dict__)
        holder = module.__dict__["Solution"]() if "Solution" in module.__dict__ else None
        method = getattr(holder, func_name) if holder is not None else module.__dict__[func_name]
    except BaseException as e:
        _print_traceback()
        send(resp_w, json.dumps({"error": type(e).__name__, "message": str(e)[:300]}).encode("ascii"))
        os._exit(1)
    send(resp_w, b'{"loaded": true}')
    while True:
        try:
            text = recv(req_r).decode("utf-8")
        except EOFError:
            os._exit(0)
        try:
            args = [json.loads(line) for line in text.split("\n")]
            result = _plain(method(*args), True)
            reply = json.dumps({"value": result}, ensure_ascii=True)
        except BaseException as e:  # SystemExit inside a call too: one failed call
            _print_traceback()
            reply = json.dumps({"error": type(e).__name__, "message": str(e)[:300]}, ensure_ascii=True)
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        send(resp_w, reply.encode("ascii"))


class Keeper:
    """PID 1 of the candidate's namespace: runs each test's process, measures it, relays its output."""

    def __init__(self, part, saved, cmd_r, res_w):
        self.part, self.saved, self.cmd_r, self.res_w = part, saved, cmd_r, res_w
        self.mode = part.get("mode", "stdin")
        self.func_name = part.get("func_name") or ""
        self.scratch = [(d, int(n)) for d, n in part.get("scratch", ()) if d in PRIVATE_DIRS]
        self.server = None  # call mode: (pid, req_w, resp_r, err_r)
        self.current = -1

    def main(self):
        os.setsid()
        for name in self.part.get("preload", ()):
            try:
                __import__(name)
            except BaseException:
                pass
        # lcb_runner's reliability guard sets builtins.quit to None: calling quit() is a runtime error there, and
        # here (its test processes are forks of this one; exit() and sys.exit() stay: docs/contests.md)
        __import__("builtins").quit = None  # type: ignore[attr-defined]
        # several programs (samples of one problem) may share the sandbox: each compiled once, run one at a time,
        # with every process and file of the one before gone (_fresh)
        self.programs: list = []
        errors: list = []
        for code in self.part["codes"]:
            try:
                self.programs.append(compile(code, "<solution>", "exec"))
                errors.append(None)
            except BaseException as e:
                self.programs.append(None)
                errors.append(type(e).__name__ + ": " + str(e)[:200])
        send(self.res_w, dumps({"loaded": errors}).encode("ascii"))
        del self.part
        try:
            import gc
            gc.freeze()  # the keeper's objects are never collected in a test's process: fewer pages copied on fork
        except BaseException:
            pass
        while True:
            try:
                settings = loads(recv(self.cmd_r).decode("ascii"))
                payload = recv(self.cmd_r)
                index = int(settings["program"])
                self.compiled = self.programs[index]
            except BaseException:
                os._exit(0)
            if self.compiled is None:
                os._exit(0)
            if index != self.current:
                self._stop_server()
                self.current = index
            if self.mode == "call":
                head, out = self.call(payload, settings)
            else:
                head, out = self.script(payload, settings)
            send(self.res_w, dumps(head).encode("ascii"))
            send(self.res_w, out)

    def _stop_server(self):
        if self.server is not None:
            for fd in self.server[1:]:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.server = None
            _kill_others()

    def _fresh(self):
        _kill_others()
        _empty_private_dirs(self.scratch)

    def script(self, stdin_bytes, lim):
        self._fresh()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(in_r, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                for fd in (in_r, in_w, out_r, out_w, err_r, err_w, self.cmd_r, self.res_w):
                    os.close(fd)
                _limits_in_child(lim["cpu_s"], lim.get("memory_mb"))
            except BaseException:
                os._exit(121)
            run_script(self.compiled, self.saved)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        return self._watch(pid, start, lim, in_w, stdin_bytes, out_r, err_r, None)

    def _start_server(self, lim):
        self._fresh()
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(err_w, 1)
                os.dup2(err_w, 2)
                for fd in (null, req_w, resp_r, err_r, err_w, self.cmd_r, self.res_w):
                    os.close(fd)
                _limits_in_child(lim["cpu_s"] * max(1, lim.get("calls", 1)) + lim["cpu_s"], lim.get("memory_mb"))
            except BaseException:
                os._exit(121)
            serve_calls(self.compiled, self.func_name, self.saved, req_r, resp_w)
        for fd in (req_r, resp_w, err_w):
            os.close(fd)
        os.set_blocking(err_r, False)
        self.server = (pid, req_w, resp_r, err_r)
        head, reply = self._exchange(None, lim, load=True)
        if head["end"] != "reply" or not reply.startswith(b'{"loaded"'):
            return head, reply
        return None

    def call(self, args_bytes, lim):
        if self.server is None:
            failed = self._start_server(lim)
            if failed is not None:
                return failed
        return self._exchange(args_bytes, lim)

    def _exchange(self, request, lim, load=False):
        pid, req_w, resp_r, err_r = self.server  # type: ignore[misc]
        start = time.monotonic()
        cpu0 = _cpu_of(pid) or 0.0
        if request is not None:
            try:
                send(req_w, request)
            except OSError:
                pass
        os.set_blocking(resp_r, False)
        buf = b""
        err: list = []
        cpu_limit = lim["cpu_s"] * (3 if load else 1)
        wall_limit = lim["wall_s"] * (3 if load else 1)
        end = None
        while True:
            ready, _, _ = select.select([resp_r, err_r], [], [], TICK)
            if err_r in ready:
                self._drain(err_r, err)
            if resp_r in ready:
                try:
                    b = os.read(resp_r, 1 << 20)
                except BlockingIOError:
                    b = None
                if b == b"":
                    end = "gone"
                elif b:
                    buf += b
                    if len(buf) >= 4:
                        (n,) = struct.unpack(">I", buf[:4])
                        if n > lim.get("max_output", 1 << 26):
                            end = "output"
                        elif len(buf) >= 4 + n:
                            end = "reply"
            cpu = (_cpu_of(pid) or cpu0) - cpu0
            if end is None and cpu > cpu_limit:
                end = "cpu"
            elif end is None and time.monotonic() - start > wall_limit:
                end = "wall"
            if end is not None:
                break
        head = {"end": end, "cpu": round(cpu, 3), "wall": round(time.monotonic() - start, 3)}
        if end == "reply":
            return head, buf[4:4 + struct.unpack(">I", buf[:4])[0]]
        # the server is gone or over a limit: a fresh one for the next test
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        status = 0
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        if end == "gone" and os.WIFSIGNALED(status):
            head["sig"] = os.WTERMSIG(status)
        elif end == "gone":
            head["code"] = os.WEXITSTATUS(status)
        self._drain(err_r, err)
        head["err"] = b"".join(err)[-800:].decode("utf-8", "replace")
        for fd in (req_w, resp_r, err_r):
            os.close(fd)
        self.server = None
        return head, b""

    @staticmethod
    def _drain(fd, into):
        while True:
            try:
                b = os.read(fd, 1 << 16)
            except (BlockingIOError, OSError):
                return
            if not b:
                return
            into.append(b)
            if sum(len(x) for x in into) > 1 << 16:
                del into[:-2]

    def _watch(self, pid, start, lim, in_w, data, out_r, err_r, _):
        os.set_blocking(in_w, False)
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        view = memoryview(data)
        out: list = []
        err: list = []
        out_len = 0
        max_output = lim.get("max_output", 1 << 26)
        end, status, usage = None, None, None
        open_fds = [out_r, err_r]
        writing = in_w if view else None
        if writing is None:
            os.close(in_w)
        cpu = 0.0
        # the process's exit wakes the loop at once (a pidfd is readable when it ends), not at the next tick
        try:
            exited = [os.pidfd_open(pid)]
        except (AttributeError, OSError):
            exited = []
        while end is None:
            wlist = [writing] if writing is not None else []
            try:
                r, w, _x = select.select(open_fds + exited, wlist, [], TICK)
            except OSError:
                r, w = [], []
            r = [fd for fd in r if fd not in exited]
            if w:
                try:
                    view = view[os.write(writing, view[:1 << 16]):]  # type: ignore[arg-type]
                except BlockingIOError:
                    pass
                except OSError:  # the program closed its stdin or exited: the rest is not read
                    view = view[:0]
                if not view:
                    os.close(writing)  # type: ignore[arg-type]
                    writing = None
            for fd in r:
                try:
                    b = os.read(fd, 1 << 20)
                except BlockingIOError:
                    continue
                if not b:
                    open_fds.remove(fd)
                elif fd == out_r:
                    out.append(b)
                    out_len += len(b)
                    if out_len > max_output:
                        end = "output"
                else:
                    err.append(b)
                    if len(err) > 64:
                        del err[:-8]
            if end is None:
                got, st, ru = os.wait4(pid, os.WNOHANG)
                if got:
                    status, usage = st, ru
                    end = "exit"
                else:
                    c = _cpu_of(pid)
                    cpu = c if c is not None else cpu
                    if cpu > lim["cpu_s"]:
                        end = "cpu"
                    elif time.monotonic() - start > lim["wall_s"]:
                        end = "wall"
        wall = time.monotonic() - start
        if status is None:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
            _, status, usage = os.wait4(pid, 0)
        for fd in list(open_fds):  # what is left in the pipes (a child of the program may hold them open)
            while True:
                try:
                    b = os.read(fd, 1 << 20)
                except (BlockingIOError, OSError):
                    break
                if not b:
                    break
                if fd == out_r and end != "output":
                    out.append(b)
                    out_len += len(b)
                    if out_len > max_output:
                        end = "output"
                        break
                elif fd == err_r:
                    err.append(b)
        for fd in (out_r, err_r) + ((writing,) if writing is not None else ()) + tuple(exited):
            try:
                os.close(fd)
            except OSError:
                pass
        _kill_others()
        head = {"end": end, "wall": round(wall, 3),
                "cpu": round(usage.ru_utime + usage.ru_stime, 3) if usage is not None else round(cpu, 3),
                "rss_kb": usage.ru_maxrss if usage is not None else 0,
                "err": b"".join(err)[-800:].decode("utf-8", "replace")}
        if end == "exit" and head["cpu"] > lim["cpu_s"]:
            head["end"] = "cpu"
        if os.WIFSIGNALED(status):
            head["sig"] = os.WTERMSIG(status)
        else:
            head["code"] = os.WEXITSTATUS(status)
        return head, b"".join(out) if end != "output" else b""


def keeper_side(part, saved, cmd_r, res_w):
    try:
        Keeper(part, saved, cmd_r, res_w).main()
    except BaseException:
        pass
    os._exit(1)


# --- the trusted side: comparisons and the verdict ---

def _lines(text):
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line):
    import decimal
    try:
        return [decimal.Decimal(tok) for tok in line.split()]
    except (decimal.InvalidOperation, ValueError):
        return None


def compare_lcb(got, expected):
    """lcb_runner's stdio rule: strip, split lines, strip each; equal counts; each line equal, or all of its
    whitespace tokens equal as Decimal. None where that comparison raises (a signalling NaN: Decimal's
    InvalidOperation), which lcb_runner grades as a runtime error."""
    a, b = _lines(got), _lines(expected)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        dx = _decimals(x)
        if dx is None:
            return False
        dy = _decimals(y)
        if dy is None:
            return False
        try:
            if dx != dy:
                return False
        except ArithmeticError:  # decimal.InvalidOperation (and every other Decimal trap) derive from it
            return None
    return True


def _close(x, y):
    try:
        fx, fy = float(x), float(y)
    except ValueError:
        return False
    if fx != fx or fy != fy:
        return False
    return abs(fx - fy) <= 1e-8 + 1e-5 * abs(fy)  # numpy.allclose's default tolerances


def compare_tokens(got, expected):
    """APPS/TACO's outcome, order kept: the whitespace tokens in order, each equal or both numbers within numpy
    allclose's default tolerance (rtol 1e-5, atol 1e-8). Their checkers' last resorts (an unordered set of
    tokens, lines as sets) are not applied: they accept wrong answers (docs/contests.md)."""
    a, b = got.split(), expected.split()
    if len(a) != len(b):
        return False
    return all(x == y or _close(x, y) for x, y in zip(a, b))


def compare_call(value, expected_text, style):
    try:
        expected = loads(expected_text)
    except ValueError:
        return False
    if value == expected:  # plain JSON data on both sides (loads gives nothing deeper than the recursion limit)
        return True
    # APPS/TACO: an output given as a one-element list also matches that element
    return style == "tokens" and type(expected) is list and len(expected) == 1 and value == expected[0]


def _memory_error(head):
    err = head.get("err", "")
    return "MemoryError" in err or "Cannot allocate memory" in err


def classify(head, lim):
    """The keeper's record of one test -> None (it ran to the end) or a failure class and a short reason."""
    end = head.get("end")
    if end in ("cpu", "wall"):
        return TIME, "over the CPU time limit" if end == "cpu" else "over the wall-clock limit (waiting)"
    if end == "output":
        return WRONG, "output over the limit"
    if head.get("rss_kb", 0) > (lim.get("memory_mb") or 1 << 40) * 1024:
        return MEMORY, "over the memory limit"
    if _memory_error(head):
        return MEMORY, "MemoryError"
    if head.get("sig"):
        return RUNTIME, f"killed by signal {head['sig']}"
    if head.get("code"):
        err = head.get("err", "").strip().splitlines()
        return RUNTIME, err[-1][:200] if err else f"exit status {head['code']}"
    return None


def call_reply(out):
    """The call server's reply frame -> {"value": ...} or {"error": ..., "message": ...}; the program can write
    any bytes there (its process holds the pipe), so anything else is None, a value nested deeper than the judge
    reads is {"deep": True}."""
    try:
        reply = loads(out.decode("ascii"))
    except TooDeep:
        return {"deep": True}
    except ValueError:  # (UnicodeDecodeError is one)
        return None
    if type(reply) is not dict or not (set(reply) == {"value"} or (
            set(reply) == {"error", "message"} and type(reply["error"]) is str and type(reply["message"]) is str)):
        return None
    return reply


def failure_of(head, out, expected, mode, style, lim):
    """One test's failure class and reason from the keeper's record and the program's bytes, or None: passed."""
    if mode == "call" and head.get("end") == "reply":
        reply = call_reply(out)
        if reply is None:
            return RUNTIME, "malformed reply from the solution's process"
        if "deep" in reply:  # the expected value was read: nested this deep, the result cannot equal it
            return WRONG, "wrong answer (a result nested too deep)"
        if "error" in reply:
            name = reply["error"]
            return MEMORY if name == "MemoryError" else RUNTIME, f"{name}: {reply['message']}"
        return None if compare_call(reply["value"], expected, style) else (WRONG, "wrong answer")
    if mode == "call":
        failure = classify(head, lim) or (RUNTIME, "the solution's process ended")
        if head.get("end") == "gone" and not head.get("sig") and not _memory_error(head):
            failure = (RUNTIME, (head.get("err", "").strip().splitlines() or ["exited"])[-1])
        return failure
    failure = classify(head, lim)
    if failure is not None:
        return failure
    text = out.decode("utf-8", "replace")
    ok = compare_lcb(text, expected) if style == "lcb" else compare_tokens(text, expected)
    if ok is None:
        return RUNTIME, "the output's comparison raised (a signalling NaN), lcb_runner's runtime error"
    return None if ok else (WRONG, "wrong answer")


def judge_program(index, tests, part, lim, cmd_w, res_r):
    """Run one program's tests through the keeper; its verdict record."""
    passed, ran, first, verdict, detail, cpu_max = 0, 0, -1, PASSED, "", 0.0
    style, mode = part.get("compare", "lcb"), part.get("mode")
    settings = dumps({**lim, "program": index}).encode("ascii")
    for i, test in enumerate(tests):
        send(cmd_w, settings)
        send(cmd_w, test["input"].encode("utf-8", "surrogatepass"))
        head = loads(recv(res_r).decode("ascii"))
        out = recv(res_r)
        ran += 1
        cpu_max = max(cpu_max, float(head.get("cpu") or 0.0))
        try:
            failure = failure_of(head, out, test["output"], mode, style, lim)
        except Exception as e:  # (none is known) whatever the program's bytes do here is its own verdict only
            failure = (RUNTIME, f"judge: its output could not be compared ({type(e).__name__})")
        if failure is None:
            passed += 1
            continue
        if first < 0:
            first, verdict, detail = i, failure[0], failure[1]
        if not part.get("all_tests"):
            break
    return {"verdict": verdict, "passed": passed, "ran": ran, "total": len(tests), "first": first,
            "cpu": round(cpu_max, 3), "detail": _printable(detail)}


DETAIL = 150  # characters of a failure's detail in the verdict line (the line stays under PIPE_BUF for 8 programs)


def _printable(text):
    return "".join(c if " " <= c <= "~" else "?" for c in text[:DETAIL])


def trusted_main(child, in_fd, verdict_fd, cmd_w, res_r):
    """Every program's verdict, one JSON line: {"verdicts": [...]} (a program the driver could not judge: "error")."""
    verdicts = []
    count = 0
    try:
        raw = []
        while True:
            b = os.read(in_fd, 1 << 20)
            if not b:
                break
            raw.append(b)
        part = loads(b"".join(raw).decode("ascii"))
        del raw
        tests = part["tests"]
        count = int(part["programs"])
        lim = {"cpu_s": float(part["cpu_s"]), "wall_s": float(part["wall_s"]),
               "memory_mb": part.get("memory_mb"), "max_output": int(part.get("max_output", 1 << 26)),
               "calls": len(tests)}
        loaded = loads(recv(res_r).decode("ascii"))["loaded"]
        if len(loaded) != count:
            raise ValueError("the keeper loaded another number of programs")
        for index in range(count):
            if loaded[index] is not None:
                verdicts.append({"verdict": RUNTIME, "passed": 0, "ran": 0, "total": len(tests), "first": 0,
                                 "cpu": 0.0, "detail": _printable(str(loaded[index]))})
                continue
            verdicts.append(judge_program(index, tests, part, lim, cmd_w, res_r))
    except BaseException as e:  # the driver's own failure: the programs not judged are errors
        detail = f"driver: {type(e).__name__}: {str(e)[:100]}"
        verdicts += [{"verdict": "error", "passed": 0, "ran": 0, "total": 0, "first": -1, "cpu": 0.0,
                      "detail": detail}] * max(0, count - len(verdicts))
    try:
        os.kill(child, 9)
    except BaseException:
        pass
    os.write(verdict_fd, dumps({"verdicts": verdicts}).encode("ascii") + b"\n")
    os._exit(0)


def _setup(in_fd):
    part = _read_part(in_fd)
    _harden()
    return part


def main():
    saved = _ignore_signals()
    in_fd, verdict_fd = int(sys.argv[1]), int(sys.argv[2])
    try:
        part = _setup(in_fd)
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        sys.stdout.flush()
        child = os.fork()
    except BaseException as e:
        os.write(verdict_fd, dumps({"verdicts": [], "error": f"driver: {type(e).__name__}: {str(e)[:200]}"}
                                   ).encode("ascii") + b"\n")
        os._exit(0)
    if child == 0:
        for fd in (in_fd, verdict_fd, cmd_w, res_r):
            os.close(fd)
        keeper_side(part, saved, cmd_r, res_w)
    del part
    for fd in (cmd_r, res_w):
        os.close(fd)
    os.dup2(2, 1)
    trusted_main(child, in_fd, verdict_fd, cmd_w, res_r)


if __name__ == "__main__":
    main()
