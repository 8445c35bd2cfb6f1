"""Symbolic equivalence: runs ONLY inside grading worker processes (see pool.py).

math-verify parses LaTeX with latex2sympy2_extended's ANTLR parser, which builds sympy objects
without eval. Its ExprExtractionConfig path (plain expressions such as `x^2+1`) calls sympy's
`parse_expr`, which evals; that is why this module must never be imported for use in the parent:
workers have a wall-time limit (killed by the parent) and an RLIMIT_AS memory limit.

math-verify decides the structure (sets, tuples, intervals, relations, matrices); the comparison of
numbers inside those structures is ours (`_numeric_eq`), so that it follows the policy of normalize.py: exact
values compare exactly, a tolerance applies only to a decimal approximation, by the digits it writes.

math-verify has no hook for it, so `_our_numbers()` puts `_numeric_eq` in place of math-verify's
`sympy_numeric_eq` only for the length of our own calls and puts math-verify's back after: lm-eval's
`math_verify` metric (`lmeval_math_verify`), graded by the same workers, always runs math-verify as lm-eval
does, whatever the worker graded before (issue 41.9).
"""

from __future__ import annotations

import contextlib
import functools
import re
from fractions import Fraction
from typing import Any, Iterator

from reasoneval.scoring.maths.normalize import (
    DEFAULT_REL_TOL,
    Num,
    Policy,
    decimal_num,
    normalize_answer,
    numbers_equal,
    repair_latex,
    trailing_unit,
    units_conflict,
)

_mv: Any = None
_policy = Policy()


def _math_verify() -> Any:
    global _mv
    if _mv is None:
        import math_verify
        import math_verify.grader
        import math_verify.parser

        # The parent enforces the wall time (it kills the worker), so math-verify's SIGALRM timeouts are
        # off; its one-time warning about that is expected here.
        math_verify.grader.TIMEOUT_WARNING_SHOWN = True
        math_verify.parser.TIMEOUT_WARNING_SHOWN = True
        _mv = math_verify
    return _mv


_ORIGINAL = "_reasoneval_original_sympy_numeric_eq"


@contextlib.contextmanager
def _our_numbers() -> Iterator[None]:
    """Inside: our numeric rule in place of math-verify's (which rounds to a number of decimals and, between two
    exact expressions, calls a difference below 1e-15 zero); math-verify's own again after, on any exit."""
    grader = _math_verify().grader
    original = _math_verify_numeric_eq()
    grader.sympy_numeric_eq = _numeric_eq
    try:
        yield
    finally:
        grader.sympy_numeric_eq = original


def _math_verify_numeric_eq() -> Any:
    """math-verify's own sympy_numeric_eq (kept aside the first time it is seen)."""
    grader = _math_verify().grader
    if not hasattr(grader, _ORIGINAL):
        setattr(grader, _ORIGINAL, grader.sympy_numeric_eq)
    return getattr(grader, _ORIGINAL)


def _variants(s: str) -> list[str]:
    out = []
    for v in (normalize_answer(s), repair_latex(s)):
        if v and v not in out:
            out.append(v)
    return out


@functools.lru_cache(maxsize=4096)
def _parse_cached(s: str) -> tuple[Any, ...]:
    return tuple(_parse(s))


def _parse(s: str) -> list[Any]:
    mv = _math_verify()
    # Wrapped in \boxed{} so math-verify treats the whole string as the answer (its own convention
    # for bare answers); parsing_timeout=None: the parent enforces the wall time, SIGALRM is not used.
    return mv.parse("\\boxed{" + s + "}", parsing_timeout=None)


# ----- numbers inside parsed expressions ------------------------------------------------------------------


def _has_float(x: Any) -> bool:
    import sympy

    try:
        return bool(x.atoms(sympy.Float))
    except Exception:
        return False


_DECIMAL_LITERAL_RE = re.compile(r"(?<![\d.])\d*\.\d+(?:[eE][+-]?\d+)?")
_written: dict[Fraction, Num] = {}


def _note_written_decimals(*texts: str) -> None:
    """The decimals as written in this pair (a parsed Float forgets trailing zeros: 1.7320 has 5 digits)."""
    _written.clear()
    for t in texts:
        for lit in _DECIMAL_LITERAL_RE.findall(t):
            n = decimal_num(lit)
            if n is not None and (n.value not in _written or n.sig > _written[n.value].sig):
                _written[n.value] = n


def _float_num(f: Any) -> Num | None:
    """A sympy Float as the decimal it was written as (its digits, or the literal in the pair's text)."""
    import mpmath.libmp as mlib
    from sympy.core.evalf import prec_to_dps

    text = mlib.to_str(f._mpf_, max(1, prec_to_dps(f._prec)))
    n = decimal_num(text)
    if n is not None:
        w = _written.get(abs(n.value))
        if w is not None and w.sig > n.sig:
            return w if n.value >= 0 else w.scaled(Fraction(-1))
    return n


def _as_num(x: Any) -> Num | None:
    """A real number as a Num: a lone decimal (times an exact factor, e.g. 5.3 \\times 10^{-9}) keeps the digits
    it was written with; an expression with floats elsewhere is an approximation to its fewest digits;
    an exact expression is exact (its value to 60 digits, as a fraction, for the comparison)."""
    import sympy

    if not isinstance(x, sympy.Expr) or x.free_symbols or not x.is_number:
        return None
    floats = list(x.atoms(sympy.Float))
    if not floats:
        v = _exact_value(x)
        return None if v is None else Num(v)
    if len(floats) == 1:
        f = floats[0]
        rest = sympy.simplify(x / f) if x != f else sympy.Integer(1)
        if not _has_float(rest) and rest.is_number:
            d = _float_num(f)
            k = _exact_value(rest)
            if d is not None and k is not None:
                return d.scaled(k)
    nums = [n for n in (_float_num(f) for f in floats) if n is not None]
    v = _exact_value(x)
    if v is None or not nums:
        return None
    sig = min(n.sig for n in nums)
    return Num(v, True, abs(v) * Fraction(1, 2) / Fraction(10) ** (sig - 1), sig)


def _exact_value(x: Any) -> Fraction | None:
    import sympy

    if isinstance(x, sympy.Rational):
        return Fraction(int(x.p), int(x.q))
    try:
        v = x.evalf(60)
    except Exception:
        return None
    if not v.is_real or not isinstance(v, sympy.Float):
        return Fraction(0) if v == 0 else None
    r = sympy.Rational(v)
    return Fraction(int(r.p), int(r.q))


def _exact_zero(d: Any) -> bool:
    """Whether an expression without floats is exactly 0: evaluated to 60 digits with strict precision (a
    nonzero 5^{-300} is told from 0), and simplified when the evaluation cannot decide."""
    import sympy

    if d == 0:
        return True
    if isinstance(d, sympy.Rational):
        return False
    if not d.is_number:
        return False  # with variables: math-verify's own simplification decides (sympy_symbolic_eq)
    try:
        v = d.evalf(60, strict=True)
        if v.is_number:
            return bool(v == 0)
    except Exception:
        pass
    try:
        return bool(sympy.simplify(d) == 0)
    except Exception:
        return False


def _pct_val(x: Any) -> Any:
    mv = _math_verify()
    return mv.grader.get_pct_val(x, x)


def _numeric_eq(a: Any, b: Any, float_rounding: int = 6, numeric_precision: int = 15) -> bool:
    """math-verify's sympy_numeric_eq with our policy (normalize.numbers_equal)."""
    import sympy
    from sympy.matrices import MatrixBase
    from sympy.matrices.expressions import MatrixExpr

    mv = _math_verify()
    if isinstance(a, (MatrixBase, MatrixExpr)) and isinstance(b, (MatrixBase, MatrixExpr)):
        a, b = mv.grader.safe_sympy_doit(a), mv.grader.safe_sympy_doit(b)
        if isinstance(a, MatrixBase) and isinstance(b, MatrixBase) and a.shape == b.shape:
            return all(_numeric_eq(x, y) for x, y in zip(a.flat(), b.flat()))
        return False
    if not isinstance(a, sympy.Expr) or not isinstance(b, sympy.Expr):
        return False
    for x in {a, _pct_val(a)}:
        for y in {b, _pct_val(b)}:
            if _leaf_eq(x, y):
                return True
    return False


def _leaf_eq(a: Any, b: Any) -> bool:
    import sympy

    try:
        a = a.doit() if hasattr(a, "doit") else a
        b = b.doit() if hasattr(b, "doit") else b
    except Exception:
        pass
    fa, fb = _has_float(a), _has_float(b)
    if not fa and not fb:
        try:
            return _exact_zero(sympy.expand(a - b) if (a.free_symbols or b.free_symbols) else a - b)
        except Exception:
            return False
    if a.free_symbols or b.free_symbols:
        # Decimals inside an expression with variables (0.5x vs x/2): equal coefficients, to the tolerance.
        try:
            d = sympy.nsimplify(sympy.expand(a - b), rational=True)
            return bool(d == 0)
        except Exception:
            return False
    ra, ia = _split_complex(a)
    rb, ib = _split_complex(b)
    if ra is None or rb is None:
        return False
    if (ia is None) != (ib is None):
        return False
    parts = [(ra, rb)] + ([(ia, ib)] if ia is not None else [])
    for x, y in parts:
        nx, ny = _as_num(x), _as_num(y)
        if nx is None or ny is None or not numbers_equal(nx, ny, _policy):
            return False
    return True


def _split_complex(x: Any) -> tuple[Any, Any]:
    """(real part, imaginary part or None) of a number."""
    import sympy

    try:
        if x.is_real is not False and not x.has(sympy.I):
            return x, None
        re_, im_ = x.as_real_imag()
        if im_ == 0:
            return re_, None
        return re_, im_
    except Exception:
        return None, None


# ----- alternative readings ----------------------------------------------------------------------------------


def _imaginary_unit(items: list[Any]) -> list[Any]:
    """`i` (and `I`) read as the imaginary unit."""
    import sympy

    out = []
    for x in items:
        try:
            syms = {s for s in x.free_symbols if s.name in ("i", "I")} if hasattr(x, "free_symbols") else set()
        except Exception:
            syms = set()
        if syms:
            out.append(x.subs({s: sympy.I for s in syms}))
    return out


def _as_sequence(items: list[Any]) -> list[Any]:
    """A row or column matrix as the tuple of its entries; a closed interval [a, b] as the list (a, b)."""
    import sympy
    from sympy.matrices import MatrixBase

    out = []
    for x in items:
        if isinstance(x, MatrixBase) and 1 in x.shape:
            out.append(sympy.Tuple(*x))
        elif isinstance(x, sympy.Interval) and not x.left_open and not x.right_open:
            out.append(sympy.Tuple(x.start, x.end))
        elif isinstance(x, sympy.Tuple):
            out.append(x)
    return out


def _is_vector(items: list[Any]) -> bool:
    from sympy.matrices import MatrixBase

    return any(isinstance(x, MatrixBase) and 1 in x.shape for x in items)


def _verify(g: list[Any], p: list[Any]) -> bool:
    mv = _math_verify()
    if mv.verify(g, p, timeout_seconds=None, allow_set_relation_comp=True):
        return True
    gi, pi = _imaginary_unit(g), _imaginary_unit(p)
    if gi or pi:
        if mv.verify(gi or g, pi or p, timeout_seconds=None, allow_set_relation_comp=True):
            return True
    if _is_vector(g) != _is_vector(p):
        gs, ps = _as_sequence(g), _as_sequence(p)
        if gs and ps and mv.verify(gs, ps, timeout_seconds=None, allow_set_relation_comp=True):
            return True
    if g and p and _numeric_eq(g[0], p[0]):
        return True
    return False


def symbolic_equal(pred: str, ref: str, rel_tol: float | None, max_chars: int,
                   approx: str | None = None, units: str | None = None) -> bool:
    """math-verify's structure on both sides (normalised first, then as given), our numeric rule on numbers."""
    global _policy
    if len(pred) > max_chars or len(ref) > max_chars:
        return False  # too long to parse symbolically; the parent already compared the strings
    pol = Policy.make(rel_tol, approx, units)
    if units_conflict(trailing_unit(pred), trailing_unit(ref), pol):
        return False
    _math_verify()
    _policy = pol
    _note_written_decimals(pred, ref)
    # A reference meets many predictions in a run: its parse is cached (sympy objects are immutable).
    # Both sides as normalised and as given: each form rescues cases the other misses.
    golds = [list(_parse_cached(v)) for v in _variants(ref)]
    preds = [list(_parse_cached(v)) for v in _variants(pred)]
    with _our_numbers():
        return _any_equal(golds, preds)


def _any_equal(golds: list[list[Any]], preds: list[list[Any]]) -> bool:
    for g, p in _combinations(golds, preds):
        if _verify(g, p):
            return True
    return False


def _combinations(golds: list[list[Any]], preds: list[list[Any]]) -> list[tuple[list[Any], list[Any]]]:
    """Normalised with normalised, then as given with as given (a side with one form pairs it with both).

    The mixed pairs (normalised with as given) changed no verdict on the dev cases and doubled the cost of
    every wrong answer, which is most of the symbolic work in a run.
    """
    out: list[tuple[list[Any], list[Any]]] = []
    for i in range(max(len(golds), len(preds))):
        g, p = golds[min(i, len(golds) - 1)], preds[min(i, len(preds) - 1)]
        if g and p and (g, p) not in out:
            out.append((g, p))
    return out


def run_job(op: str, args: tuple[Any, ...]) -> Any:
    if op == "verify":
        return symbolic_equal(*args)
    if op == "lmeval_math_verify":
        # lm-eval's minerva_math `math_verify` metric (lm_eval/tasks/minerva_math/utils.py process_results):
        # the reference solution and the whole response, each parsed by math-verify with its defaults.
        from math_verify import parse, verify

        # math-verify exactly as lm-eval runs it: its own numeric rule (never ours: `_our_numbers`).
        if _math_verify().grader.sympy_numeric_eq is not _math_verify_numeric_eq():
            raise RuntimeError("math-verify's sympy_numeric_eq is not its own in this worker")
        return bool(verify(gold=parse(str(args[0])), target=parse(str(args[1]))))
    if op == "lmeval_minerva_sympy":
        return lmeval_minerva_sympy(str(args[0]), str(args[1]))
    if op == "sleep":  # used by tests to exercise the wall-time limit without a pathological input
        import time

        time.sleep(float(args[0]))
        return True
    if op == "alloc":  # used by tests to exercise the memory limit
        return len(bytearray(int(args[0]) * 1024 * 1024))
    raise ValueError(f"unknown grading job {op!r}")


LMEVAL_SYMPY_SECONDS = 5  # lm-eval's `timeout(seconds=5)` around the step


def lmeval_minerva_sympy(x1: str, x2: str) -> bool:
    """The sympy step of lm-eval 0.4.13's minerva_math `is_equiv` (lm_eval/tasks/minerva_math/utils.py), on two
    Minerva-normalised strings: sympy's `parse_latex` on both, then `simplify(a - b) == 0`; a parse error, a
    failed subtraction or simplification, any other exception, and running past 5 s (lm-eval's SIGALRM limit,
    kept here: this runs in a worker's main thread) are all "not equal". sympy's parse_latex needs
    antlr4-python3-runtime 4.11 (math-verify's `antlr4_11_0` extra); an ImportError propagates (lm-eval
    raises too) and becomes the job's error status."""
    import signal

    import sympy
    from sympy.parsing.latex import parse_latex

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError("lm-eval's 5 s limit")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(LMEVAL_SYMPY_SECONDS)
    try:
        diff = parse_latex(x1) - parse_latex(x2)
        return bool(sympy.simplify(diff) == 0)
    except ImportError:
        raise
    except Exception:
        return False
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_available() -> None:
    """Import math-verify now, so a missing install is reported at start-up rather than as wrong verdicts."""
    _math_verify()


def warm() -> None:
    """Import and exercise the parser once so forked workers start warm."""
    try:
        symbolic_equal("\\frac{1}{2}", "0.5", None, 100)
        symbolic_equal("\\sqrt{2}", "1.414", None, 100)
    except Exception:
        pass
    _ = DEFAULT_REL_TOL
