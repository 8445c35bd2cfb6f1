"""The trusted driver that runs inside the sandbox (`python -I -c <this file's text>`): tests and candidate apart.

Standard library only, Python 3.8+: it runs under the sandbox's interpreter, never imported by the harness.

argv: IN and OUT, two file descriptors that no other process of the sandbox holds (bwrap's PID 1 keeps only
stdin/stdout/stderr, which carry nothing here). IN (a host file the candidate never sees): a 12-digit ASCII
length, that many bytes of JSON with the candidate's part ({"code": ..., "shared": [tests] or absent}), then,
up to EOF, JSON with the trusted part ({"prelude": code, "tests": [code, ...], "proxies": [names]}).

1. The driver makes itself non-dumpable (without capabilities, no process of the sandbox can ptrace it nor
   open its /proc/PID/mem, fd or environ), reads the candidate's part only, and forks. The child closes IN
   and OUT (so the trusted part is never in its memory or reach, nor the verdict channel), points its stdout
   at stderr, executes the candidate code in a fresh module namespace, then serves calls read from a pipe.
2. The parent (trusted) reads the trusted part and runs the tests in its own interpreter: the prelude
   (HumanEval's prompt, with its helper functions, or MBPP's test imports) and the tests, with each name in
   `proxies` bound to a stub that sends the call's arguments to the candidate and decodes the reply. Values
   cross as data (tagged JSON of exact built-in types and a few standard library containers: no subclass, no
   object of the candidate's, so no `__eq__` of its own ever runs here).
3. The verdict, `<passed> <total> <ok|exited|killed>\\n`, is the only thing written to OUT (killed: a signal
   ended the candidate's process).

Shared mode (`shared` in the candidate's part; tasks whose tests need the candidate's objects, e.g. MBPP
test_setup_code that builds instances of the candidate's class): the tests run in the candidate's
namespace, and the child reports each test's outcome through the pipe. The candidate can fake that report:
the scorer flags these samples (details `shared_interpreter: true`).
"""
import _json
import builtins
import math
import os
import select
import struct
import sys

# (traceback, fractions, decimal, collections: imported only where needed, and JSON through the C accelerator
# `_json` rather than the `json` package, which imports `re`: each costs milliseconds at every program's start)

MAX_FRAME = 32 << 20
MAX_ITEMS = 1 << 20
PR_SET_DUMPABLE = 4


def _read_exact(fd, n):
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError("closed")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


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


def dumps(x):
    """JSON text of None, bool, int, float (finite), str, list, and dict with str keys: what encode() gives."""
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
        if math.isnan(x) or math.isinf(x):
            raise ValueError("non-finite float")
        return float.__repr__(x)
    if t is str:
        return _json.encode_basestring_ascii(x)
    if t is list:
        return "[" + ",".join([dumps(v) for v in x]) + "]"
    if t is dict:
        return "{" + ",".join([_json.encode_basestring_ascii(k) + ":" + dumps(v) for k, v in x.items()]) + "}"
    raise ValueError(f"cannot write a {t.__name__}")


class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = None

    @staticmethod
    def parse_constant(name):
        raise ValueError(f"JSON constant {name}")


_scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]


def loads(text):
    """One JSON value, the whole text (the C scanner of the json package, without the package)."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("text after the JSON value")
    return value


# --- values as data: exact built-in types only ---

# (the type: ignore comments are for mypy, which checks this untyped file)
_ITER_TYPES = tuple(type(x) for x in (  # type: ignore[var-annotated]
    iter([]), iter(()), iter(range(0)), iter(""), iter({}), iter(set()), map(abs, []), filter(None, []), zip(),
    reversed([]), enumerate([]), (i for i in ()), iter(b""),  # type: ignore[var-annotated]
    {}.keys().__iter__(), {}.values().__iter__(), {}.items().__iter__()))


class NotPlain(Exception):
    pass


def encode(x, depth=0):
    if depth > 200:
        raise NotPlain("nested deeper than 200")
    t = type(x)
    if x is None or t is bool or t is str:
        return x
    if t is int:
        return x if -(1 << 53) < x < (1 << 53) else {"i": str(x)}
    if t is float:
        return {"n": repr(x)} if (math.isnan(x) or math.isinf(x)) else x
    if t is list:
        return [encode(v, depth + 1) for v in x]
    if t is tuple:
        return {"t": [encode(v, depth + 1) for v in x]}
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    if t is set or t is frozenset:
        return {"s" if t is set else "f": [encode(v, depth + 1) for v in x]}
    if t is bytes:
        return {"b": x.hex()}
    if t is complex:
        return {"c": [repr(x.real), repr(x.imag)]}
    if t is range:
        return {"r": [x.start, x.stop, x.step]}
    # the standard library's containers: the trusted side rebuilds them as its own (their __eq__ is the stdlib's)
    collections = sys.modules.get("collections")  # a Counter exists only if its module was imported
    if collections is not None and t in (collections.Counter, collections.OrderedDict, collections.defaultdict):
        tag = {collections.Counter: "C", collections.OrderedDict: "O", collections.defaultdict: "d"}[t]
        return {tag: [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    if collections is not None and t is collections.deque:
        return {"q": [encode(v, depth + 1) for v in x]}
    # a Fraction or a Decimal exists only if its module was imported
    if "fractions" in sys.modules and t is sys.modules["fractions"].Fraction:
        return {"F": [encode(x.numerator), encode(x.denominator)]}
    if "decimal" in sys.modules and t is sys.modules["decimal"].Decimal:
        return {"E": str(x)}
    if isinstance(x, _ITER_TYPES) and t in _ITER_TYPES:
        items = []
        for v in x:
            items.append(encode(v, depth + 1))
            if len(items) > MAX_ITEMS:
                raise NotPlain(f"iterator of more than {MAX_ITEMS} items")
        return {"it": items}
    raise NotPlain(f"a {t.__name__} is not a plain built-in value")


def decode(x, depth=0):
    if depth > 200:
        raise ValueError("nested deeper than 200")
    t = type(x)
    if x is None or t in (bool, str, int, float):
        return x
    if t is list:
        return [decode(v, depth + 1) for v in x]
    if t is dict and len(x) == 1:
        (tag, v), = x.items()
        if tag == "i" and type(v) is str and len(v) <= 4000:
            return int(v)
        if tag == "n" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "t" and type(v) is list:
            return tuple(decode(e, depth + 1) for e in v)
        if tag == "d" and type(v) is list:  # dict, and defaultdict (its default_factory cannot cross)
            return {decode(k, depth + 1): decode(e, depth + 1) for k, e in v}
        if tag == "s" and type(v) is list:
            return {decode(e, depth + 1) for e in v}
        if tag == "f" and type(v) is list:
            return frozenset(decode(e, depth + 1) for e in v)
        if tag == "b" and type(v) is str:
            return bytes.fromhex(v)
        if tag == "c" and type(v) is list and len(v) == 2 and all(type(e) is str for e in v):
            return complex(float(v[0]), float(v[1]))
        if tag == "r" and type(v) is list and len(v) == 3 and all(type(e) is int for e in v):
            return range(*v)
        if tag in ("C", "O") and type(v) is list:
            pairs = [(decode(k, depth + 1), decode(e, depth + 1)) for k, e in v]
            import collections
            return collections.Counter(dict(pairs)) if tag == "C" else collections.OrderedDict(pairs)
        if tag == "q" and type(v) is list:
            import collections
            return collections.deque(decode(e, depth + 1) for e in v)
        if tag == "F" and type(v) is list and len(v) == 2:
            num, den = decode(v[0], depth + 1), decode(v[1], depth + 1)
            if type(num) is int and type(den) is int:
                import fractions
                return fractions.Fraction(num, den)
        if tag == "E" and type(v) is str and len(v) <= 4000:
            import decimal
            return decimal.Decimal(v)
        if tag == "it" and type(v) is list:
            return iter([decode(e, depth + 1) for e in v])
    raise ValueError("not a value the driver encodes")


def _print_exc():
    import traceback
    traceback.print_exc(limit=3)


# --- the candidate's side (the child process) ---

def candidate_main(part, req_r, resp_w):
    ns = {"__name__": "__main__", "__builtins__": builtins}
    shared = part.get("shared")
    try:
        exec(compile(part["code"], "<candidate>", "exec"), ns)
    except BaseException as e:  # SystemExit too: the candidate's module did not load
        _print_exc()
        _send(resp_w, {"loaded": False, "error": type(e).__name__})
        os._exit(1)
    if shared is not None:
        _send(resp_w, {"loaded": True})
        for test in shared:
            try:
                exec(compile(test, "<test>", "exec"), ns)
                ok = True
            except Exception:
                _print_exc()
                ok = False
            _send(resp_w, {"test": ok})
        os._exit(0)
    _send(resp_w, {"loaded": True})
    while True:
        try:
            req = _recv(req_r)
        except EOFError:
            os._exit(0)
        try:
            fn = ns[req["name"]]
            result = fn(*decode(req["args"]), **decode(req["kwargs"]))  # type: ignore[operator]
            reply = {"value": encode(result)}
        except NotPlain as e:
            reply = {"error": "TypeError", "message": f"the candidate returned {e}"}
        except BaseException as e:  # SystemExit inside a call: one failed call, as an exception
            reply = {"error": type(e).__name__, "message": str(e)[:500]}
        _send(resp_w, reply)


# --- the trusted side (the parent process) ---

class CandidateGone(BaseException):
    """The candidate's process ended or broke the protocol: a BaseException, so that no test's own
    `except Exception` can swallow it (the remaining tests all fail)."""


class CandidateError(Exception):
    pass


def _exception(name, message):
    cls = getattr(builtins, name, None) if isinstance(name, str) else None
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, (SystemExit,)):
        try:
            return cls(message)
        except Exception:
            pass
    return CandidateError(f"{name}: {message}")


def make_proxy(name, req_w, resp_r):
    def proxy(*args, **kwargs):
        try:
            request = {"name": name, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
        except NotPlain as e:
            raise TypeError(f"argument cannot cross to the candidate: {e}") from None
        try:
            _send(req_w, request)
            reply = _recv(resp_r)
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
    proxy.__name__ = name
    return proxy


def _child_state(child):
    """Why the candidate's process stopped answering: "killed" when a signal ended it (an OOM kill, a kill from
    outside the sandbox, a CPU limit: the harness runs the program again before a verdict counts), else
    "exited" (it exited, or closed its end of the pipe)."""
    for _ in range(200):  # its pipe closes a moment before its exit status exists (up to 1 s on a loaded machine)
        try:
            pid, status = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            return "exited"
        if pid:
            return "killed" if os.WIFSIGNALED(status) else "exited"
        select.select([], [], [], 0.005)
    return "exited"


def trusted_main(child, in_fd, verdict_fd, req_w, resp_r):
    raw = b""
    while True:
        b = os.read(in_fd, 1 << 20)
        if not b:
            break
        raw += b
    part = loads(raw.decode("ascii"))
    tests = part["tests"]
    passed, state = 0, "ok"
    try:
        hello = _recv(resp_r)
        loaded = isinstance(hello, dict) and hello.get("loaded") is True
        if not loaded and isinstance(hello, dict) and hello.get("error") == "SystemExit":
            state = "exited"
    except Exception:  # EOF, or a malformed reply
        loaded = False
        state = _child_state(child)
    if loaded and part.get("shared"):
        for _ in tests:
            try:
                r = _recv(resp_r)
            except Exception:  # EOF, or a malformed reply
                state = _child_state(child)
                break
            passed += 1 if (isinstance(r, dict) and r.get("test") is True) else 0
    elif loaded:
        g = {"__name__": "__reasoneval_tests__", "__builtins__": builtins}
        try:
            exec(compile(part.get("prelude", ""), "<prelude>", "exec"), g)
        except Exception:
            _print_exc()
            tests = []
        for name in part["proxies"]:
            g[name] = make_proxy(name, req_w, resp_r)
        for test in tests:
            try:
                exec(compile(test, "<test>", "exec"), g)
                passed += 1
            except CandidateGone:
                state = _child_state(child)
                break
            except Exception:
                _print_exc()
    try:
        os.kill(child, 9)  # SIGKILL
    except OSError:
        pass
    os.write(verdict_fd, f"{passed} {len(part['tests'])} {state}\n".encode("ascii"))
    os._exit(0)


def main():
    # argv: the fd to read the input from, the fd of the verdict channel (neither held by any other process
    # of the sandbox; the child closes both before the candidate's code runs)
    in_fd, verdict_fd = int(sys.argv[1]), int(sys.argv[2])
    head = _read_exact(in_fd, 12)
    if not head.isdigit():
        raise SystemExit("driver: malformed input")
    part = loads(_read_exact(in_fd, int(head)).decode("ascii"))
    # standard modules both sides import (named by the harness from the trusted prelude): imported once, here,
    # before the fork, rather than once in each process
    for name in part.get("preload", []):
        try:
            __import__(name)
        except Exception:
            pass
    # Non-dumpable before the fork (the child inherits it, and nothing of the candidate's has run yet): without
    # capabilities, no process of the sandbox can ptrace this one, nor open its /proc/PID/mem, fd or environ.
    try:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError("prctl failed")
    except Exception:
        os.write(2, b"driver: could not make the trusted process non-dumpable\n")
        os._exit(3)
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        os.dup2(2, 1)
        for fd in (in_fd, verdict_fd, req_w, resp_r):
            os.close(fd)
        del head
        candidate_main(part, req_r, resp_w)
        os._exit(0)
    del part
    for fd in (req_r, resp_w):
        os.close(fd)
    os.dup2(2, 1)  # the tests' own prints: stderr; the verdict has its own fd
    trusted_main(child, in_fd, verdict_fd, req_w, resp_r)


if __name__ == "__main__":
    main()
