"""The grading policy in one place, and the cheap, eval-free checks run in the parent before any worker.

Everything that is a *convention* (what counts as the same answer) lives in this module: the policy
constants, the string rewrites applied to every answer (`REWRITES`, in order), the number model
(`Num`: exact or a decimal approximation with the digits written) and the numeric rule
(`numbers_equal`). The workers (verify.py) use the same rewrites and the same numeric rule on the
leaves of what they parse, so a convention never differs between the parent and a worker.
docs/grading.md has the table of these rules.

`cheap_compare` answers True/False only when it is sure (identical normalised strings, two plain
numbers, two clock times); everything else (None) goes to a worker for symbolic verification.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = [
    "normalize_answer", "answer_key", "parse_number", "cheap_compare", "numbers_equal", "Num", "Policy",
    "DEFAULT_REL_TOL", "DEFAULT_APPROX", "DEFAULT_UNITS", "APPROX_POLICIES", "UNITS_POLICIES", "MIN_SIG_DIGITS",
]

# ----- policy ---------------------------------------------------------------------------------------------

# Relative tolerance between two decimal approximations when a task sets none (float round-off, 0.3333333
# written twice with different last digits). Exact values never get a tolerance (see numbers_equal).
DEFAULT_REL_TOL = 1e-6

# How a decimal approximation meets an exact value (integer, fraction, closed form):
#   "digits"   (default) the decimal must be the exact value rounded to the digits written (half a unit in
#              the last written digit) and have at least MIN_SIG_DIGITS significant digits: 1.414 = sqrt(2),
#              37.699 = 12 pi, 0.3333 = 1/3, but 0.333 != 1/3 and 1.415 != sqrt(2). A task rel_tol, when
#              set, is accepted as well.
#   "measured" every number, exact-looking or not, is a rounded measurement: any two numbers within
#              rel_tol are equal (physics answers such as Minerva's, whose references "100" are rounded).
#   "exact"    no tolerance between a decimal and an exact value, only equal values (0.5 = 1/2).
APPROX_POLICIES = ("digits", "measured", "exact")
DEFAULT_APPROX = "digits"
MIN_SIG_DIGITS = 4

# Units after a number:
#   "ignore" (default) a trailing unit (\text{ cm}, \mathrm{m}, "miles", "dollars", m², ...) is dropped on
#            both sides: 5 m = 5 = 5\text{ m}.
#   "strict" a prediction may leave out a unit the reference has, but a unit the reference does not
#            have, or a different one, makes it wrong: 5 m != 5 (when the question asks for a bare number).
# Degree signs are never units in this sense (90^\circ = 90 under both).
UNITS_POLICIES = ("ignore", "strict")
DEFAULT_UNITS = "ignore"


@dataclass(frozen=True)
class Policy:
    """The per-task settings of a comparison. rel_tol None: the task set none (DEFAULT_REL_TOL applies
    between two decimals, and no tolerance applies between a decimal and an exact value beyond its digits)."""

    rel_tol: float | None = None
    approx: str = DEFAULT_APPROX
    units: str = DEFAULT_UNITS

    @staticmethod
    def make(rel_tol: float | None = None, approx: str | None = None, units: str | None = None) -> Policy:
        a = DEFAULT_APPROX if approx is None else approx
        u = DEFAULT_UNITS if units is None else units
        if a not in APPROX_POLICIES:
            raise ValueError(f"unknown approx policy {a!r}: use one of {APPROX_POLICIES}")
        if u not in UNITS_POLICIES:
            raise ValueError(f"unknown units policy {u!r}: use one of {UNITS_POLICIES}")
        return Policy(None if rel_tol is None else float(rel_tol), a, u)


# ----- string rewrites (applied to every answer, in this order) ------------------------------------------

_LATEX_CMDS = (
    "frac|dfrac|tfrac|cfrac|sqrt|text|textbf|textit|mathrm|mathbf|mbox|operatorname|boxed|left|right|cdot|times|"
    "pi|infty|le|leq|ge|geq|ne|neq|pm|mp|in|cup|cap|circ|degree|sin|cos|tan|cot|sec|csc|log|ln|exp|begin|end|"
    "alpha|beta|gamma|delta|theta|lambda|mu|sigma|omega|phi|displaystyle|quad|qquad|approx|lfloor|rfloor|"
    "lceil|rceil|binom|dots|ldots|cdots|emptyset|varnothing|mathbb|overline|vec|hat|angle|triangle"
)
_DOUBLE_BS_RE = re.compile(r"(?<!\\)\\\\(?=(?:" + _LATEX_CMDS + r")(?![a-zA-Z]))")
_SINGLE_BS_CMD_RE = re.compile(r"(?<!\\)\\[a-zA-Z]")
_DOUBLE_BS_DELIM_RE = re.compile(r"\\\\([{}$%!,;:()\[\]])")
_TRAILING_BS_RE = re.compile(r"(?:\s*\\+\s*)+$")
_UNBRACED_SCRIPT_RE = re.compile(
    r"([\^_])\s*(\\[dt]?frac\s*\{[^{}]*\}\s*\{[^{}]*\}|\\sqrt\s*(?:\[[^\]]*\])?\s*\{[^{}]*\}|\\(?!circ\b)[a-zA-Z]+)"
)
_TRIG_RE = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![a-zA-Z])")
_TRIG_DEGREE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z]))")
_THOUSANDS_MARK_RE = re.compile(r"(?<=\d)(?:,\\!|\{,\})\s*(?=\d{3}(?!\d))")
_TEXT_CMD_RE = re.compile(r"\\(?:text|textbf|textit|textnormal|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_SPACING_RE = re.compile(r"\\(?:left|right|displaystyle|quad|qquad|[,;:! ])|~")
_FRAC_RE = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
_FRAC_SHORT_RE = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_HALF_RE = re.compile(r"\\frac\s*(\d)\s*\{")
_FRAC_HALF2_RE = re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d)")
_SQRT_RE = re.compile(r"\\sqrt\s*(\d+|[a-zA-Z])")
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])")
_E_NOTATION_RE = re.compile(r"(?<![\w.\\])(\d+(?:\.\d*)?|\.\d+)[eE]([+-]?\d{1,3})(?![\w.])")
_MIXED_RE = re.compile(r"^([+-]?)(\d+)\s*(?:\\frac\{(\d+)\}\{(\d+)\}|\s(\d+)/(\d+))$")
_ASSIGN_RE = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=\s*(?=[^=]+$)")
_WS_RE = re.compile(r"\s+")


def _undouble_backslashes(s: str) -> str:
    """JSON-escaped text written twice: `\\\\frac` -> `\\frac` (only before a known command or a delimiter)."""
    if "\\\\" not in s or not _DOUBLE_BS_RE.search(s) or _SINGLE_BS_CMD_RE.search(s):
        return s  # a single-backslash command is written too: the text is not escaped twice
    return _DOUBLE_BS_DELIM_RE.sub(r"\\\1", _DOUBLE_BS_RE.sub(r"\\", s))


def _trig_degrees(s: str) -> str:
    """Degrees inside a trigonometric expression are an angle measure: 30^\\circ -> \\frac{30\\pi}{180}."""
    if not _TRIG_RE.search(s):
        return s
    return _TRIG_DEGREE_RE.sub(lambda m: "\\frac{" + m.group(1) + "\\pi}{180}", s)


def _mixed_number(s: str) -> str:
    """A whole number followed by a proper fraction is a mixed number: 2 3/4 = 2\\frac{3}{4} = 11/4."""
    m = _MIXED_RE.match(s)
    if not m:
        return s
    whole = int(m.group(2))
    num, den = (int(m.group(3)), int(m.group(4))) if m.group(3) else (int(m.group(5)), int(m.group(6)))
    if den == 0 or num >= den or whole == 0:
        return s
    return f"{m.group(1)}\\frac{{{whole * den + num}}}{{{den}}}"


def _unwrap_text(s: str) -> str:
    for _ in range(3):  # nested \text{\textbf{..}} unwraps in a few passes
        s2 = _TEXT_CMD_RE.sub(r"\1", s)
        if s2 == s:
            break
        s = s2
    return s


def repair_latex(s: str) -> str:
    """Only the repairs of broken LaTeX (the form "as given" that the workers parse beside the normalised one)."""
    s = _undouble_backslashes(s.strip())
    s = _TRAILING_BS_RE.sub("", s)
    return _UNBRACED_SCRIPT_RE.sub(r"\1{\2}", s)


# (name, function): the conventions every answer goes through, in order. docs/grading.md lists them.
REWRITES: tuple[tuple[str, object], ...] = (
    ("doubled backslashes", _undouble_backslashes),
    ("math delimiters", lambda s: s.replace("\\$", "").replace("$", "").replace("\\(", "").replace("\\)", "")
     .replace("\\[", "").replace("\\]", "")),
    ("trailing backslash", lambda s: _TRAILING_BS_RE.sub("", s)),
    ("thousands marks", lambda s: _THOUSANDS_MARK_RE.sub("", s).replace("{,}", ",")),
    ("spacing commands", lambda s: _SPACING_RE.sub(" ", s)),
    ("text wrappers", _unwrap_text),
    ("fraction forms", lambda s: _FRAC_HALF2_RE.sub(r"\\frac\1{\2}", _FRAC_HALF_RE.sub(
        r"\\frac{\1}{", _FRAC_SHORT_RE.sub(r"\\frac{\1}{\2}", _FRAC_RE.sub(r"\\frac", s))))),
    ("unbraced scripts", lambda s: _UNBRACED_SCRIPT_RE.sub(r"\1{\2}", s)),
    ("sqrt shorthand", lambda s: _SQRT_RE.sub(r"\\sqrt{\1}", s)),
    ("degrees in trigonometry", _trig_degrees),
    ("degree signs", lambda s: _DEGREE_RE.sub("", s)),
    ("e-notation", lambda s: _E_NOTATION_RE.sub(r"\1\\times 10^{\2}", s) if ("e" in s or "E" in s) else s),
    ("percent sign", lambda s: s.replace("\\%", "%")),
    ("whitespace and final period", lambda s: _WS_RE.sub(" ", s).strip().rstrip(".。").strip()),
    ("leading assignment", lambda s: _ASSIGN_RE.sub("", s)),
    ("mixed numbers", _mixed_number),
)


@functools.lru_cache(maxsize=1 << 14)
def normalize_answer(s: str) -> str:
    """A lightly normalised LaTeX answer (REWRITES in order). Keeps spaces between tokens so it still parses."""
    s = s.strip()
    for _, f in REWRITES:
        s = f(s)  # type: ignore[operator]
    return s


@functools.lru_cache(maxsize=1 << 16)
def answer_key(s: str) -> str:
    """The string used for exact comparison and caching: normalised, no whitespace, plain text lower-cased."""
    # ", " between digits stays distinct from "," so a list "32, 349" never shares a key with the number "32,349".
    k = re.sub(r"(?<=\d),\s+(?=\d)", ",\x1f", normalize_answer(s)).replace(" ", "").replace("\x1f", " ")
    if "\\" not in k and re.fullmatch(r"[A-Za-z][A-Za-z'\-]+", k):
        k = k.lower()  # plain words compare case-insensitively; single letters stay (variables)
    return k


# ----- numbers --------------------------------------------------------------------------------------------

_CURRENCY_RE = re.compile(r"^(?:\\?\$|€|£|¥|usd|eur|rs\.?)\s*|\s*(?:\\?\$|€|£|¥|usd|eur|dollars?|cents?|yuan|euros?)$", re.IGNORECASE)
_PERCENT_RE = re.compile(r"\s*(?:%|percent(?:age)?|pct)$", re.IGNORECASE)
_UNITS = (
    "mm|cm|m|km|kg|g|mg|s|sec|seconds?|min|minutes?|h|hr|hours?|days?|weeks?|months?|years?|units?|miles?|"
    "meters?|metres?|inches|inch|in|feet|foot|ft|yards?|mph|km/h|m/s|l|ml|liters?|litres?|"
    "cm\\^\\{?2\\}?|m\\^\\{?2\\}?|cm\\^\\{?3\\}?|m\\^\\{?3\\}?|m²|cm²|m³|cm³|sq ?units|square units|square feet|"
    "square inches|square meters|points?|people|students|ways|cents"
)
_UNIT_RE = re.compile(rf"(?<=[\d}}\s])\s*(?:{_UNITS})$")
_DEGREE_WORD_RE = re.compile(r"(?<=[\d\s])\s*degrees?$")
_SCI_RE = re.compile(r"^(.+?)\s*(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$")
_E_RE = re.compile(r"^([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)[eE]([+-]?\d+)$")
_PLAIN_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")
_THOUSANDS_RE = re.compile(r"^([+-]?)([1-9]\d{0,2}(?:,\d{3})+|[1-9]\d{0,2}(?: \d{3})+)(\.\d+)?$")
_DEC_COMMA_RE = re.compile(r"^([+-]?\d+),(\d+)$")
_FRAC_NUM_RE = re.compile(r"^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$")
_SLASH_RE = re.compile(r"^([^/]+)/([^/]+)$")


@dataclass(frozen=True)
class Num:
    """A number as written: its exact value; whether it is a decimal approximation (a decimal point or
    e-notation) and then half a unit in its last written digit and its count of significant digits."""

    value: Fraction
    approx: bool = False
    half_ulp: Fraction = Fraction(0)
    sig: int = 0
    pct: bool = False
    unit: str | None = None

    def scaled(self, k: Fraction) -> Num:
        return Num(self.value * k, self.approx, self.half_ulp * abs(k), self.sig, self.pct, self.unit)


def decimal_num(text: str) -> Num | None:
    """A plain decimal literal (`1.414`, `-.5`, `1.2e5`) as a Num; integers are exact."""
    t = text.strip().lstrip("+")
    try:
        d = Decimal(t)
    except InvalidOperation:
        return None
    exponent = d.as_tuple().exponent  # an int for a finite decimal
    if not d.is_finite() or abs(int(exponent)) > 400:
        return None
    value = Fraction(d)
    if "." not in t and "e" not in t.lower():
        return Num(value)
    sign, digits, exp = d.as_tuple()
    stripped = "".join(map(str, digits)).lstrip("0")
    return Num(value, True, Fraction(1, 2) * Fraction(10) ** int(exp), len(stripped) or 1)


def _parse_plain(s: str) -> Num | None:
    s = s.strip()
    if not s or len(s) > 60:
        return None
    if _PLAIN_RE.match(s):
        return decimal_num(s)
    m = _THOUSANDS_RE.match(s)
    if m:
        return decimal_num(m.group(1) + m.group(2).replace(",", "").replace(" ", "") + (m.group(3) or ""))
    m = _DEC_COMMA_RE.match(s)
    if m:
        ip, fp = m.group(1), m.group(2)
        # "1,000" is a thousands separator; "1,22", "1000,99" and "0,111" can only be decimal commas.
        if len(fp) != 3 or ip.lstrip("+-") == "0":
            return decimal_num(f"{ip}.{fp}")
        return None
    m = _E_RE.match(s)
    if m and abs(int(m.group(2))) <= 400:
        return decimal_num(s)
    return None


def split_unit(t: str) -> tuple[str, str | None]:
    """(number text, unit or None): a trailing unit word, currency or degree word removed."""
    unit = None
    for _ in range(2):
        t2 = _CURRENCY_RE.sub("", t.strip()).strip()
        m = _UNIT_RE.search(t2)
        if m:
            unit = m.group(0).strip().replace("{", "").replace("}", "")
            t2 = t2[: m.start()].strip()
        t2 = _DEGREE_WORD_RE.sub("", t2).strip()
        if t2 == t:
            break
        t = t2
    return t, unit


def parse_number(s: str) -> Num | None:
    """A plain number answer as a Num, or None. Regex and Decimal only: nothing is evaluated."""
    t = normalize_answer(s)
    if len(t) > 80:
        return None
    t = t.replace("\\!", "").replace("−", "-")
    pct = False
    m = _PERCENT_RE.search(t)
    if m:
        pct = True
        t = t[: m.start()]
    t, unit = split_unit(t)
    if not pct:
        m = _PERCENT_RE.search(t)
        if m:
            pct = True
            t = t[: m.start()].strip()
    if t.startswith("{") and t.endswith("}") and t.count("{") == 1:
        t = t[1:-1]
    n: Num | None = None
    m = _SCI_RE.match(t)
    if m:
        mant = _parse_plain(m.group(1))
        exp = int(m.group(2))
        if mant is None or abs(exp) > 400:
            return None
        n = mant.scaled(Fraction(10) ** exp)
    elif (m := _FRAC_NUM_RE.match(t)) or (m2 := _SLASH_RE.match(t)):
        if m:
            sign, a, b = m.group(1), _parse_plain(m.group(2)), _parse_plain(m.group(3))
        else:
            sign, a, b = "", _parse_plain(m2.group(1)), _parse_plain(m2.group(2))  # type: ignore[union-attr]
        if a is None or b is None or b.value == 0:
            return None
        if b.approx:
            return None  # a ratio of decimals has no simple "digits written": left to the symbolic check
        n = a.scaled(Fraction(-1 if sign == "-" else 1) / b.value)
    else:
        n = _parse_plain(t)
    if n is None:
        return None
    return Num(n.value, n.approx, n.half_ulp, n.sig, pct, unit)


def _digits_match(d: Num, x: Fraction) -> bool:
    """The decimal d is the exact value x rounded to the digits written (policy "digits")."""
    err = abs(d.value - x)
    if d.sig >= MIN_SIG_DIGITS and err <= d.half_ulp:
        return True
    # A decimal with as many digits as a double prints (15-17) is a float: allow its round-off.
    return 15 <= d.sig <= 17 and err <= abs(x) * Fraction(1, 2**51)


def numbers_equal(a: Num, b: Num, policy: Policy) -> bool:
    """The numeric rule (docs/grading.md, "Numbers"): exact values compare exactly; a tolerance applies
    only when a side is a decimal approximation, as the policy says. Percent: see values_equal."""
    if a.value == b.value:
        return True
    scale = max(abs(a.value), abs(b.value))
    if policy.approx == "measured":
        tol = DEFAULT_REL_TOL if policy.rel_tol is None else policy.rel_tol
        return abs(a.value - b.value) <= Fraction(tol) * scale
    if not a.approx and not b.approx:
        return False  # two exact values: equal or not, never "close"
    if a.approx and b.approx:
        tol = DEFAULT_REL_TOL if policy.rel_tol is None else policy.rel_tol
        return abs(a.value - b.value) <= Fraction(tol) * scale
    if policy.approx == "exact":
        return False
    if policy.rel_tol is not None and abs(a.value - b.value) <= Fraction(policy.rel_tol) * scale:
        return True
    d, x = (a, b) if a.approx else (b, a)
    return _digits_match(d, x.value)


def values_equal(p: Num, r: Num, policy: Policy) -> bool:
    """Two numbers with their percent signs: 28% = 28 = 0.28 (percent written on one side only)."""
    if numbers_equal(p, r, policy):
        return True
    if p.pct != r.pct:
        if p.pct and numbers_equal(p.scaled(Fraction(1, 100)), r, policy):
            return True
        if r.pct and numbers_equal(p, r.scaled(Fraction(1, 100)), policy):
            return True
    return False


def units_conflict(pred_unit: str | None, ref_unit: str | None, policy: Policy) -> bool:
    """Policy "strict": a unit the reference lacks, or a different one, makes the prediction wrong."""
    if policy.units != "strict" or pred_unit is None:
        return False
    return ref_unit is None or pred_unit.replace(" ", "").lower() != ref_unit.replace(" ", "").lower()


_TEXT_UNIT_RE = re.compile(r"(?:\\(?:text|mathrm|mbox|textnormal)\s*\{\s*~?\s*([A-Za-z][A-Za-z /^{}\d²³]*)\}(?:\s*\^\s*\{?\d\}?)?|"
                           r"(?<=[\d}\s])(?:" + _UNITS + r"))\s*$")


def trailing_unit(s: str) -> str | None:
    """The unit written after an answer (`12\\pi\\text{ cm}^2` -> `cm`), or None: used by the strict policy."""
    t = s.strip().replace("\\!", "")
    t = t.replace("\\$", "").replace("$", "")
    m = _TEXT_UNIT_RE.search(t)
    if not m:
        return None
    u = (m.group(1) or m.group(0)).strip().replace("{", "").replace("}", "")
    return u if u and not re.fullmatch(r"(?:and|or|i|e)", u) else None


# ----- clock times ------------------------------------------------------------------------------------------

_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(?:(a|p)\.?\s*m\.?)?$", re.IGNORECASE)


def parse_time(s: str) -> tuple[int, int, bool, bool, bool] | None:
    """(hour 0-23 as written or from am/pm, seconds in the hour, has am/pm, has a clock marker, hour written
    with a leading zero: a 24-hour clock)."""
    t = normalize_answer(s).replace(" ", "").replace("\\", "")
    m = _TIME_RE.match(t)
    if not m:
        return None
    h, mi, se = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if mi > 59 or se > 59 or h > 24:
        return None
    ampm = m.group(4)
    if ampm:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if ampm.lower() == "p" else 0)
    marker = bool(ampm) or m.group(3) is not None or m.group(1).startswith("0")
    return h % 24, mi * 60 + se, bool(ampm), marker, m.group(1).startswith("0")


def times_equal(p: tuple[int, int, bool, bool, bool], r: tuple[int, int, bool, bool, bool]) -> bool:
    if p[1] != r[1]:
        return False
    if p[0] == r[0]:
        return True
    if p[2] != r[2]:  # one side 12-hour with am/pm, the other bare: 9:05 = 9:05 p.m. read on a 12-hour clock
        bare = r if p[2] else p
        return 1 <= bare[0] <= 12 and not bare[4] and p[0] % 12 == r[0] % 12
    return False


# ----- the cheap check --------------------------------------------------------------------------------------


def cheap_compare(pred: str, ref: str, rel_tol: float | None = None, policy: Policy | None = None) -> bool | None:
    """True/False when decidable without parsing LaTeX; None when a symbolic check is needed."""
    pol = policy if policy is not None else Policy.make(rel_tol)
    if pol.units == "strict" and units_conflict(trailing_unit(pred), trailing_unit(ref), pol):
        return False
    if answer_key(pred) == answer_key(ref):
        return True
    tp, tr = parse_time(pred), parse_time(ref)
    if tp is not None and tr is not None and (tp[3] or tr[3]):
        return times_equal(tp, tr)
    p, r = parse_number(pred), parse_number(ref)
    if p is None or r is None:
        return None
    if _comma_ambiguous(pred) and _comma_ambiguous(ref):
        return None  # "1,2" vs "2,1": two decimals or two lists? The symbolic check reads them as lists.
    if units_conflict(p.unit, r.unit, pol):
        return False
    return values_equal(p, r, pol)


def _comma_ambiguous(s: str) -> bool:
    """A bare "a,b" that is not a thousands group: a decimal comma, or a list of two numbers."""
    t = normalize_answer(s).replace(" ", "")
    return _DEC_COMMA_RE.match(t) is not None and _THOUSANDS_RE.match(t) is None
