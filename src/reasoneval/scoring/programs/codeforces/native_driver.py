"""The trusted driver of the Codeforces judge (C++ and Python programs, checkers, interactors), run inside the
sandbox as `python -I -c <this file's text> IN OUT`; never imported by the harness. Standard library only.

IN holds a 12-digit ASCII length, that many bytes of JSON with the candidates' part ({"programs": [{"language",
"source"}]}: the samples of one problem),
then, up to EOF, JSON with the trusted part ({"tests": [{"input", "output"}], "cpu_s", "wall_s", "memory_mb",
"compare": "tokens"|"exact", "all_tests", "checker": {"language", "source"} | null, "interactor": ... | null,
"compile": {"cpu_s", "wall_s", "memory_mb"}, "headers": {name: text} (testlib.h, written beside the checker and
the interactor before they are built)}). OUT is the verdict channel: one JSON line, {"verdicts": [...]}
(the checker and the interactor are built once, for every program of the batch).

As the contest driver (sandbox/stdio_driver.py, docs/sandbox.md): the driver ignores signals, makes itself
non-dumpable, reads the candidate's part, gives the processes it forks a PID namespace of their own, drops every
capability and forks the **keeper** (PID 1 of that namespace), then reads the trusted part: the keeper never holds
an expected output it was not sent for a checker run, after every candidate process is gone. The keeper works in
/tmp/judge through a descriptor of the folder (a program may rename it; the judge's files stay where it put them),
writes each of its files anew (whatever a program left under the name is removed first, and the new file is
created with O_EXCL|O_NOFOLLOW: never through a planted link, never into a file a program holds open), runs one
command at a time (fork, rlimits, exec) with its stdin a copy of the test's input and its stdout and stderr in
files that have no name (O_TMPFILE, read back through the keeper's descriptors), measures its CPU and wall time,
kills every other process of the namespace after each command, and answers the driver with the exit status and
the output. The driver compares (or reads the checker's exit status: testlib's 0 OK, 1 wrong answer, 2 presentation
error, 3 the checker failed) and writes the verdict.

The checker and the interactor, once built (before any program of the batch runs), are sealed: the keeper keeps a
read-only descriptor of each and removes its name; a Python one runs as `python -c SEALED_BOOT` reading its text
from that descriptor, a binary is made exec-only and run with fexecve. So a program (which runs in the same folder,
as the same user) can neither replace nor read them. The checker's three files exist by name only while it runs,
when no process of the program is left.

Interactive problems: the keeper starts the interactor (its input and log unnamed files it opens as
/proc/self/fd/3 and 4) and then the program, with two pipes between them; both are limited. The program plays at
the same time as the interactor, and the sandbox has a /proc: the interactor is non-dumpable before the program
starts (a Python interactor makes itself so and says it on a pipe the keeper waits on; an exec-only binary is made
so by the kernel), so no process of the program can open its /proc/PID/fd (the game's input, its own text) or mem.
When the wall clock runs out while neither used its CPU time (a deadlock, a program that stopped reading), the
verdict is idleness_limit, as Codeforces names it.
"""
import os
import sys
import time

# <prelude>: in the sandbox this import block is prelude.py's own text (sandbox/texts.py); the harness and the tests
# import the names from there.
from reasoneval.scoring.programs.sandbox.prelude import (
    _harden,
    _ignore_signals,
    _read_exact,
    _read_part,
    _restore_signals,
    loads,
)

# </prelude>

TICK = 0.002
WORK = "/tmp/judge"
DETAIL = 300
CAP = 1 << 26  # bytes of a program's output read back at most
COMPILERS = {"cpp": ["/usr/bin/g++", "-O2", "-std=c++17", "-pipe", "-I", ".", "-o", "{name}", "{name}.cpp"]}
PASSED, WRONG, TIME, MEMORY, RUNTIME = "passed", "wrong_answer", "time_limit", "memory_limit", "runtime_error"
COMPILE, IDLE, JUDGE_FAIL = "compile_error", "idleness_limit", "judge_error"


def _dumps(x):
    import json
    return json.dumps(x, ensure_ascii=True)


def send(fd, obj):
    data = _dumps(obj).encode("ascii")
    view = memoryview(b"%012d" % len(data) + data)
    while view:
        view = view[os.write(fd, view):]


def recv(fd):
    head = _read_exact(fd, 12)
    return loads(_read_exact(fd, int(head)).decode("ascii"))


# --- the keeper: PID 1 of the candidate's namespace ---

# A sealed Python program (a checker, an interactor) run from the keeper's descriptor of its text, never from a name
# in the work folder: `python -I -S -c SEALED_BOOT HANDSHAKE_FD SOURCE_FD NAME ARGS...`. An interactor first makes
# itself non-dumpable and says so on HANDSHAKE_FD ("-": none): the keeper starts the program only then, so no
# process of the program can open the interactor's /proc/PID/mem or fd (its input, its own text) at any time.
SEALED_BOOT = """import os as _o, sys as _s
def _reasoneval_sealed():
    if _s.argv[1] != "-":
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
            _s.stderr.write("judge: could not make the interactor non-dumpable")
            _s.exit(3)
        _o.write(int(_s.argv[1]), b"1")
        _o.close(int(_s.argv[1]))
    fd, name, parts = int(_s.argv[2]), _s.argv[3], []
    while True:
        b = _o.pread(fd, 1 << 20, sum(map(len, parts)))
        if not b:
            break
        parts.append(b)
    _o.close(fd)
    del _s.argv[1:4]
    _s.argv[0] = name
    return b"".join(parts), name
_src, _name = _reasoneval_sealed()
del _reasoneval_sealed, _o, _s
exec(compile(_src, _name, "exec"), {"__name__": "__main__", "__file__": _name, "__builtins__": __builtins__})
"""
EXEC_ONLY = 0o100  # a sealed binary's mode: not readable, so the kernel makes the process that runs it non-dumpable


def _kill_others(pids):
    """Every other process of the namespace where the keeper is its PID 1 (kill(-1) reaches all but itself), else
    the process groups of the commands it started (the fallback without a PID namespace)."""
    for _ in range(1000):
        try:
            if os.getpid() == 1:
                os.kill(-1, 9)
            else:
                for pid in pids:
                    try:
                        os.killpg(pid, 9)
                    except OSError:
                        pass
        except OSError:
            pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.001)


def _child(argv, stdio, extra, lim, saved, wd, exe_fd=None):
    """Exec argv with stdio as fds 0-2 and `extra` as fds 3, 4, ..., in the work folder (by its descriptor: a
    program may rename the folder, never redirect the judge); exe_fd: run that sealed binary (fexecve)."""
    import fcntl
    import resource
    try:
        os.setpgid(0, 0)
        os.fchdir(wd)
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 3 + len(extra) + 8) for fd in list(stdio) + list(extra)]
        for target, fd in enumerate(moved):
            os.dup2(fd, target)  # inheritable
        if exe_fd is not None:
            exe_fd = fcntl.fcntl(exe_fd, fcntl.F_DUPFD_CLOEXEC, 3 + len(extra))
        os.closerange(3 + len(extra), exe_fd if exe_fd is not None else 4096)
        if exe_fd is not None:
            os.closerange(exe_fd + 1, 4096)
        cpu = int(lim["cpu_s"]) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = int(lim["memory_mb"]) << 20
        for r, v in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_STACK, min(mem, 256 << 20)),
                     (resource.RLIMIT_FSIZE, int(lim.get("fsize_mb", 64)) << 20)):
            hard = resource.getrlimit(r)[1]
            if hard == resource.RLIM_INFINITY or v < hard:
                resource.setrlimit(r, (v, v))
        _restore_signals(saved)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        os.execve(argv[0] if exe_fd is None else exe_fd, argv, env)
    except BaseException as e:
        os.write(2, f"exec failed: {e}".encode("ascii", "replace"))
    os._exit(127)


def _cpu_of(pid):
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except OSError:
        return None


def _status(st):
    if os.WIFSIGNALED(st):
        return {"code": None, "sig": os.WTERMSIG(st)}
    return {"code": os.WEXITSTATUS(st), "sig": None}


def _watch(procs, wall_s, pids):
    """Wait for every (pid, lim) to end, killing one past its CPU limit and all past wall_s; results by pid."""
    start = time.monotonic()
    out, alive = {}, dict(procs)
    timed_out = False
    while alive:
        for pid in list(alive):
            done, st, ru = os.wait4(pid, os.WNOHANG)
            if done:
                out[pid] = dict(_status(st), cpu=ru.ru_utime + ru.ru_stime, killed=None)
                del alive[pid]
                continue
            cpu = _cpu_of(pid)
            if cpu is not None and cpu > alive[pid]["cpu_s"]:
                os.killpg(pid, 9)
                _, st, ru = os.wait4(pid, 0)
                out[pid] = dict(_status(st), cpu=ru.ru_utime + ru.ru_stime, killed="cpu")
                del alive[pid]
        if alive and time.monotonic() - start > wall_s:
            timed_out = True
            for pid in list(alive):
                cpu = _cpu_of(pid) or 0.0
                os.killpg(pid, 9)
                _, st, ru = os.wait4(pid, 0)
                out[pid] = dict(_status(st), cpu=max(cpu, ru.ru_utime + ru.ru_stime), killed="wall")
                del alive[pid]
        if alive:
            time.sleep(TICK)
    wall = time.monotonic() - start
    _kill_others(pids)
    for r in out.values():
        r["wall"] = wall
    return out, timed_out


def _pread_all(fd, cap):
    parts, size = [], 0
    while size < cap:
        b = os.pread(fd, min(1 << 20, cap - size), size)
        if not b:
            break
        parts.append(b)
        size += len(b)
    return b"".join(parts).decode("utf-8", "replace")


def _unnamed(wd, data=""):
    """A file of the work folder's tmpfs that has no name (O_TMPFILE): nothing of the program's can reach it but
    through the descriptor it is given. Read from offset 0."""
    fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600, dir_fd=wd)
    view = memoryview(data.encode("utf-8", "surrogatepass"))
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _clear(wd, name):
    """Whatever a program left under `name` (a file, a link, a FIFO, a folder) gone from the work folder."""
    try:
        os.unlink(name, dir_fd=wd)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        os.rename(name, f".gone-{time.monotonic_ns()}", src_dir_fd=wd, dst_dir_fd=wd)


def _write_new(wd, name, data, mode=0o644):
    """The judge's own file: a new one (never through a link or into a file a program left open)."""
    _clear(wd, name)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=wd)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(data)


def _sealed_argv(seal, args, handshake_fd=None, first_fd=3):
    """argv, extra fds (from fd `first_fd` on) and the binary's fd for a sealed program: (language, fd, name)."""
    language, fd, name = seal
    if language == "python":
        hs = "-" if handshake_fd is None else str(first_fd + 1)
        extra = [fd] + ([handshake_fd] if handshake_fd is not None else [])
        return [sys.executable, "-I", "-S", "-c", SEALED_BOOT, hs, str(first_fd), name] + list(args), extra, None
    return [name] + list(args), [], fd


def _run(cmd, saved, wd, sealed):
    """One command: argv (or a sealed program's), stdin a copy of the test's input (or nothing), stdout and stderr
    into unnamed files read back through the keeper's own descriptors."""
    stdin = _unnamed(wd, cmd["stdin_data"]) if cmd.get("stdin_data") is not None else os.open("/dev/null", os.O_RDONLY)
    out, err = _unnamed(wd), _unnamed(wd)
    argv, extra, exe = cmd["argv"], [], None
    if cmd.get("sealed"):
        argv, extra, exe = _sealed_argv(sealed[cmd["sealed"]], cmd["argv"])
    pid = os.fork()
    if pid == 0:
        _child(argv, (stdin, out, err), extra, cmd, saved, wd, exe)
    res, _ = _watch({pid: cmd}, cmd["wall_s"], [pid])
    r = res[pid]
    r["stdout"] = _pread_all(out, CAP) if cmd.get("read_stdout", True) else ""
    text = _pread_all(err, 1 << 16)
    r["stderr"] = text if len(text) <= 2000 else text[:1000] + "\n...\n" + text[-1000:]  # a compiler's first error
    for fd in (stdin, out, err):
        os.close(fd)
    return r


def _interact(cmd, saved, wd, sealed):
    """The program and the interactor, each one's stdout the other's stdin. The interactor's input and log are
    unnamed files it opens as /proc/self/fd/3 and 4 (testlib's interactors open the paths they are given), its own
    text or binary a sealed descriptor; it is non-dumpable before the program starts (a Python interactor says so
    on a pipe; a sealed binary is exec-only, which the kernel makes non-dumpable), so the program can reach
    nothing of the game, by name or through /proc."""
    inter = cmd["interactor"]
    if not os.path.isdir("/proc/self/fd"):
        return {"error": "no /proc in the sandbox: the interactor's files are given as /proc/self/fd paths"}
    p_r, i_w = os.pipe()  # interactor -> program
    i_r, p_w = os.pipe()  # program -> interactor
    err_p, err_i, game, log = _unnamed(wd), _unnamed(wd), _unnamed(wd, cmd["input"]), _unnamed(wd)
    python = sealed[inter["sealed"]][0] == "python"
    hs_r, hs_w = os.pipe()  # the Python interactor's "non-dumpable now"
    argv, extra, exe = _sealed_argv(sealed[inter["sealed"]], ["/proc/self/fd/3", "/proc/self/fd/4"],
                                    hs_w if python else None, 5)
    ipid = os.fork()
    if ipid == 0:
        _child(argv, (i_r, i_w, err_i), [game, log] + extra, inter, saved, wd, exe)
    os.close(hs_w)
    ready = True
    if python:
        import select
        ready = bool(select.select([hs_r], [], [], inter["wall_s"])[0]) and os.read(hs_r, 1) == b"1"
    os.close(hs_r)
    ppid = os.fork() if ready else -1
    if ppid == 0:
        _child(cmd["program"]["argv"], (p_r, p_w, err_p), [], cmd["program"], saved, wd)
    for fd in (p_r, i_w, i_r, p_w, game, log):
        os.close(fd)
    procs = {ipid: inter, ppid: cmd["program"]} if ready else {ipid: inter}
    res, timed_out = _watch(procs, cmd["wall_s"] if ready else 0.0, list(procs))
    i_err = _pread_all(err_i, 1 << 16)[-2000:]
    p_res = res.get(ppid) or {"code": None, "sig": 9, "cpu": 0.0, "killed": None, "wall": 0.0}
    out = {"program": dict(p_res, stderr=_pread_all(err_p, 1 << 16)[-2000:]),
           "interactor": dict(res[ipid], stderr=i_err), "timed_out": timed_out}
    os.close(err_p)
    os.close(err_i)
    if not ready:
        out["error"] = "the interactor did not start: " + _printable(i_err)
    return out


def _seal(wd, name, language):
    """The judge's own program out of the work folder: the keeper keeps a read-only descriptor of the built file
    (sealed before any program of the batch ran) and removes its name; a binary becomes exec-only."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=wd)
    if language != "python":
        os.fchmod(fd, EXEC_ONLY)
    os.unlink(name, dir_fd=wd)
    return language, fd, name


def keeper_side(saved, cmd_r, res_w):
    os.makedirs(WORK, exist_ok=True)
    wd = os.open(WORK, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    sealed = {}
    while True:
        try:
            cmd = recv(cmd_r)
        except EOFError:
            os._exit(0)
        op = cmd["op"]
        if op == "write":
            _write_new(wd, cmd["name"], cmd["data"])
            send(res_w, {"ok": True})
        elif op == "remove":
            for name in cmd["names"]:
                try:
                    _clear(wd, name)
                except OSError:
                    pass
            send(res_w, {"ok": True})
        elif op == "seal":  # the judge's own programs, kept out of the candidates' reach
            sealed[cmd["name"]] = _seal(wd, cmd["path"], cmd["language"])
            send(res_w, {"ok": True})
        elif op == "run":
            send(res_w, _run(cmd, saved, wd, sealed))
        elif op == "interact":
            send(res_w, _interact(cmd, saved, wd, sealed))


# --- the trusted side ---

def _printable(text):
    return "".join(c if " " <= c <= "~" else "?" for c in text[:DETAIL])


def _tokens(text):
    return text.split()


def _same(got, expected, compare):
    if compare == "exact":
        return got.rstrip("\n") == expected.rstrip("\n")
    return _tokens(got) == _tokens(expected)


class Judge:
    def __init__(self, cmd_w, res_r, part, trusted):
        self.cmd_w, self.res_r, self.trusted = cmd_w, res_r, trusted
        self.part = part

    def ask(self, cmd):
        send(self.cmd_w, cmd)
        return recv(self.res_r)

    def argv(self, language, name):
        """A program's command, run in the work folder."""
        if language == "python":
            return [sys.executable, "-I", "-S", name + ".py"]
        return ["./" + name]

    @staticmethod
    def source_name(language, name):
        return name + (".py" if language == "python" else ".cpp")

    @staticmethod
    def built_name(language, name):
        return name + (".py" if language == "python" else "")

    def build(self, program, name):
        """Write the program's text and compile it (C++); None, or the failure's detail."""
        language = program["language"]
        self.ask({"op": "write", "name": self.source_name(language, name), "data": program["source"]})
        if language == "python":
            return None
        lim = self.trusted["compile"]
        argv = [a.replace("{name}", name) for a in COMPILERS[language]]
        r = self.ask({"op": "run", "argv": argv, "cpu_s": lim["cpu_s"], "wall_s": lim["wall_s"],
                      "memory_mb": lim["memory_mb"], "fsize_mb": 256})
        if r["code"] != 0 or r["killed"]:
            status = r["code"] if r["sig"] is None else f"signal {r['sig']}"
            why = "compile time limit" if r["killed"] else f"exit {status}"
            return f"{why}: {r['stderr'][:DETAIL]}"
        return None

    def failure(self, r):
        """A run's failure class from its status, or None if it ended normally."""
        lim = self.trusted
        if r["killed"] == "cpu" or r["cpu"] > lim["cpu_s"] or r["sig"] == 24:
            return TIME, f"CPU {r['cpu']:.2f} s over the limit {lim['cpu_s']:.2f} s"
        if r["killed"] == "wall":
            return TIME, f"wall clock {r['wall']:.1f} s"
        err = r.get("stderr", "")
        if "bad_alloc" in err or "MemoryError" in err or "Cannot allocate memory" in err:
            return MEMORY, _printable(err[-DETAIL:])
        if r["sig"] == 25:
            return RUNTIME, "output limit exceeded"
        if r["sig"] is not None or r["code"] != 0:
            how = f"signal {r['sig']}" if r["sig"] is not None else f"exit status {r['code']}"
            return RUNTIME, _printable(how + ": " + err[-DETAIL:])
        return None

    def check(self, index, test, r):
        """The checker's say on one test (the program's output is in out.txt): (verdict, detail)."""
        files = {"input.txt": test["input"], "answer.txt": test["output"], "output.txt": r["stdout"]}
        for name, data in files.items():  # no process of the program is left while they exist
            self.ask({"op": "write", "name": name, "data": data})
        c = self.ask({"op": "run", "sealed": "checker", "argv": ["input.txt", "output.txt", "answer.txt"],
                      "cpu_s": 10.0, "wall_s": 20.0, "memory_mb": 1024, "read_stdout": False})
        self.ask({"op": "remove", "names": list(files)})
        detail = _printable(c["stderr"][-DETAIL:])
        if c["killed"] or c["sig"] is not None or c["code"] not in (0, 1, 2):
            status = c["code"] if c["sig"] is None else f"signal {c['sig']}"
            return JUDGE_FAIL, f"checker failed ({status}): {detail}"
        return {0: PASSED, 1: WRONG, 2: WRONG}[c["code"]], ("presentation error: " if c["code"] == 2 else "") + detail

    def one_test(self, index, test, program_argv):
        lim = self.trusted
        limits = {"cpu_s": lim["cpu_s"], "wall_s": lim["wall_s"], "memory_mb": lim["memory_mb"]}
        if lim.get("interactor"):
            r = self.ask({"op": "interact", "wall_s": lim["wall_s"], "input": test["input"],
                          "program": dict(limits, argv=program_argv),
                          "interactor": {"sealed": "interactor", "cpu_s": 10.0, "wall_s": lim["wall_s"],
                                         "memory_mb": 1024}})
            if r.get("error"):
                return JUDGE_FAIL, _printable(r["error"]), r.get("program") or {}
            p, i = r["program"], r["interactor"]
            if r["timed_out"] and p["cpu"] < lim["cpu_s"] and i["cpu"] < 10.0:
                return IDLE, f"no progress for {p['wall']:.1f} s (a deadlock, or a program that stopped reading)", p
            bad = self.failure(p)
            if i["code"] == 0 and i["sig"] is None:
                return (bad or (PASSED, "")) + (p,)
            if i["code"] in (1, 2) and i["sig"] is None:
                return (bad[0] if bad and bad[0] == TIME else WRONG,
                        _printable(i["stderr"][-DETAIL:]) or "the interactor said wrong answer", p)
            if bad:
                return bad + (p,)
            return JUDGE_FAIL, "interactor failed: " + _printable(i["stderr"][-DETAIL:]), p
        r = self.ask(dict(limits, op="run", argv=program_argv, stdin_data=test["input"]))
        bad = self.failure(r)
        if bad:
            return bad + (r,)
        if lim.get("checker"):
            return self.check(index, test, r) + (r,)
        if _same(r["stdout"], test["output"], lim.get("compare", "tokens")):
            return PASSED, "", r
        return WRONG, "", r

    def verdicts(self):
        """Each program's verdict; the checker and interactor built once, before the first."""
        tests = self.trusted["tests"]
        base = {"passed": 0, "ran": 0, "total": len(tests), "first": -1, "cpu": 0.0, "detail": ""}
        programs = self.part["programs"]
        for header, text in (self.trusted.get("headers") or {}).items():  # testlib.h, for <> and "" includes
            self.ask({"op": "write", "name": header, "data": text})
        for name, prog in (("checker", self.trusted.get("checker")), ("interactor", self.trusted.get("interactor"))):
            if prog:
                failed = self.build(prog, name)
                if failed:
                    detail = _printable(f"{name} does not build: {failed}")
                    return [dict(base, verdict=JUDGE_FAIL, detail=detail) for _ in programs]
                self.ask({"op": "seal", "name": name, "path": self.built_name(prog["language"], name),
                          "language": prog["language"]})
                self.ask({"op": "remove", "names": [self.source_name(prog["language"], name)]})
        return [self.verdict(program, base) for program in programs]

    def verdict(self, program, base):
        failed = self.build(program, "main")
        if failed:
            return dict(base, verdict=COMPILE, detail=_printable(failed))
        program_argv = self.argv(program["language"], "main")
        verdict, first, detail_text, passed, ran, cpu = PASSED, -1, "", 0, 0, 0.0
        for index, test in enumerate(self.trusted["tests"]):
            v, detail, r = self.one_test(index, test, program_argv)
            ran += 1
            cpu = max(cpu, round(float(r.get("cpu", 0.0)), 3))
            if v == PASSED:
                passed += 1
                continue
            if verdict == PASSED:
                verdict, first, detail_text = v, index, detail
            if not self.trusted.get("all_tests"):
                break
        self.ask({"op": "remove", "names": ["main", "main.cpp", "main.py"]})
        return dict(base, verdict=verdict, first=first, detail=detail_text, passed=passed, ran=ran, cpu=cpu)


def main():
    saved = _ignore_signals()
    in_fd, verdict_fd = int(sys.argv[1]), int(sys.argv[2])
    try:
        part = _read_part(in_fd)
        _harden()
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        sys.stdout.flush()
        child = os.fork()
    except BaseException as e:
        os.write(verdict_fd, (_dumps({"verdicts": [], "error": f"driver: {type(e).__name__}: {e}"})
                              + "\n").encode("ascii"))
        os._exit(0)
    if child == 0:
        for fd in (in_fd, verdict_fd, cmd_w, res_r):
            os.close(fd)
        del part
        keeper_side(saved, cmd_r, res_w)
    for fd in (cmd_r, res_w):
        os.close(fd)
    os.dup2(2, 1)
    try:
        raw = []
        while True:
            b = os.read(in_fd, 1 << 20)
            if not b:
                break
            raw.append(b)
        trusted = loads(b"".join(raw).decode("ascii"))
        out = {"verdicts": Judge(cmd_w, res_r, part, trusted).verdicts()}
    except BaseException as e:
        out = {"verdicts": [], "error": f"driver: {type(e).__name__}: {str(e)[:200]}"}
    try:
        os.kill(child, 9)
    except BaseException:
        pass
    os.write(verdict_fd, (_dumps(out) + "\n").encode("ascii"))
    os._exit(0)


if __name__ == "__main__":
    main()
