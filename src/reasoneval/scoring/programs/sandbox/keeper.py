"""The candidate's side of the contest driver (stdio_driver.py is the trusted side): the **keeper**, which makes a
fresh set of namespaces for every test, the **test's init**, PID 1 of them, which runs one program on one test's
input, measures the CPU of every process of the test and ends them all, and the program's own process. Run inside
the sandbox as part of the stdio driver's text (sandbox/texts.py); standard library only. The framing both sides
use (`send`, `recv`, `dumps`) is here too.

Per test (docs/sandbox.md, "Contest programs"):

1. The keeper (forked by the driver before the driver read any program, input or expected output, so its memory
   never holds one; in the driver's PID namespace, non-dumpable, out of every program's reach) keeps
   CAP_SYS_ADMIN of the sandbox's user namespace (and no other capability) for one thing: it forks each test's
   init straight into new namespaces (`clone(CLONE_NEWPID | CLONE_NEWIPC)`). So every test starts in a PID
   namespace (its program is PID 2, whatever ran before) and an IPC namespace (no System V object or POSIX queue
   of an earlier test) of its own, in the keeper's network namespace (no loopback up: no socket state).
2. The test's init drops every capability, reads the test's settings, program and input from the driver (the
   keeper never reads them), compiles the program and forks it with its limits. Every tick it adds up the CPU of
   every process of its namespace (each PID's own CPU clock, the most seen of each, and what it has reaped:
   `RUSAGE_CHILDREN`), kills them all (`kill(-1)`: PID 1 of its own namespace) past the CPU limit or the wall
   guard, or when the program's process ends, reaps every one, and reports the exact total (every process of
   the namespace is reaped by its parent or by this init, so `RUSAGE_CHILDREN` holds the CPU of all; the seccomp
   filter refuses the `SIGCHLD` dispositions that would let a child go unreaped). Its exit ends the namespaces.
3. The keeper reaps it and empties the private scratch directories without recursion and whatever the modes
   (every directory is made 0700 and its entries moved to the top before removal: no depth, mode or name can
   stop it), then says `clean`.
"""
import _json
import os
import select
import struct
import time

# <prelude>: in the sandbox this import block is dropped (the driver's text already holds prelude.py's text, and
# this file's text follows it: sandbox/texts.py); the harness and the tests import the names from there.
from reasoneval.scoring.programs.sandbox.prelude import _drop_capabilities, _read_exact, loads

# </prelude>
# <program>: in the sandbox this import block is program.py's text (without its own prelude import block)
from reasoneval.scoring.programs.sandbox.program import _limits_in_child, run_script, serve_calls

# </program>
# <scratch>: in the sandbox this import block is scratch.py's text
from reasoneval.scoring.programs.sandbox.scratch import PRIVATE_DIRS, empty_private_dirs

# </scratch>

MAX_FRAME = 1 << 30
TICK = 0.01
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
WALL = 0x40000000  # __WALL: wait for every child, whatever signal it was cloned to send at its exit
PROBE = 256  # PIDs above the highest seen that the test's init looks at every tick (new ones are numbered upwards)


def _write_all(fd, data):  # (the stdio driver's frames: both sides use these)
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


# --- the keeper: one per sandbox, a fresh test's init per test ---

def keeper_side(saved, libc, ctl_r, cmd_r, res_w):
    """The keeper's loop: a setup frame ({"preload", "scratch"}), then a frame per test."""
    try:
        _only_sys_admin(libc)
        os.setsid()
        # a network namespace of the keeper's own, its loopback down: no test can connect anywhere, so none leaves
        # a socket state (a port in TIME_WAIT) for a later one (once here: a network namespace per test costs ms)
        libc.unshare(CLONE_NEWNET)
        setup = loads(recv(ctl_r).decode("ascii"))
        scratch = [(d, int(n)) for d, n in setup.get("scratch", ()) if d in PRIVATE_DIRS]
        for name in setup.get("preload", ()):
            try:
                __import__(name)
            except BaseException:
                pass
        # lcb_runner's reliability guard sets builtins.quit to None: calling quit() is a runtime error there, and
        # here (every test's processes are forks of this one; exit() and sys.exit() stay: docs/contests.md)
        __import__("builtins").quit = None  # type: ignore[attr-defined]
        try:
            import gc
            gc.freeze()  # the keeper's objects are never collected in a test's processes: fewer pages copied
        except BaseException:
            pass
        while True:
            try:
                recv(ctl_r)
            except BaseException:
                break
            status = _one_test(saved, libc, ctl_r, cmd_r, res_w)
            cleaned = empty_private_dirs(scratch)
            send(res_w, dumps({"clean": cleaned, "status": status}).encode("ascii"))
    except BaseException:
        pass
    os._exit(0)


def _only_sys_admin(libc):
    """Of every capability the keeper may have (the fallback's user namespace gives it all), CAP_SYS_ADMIN alone:
    what it needs to make each test's namespaces."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)(1 << 21, 1 << 21, 0, 0, 0, 0)  # effective, permitted: CAP_SYS_ADMIN (21)
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _fork_into_namespaces(flags):
    """fork(), the child in new namespaces (`flags`): clone(2) with them, wrapped as os.fork wraps its fork (the
    interpreter's before- and after-fork steps), with the GIL held throughout. -1 where the kernel refuses."""
    import ctypes
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = ctypes.PyDLL(None).syscall(56, flags | 17, None, None, None, None)  # clone(flags | SIGCHLD), as fork
    if pid == 0:
        api.PyOS_AfterFork_Child()
    else:
        api.PyOS_AfterFork_Parent()
    return pid


def _one_test(saved, libc, ctl_r, cmd_r, res_w):
    """Fork the test's init into fresh PID and IPC namespaces; wait until it is gone (with it every process of
    the test)."""
    init = _fork_into_namespaces(CLONE_NEWPID | CLONE_NEWIPC)
    isolated = init != -1
    if init == -1:
        init = os.fork()  # refused (no capability): the init says it has no namespaces, and the test is an error
    if init == 0:
        try:
            os.close(ctl_r)
            test_init(saved, libc, isolated, cmd_r, res_w)
        except BaseException:
            pass
        os._exit(1)
    while True:
        try:
            pid, st = os.waitpid(init, WALL)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        return st


# --- the test's init: PID 1 of the test's namespaces ---

def test_init(saved, libc, isolated, cmd_r, res_w):
    """stdin mode: run one program on one test's input and report {"end", "cpu", "wall", "rss_kb", "err", ...},
    what it wrote on stdout and, when it compiled the program's source, the compiled code (marshal: the driver
    sends that for the sample's next tests, never to another sample's; this init's own code made it before any of
    the program's ran). Call mode: serve the sample's calls (CallServer)."""
    try:
        first = recv(cmd_r)
        while first[:1] in (b"c", b"e"):  # a call mode sample's frames its init did not live to read
            first = recv(cmd_r)
        lim = loads(first.decode("ascii"))
        code = recv(cmd_r)
        data = b"" if lim.get("mode") == "call" else recv(cmd_r)
        _drop_capabilities(libc)
        os.setsid()
    except BaseException:
        os._exit(1)
    blob, head, out = b"", None, b""
    try:
        if not isolated or os.getpid() != 1:
            raise OSError("no namespaces of its own for the test")
        import marshal
        try:
            if lim.get("marshal"):
                compiled = marshal.loads(code)
            else:
                compiled = compile(code.decode("utf-8", "surrogatepass"), "<solution>", "exec")
                blob = marshal.dumps(compiled)
        except BaseException as e:
            compiled, head, out = None, {"end": "compile", "err": type(e).__name__ + ": " + str(e)[:200]}, b""
        if lim.get("mode") == "call":
            CallServer(compiled, lim, saved, (cmd_r, res_w)).serve(cmd_r, res_w, head)
            os._exit(0)
        if compiled is not None:
            del code
            head, out = Test(compiled, lim, saved, (cmd_r, res_w)).run(data)
    except BaseException as e:
        head, out = {"end": "error", "err": "test init: " + type(e).__name__ + ": " + str(e)[:200]}, b""
    try:
        send(res_w, dumps(head).encode("ascii"))
        send(res_w, out)
        send(res_w, blob)
    except BaseException:
        pass
    os._exit(0)


def _cpu_of(pid):
    """A process's own CPU time so far (all its threads, not its children), from its CPU-time clock; None once it
    is gone."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return None


def _children_cpu():
    ru = __import__("resource").getrusage(-1)  # RUSAGE_CHILDREN
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def _status(head, status):
    if status is not None and os.WIFSIGNALED(status):
        head["sig"] = os.WTERMSIG(status)
    elif status is not None:
        head["code"] = os.WEXITSTATUS(status)


class Test:
    """One program on one input, in the test's namespaces (this process is their PID 1)."""

    def __init__(self, compiled, lim, saved, private_fds):
        self.compiled, self.lim, self.saved, self.private_fds = compiled, lim, saved, private_fds
        self.seen = {}  # pid -> the most CPU seen on its own clock
        self.high = 1
        self.server_fds: tuple = ()  # call mode: the server's request and reply ends

    def cpu(self):
        """The CPU of every process of the namespace so far: the most of what its processes' own clocks showed and
        what this init reaped (a lower bound of the exact total, which the end reports)."""
        for pid in list(self.seen) + list(range(self.high + 1, self.high + PROBE)):
            c = _cpu_of(pid)
            if c is None:
                continue
            if c > self.seen.get(pid, 0.0):
                self.seen[pid] = c
            elif pid not in self.seen:
                self.seen[pid] = c
            if pid > self.high:
                self.high = pid
        return max(sum(self.seen.values()), _children_cpu()[0])

    def _fork(self, fds):
        """The program's process: stdin, stdout and stderr from `fds`, every other descriptor of ours closed."""
        lim = self.lim
        pid = os.fork()
        if pid == 0:
            try:
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                for fd in self.private_fds + tuple(self.to_close):
                    os.close(fd)
                _limits_in_child(lim["cpu_s"] * lim.get("cpu_times", 1), lim.get("memory_mb"))
            except BaseException:
                os._exit(121)
            if lim.get("mode") == "call":
                serve_calls(self.compiled, lim.get("func_name") or "", self.saved, *self.server_fds)
            run_script(self.compiled, self.saved)
        return pid

    def run(self, data):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.to_close = [in_r, in_w, out_r, out_w, err_r, err_w]
        start = time.monotonic()
        pid = self._fork((in_r, out_w, err_w))
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        return self._watch(pid, start, in_w, data, out_r, err_r)

    def _watch(self, pid, start, in_w, data, out_r, err_r):
        lim = self.lim
        os.set_blocking(in_w, False)
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        view = memoryview(data)
        out, err = [], []
        out_len = 0
        max_output = lim.get("max_output", 1 << 26)
        end, status = None, None
        open_fds = [out_r, err_r]
        writing = in_w if view else None
        if writing is None:
            os.close(in_w)
        cpu = 0.0
        next_look = time.monotonic() + TICK
        limit = lim["cpu_s"]
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
                got, st = self._reap_until(pid)
                if got:
                    status = st
                    end = "exit"
                else:
                    now = time.monotonic()
                    if now >= next_look:  # (a look is a few hundred syscalls: once a tick)
                        next_look = now + TICK
                        cpu = self.cpu()
                    if cpu > limit:
                        end = "cpu"
                    elif now - start > lim["wall_s"]:
                        end = "wall"
        wall = time.monotonic() - start
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
        # every process of the test ends with it: kill(-1) from PID 1 reaches every other process of the namespace
        st = self._end_all(pid)
        if status is None:
            status = st
        for fd in (out_r, err_r) + ((writing,) if writing is not None else ()) + tuple(exited):
            os.close(fd)
        total, rss = _children_cpu()
        total = max(total, sum(self.seen.values()))
        head = {"end": "cpu" if total > limit else end, "wall": round(wall, 3), "cpu": round(total, 3),
                "rss_kb": rss, "err": b"".join(err)[-800:].decode("utf-8", "replace")}
        _status(head, status)
        return head, b"".join(out) if end != "output" else b""

    def _reap_until(self, pid):
        """Reap whatever has ended (orphans are this init's); (True, status) once the program's process has."""
        while True:
            try:
                got, st = os.waitpid(-1, os.WNOHANG | WALL)
            except ChildProcessError:
                return True, None
            if got == 0:
                return False, None
            if got == pid:
                return True, st

    def _end_all(self, pid):
        status = None
        while True:
            try:
                os.kill(-1, 9)
            except OSError:
                pass
            try:
                got, st = os.waitpid(-1, WALL)
            except ChildProcessError:
                return status
            except InterruptedError:
                continue
            if got == pid:
                status = st


class CallServer(Test):
    """Call mode: the sample's program loaded once, in a server process of this namespace that makes every call of
    the sample (its module's state stays from call to call, as under lcb_runner). A call's CPU is what every process
    of the namespace used during it (their own clocks, and what this init reaped); past a call, every process but
    the server is killed."""

    def serve(self, cmd_r, res_w, failed):
        """Frames from the driver: `c` + a call's input, answered by a record and the reply; `e` ends the sample."""
        self.server, self.gone, self.server_status = None, 0.0, None
        while True:
            try:
                frame = recv(cmd_r)
            except BaseException:
                break
            if frame[:1] != b"c":
                break
            if self.compiled is None:
                head, out = failed, b""
            else:
                try:
                    head, out = self.call(frame[1:])
                except BaseException as e:
                    head, out = {"end": "error", "err": "test init: " + type(e).__name__ + ": " + str(e)[:200]}, b""
            send(res_w, dumps(head).encode("ascii"))
            send(res_w, out)
        self._end_all(None)

    def total(self):
        """The CPU of the sample's processes so far: each one's own clock, the most seen of each, looked at every
        tick (a process that lives less than a tick can go unseen: the exact count of stdin mode needs the test's
        end, which a server outlives)."""
        self.cpu()
        while True:  # orphans and the server, reaped
            try:
                pid, st = os.waitpid(-1, os.WNOHANG | WALL)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if self.server is not None and pid == self.server[0]:
                self.server, self.server_status = None, st
        for pid in list(self.seen):  # gone: its CPU stays counted, and it is no longer looked at
            if _cpu_of(pid) is None:
                self.gone += self.seen.pop(pid)
        return sum(self.seen.values()) + self.gone

    def call(self, data):
        lim = self.lim
        start = time.monotonic()
        base = self.total()
        if self.server is None:
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            err_r, err_w = os.pipe()
            self.server_fds = (req_r, rep_w)
            self.to_close = [req_w, rep_r, err_r, err_w]
            null = os.open("/dev/null", os.O_RDONLY)
            pid = self._fork((null, err_w, err_w))
            for fd in (null, req_r, rep_w, err_w):
                os.close(fd)
            self.server = (pid, req_w, rep_r, err_r)
            self.server_io, self.server_status = (req_w, rep_r, err_r), None
            for fd in (rep_r, err_r):
                os.set_blocking(fd, False)
            head, reply = self._wait(base, 3 * lim["cpu_s"], 3 * lim["wall_s"], start)
            if reply != b"L":
                return head, reply
            start, base = time.monotonic(), self.total()
        try:
            send(self.server[1], data)
        except OSError:
            pass
        return self._wait(base, lim["cpu_s"], lim["wall_s"], start)

    def _wait(self, base, cpu_limit, wall_limit, start):
        """Until the server's next reply frame, its end, or a limit; then every other process of the call ends."""
        pid, _, rep_r, err_r = self.server  # type: ignore[misc]
        buf, err, end, cpu = b"", [], None, 0.0
        while end is None:
            r, _, _ = select.select([rep_r, err_r], [], [], TICK)
            for fd in r:
                try:
                    b = os.read(fd, 1 << 20)
                except BlockingIOError:
                    continue
                if fd == err_r:
                    err.append(b)
                    del err[:-8]
                elif not b:
                    end = "gone"
                else:
                    buf += b
                    if len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
                        end = "reply"
                    elif len(buf) > self.lim.get("max_output", 1 << 26) + 4:
                        end = "output"
            cpu = self.total() - base
            if end is None and self.server is None:
                end = "gone"
            elif end is None and cpu > cpu_limit:
                end = "cpu"
            elif end is None and time.monotonic() - start > wall_limit:
                end = "wall"
        head = {"end": end, "cpu": round(max(cpu, 0.0), 3), "wall": round(time.monotonic() - start, 3)}
        if end != "reply":  # the server is gone or over a limit: every process ends, a fresh server next call
            status = self._end_all(pid)
            _status(head, status if status is not None else self.server_status)
            for fd in self.server_io:
                os.close(fd)
            self.server, self.seen = None, {}
            head["err"] = b"".join(err)[-800:].decode("utf-8", "replace")
            return head, b""
        for p in list(self.seen):  # every process of the call but the server
            if p != pid:
                try:
                    os.kill(p, 9)
                except OSError:
                    pass
        n = int.from_bytes(buf[:4], "big")
        return head, buf[4:4 + n]
