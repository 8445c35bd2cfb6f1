"""The candidate's side of the contest driver (stdio_driver.py is the trusted side): the **keeper**, one per sandbox,
which forks a **sample keeper** per sample, which forks the sample's program straight into fresh namespaces for
every test, watches it from outside them, and ends it with everything it started. Run inside the sandbox as part of
the stdio driver's text (sandbox/texts.py); standard library only. The framing both sides use (`send`, `recv`) is
in watch.py.

docs/sandbox.md, "Contest programs":

1. The keeper (forked by the text's boot before the driver's text was compiled or any program, input or expected
   output read, so its memory never holds one, nor the parser's leftovers: texts.STDIO_DRIVER_BOOT; in the driver's
   PID namespace, non-dumpable, out of every program's reach) keeps CAP_SYS_ADMIN of the sandbox's user namespace
   (and no other capability) to make each test's namespaces, forks the lean keeper (stdin samples), then imports the
   preload list and runs the programs' import header (ours) into a `__main__` module, once per sandbox (call-mode
   samples). The lean keeper imports only the cheap modules most programs use.
2. Per sample a keeper forks the sample keeper, the only process that ever holds that sample's program: it reads the
   program from the driver and compiles it once; a lean keeper's sample keeper gives it the header's names it can
   reach (names_needed, lean_module), their modules imported then.
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
    """The keeper's loop: a setup frame ({"preload", "base", "header", "ahead", "scratch"}), then a frame per sample
    (`s`, or `l` for a stdin sample: the lean keeper's): it forks the sample's keeper, which serves that sample's
    tests, reaps it, empties the scratch directories and says `clean`."""
    try:
        _only_sys_admin(libc)
        os.setsid()
        # a network namespace of the keeper's own, its loopback down: no test can connect anywhere, so none leaves
        # a socket state (a port in TIME_WAIT) for a later one (once here: a network namespace per test costs ms)
        libc.unshare(CLONE_NEWNET)
        setup = loads(recv(ctl_r).decode("ascii"))
        scratch = [(d, int(n)) for d, n in setup.get("scratch", ()) if d in PRIVATE_DIRS]
        # lcb_runner's reliability guard sets builtins.quit to None: calling quit() is a runtime error there, and
        # here (every test's processes are forks of this one; exit() and sys.exit() stay: docs/contests.md)
        __import__("builtins").quit = None  # type: ignore[attr-defined]
        header = setup.get("header") or ""
        preload = [str(n) for n in setup.get("preload", ())]
        context = {"header": header, "main": None, "ahead": frozenset(str(n) for n in setup.get("ahead", ())),
                   "preload": preload, "names": None, "ops": name_ops()}
        _clone_calls()
        lean = None
        if header and setup.get("base") is not None:
            lean = _fork_lean_keeper(saved, ctl_r, cmd_r, res_w, scratch, context, setup["base"])
        _import_all(preload)
        # The programs' import header (ours, trusted: every program starts with it), run once here into the module
        # every stdin test's program runs in: a test's process runs only what follows it (a fresh process per test
        # still; its module a copy, as every page of a fork is).
        if header:
            context["main"] = _header_module(header)
        if lean is not None:
            lean_pid, lean_w, names_w = lean
            context["close"] = (lean_w,)  # (no sample keeper of this keeper's, nor its programs, holds it)
            try:
                names = header_names(header, context["main"].__dict__)
            except BaseException:  # (none is known) the lean keeper then runs the whole header itself
                names = None
            send(names_w, dumps(names).encode("ascii"))
            os.close(names_w)
        _freeze()
        while True:
            try:
                frame = recv(ctl_r)
            except BaseException:
                break
            if frame == b"l" and lean is not None:
                if os.waitpid(lean_pid, os.WNOHANG)[0] == 0:
                    send(lean_w, b"l")  # (the lean keeper says `clean` itself)
                    continue
                lean = None  # (it is gone: this keeper judges stdin samples too, as before there was one)
            _serve_sample(saved, ctl_r, cmd_r, res_w, scratch, context)
    except BaseException:
        pass
    os._exit(0)


def _serve_sample(saved, ctl_r, cmd_r, res_w, scratch, context):
    status = _one_sample(saved, ctl_r, cmd_r, res_w, scratch, context)
    cleaned = empty_private_dirs(scratch)
    send(res_w, dumps({"clean": cleaned, "status": status}).encode("ascii"))


def _fork_lean_keeper(saved, ctl_r, cmd_r, res_w, scratch, context, base):
    """The **lean keeper**: a fork of the keeper made before the keeper imports the header's modules, which judges
    the stdin samples. Every test's process is a fork of a sample's keeper, and each MiB that process copies costs the
    test ~0.065 ms of CPU (its fork, page faults and exit: docs/benchmarks.md), so the lean keeper imports only `base`
    (cheap modules most programs use) and each sample's keeper gives its program the names of the header that the
    program can reach, importing only their modules (`header_names`, from the keeper, says which module gives
    which name). Returns (its pid, the pipe that hands it samples, the pipe for the header's names)."""
    names_r, names_w = os.pipe()
    lean_r, lean_w = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(names_r)
        os.close(lean_r)
        return pid, lean_w, names_w
    try:
        os.close(ctl_r)
        os.close(names_w)
        os.close(lean_w)
        _import_all(base)
        # the compiler's first use in a process sets it up: ~0.7 ms and ~145 page faults, which every sample keeper
        # (a fresh fork) paid again before its program's compile; here once (the keeper's header compile does it there)
        compile("pass", "<warm>", "exec")
        names = loads(recv(names_r).decode("ascii"))
        os.close(names_r)
        if type(names) is not dict:  # the header's names could not be told apart: the header as the keeper runs it
            _import_all(context["preload"])
            context["main"] = _header_module(context["header"])
        context["names"] = names if type(names) is dict else None
        _freeze()
        while True:
            try:
                recv(lean_r)
            except BaseException:
                break
            _serve_sample(saved, lean_r, cmd_r, res_w, scratch, context)
    except BaseException:
        pass
    os._exit(0)


def _import_all(names):
    for name in names:
        try:
            __import__(name)
        except BaseException:
            pass


def _header_module(header):
    main = type(os)("__main__")
    main.__dict__["__builtins__"] = __builtins__
    exec(compile(header, "<solution>", "exec"), main.__dict__)
    return main


def _freeze():
    try:
        import gc
        gc.freeze()  # this process's objects are never collected in a test's processes: fewer pages copied
    except BaseException:
        pass


def header_names(header, namespace):
    """What the import header binds, as {name: [module, attribute or None for the module itself]}, each checked
    against `namespace` (where the header ran): None when anything differs, or a line is neither `from M import *`
    nor `import M` (a call such as `sys.setrecursionlimit` aside), so that only a header this can read exactly is
    ever given in part."""
    import sys
    out = {}
    for line in header.splitlines():
        words = line.split()
        if len(words) == 4 and words[0] == "from" and words[2:] == ["import", "*"]:
            module = sys.modules.get(words[1])
            if module is None:
                return None
            public = getattr(module, "__all__", None)
            if public is None:
                public = [n for n in dir(module) if not n.startswith("_")]
            for name in public:
                out[str(name)] = [words[1], str(name)]
        elif len(words) == 2 and words[0] == "import" and "." not in words[1]:
            out[words[1]] = [words[1], None]
        elif not (line.startswith("sys.") and line.endswith(")")) and line.strip():
            return None
    fresh = set(type(os)("__main__").__dict__) | {"__builtins__"}
    bound = {k for k in namespace if k not in fresh}
    if bound != set(out):
        return None
    for name, (module, attribute) in out.items():
        value = sys.modules[module] if attribute is None else getattr(sys.modules[module], attribute, _missing)
        if value is not namespace[name]:
            return None
    return out


_missing = object()

# names whose use can read a module's globals without naming them (or reach another module's): a program that uses
# any of them gets the whole header, as it would anywhere
DYNAMIC_NAMES = frozenset((
    "globals", "vars", "locals", "dir", "eval", "exec", "__import__", "breakpoint", "help", "modules", "f_globals",
    "f_locals", "__globals__", "__dict__", "_getframe", "_current_frames", "tb_frame", "f_back", "gi_frame",
    "cr_frame", "ag_frame", "get_referrers", "get_referents", "get_objects", "settrace", "setprofile",
    "get_type_hints", "ForwardRef", "__builtins__", "import_module"))
DYNAMIC_MODULES = frozenset(("inspect", "importlib", "pdb", "code", "codeop", "runpy", "__main__", "ctypes", "doctest",
                             "pydoc", "rlcompleter", "builtins"))


def name_ops():
    """What scan_code reads instructions by, once in the keeper: {opcode: shift} of the instructions whose argument
    names a global (the shift gives the index into co_names), the opcodes of IMPORT_NAME, EXTENDED_ARG, STORE_NAME and
    LOAD_NAME, and those an import statement is made of."""
    import opcode
    import sys
    m = opcode.opmap
    ops = {m[n]: 0 for n in ("LOAD_NAME", "STORE_NAME", "DELETE_NAME", "STORE_GLOBAL", "DELETE_GLOBAL",
                             "LOAD_FROM_DICT_OR_GLOBALS") if n in m}
    ops[m["LOAD_GLOBAL"]] = 1 if sys.version_info >= (3, 11) else 0
    imports = frozenset(m[n] for n in ("RESUME", "NOP", "CACHE", "LOAD_CONST", "IMPORT_NAME", "IMPORT_FROM",
                                       "POP_TOP", "SWAP", "LOAD_ATTR") if n in m)
    return ops, m["IMPORT_NAME"], opcode.EXTENDED_ARG, m["STORE_NAME"], m["LOAD_NAME"], imports


def scan_code(code, ops):
    """(the global names it reads, writes or deletes, less those its opening import statements bind first; the
    modules it imports, each with its parents; every name in co_names) of the code and the code nested in it, read
    from its instructions. A name the module's opening imports bind (`import sys`, `from collections import
    Counter`, `input = sys.stdin.readline`: nothing before them can run code that reads a global) has the program's
    value whenever anything reads it, never the header's."""
    global_ops, import_op, extended, store_name, load_name, import_ops = ops
    globals_: set = set()
    modules: set = set()
    names: set = set()
    first: set = set()
    todo, opening = [code], True
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        raw, arg = c.co_code, 0
        for i in range(0, len(raw) - 1, 2):
            op, a = raw[i], raw[i + 1] | arg
            if op == extended:
                arg = a << 8
                continue
            arg = 0
            if opening:  # (the module's code: still in its opening imports?)
                if op == store_name:
                    first.add(c.co_names[a])
                elif not (op in import_ops or (op == load_name and c.co_names[a] in first)):
                    opening = False
            if op in global_ops:
                globals_.add(c.co_names[a >> global_ops[op]])
            elif op == import_op:
                parts = c.co_names[a].split(".")
                modules.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
        opening = False
        todo.extend(k for k in c.co_consts if type(k) is type(code))
    return globals_ - first, modules, names


def names_needed(scan, names):
    """The header's names (of `names`, header_names') that a program of this scan (scan_code's) reads, writes or
    deletes; None where it can reach its globals another way (DYNAMIC_NAMES, DYNAMIC_MODULES): it gets the whole
    header."""
    used, modules, every = scan
    if every & DYNAMIC_NAMES or modules & DYNAMIC_MODULES:
        return None
    return sorted(n for n in used if n in names)


def lean_module(need, names):
    """The `__main__` module for a program after the header, in a lean keeper's sample keeper: the header's names
    it needs (names_needed's), the same objects the whole header binds, their modules imported here."""
    import sys
    _import_all(sorted({names[n][0] for n in need}))
    main = type(os)("__main__")
    main.__dict__["__builtins__"] = __builtins__
    for name in need:
        module, attribute = names[name]
        main.__dict__[name] = sys.modules[module] if attribute is None else getattr(sys.modules[module], attribute)
    return main


def _scan_program(compiled, ops):
    try:
        return scan_code(compiled, ops)
    except BaseException:  # (none is known) then no module is imported ahead and the lean keeper runs the header
        return None


def _only_sys_admin(libc):
    """Of every capability the keeper may have (the fallback's user namespace gives it all), CAP_SYS_ADMIN alone:
    what it needs to make each test's namespaces."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)(1 << 21, 1 << 21, 0, 0, 0, 0)  # effective, permitted: CAP_SYS_ADMIN (21)
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _one_sample(saved, ctl_r, cmd_r, res_w, scratch, context):
    """Fork the sample's keeper (it alone ever holds the sample's program) and wait until it is gone."""
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (ctl_r,) + context.get("close", ()):
                os.close(fd)
            sample_keeper(saved, cmd_r, res_w, scratch, context)
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

def sample_keeper(saved, cmd_r, res_w, scratch, context):
    """One sample: its settings and program, compiled once, then per test (`t` + the input) the program forked
    straight into fresh PID and IPC namespaces, where it is PID 1 (its end ends every process of the test), and a
    record, the program's output; call mode: `c` + a call's input per call (CallServer). `e` ends the sample."""
    lim = loads(recv(cmd_r).decode("ascii"))
    code = recv(cmd_r)
    head: dict = {"end": "compile", "err": ""}
    text, main = context["header"], context["main"]
    lean = context["names"] is not None  # (a lean keeper's sample keeper: the header not run yet)
    scan = None
    try:
        source = code.decode("utf-8", "surrogatepass")
        rest = source[len(text) + 1:]
        if (main is not None or lean) and lim.get("mode") != "call" and source.startswith(text + "\n") \
                and "__future__" not in rest:
            # what follows the header (ours, valid), on the same lines as in the whole program (its syntax errors and
            # tracebacks read the same), run in the module the header already ran in (a lean keeper's: in a module
            # with the header's names the program can reach). (A `from __future__` after the header is a syntax
            # error of the whole program only: such a program is compiled whole.)
            compiled = compile("\n" * (text.count("\n") + 1) + rest, "<solution>", "exec")
            scan = _scan_program(compiled, context["ops"])
            if lean:
                need = names_needed(scan, context["names"]) if scan is not None else None
                try:
                    main = lean_module(need, context["names"]) if need is not None else None
                except BaseException:
                    main = None
                if main is None:  # the whole header, run here
                    _import_all(context["preload"])
                    main = _header_module(text)
            lim["main"] = main
        else:
            compiled = compile(source, "<solution>", "exec")  # the whole program: its syntax errors, as lcb_runner's
            scan = _scan_program(compiled, context["ops"])
            if lean:  # (it runs the header in each test: its modules loaded here, once)
                _import_all(context["preload"])
    except BaseException as e:
        compiled, head = None, {"end": "compile", "err": type(e).__name__ + ": " + str(e)[:200]}
    if compiled is not None and scan is not None:
        # the harmless standard-library modules (the harness's list) that the program imports, imported once here
        _import_all(scan[1] & context["ahead"])
    if lean:
        _freeze()
    del code
    # The handlers Python started with, here once for every test's process (no process but the driver's and the
    # keeper's can reach this one to signal it: the programs are each in a PID namespace of their own).
    _restore_signals(saved)
    empty = free_counts(scratch)  # (the keeper emptied them before this sample)
    runner = (CallServer if lim.get("mode") == "call" else Test)(compiled, lim, {}, (cmd_r, res_w), scratch)
    if compiled is not None and lim.get("mode") != "call" and lim.get("forker"):
        runner.start_forker()  # (every test's process a copy of this keeper as it is now, before any test: watch.py)
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
        del data, record  # (not in the next test's process, where this keeper forks it itself)
    runner.close()
    os._exit(0)
