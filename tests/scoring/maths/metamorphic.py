"""Metamorphic cases for the grader: rewrites of benchmark reference answers that are equal, and near-misses
that are not, each labelled by construction and its value checked with exact arithmetic (Fraction, or sympy
on our own generated numbers). Deterministic for a seed. Used by test_metamorphic.py and
bench/grader_metamorphic.py; the references are read from $REASONEVAL_DATA_DIR, never copied here.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import random
import re
from dataclasses import dataclass
from fractions import Fraction

BENCHMARKS = ("math500", "minerva_math", "olympiadbench", "amc", "amc23", "aime24", "aime25")


@dataclass(frozen=True)
class Case:
    kind: str  # the rewrite, e.g. "int:thousands" or "miss:int+1"
    pred: str
    ref: str
    equal: bool


def data_dir() -> pathlib.Path | None:
    d = os.environ.get("REASONEVAL_DATA_DIR")
    return pathlib.Path(d) if d and pathlib.Path(d).is_dir() else None


def references(directory: pathlib.Path) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for name in BENCHMARKS:
        p = directory / f"{name}.jsonl"
        if not p.exists():
            continue
        for line in p.open(encoding="utf-8"):
            if line.strip():
                a = json.loads(line)["answer"].strip()
                if a and a not in seen:
                    seen.add(a)
                    out.append(a)
    return out


# ----- exact values of the simple forms (our own small evaluator: integers, fractions, k*sqrt(n), k*pi) -----

_INT = re.compile(r"^-?\d+$")
_DEC = re.compile(r"^-?\d*\.\d+$")
_FRAC = re.compile(r"^(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}$")
_SQRT = re.compile(r"^(-?)(\d*)\s*\\sqrt\{(\d+)\}$")
_FRAC_SQRT = re.compile(r"^(-?)\\[dt]?frac\{(\d*)\s*\\sqrt\{(\d+)\}\}\{(\d+)\}$")
_PI = re.compile(r"^(-?)(\d*)\s*\\pi$")
_COMPLEX = re.compile(r"^(-?\d+)\s*([+-])\s*(\d*)i$")
_POWER = re.compile(r"^(\d+)\^\{?(\d+)\}?$")


def _closed_form_value(ref: str) -> float | None:
    """The value of k\\sqrt{n}, \\frac{k\\sqrt{n}}{m}, k\\pi (irrational forms), else None."""
    m = _SQRT.match(ref)
    if m:
        n = int(m.group(3))
        if math.isqrt(n) ** 2 == n:
            return None
        return (-1 if m.group(1) else 1) * int(m.group(2) or 1) * math.sqrt(n)
    m = _FRAC_SQRT.match(ref)
    if m:
        n = int(m.group(3))
        if math.isqrt(n) ** 2 == n or int(m.group(4)) == 0:
            return None
        return (-1 if m.group(1) else 1) * int(m.group(2) or 1) * math.sqrt(n) / int(m.group(4))
    m = _PI.match(ref)
    if m:
        return (-1 if m.group(1) else 1) * int(m.group(2) or 1) * math.pi
    return None


def _round_sig(x: float, sig: int) -> str:
    """x rounded to `sig` significant digits, written as a plain decimal (sympy checks the rounding)."""
    s = f"{x:.{sig}g}"
    if "e" in s:
        s = f"{float(s):.{max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))}f}"
    if "." not in s:
        s += ".0"
    return s


def _exact_decimal_ok(dec: str, ref: str) -> bool:
    """Symbolic confirmation: the decimal is the reference's value rounded to the digits it writes."""
    import sympy

    expr = _sympy_of(ref)
    places = len(dec.split(".")[1])
    val = sympy.N(expr, 50)
    half = sympy.Rational(1, 2) * sympy.Rational(10) ** -places
    return bool(abs(val - sympy.Rational(dec)) <= half)


def _sympy_of(ref: str):  # our own regex-matched forms only, built with sympy constructors (no parsing)
    import sympy

    m = _SQRT.match(ref)
    if m:
        return (-1 if m.group(1) else 1) * int(m.group(2) or 1) * sympy.sqrt(int(m.group(3)))
    m = _FRAC_SQRT.match(ref)
    if m:
        return (-1 if m.group(1) else 1) * int(m.group(2) or 1) * sympy.sqrt(int(m.group(3))) / int(m.group(4))
    m = _PI.match(ref)
    if m:
        return (-1 if m.group(1) else 1) * int(m.group(2) or 1) * sympy.pi
    raise ValueError(ref)


# ----- structure helpers -----


def _split_top(s: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


_SIMPLE_ITEM = re.compile(r"^-?(?:\d+|\\frac\{\d+\}\{\d+\}|\d*\\sqrt\{\d+\})$")


def _item_value(s: str) -> Fraction | float | None:
    if _INT.match(s):
        return Fraction(int(s))
    m = _FRAC.match(s)
    if m and int(m.group(3)):
        return Fraction((-1 if m.group(1) else 1) * int(m.group(2)), int(m.group(3)))
    return _closed_form_value(s)


# ----- the generator -----


def cases_for(ref: str, rng: random.Random) -> list[Case]:
    out: list[Case] = []

    def eq(kind: str, pred: str) -> None:
        out.append(Case(kind, pred, ref, True))

    def ne(kind: str, pred: str) -> None:
        out.append(Case(kind, pred, ref, False))

    r = ref.strip()
    # notation-only rewrites apply to every reference
    eq("wrap:dollars", f"${r}$")
    eq("wrap:spacing", re.sub(r",(?!\\!)", ", ", r).replace("+", " + ") if ("," in r or "+" in r) else f" {r} ")
    if _INT.match(r):
        n = int(r)
        eq("int:text", f"\\text{{{r}}}")
        eq("int:decimal .0", f"{r}.0")
        eq("int:dfrac", f"\\dfrac{{{2 * n}}}{{2}}")
        eq("int:assignment", f"x = {r}")
        if abs(n) >= 1000:
            eq("int:thousands", f"{n:,}")
            eq("int:thousands \\!", f"{n:,}".replace(",", ",\\!"))
        if abs(n) >= 100 and n % 100 == 0:
            k = len(str(abs(n))) - len(str(abs(n)).rstrip("0"))
            eq("int:scientific", f"{n // 10 ** k}\\times 10^{{{k}}}")
        eq("int:unit", f"{r}\\text{{ units}}")
        ne("miss:int+1", str(n + 1))
        ne("miss:int-1", str(n - 1))
        if n != 0:
            ne("miss:sign", str(-n))
            ne("miss:x10", str(n * 10))
        if abs(n) >= 10**6:
            ne("miss:last digit", str(n + (1 if n % 10 != 9 else -1)))
        return out
    m = _FRAC.match(r)
    if m and int(m.group(3)) not in (0, 1):
        s, a, b = m.group(1), int(m.group(2)), int(m.group(3))
        v = Fraction((-1 if s else 1) * a, b)
        eq("frac:dfrac/frac", f"{s}\\dfrac{{{a}}}{{{b}}}" if "dfrac" not in r else f"{s}\\frac{{{a}}}{{{b}}}")
        eq("frac:slash", f"{s}{a}/{b}")
        eq("frac:scaled", f"{s}\\frac{{{2 * a}}}{{{2 * b}}}")
        if s:
            eq("frac:sign inside", f"\\frac{{-{a}}}{{{b}}}")
        if a > b > 1:
            eq("frac:mixed number", f"{s}{a // b}\\frac{{{a % b}}}{{{b}}}" if a % b else f"{s}{a // b}")
        d = v.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        if d == 1:
            eq("frac:exact decimal", str(float(v)))
        else:
            dec = _round_sig(float(v), 6)
            eq("frac:decimal 6 digits", dec)
            last = Fraction(1, 10 ** len(dec.split(".")[1]))
            ne("miss:decimal last digit", _fmt_dec(Fraction(dec) + last, len(dec.split(".")[1])))
        ne("miss:numerator+1", f"{s}\\frac{{{a + 1}}}{{{b}}}")
        if a != b:
            ne("miss:reciprocal", f"{s}\\frac{{{b}}}{{{a}}}")
        ne("miss:sign", f"{'' if s else '-'}\\frac{{{a}}}{{{b}}}")
        return out
    if _DEC.match(r):
        places = len(r.split(".")[1])
        eq("dec:trailing zero", r + "0")
        v = Fraction(r)
        if v.denominator <= 1000:
            eq("dec:fraction", f"{'-' if v < 0 else ''}\\frac{{{abs(v.numerator)}}}{{{v.denominator}}}")
        ne("miss:decimal last digit", _fmt_dec(v + Fraction(1, 10**places), places))
        if v != 0:
            ne("miss:sign", _fmt_dec(-v, places))
        return out
    cf = _closed_form_value(r)
    if cf is not None:
        for sig in (5, 7):
            dec = _round_sig(cf, sig)
            if _exact_decimal_ok(dec, r):
                eq(f"closed:decimal {sig} digits", dec)
                places = len(dec.split(".")[1])
                step = Fraction(1, 10**places)
                for k, lab in ((1, "+1"), (-1, "-1")):
                    cand = _fmt_dec(Fraction(dec) + k * step, places)
                    if not _exact_decimal_ok(cand, r):
                        ne(f"miss:closed decimal last digit{lab}", cand)
        if re.search(r"\\sqrt\{\d\}", r):
            eq("closed:sqrt shorthand", re.sub(r"\\sqrt\{(\d)\}", r"\\sqrt\1", r))
        ne("miss:sign", r[1:] if r.startswith("-") else "-" + r)
        return out
    m = _COMPLEX.match(r)
    if m:
        a, sign, b = m.group(1), m.group(2), m.group(3)
        eq("complex:reordered", f"{sign if sign == '-' else ''}{b}i + {a}".replace("+ -", "- "))
        eq("complex:capital I", f"{a} {sign} {b}I")
        eq("complex:product", _complex_product(int(a), (1 if sign == "+" else -1) * int(b or 1)))
        ne("miss:conjugate", f"{a} {'-' if sign == '+' else '+'} {b}i")
        return out
    m = _POWER.match(r)
    if m:
        base, e = int(m.group(1)), int(m.group(2))
        if base > 1 and e > 1:
            eq("power:braced", f"{base}^{{{e}}}")
            ne("miss:exponent+1", f"{base}^{{{e + 1}}}")
            ne("miss:exponent-1", f"{base}^{{{e - 1}}}")
            ne("miss:power-1", f"{base}^{{{e}}}-1")
        return out
    # intervals
    m = re.match(r"^(\\left)?\s*([\[(])\s*(.+?)\s*,\s*(.+?)\s*(\\right)?\s*([\])])$", r)
    if m and "," not in m.group(3) and "," not in m.group(4) and not _is_tuple_context(r):
        lo, hi, lb, rb = m.group(3), m.group(4), m.group(2), m.group(6)
        if lb + rb != "()" and all(_interval_end(x) for x in (lo, hi)):
            eq("interval:left/right", f"\\left{lb}{lo}, {hi}\\right{rb}")
            eq("interval:member", f"x \\in {lb}{lo},{hi}{rb}")
            flip = {"[": "(", "(": "["}[lb] + "," + {"]": ")", ")": "]"}[rb]
            ne("miss:interval brackets", f"{flip[0]}{lo}, {hi}{flip[2]}")
            if lo != hi:
                ne("miss:interval ends swapped", f"{lb}{hi}, {lo}{rb}")
            return out
    # tuples (ordered) and bare lists (unordered)
    inner = re.sub(r"^\\left\s*\(|\\right\s*\)$", "", r)
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
        tup = True
    else:
        tup = False
    if inner != r or "," in r:
        items = _split_top(inner)
        if 2 <= len(items) <= 8 and all(_SIMPLE_ITEM.match(x) for x in items):
            vals = [_item_value(x) for x in items]
            if all(v is not None for v in vals):
                if tup:
                    eq("tuple:left/right", "\\left(" + ", ".join(items) + "\\right)")
                    if len(set(vals)) == len(vals):
                        sw = items[1:2] + items[:1] + items[2:]
                        ne("miss:tuple order", "(" + ", ".join(sw) + ")")
                    ne("miss:tuple element missing", "(" + ", ".join(items[:-1]) + ")")
                else:
                    if len(set(vals)) == len(vals):
                        sh = items[:]
                        rng.shuffle(sh)
                        if sh == items:
                            sh = items[::-1]
                        eq("list:reordered", ", ".join(sh))
                        eq("list:set braces", "\\{" + ", ".join(items) + "\\}")
                        ne("miss:list element missing", ", ".join(items[:-1]))
                        ne("miss:list extra element", ", ".join(items + [str(_fresh(vals))]))
        return out
    # any other expression: sums reordered (two top-level terms, no relations)
    terms = _split_top(r, "+")
    if len(terms) == 2 and all(terms) and not re.search(r"[=<>,]|\\le|\\ge|\\pm|\\in|\\text", r):
        eq("sum:reordered", f"{terms[1]} + {terms[0]}")
        eq("sum:left/right", f"\\left({terms[0]}\\right) + {terms[1]}")
    return out


def _is_tuple_context(r: str) -> bool:
    return r.count(",") != 1


def _interval_end(x: str) -> bool:
    return bool(re.fullmatch(r"-?(?:\d+|\\infty|\\frac\{\d+\}\{\d+\}|\d*\\sqrt\{\d+\}|\d*\\pi)", x.strip()))


def _fresh(vals: list) -> int:
    k = 1
    while any(v == k for v in vals):
        k += 1
    return k + 1000


def _fmt_dec(v: Fraction, places: int) -> str:
    sign = "-" if v < 0 else ""
    v = abs(v)
    scaled = v * 10**places
    assert scaled.denominator == 1
    s = str(scaled.numerator).rjust(places + 1, "0")
    return f"{sign}{s[:-places]}.{s[-places:]}" if places else f"{sign}{s}"


def _complex_product(a: int, b: int) -> str:
    """a + bi written as a product (1+i)(x+yi) when that has integer parts: (1+i)(x+yi) = (x-y) + (x+y)i."""
    if (a + b) % 2 == 0:
        x, y = (a + b) // 2, (b - a) // 2
        return f"(1+i)({x}{'+' if y >= 0 else '-'}{abs(y)}i)"
    return f"i({b}{'-' if a >= 0 else '+'}{abs(a)}i)"  # i(b - ai) = a + bi


def generate(refs: list[str], seed: int = 0, sample: int | None = None) -> list[Case]:
    rng = random.Random(seed)
    pool = list(refs)
    if sample is not None and sample < len(pool):
        pool = rng.sample(pool, sample)
    out: list[Case] = []
    for r in pool:
        out.extend(c for c in cases_for(r, rng) if c.pred.strip() and c.pred != c.ref or c.kind.startswith("wrap"))
    return out


def table(cases: list[Case], verdicts: list[bool]) -> tuple[str, float, float, int, int]:
    """A per-kind table of false negatives (equal rewrites judged different) and false positives."""
    per: dict[str, list[int]] = {}
    for c, v in zip(cases, verdicts):
        row = per.setdefault(c.kind, [0, 0, int(c.equal)])
        row[0] += 1
        row[1] += int(v != c.equal)
    lines = ["| rewrite | label | cases | wrong | rate |", "| --- | --- | --- | --- | --- |"]
    for k in sorted(per, key=lambda k: (k.startswith("miss"), k)):
        n, w, e = per[k]
        lines.append(f"| {k} | {'equal' if e else 'not equal'} | {n} | {w} | {w / n:.1%} |")
    pos = [(c, v) for c, v in zip(cases, verdicts) if c.equal]
    neg = [(c, v) for c, v in zip(cases, verdicts) if not c.equal]
    fn = sum(not v for _, v in pos) / max(1, len(pos))
    fp = sum(v for _, v in neg) / max(1, len(neg))
    return "\n".join(lines), fn, fp, len(pos), len(neg)
