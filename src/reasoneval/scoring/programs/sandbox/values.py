"""Values between the HumanEval/MBPP driver's two sides (driver.py): tagged JSON of built-in values (`encode`,
`decode`; the JSON text is prelude.py's `dumps`), sets rebuilt in their sender's iteration order (`set_in_order`),
subclasses of built-in types as their built-in values, and the hooks each side sets for what is not data (`_OPAQUE`, `_REFERENCE`). Part of
driver.py's text in the sandbox (sandbox/texts.py); standard library only.
"""
import math
import sys

MAX_ITEMS = 1 << 20


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


