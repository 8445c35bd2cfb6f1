"""The sample keeper's per-test machinery (keeper.py forks the sample keepers): a test's program forked straight into
fresh PID and IPC namespaces (`Test`, stdin mode) or a server of the sample's calls (`CallServer`, call mode),
watched from outside them, its CPU summed over every process of the namespace, its bytes read into memory zeroed
after it (`Sink`); and the frames both sides of the stdio driver speak (`send`, `recv`). Part of the stdio driver's
text in the sandbox (sandbox/texts.py); standard library only. The design: docs/sandbox.md, "Contest programs", and
keeper.py's docstring.
"""
import fcntl
import os
import select
import struct
import time

# <prelude>: in the sandbox this import block is dropped (the driver's text already holds prelude.py's text)
from reasoneval.scoring.programs.sandbox.prelude import (
    CLONE_NEWPID,
    _drop_capabilities,
    _no_capabilities,
    _read_exact,
    dumps,
)

# </prelude>
# <program>: in the sandbox this import block is program.py's text (without its own prelude import block)
from reasoneval.scoring.programs.sandbox.program import rlimits, run_script, script_module, serve_calls, set_rlimits

# </program>

MAX_FRAME = 1 << 30
TICK = 0.01
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000  # (CLONE_NEWPID: the prelude's)
CLONE_FILES, CLONE_PARENT = 0x400, 0x8000
PR_SET_PDEATHSIG = 1
FDS = struct.Struct("6i")  # a test's descriptors, the sample keeper to its forker: stdin, stdout, stderr, 3 to close
PID = struct.Struct("i")
WALL = 0x40000000  # __WALL: wait for every child, whatever signal it was cloned to send at its exit
PROBE = 256  # PIDs above the highest seen looked at every tick (a namespace numbers its new processes upwards)
SHORT_PROBE = 16  # the same at a call's start and end (call mode: a few syscalls per call)
CHUNK = 1 << 16  # a Sink's chunk
ZEROS = bytes(CHUNK)
F_SETPIPE_SZ = 1031
PIPE_ROOM = 1 << 20  # the program's stdout pipe holds this much (the default allowed at most: fs/pipe-max-size)
RESERVED_PIDS = 300  # where the kernel gives out PIDs again past pid_max (kernel/pid.c)
PIPE_AHEAD = 1 << 15  # input bytes written before the program starts (a pipe holds 64 KiB)


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


# (before, syscall, after in the child, after in the parent, the C library, capset's arguments for no capability):
# made once, in the keeper (keeper_side), before it forks any sample's keeper (made there, they cost each sample ~0.3
# ms of copied pages)
_CLONE: list = []


def _clone_calls():
    if not _CLONE:
        import ctypes
        api = ctypes.pythonapi
        libc = ctypes.PyDLL(None)
        # capset looked up here once (a handle keeps each function it looked up): in each test's process that first
        # lookup, which _drop_capabilities makes, cost ~0.12 ms of its ~0.6 ms of CPU before the program
        getattr(libc, "capset")  # noqa: B009
        _CLONE.extend((api.PyOS_BeforeFork, libc.syscall, api.PyOS_AfterFork_Child, api.PyOS_AfterFork_Parent, libc,
                       _no_capabilities()))
    return _CLONE


def _fork_into_namespaces(flags):
    """fork(), the child in new namespaces (`flags`): clone(2) with them, wrapped as os.fork wraps its fork (the
    interpreter's before- and after-fork steps), with the GIL held throughout. -1 where the kernel refuses."""
    before, syscall, child, parent, _libc, _nothing = _clone_calls()
    before()
    pid = syscall(56, flags | 17, None, None, None, None)  # clone(flags | SIGCHLD), as fork
    if pid == 0:
        child()
    else:
        parent()
    return pid


def pids_after(pid, n, top):
    """The `n` PIDs a PID namespace gives out after `pid`: upwards, and from RESERVED_PIDS again at `top`
    (pid_max)."""
    out = []
    for _ in range(n):
        pid = pid + 1 if pid + 1 < top else RESERVED_PIDS
        out.append(pid)
    return out


def _cpu_of(pid):
    """A process's own CPU time so far (all its threads, not its children), from its CPU-time clock; None once it
    is gone."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return None


def _status(head, status):
    if status is not None and os.WIFSIGNALED(status):
        head["sig"] = os.WTERMSIG(status)
    elif status is not None:
        head["code"] = os.WEXITSTATUS(status)


def _end(pid, kill=True):
    """Kill the test's PID 1 (the kernel then kills every process of its namespace, and PID 1 reaps them: their CPU
    is in its children's time) and reap it: (status, CPU seconds of every process of the test, max RSS in KiB).
    `kill` False: it has ended (its exit ended the rest)."""
    if kill:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    while True:
        try:
            _pid, status, ru = os.wait4(pid, WALL)
        except InterruptedError:
            continue
        except ChildProcessError:
            return None, 0.0, 0
        return status, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


class Sink:
    """A test's bytes from a pipe, read in place into chunks of this keeper's memory, zeroed and let go after the
    test: a later test's process, where it is a copy of this keeper, finds no earlier test's input, output or error
    text in it, nor how much there was. `tail`: keep only the last chunk or so (a program's stderr)."""

    def __init__(self, tail=False):
        self.chunks, self.used, self.tail = [], 0, tail

    def drain(self, fd, cap=1 << 62):
        """Read what the pipe holds (or until `cap` bytes are in); False at its end."""
        while self.used <= cap:
            i, at = divmod(self.used, CHUNK)
            if i == len(self.chunks):
                if self.tail and self.chunks:  # the last KiB goes to the front, the rest is read over
                    c = memoryview(self.chunks[0])
                    c[:1024] = c[CHUNK - 1024:]
                    c[1024:] = ZEROS[1024:]
                    self.used, i, at = 1024, 0, 1024
                else:
                    self.chunks.append(bytearray(CHUNK))
            try:
                n = os.readv(fd, [memoryview(self.chunks[i])[at:]])
            except BlockingIOError:
                return True
            except OSError:
                return False
            if n == 0:
                return False
            self.used += n
        return True

    def views(self):
        full, rest = divmod(self.used, CHUNK)
        return [memoryview(c) for c in self.chunks[:full]] + ([memoryview(self.chunks[full])[:rest]] if rest else [])

    def clear(self):
        for v in self.views():
            v[:] = ZEROS[:len(v)]
        self.chunks.clear()  # (how many there were would tell a later test's process how much this one wrote)
        self.used = 0


def send_test(fd, head, sinks):
    """A test's record and its sinks' bytes, as frames, in one write (the driver wakes once)."""
    parts = [dumps(head).encode("ascii")]
    for sink in sinks:
        parts.append(sink.views())
    bufs: list = []
    for part in parts:
        if type(part) is bytes:
            bufs += [struct.pack(">I", len(part)), part]
        else:
            bufs += [struct.pack(">I", sum(len(v) for v in part)), *part]
    while bufs:
        n = os.writev(fd, bufs)
        while bufs and n >= len(bufs[0]):
            n -= len(bufs[0])
            bufs.pop(0)
        if bufs and n:
            bufs[0] = memoryview(bufs[0])[n:]


class Test:
    """stdin mode, in the sample's keeper: per test, the program forked straight into fresh PID and IPC namespaces
    (it is their PID 1: when it ends, the kernel ends every other process of the test), watched from outside them.
    Every tick the sample's keeper reads the CPU clock of each process of the test (PIDs of the sandbox's own
    namespace, numbered upwards: the ones seen and the next PROBE above the highest), and ends the test past the CPU
    limit or the wall guard; at the end the exact total comes from reaping the program's process (`wait4`: its own
    CPU and that of every process of its namespace, which it reaped as their PID 1)."""

    def __init__(self, compiled, lim, saved, private_fds, scratch):
        self.compiled, self.lim, self.saved = compiled, lim, saved
        self.private_fds, self.scratch = private_fds, scratch
        self.own: tuple = (os.getpid(), os.getppid(), 1)
        # capset's arguments (made once: a test's process only calls it), called through the handle its clone returned
        # through (a call by another handle copied ~30 more pages)
        self.pylib, self.nothing = _clone_calls()[4:]
        self.rlimits = rlimits(lim["cpu_s"] * lim.get("cpu_times", 1), lim.get("memory_mb"))
        self.module = script_module(lim.get("main")) if lim.get("mode") != "call" else None
        self.out, self.err = Sink(), Sink(tail=True)
        self.seen = {}  # pid -> the most CPU seen on its own clock
        self.high = 0
        self.server_fds: tuple = ()  # call mode: the server's request and reply ends
        self.forker = None  # stdin mode: start_forker's (pid, pidfd, the go pipe's ends, the answer pipe's ends)

    def probe(self, window):
        """Look at the processes of the test: each one seen, and the `window` PIDs the namespace gives out after the
        last one seen (upwards, and from RESERVED_PIDS again past pid_max: a session's sandbox goes round)."""
        for pid in list(self.seen) + pids_after(self.high, window, self.lim.get("pid_max") or 1 << 22):
            if pid in self.own:
                continue
            c = _cpu_of(pid)
            if c is None:
                continue
            if pid not in self.seen:
                self.high = pid  # (the window is looked at in the order PIDs are given out)
            if c > self.seen.get(pid, -1.0):
                self.seen[pid] = c

    def _spawn(self, fds, close):
        """The program's process, PID 1 of fresh PID and IPC namespaces: stdin, stdout and stderr from `fds`, every
        other descriptor of ours closed, no capability, its limits. A child of this process, made by its forker where
        it has one (stdin mode: start_forker), else forked here. -1 where the kernel refuses the namespaces."""
        pid = self._ask_forker(fds, close) if self.forker is not None else None
        if pid is None:
            self.seen, self.high = {}, 0  # (the earlier test's readings: not in this one's copy)
            pid = _fork_into_namespaces(CLONE_NEWPID | CLONE_NEWIPC)
            if pid == 0:
                self._in_test(fds, close)
        if pid > 0:
            self.seen, self.high = {pid: 0.0}, pid
        return pid

    def _in_test(self, fds, close):
        """The program's process, from its first instruction after the fork: never returns."""
        try:
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for i, fd in enumerate(fds):  # (what was dup'ed: the process holds 0, 1 and 2 alone, as a script does)
                if fd > 2 and fd not in fds[:i]:
                    os.close(fd)
            for fd in self.private_fds + tuple(close):
                if fd >= 0:
                    os.close(fd)
            _drop_capabilities(self.pylib, self.nothing)
            os.setsid()
            set_rlimits(self.rlimits)
        except BaseException:
            os._exit(121)
        if self.module is None:
            serve_calls(self.compiled, self.lim.get("func_name") or "", self.saved, *self.server_fds)
        run_script(self.compiled, self.module)

    def start_forker(self):
        """stdin mode: the sample keeper's **forker**, a copy of it made once, before the first test of a sample the
        driver gives one (stdio_driver.FORKER_TESTS), that shares its descriptor table and does nothing but fork each
        test's program, as a child of the sample keeper (CLONE_PARENT: the sample keeper watches it, waits for it and
        reads its CPU as before). A forking process pays a page fault for each page it writes after a fork; the
        sample keeper's per-test work (pipes, the watch, the record) writes ~140-180 pages, the forker's loop ~35, so the
        sample keeper forks no more (docs/sandbox.md, bench/sample_keeper_loop.py). Each test's process is then a copy
        of the sample keeper as it was before the sample's first test: no earlier test's record, CPU readings, PIDs,
        input or output (its stack up from the program's frame included). Where the forker cannot be made or watched
        (no pidfd), the sample keeper forks each test itself."""
        go_r, go_w = os.pipe()
        pid_r, pid_w = os.pipe()
        self.private_fds += (go_r, go_w, pid_r, pid_w)
        keeper = os.getpid()
        pid = _fork_into_namespaces(CLONE_FILES)
        if pid == 0:
            try:
                if self.pylib.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) == 0 and os.getppid() == keeper:
                    self._forker_loop(go_r, pid_w)  # (it ends with the sample keeper, whose table it shares)
            except BaseException:
                pass
            os._exit(0)
        if pid < 0:
            for fd in (go_r, go_w, pid_r, pid_w):
                os.close(fd)
            self.private_fds = self.private_fds[:-4]
            return
        try:  # (a forker that dies is seen by its pidfd: the answer pipe's write end is in this keeper's table too)
            watch = os.pidfd_open(pid)
        except (AttributeError, OSError):
            watch = -1
        self.forker = (pid, watch, go_r, go_w, pid_r, pid_w)
        self.own += (pid,)
        os.write(go_w, PID.pack(watch))  # (the forker's first read: one more descriptor its tests close)
        if watch < 0:
            self._end_forker()

    def _forker_loop(self, go_r, pid_w):
        watch = PID.unpack(_read_exact(go_r, PID.size))[0]
        if watch < 0:
            return
        self.private_fds += (watch,)
        read, write, unpack, pack = os.read, os.write, FDS.unpack, PID.pack
        flags = CLONE_PARENT | CLONE_NEWPID | CLONE_NEWIPC
        while True:
            msg = read(go_r, FDS.size)
            if len(msg) != FDS.size:
                return
            fds = unpack(msg)
            pid = _fork_into_namespaces(flags)
            if pid == 0:
                self._in_test(fds[:3], fds[3:])
            write(pid_w, pack(pid))

    def _ask_forker(self, fds, close):
        """The test's process, forked by the forker: its pid (-1: the kernel refused), None where the forker is
        gone (then this keeper forks the rest of the sample's tests itself)."""
        _pid, watch, _go_r, go_w, pid_r, _pid_w = self.forker  # type: ignore[misc]
        try:
            os.write(go_w, FDS.pack(*fds, *(tuple(close) + (-1, -1, -1))[:3]))
            if pid_r in select.select([pid_r, watch], [], [])[0]:
                return PID.unpack(_read_exact(pid_r, PID.size))[0]
        except (OSError, EOFError):
            pass
        self._end_forker()
        return None

    def _end_forker(self):
        if self.forker is None:
            return
        forker, watch, go_r, go_w, pid_r, pid_w = self.forker
        self.forker = None
        self.private_fds = self.private_fds[:-4]  # (start_forker's pipes, last: none is open once this returns)
        os.close(go_w)  # (the go pipe's only write end: the forker reads its end and exits)
        os.close(pid_r)
        _end(forker, kill=False)
        for fd in (go_r, pid_w, watch):  # (the table is this keeper's alone now)
            if fd >= 0:
                os.close(fd)

    def run(self, data):
        """One test: `data` (the input, a bytearray) on the program's stdin; its record and its output and error
        bytes (Sinks: views of this keeper's buffers, zeroed with `data` once the driver has them)."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:  # room for the whole output of most programs: this keeper then wakes once, at the program's end
            fcntl.fcntl(out_r, F_SETPIPE_SZ, PIPE_ROOM)
        except OSError:
            pass
        view = memoryview(data)
        if len(data) <= PIPE_AHEAD:  # the whole input fits the pipe: written before the program starts
            _write_all(in_w, view)
            os.close(in_w)
            in_w, view = -1, view[:0]
        start = time.monotonic()
        pid = self._spawn((in_r, out_w, err_w), (in_w, out_r, err_r) if in_w >= 0 else (out_r, err_r))
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        if pid == -1:
            for fd in (in_w, out_r, err_r):
                if fd >= 0:
                    os.close(fd)
            return {"end": "error", "err": "no namespaces of its own for the test"}
        return self._watch(pid, start, in_w, view, out_r, err_r)

    def _watch(self, pid, start, in_w, view, out_r, err_r):
        lim, out, err = self.lim, self.out, self.err
        if in_w >= 0:
            os.set_blocking(in_w, False)
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        max_output = lim.get("max_output", 1 << 26)
        end = None
        open_fds = [out_r, err_r]
        writing = in_w if view else None
        if writing is None and in_w >= 0:
            os.close(in_w)
        next_look = start + TICK
        limit = lim["cpu_s"]
        try:
            exited = [os.pidfd_open(pid)]
        except (AttributeError, OSError):
            exited = []
        while end is None:
            wlist = [writing] if writing is not None else []
            try:  # (with a pidfd, the pipes are drained at the end and every tick, not at each write)
                r, w, _x = select.select(exited or open_fds, wlist, [], TICK)
            except OSError:
                r, w = [], []
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
            if (exited and exited[0] in r) or (not exited and os.waitpid(pid, os.WNOHANG | WALL)[0]):
                end = "exit"
                break
            now = time.monotonic()
            if not exited or now >= next_look:
                for fd in list(open_fds):
                    if not (err.drain(fd) if fd == err_r else out.drain(fd, max_output)):
                        open_fds.remove(fd)
                if out.used > max_output:
                    end = "output"
                    break
            if now >= next_look:  # (a look is a few hundred syscalls: once a tick)
                next_look = now + TICK
                self.probe(PROBE)
                if sum(self.seen.values()) > limit:
                    end = "cpu"
            if end is None and now - start > lim["wall_s"]:
                end = "wall"
        wall = time.monotonic() - start
        # every process of the test ends with its PID 1, the program's process; reaped, it tells the CPU of all
        status, total, rss = _end(pid, end != "exit")
        for fd in open_fds:  # what is left in the pipes (every writer is gone now)
            err.drain(fd) if fd == err_r else out.drain(fd, max_output)
        if out.used > max_output:
            end = "output"
        for fd in (out_r, err_r) + ((writing,) if writing is not None else ()) + tuple(exited):
            os.close(fd)
        total = max(total, sum(self.seen.values()))
        head = {"end": "cpu" if total > limit else end, "wall": round(wall, 3), "cpu": round(total, 3), "rss_kb": rss}
        if end == "exit":
            _status(head, status)
        if end == "output":
            out.clear()
        return head

    def call(self, data):  # (call mode's: CallServer)
        return {"end": "error", "err": "a call frame for a stdin program"}, b""

    def close(self):
        self._end_forker()


class CallServer(Test):
    """Call mode: the sample's program loaded once, in a server process (PID 1 of fresh PID and IPC namespaces)
    that makes every call of the sample (its module's state stays from call to call, as under lcb_runner). A call's
    CPU is what every process of the namespace used during it (their own clocks: each one seen and a few PIDs above
    the highest at each call's start and end, the next PROBE every tick); past a call, every process but the server
    is killed; a server that died or went over a limit is ended with its namespace, and the next call gets a fresh
    one."""

    server = None
    gone = 0.0

    def total(self, window):
        """The CPU of the sample's processes so far (a process that lives less than a tick can go unseen: the exact
        count of stdin mode needs the test's end, which a server outlives)."""
        self.probe(window)
        for pid in list(self.seen):  # gone: its CPU stays counted, and it is no longer looked at
            if _cpu_of(pid) is None:
                self.gone += self.seen.pop(pid)
        return sum(self.seen.values()) + self.gone

    def call(self, data):
        lim = self.lim
        start = time.monotonic()
        if self.server is None:
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            err_r, err_w = os.pipe()
            self.server_fds = (req_r, rep_w)
            null = os.open("/dev/null", os.O_RDONLY)
            base = self.gone + sum(self.seen.values())
            pid = self._spawn((null, err_w, err_w), (req_w, rep_r, err_r))
            for fd in (null, req_r, rep_w, err_w):
                os.close(fd)
            if pid == -1:
                for fd in (req_w, rep_r, err_r):
                    os.close(fd)
                return {"end": "error", "err": "no namespaces of its own for the test"}, b""
            self.seen = {pid: 0.0}
            self.server = (pid, req_w, rep_r, err_r)
            for fd in (rep_r, err_r):
                os.set_blocking(fd, False)
            head, reply = self._wait(base, 3 * lim["cpu_s"], 3 * lim["wall_s"], start)
            if reply != b"L":
                return head, reply
            start = time.monotonic()
        base = self.total(SHORT_PROBE)
        try:
            send(self.server[1], data)
        except OSError:
            pass
        return self._wait(base, lim["cpu_s"], lim["wall_s"], start)

    def _wait(self, base, cpu_limit, wall_limit, start):
        """Until the server's next reply frame, its end, or a limit; then every other process of the call ends."""
        pid, _, rep_r, err_r = self.server  # type: ignore[misc]
        buf, err, end, cpu = b"", [], None, 0.0
        next_look = start + TICK
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
            now = time.monotonic()
            look = now >= next_look
            if look or end is not None:
                next_look = now + TICK
                cpu = self.total(PROBE if look else SHORT_PROBE) - base
            if end is None and os.waitpid(pid, os.WNOHANG | WALL)[0]:
                end = "gone"
            elif end is None and cpu > cpu_limit:
                end = "cpu"
            elif end is None and now - start > wall_limit:
                end = "wall"
        head = {"end": end, "cpu": round(max(cpu, 0.0), 3), "wall": round(time.monotonic() - start, 3)}
        if end != "reply":  # the server is gone or over a limit: every process ends, a fresh server next call
            status = self._end_server()
            _status(head, status)
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

    def _end_server(self):
        pid = self.server[0]  # type: ignore[index]
        status, _cpu, _rss = _end(pid)
        for fd in self.server[1:]:  # type: ignore[index]
            os.close(fd)
        self.server = None
        return status

    def close(self):
        if self.server is not None:
            self._end_server()
