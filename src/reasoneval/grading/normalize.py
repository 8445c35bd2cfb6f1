"""Cheap, eval-free normalisation and numeric comparison, run in the parent before any worker.

`cheap_compare` answers True/False only when it is sure (identical normalised strings, or two plain
numbers); everything else (None) goes to a worker for symbolic verification.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

__all__ = ["normalize_answer", "answer_key", "parse_number", "cheap_compare", "DEFAULT_REL_TOL"]

# Relative tolerance for numbers when a task sets none: equal to 6 significant digits, which
# accepts 0.333333 for 1/3 and float round-off, and nothing a wrong answer plausibly produces.
DEFAULT_REL_TOL = 1e-6

_TEXT_CMD_RE = re.compile(r"\\(?:text|textbf|textit|textnormal|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_SPACING_RE = re.compile(r"\\(?:left|right|displaystyle|quad|qquad|[,;:! ])|~")
_FRAC_RE = re.compile(r"\\[dtc]frac(?![a-zA-Z])")
_FRAC_SHORT_RE = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_HALF_RE = re.compile(r"\\frac\s*(\d)\s*\{")
_FRAC_HALF2_RE = re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d)")
_SQRT_RE = re.compile(r"\\sqrt\s*(\d+|[a-zA-Z])")
_DEGREE_RE = re.compile(r"\^\s*\{?\\circ\}?|°|\\degree")
_ASSIGN_RE = re.compile(r"^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=\s*(?=[^=]+$)")
_WS_RE = re.compile(r"\s+")


def normalize_answer(s: str) -> str:
    """A lightly normalised LaTeX answer: delimiters, spacing, \\text, \\dfrac, degrees, `x =` removed.

    Keeps spaces between tokens (so the result still parses); `answer_key` also drops them.
    """
    s = s.strip()
    s = s.replace("\\$", "").replace("$", "")
    s = s.replace("\\(", "").replace("\\)", "").replace("\\[", "").replace("\\]", "")
    s = s.replace("{,}", ",")
    s = re.sub(r"(?<=\d),\\!\s*(?=\d)", ",", s)  # 32,\!349: a thousands separator, never a list
    s = _SPACING_RE.sub(" ", s)
    for _ in range(3):  # nested \text{\textbf{..}} unwraps in a few passes
        s2 = _TEXT_CMD_RE.sub(r"\1", s)
        if s2 == s:
            break
        s = s2
    s = _FRAC_RE.sub(r"\\frac", s)
    s = _FRAC_SHORT_RE.sub(r"\\frac{\1}{\2}", s)
    s = _FRAC_HALF_RE.sub(r"\\frac{\1}{", s)
    s = _FRAC_HALF2_RE.sub(r"\\frac\1{\2}", s)
    s = _SQRT_RE.sub(r"\\sqrt{\1}", s)
    s = _DEGREE_RE.sub("", s)
    s = s.replace("\\%", "%")
    s = _WS_RE.sub(" ", s).strip()
    s = s.rstrip(".。").strip()
    s = _ASSIGN_RE.sub("", s)
    return s


@functools.lru_cache(maxsize=1 << 16)
def answer_key(s: str) -> str:
    """The string used for exact comparison and caching: normalised, no whitespace, plain text lower-cased."""
    # ", " stays distinct from "," so a list "32, 349" never shares a cache key with the number "32,349".
    k = re.sub(r",\s+", ",\x1f", normalize_answer(s)).replace(" ", "").replace("\x1f", " ")
    if "\\" not in k and re.fullmatch(r"[A-Za-z][A-Za-z'\-]+", k):
        k = k.lower()  # plain words compare case-insensitively; single letters stay (variables)
    return k


_CURRENCY_RE = re.compile(r"^(?:\\?\$|€|£|¥|usd|eur|rs\.?)\s*|\s*(?:\\?\$|€|£|¥|usd|eur|dollars?|cents?|yuan|euros?)$", re.IGNORECASE)
_PERCENT_RE = re.compile(r"\s*(?:%|percent(?:age)?|pct)$", re.IGNORECASE)
_UNITS = (
    "mm|cm|m|km|kg|g|mg|s|sec|seconds?|min|minutes?|h|hr|hours?|days?|weeks?|years?|units?|miles?|"
    "meters?|metres?|inches|inch|feet|foot|ft|yards?|degrees?|mph|km/h|m/s|l|ml|liters?|litres?|"
    "cm\\^2|m\\^2|cm\\^3|m\\^3|m²|cm²|m³|cm³|sq ?units|square units|square feet|points?|people|students|ways"
)
_UNIT_RE = re.compile(rf"\s*(?:{_UNITS})$")
_SCI_RE = re.compile(r"^(.+?)\s*(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$")
_E_RE = re.compile(r"^([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)[eE]([+-]?\d+)$")
_PLAIN_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")
_THOUSANDS_RE = re.compile(r"^([+-]?)([1-9]\d{0,2}(?:,\d{3})+|[1-9]\d{0,2}(?: \d{3})+)(\.\d+)?$")
_DEC_COMMA_RE = re.compile(r"^([+-]?\d+),(\d+)$")
_FRAC_NUM_RE = re.compile(r"^([+-]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$")
_SLASH_RE = re.compile(r"^([^/]+)/([^/]+)$")


def _parse_plain(s: str) -> Fraction | None:
    s = s.strip()
    if not s or len(s) > 60:
        return None
    if _PLAIN_RE.match(s):
        return Fraction(s)
    m = _THOUSANDS_RE.match(s)
    if m:
        return Fraction(m.group(1) + m.group(2).replace(",", "").replace(" ", "") + (m.group(3) or ""))
    m = _DEC_COMMA_RE.match(s)
    if m:
        ip, fp = m.group(1), m.group(2)
        # "1,000" is a thousands separator; "1,22", "1000,99" and "0,111" can only be decimal commas.
        if len(fp) != 3 or ip.lstrip("+-") == "0":
            return Fraction(f"{ip}.{fp}")
        return None
    m = _E_RE.match(s)
    if m and abs(int(m.group(2))) <= 400:
        return Fraction(m.group(1)) * Fraction(10) ** int(m.group(2))
    return None


def parse_number(s: str) -> tuple[Fraction, bool] | None:
    """(value, is_percent) for a plain number answer, or None. Regex only: nothing is evaluated."""
    t = normalize_answer(s)
    if len(t) > 80:
        return None
    t = t.replace("\\!", "").replace("−", "-")
    pct = False
    m = _PERCENT_RE.search(t)
    if m:
        pct = True
        t = t[: m.start()]
    for _ in range(2):
        t2 = _UNIT_RE.sub("", _CURRENCY_RE.sub("", t.strip())).strip()
        if t2 == t:
            break
        t = t2
    if not pct:
        m = _PERCENT_RE.search(t)
        if m:
            pct = True
            t = t[: m.start()].strip()
    if t.startswith("{") and t.endswith("}") and t.count("{") == 1:
        t = t[1:-1]
    m = _SCI_RE.match(t)
    if m:
        mant = _parse_plain(m.group(1))
        exp = int(m.group(2))
        if mant is not None and abs(exp) <= 400:
            return mant * Fraction(10) ** exp, pct
        return None
    m = _FRAC_NUM_RE.match(t)
    if m:
        a, b = _parse_plain(m.group(2)), _parse_plain(m.group(3))
        if a is not None and b is not None and b != 0:
            v = a / b
            return (-v if m.group(1) == "-" else v), pct
        return None
    m = _SLASH_RE.match(t)
    if m:
        a, b = _parse_plain(m.group(1)), _parse_plain(m.group(2))
        if a is not None and b is not None and b != 0:
            return a / b, pct
        return None
    v = _parse_plain(t)
    return (v, pct) if v is not None else None


def numbers_close(a: Fraction, b: Fraction, rel_tol: float) -> bool:
    if a == b:
        return True
    scale = max(abs(a), abs(b))
    return abs(a - b) <= Fraction(rel_tol) * scale


def cheap_compare(pred: str, ref: str, rel_tol: float | None = None) -> bool | None:
    """True/False when decidable without parsing LaTeX; None when a symbolic check is needed."""
    tol = DEFAULT_REL_TOL if rel_tol is None else rel_tol
    if answer_key(pred) == answer_key(ref):
        return True
    p, r = parse_number(pred), parse_number(ref)
    if p is None or r is None:
        return None
    if _comma_ambiguous(pred) and _comma_ambiguous(ref):
        return None  # "1,2" vs "2,1": two decimals or two lists? The symbolic check reads them as lists.
    (pv, pp), (rv, rp) = p, r
    if numbers_close(pv, rv, tol):
        return True
    # Percent written on one side only: 28% matches 28 and 0.28.
    if pp != rp:
        if pp and numbers_close(pv / 100, rv, tol):
            return True
        if rp and numbers_close(pv, rv / 100, tol):
            return True
    return False


def _comma_ambiguous(s: str) -> bool:
    """A bare "a,b" that is not a thousands group: a decimal comma, or a list of two numbers."""
    t = normalize_answer(s).replace(" ", "")
    return _DEC_COMMA_RE.match(t) is not None and _THOUSANDS_RE.match(t) is None
