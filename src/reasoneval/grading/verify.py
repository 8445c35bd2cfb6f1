"""Symbolic equivalence: runs ONLY inside grading worker processes (see pool.py).

math-verify parses LaTeX with latex2sympy2_extended's ANTLR parser, which builds sympy objects
without eval. Its ExprExtractionConfig path (plain expressions such as `x^2+1`) calls sympy's
`parse_expr`, which evals; that is why this module must never be imported for use in the parent:
workers have a wall-time limit (killed by the parent) and an RLIMIT_AS memory limit.
"""

from __future__ import annotations

import cmath
import functools
import math
from typing import Any

from reasoneval.grading.normalize import DEFAULT_REL_TOL, normalize_answer

_mv: Any = None


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


def _variants(s: str) -> list[str]:
    out = []
    for v in (normalize_answer(s), s.strip()):
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


def _as_complex(x: Any) -> complex | None:
    import sympy

    if not isinstance(x, sympy.Expr) or x.free_symbols or not x.is_number:
        return None
    try:
        return complex(sympy.N(x, 30))
    except (TypeError, ValueError, OverflowError):
        return None


def _numeric_close(g: list[Any], p: list[Any], rel_tol: float) -> bool:
    if not g or not p:
        return False
    a, b = _as_complex(g[0]), _as_complex(p[0])
    if a is None or b is None or not all(map(math.isfinite, (a.real, a.imag, b.real, b.imag))):
        return False
    return cmath.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0) or a == b


def symbolic_equal(pred: str, ref: str, rel_tol: float | None, max_chars: int) -> bool:
    """math-verify on both sides (normalised first, then as given), plus a numeric check with rel_tol."""
    if len(pred) > max_chars or len(ref) > max_chars:
        return False  # too long to parse symbolically; the parent already compared the strings
    tol = DEFAULT_REL_TOL if rel_tol is None else rel_tol
    mv = _math_verify()
    # math-verify rounds floats to `float_rounding` decimals; match it loosely to the tolerance.
    rounding = max(1, min(10, int(round(-math.log10(tol))))) if tol > 0 else 10
    # A reference meets many predictions in a run: its parse is cached (sympy objects are immutable).
    # Both sides as normalised and as given: each form rescues dev cases the other misses.
    golds = [list(_parse_cached(v)) for v in _variants(ref)]
    preds = [list(_parse_cached(v)) for v in _variants(pred)]
    for g, p in _combinations(golds, preds):
        if mv.verify(g, p, float_rounding=rounding, timeout_seconds=None, allow_set_relation_comp=True):
            return True
        if _numeric_close(g, p, tol):
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
    if op == "sleep":  # used by tests to exercise the wall-time limit without a pathological input
        import time

        time.sleep(float(args[0]))
        return True
    if op == "alloc":  # used by tests to exercise the memory limit
        return len(bytearray(int(args[0]) * 1024 * 1024))
    raise ValueError(f"unknown grading job {op!r}")


def check_available() -> None:
    """Import math-verify now, so a missing install is reported at start-up rather than as wrong verdicts."""
    _math_verify()


def warm() -> None:
    """Import and exercise the parser once so forked workers start warm."""
    try:
        symbolic_equal("\\frac{1}{2}", "0.5", None, 100)
    except Exception:
        pass
