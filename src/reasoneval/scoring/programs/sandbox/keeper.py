"""The candidate's side of the contest driver (stdio_driver.py is the trusted side): the **keeper**, one per sandbox,
which forks a **sample keeper** per sample, which forks the sample's program straight into fresh namespaces for
every test, watches it from outside them, and ends it with everything it started. Run inside the sandbox as part of
the stdio driver's text (sandbox/texts.py); standard library only. The framing both sides use (`send`, `recv`) is
in watch.py.

docs/sandbox.md, "Contest programs":

1. The keeper (forked by the text's boot before the driver's text was compiled or any program, input or expected
   output read, so its memory never holds one, nor the parser's leftovers: texts.STDIO_DRIVER_BOOT; in the driver's
   PID namespace, non-dumpable, out of every program's reach) keeps CAP_SYS_ADMIN of the sandbox's user namespace
   (and no other capability) to make each test's namespaces, imports the preload list and runs the programs' import
   header (ours) into a `__main__` module, once per sandbox.
2. Per sample it forks the sample keeper, the only process that ever holds that sample's program: it reads the
   program from the driver and compiles it once.
3. Per test the sample keeper forks the program straight into new PID and IPC namespaces
   (`clone(CLONE_NEWPID | CLONE_NEWIPC)`): the program is PID 1 of its own namespace, finds no System V object or
   POSIX queue of an earlier test, and is in the keeper's network namespace (no loopback up: no socket state).
   Every tick the sample keeper reads the CPU clock of every process of the test (PIDs of the sandbox's namespace,
   given out in order: the ones seen and the next PROBE), and kills the program past the CPU limit or the wall
   guard: the kernel then kills every process of its namespace, which the program (their PID 1) reaps. Reaping the
   program (`wait4`) gives the exact CPU of all of them (every process of the namespace was reaped by its parent or
   by PID 1; the seccomp filter refuses the `SIGCHLD` dispositions that would let a child go unreaped). The program
   ending ends the namespace the same way: no process of a test outlives it.
4. After each test the sample keeper empties the private scratch directories without recursion and whatever the
   modes (every directory is made 0700 and its entries moved to the top before removal: no depth, mode or name can
   stop it); after the sample the keeper reaps it, does the same and says `clean`.
"""
import os
import struct

# <prelude>: in the sandbox this import block is dropped (the driver's text already holds prelude.py's text, and
# this file's text follows it: sandbox/texts.py); the harness and the tests import the names from there.
from reasoneval.scoring.programs.sandbox.prelude import _read_exact, _restore_signals, dumps, loads

# </prelude>
# <scratch>: in the sandbox this import block is scratch.py's text
from reasoneval.scoring.programs.sandbox.scratch import PRIVATE_DIRS, empty_private_dirs, free_counts, left_in

# </scratch>
# <watch>: in the sandbox this import block is watch.py's text (each part's text is in the driver's once)
from reasoneval.scoring.programs.sandbox.watch import (
    CLONE_NEWNET,
    MAX_FRAME,
    WALL,
    CallServer,
    Test,
    _clone_calls,
    recv,
    send,
    send_test,
)

# </watch>


# --- the keeper: one per sandbox, a fresh sample keeper per sample ---

def keeper_side(saved, libc, ctl_r, cmd_r, res_w):
    """The keeper's loop: a setup frame ({"preload", "scratch"}), then a frame per sample (`s`): it forks the
    sample's keeper, which serves that sample's tests, reaps it, empties the scratch directories and says `clean`."""
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
        # The programs' import header (ours, trusted: every program starts with it), run once here into the module
        # every stdin test's program runs in: a test's process runs only what follows it (a fresh process per test
        # still; its module a copy, as every page of a fork is).
        header = setup.get("header") or ""
        main = None
        if header:
            main = type(os)("__main__")
            main.__dict__["__builtins__"] = __builtins__
            exec(compile(header, "<solution>", "exec"), main.__dict__)
        _clone_calls()
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
            status = _one_sample(saved, ctl_r, cmd_r, res_w, scratch,
                                 (header, main, frozenset(str(n) for n in setup.get("ahead", ()))))
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


def _one_sample(saved, ctl_r, cmd_r, res_w, scratch, header):
    """Fork the sample's keeper (it alone ever holds the sample's program) and wait until it is gone."""
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ctl_r)
            sample_keeper(saved, cmd_r, res_w, scratch, header)
        except BaseException:
            pass
        os._exit(1)
    while True:
        try:
            _pid, st = os.waitpid(pid, WALL)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        return st


# --- the sample's keeper: one per sample, its program's process per test ---

def sample_keeper(saved, cmd_r, res_w, scratch, header):
    """One sample: its settings and program, compiled once, then per test (`t` + the input) the program forked
    straight into fresh PID and IPC namespaces, where it is PID 1 (its end ends every process of the test), and a
    record, the program's output; call mode: `c` + a call's input per call (CallServer). `e` ends the sample."""
    lim = loads(recv(cmd_r).decode("ascii"))
    code = recv(cmd_r)
    head: dict = {"end": "compile", "err": ""}
    text, main, ahead = header
    try:
        source = code.decode("utf-8", "surrogatepass")
        rest = source[len(text) + 1:]
        if main is not None and lim.get("mode") != "call" and source.startswith(text + "\n") and "__future__" not in rest:
            # what follows the header (ours, valid), on the same lines as in the whole program (its syntax errors and
            # tracebacks read the same), run in the module the header already ran in. (A `from __future__` after
            # the header is a syntax error of the whole program only: such a program is compiled whole.)
            compiled = compile("\n" * (text.count("\n") + 1) + rest, "<solution>", "exec")
            lim["main"] = main
        else:
            compiled = compile(source, "<solution>", "exec")  # the whole program: its syntax errors, as lcb_runner's
    except BaseException as e:
        compiled, head = None, {"end": "compile", "err": type(e).__name__ + ": " + str(e)[:200]}
    if compiled is not None and ahead:
        # the harmless standard-library modules (the harness's list) that the program names, imported once here
        for name in _names(compiled) & ahead:
            try:
                __import__(name)
            except BaseException:
                pass
    del code
    # The handlers Python started with, here once for every test's process (no process but the driver's and the
    # keeper's can reach this one to signal it: the programs are each in a PID namespace of their own).
    _restore_signals(saved)
    empty = free_counts(scratch)  # (the keeper emptied them before this sample)
    runner = (CallServer if lim.get("mode") == "call" else Test)(compiled, lim, {}, (cmd_r, res_w), scratch)
    while True:
        try:
            (n,) = struct.unpack(">I", _read_exact(cmd_r, 4))
            kind = _read_exact(cmd_r, 1) if n else b""
            if kind not in (b"t", b"c") or n > MAX_FRAME:
                break
            data = bytearray(n - 1)  # the input, read in place (zeroed below)
            got = 0
            while got < n - 1:
                k = os.readv(cmd_r, [memoryview(data)[got:]])
                if not k:
                    raise EOFError("closed")
                got += k
        except BaseException:
            break
        if kind == b"c":  # call mode: the sample's server holds its calls anyway
            try:
                record, reply = runner.call(bytes(data)) if compiled is not None else (dict(head), b"")
            except BaseException as e:
                record, reply = {"end": "error", "err": "sample keeper: " + type(e).__name__ + ": " + str(e)[:200]}, b""
            send(res_w, dumps(record).encode("ascii"))
            send(res_w, reply)
            continue
        if compiled is None:
            record = dict(head)
        else:
            try:
                record = runner.run(data)
            except BaseException as e:
                record = {"end": "error", "err": "sample keeper: " + type(e).__name__ + ": " + str(e)[:200]}
            record["clean"] = empty_private_dirs(scratch) if left_in(scratch, empty) else 0
        send_test(res_w, record, (runner.out, runner.err))
        runner.out.clear()
        runner.err.clear()
        memoryview(data)[:] = bytes(len(data))
        del data
    runner.close()
    os._exit(0)


def _names(code):
    """Every name the code and the code nested in it use (a module it imports among them)."""
    names, todo = set(), [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if type(k) is type(code))
    return names
