"""Answer extraction: find the final answer in a model response.

Pure string scanning (no parser, no eval), linear in the response length, so it runs in the parent process.
Every rule is listed in docs/grading.md; the order below is the priority order.
"""

from __future__ import annotations

import re

# A response of at most this many characters with no \boxed{} and no answer phrase is the answer itself.
SHORT_RESPONSE_CHARS = 50
PHRASE_WINDOW = 3000

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_TAG_RE = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)
_ANSWER_PHRASE_RE = re.compile(
    r"(?<![</])(?:final\s+answer\s*(?:is|:)?|the\s+answer\s+is|answer\s*(?:is|:)|\banswer\b|"
    r"réponse\s*(?:finale\s*)?(?:est|:)|respuesta\s*(?:final\s*)?(?:es|:)|antwort\s*(?:ist|:)|"
    r"ответ\s*:?|答案\s*(?:是|为|:|：)?|最终答案\s*(?:是|为|:|：)?|答\s*[:：]|उत्तर\s*(?:है|:)?|الإجابة\s*(?:هي|:)?)",
    re.IGNORECASE,
)
_BOLD_RE = re.compile(r"\*\*([^*\n]{1,200})\*\*")
_MATH_SEG_RE = re.compile(
    r"\$\$(?P<d>[^$]{1,2000}?)\$\$|\\\[(?P<b>.{1,2000}?)\\\]|\\\((?P<p>[^\n]{1,2000}?)\\\)|\$(?P<i>(?:\\\$|[^$\n]){1,2000}?)\$",
    re.DOTALL,
)
_NUMBER_RE = re.compile(
    r"-?\\[dt]?frac\{-?\d+\}\{\d+\}|-?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?|\.\d+)(?:\s*%)?"
)
_PROSE_WORD_RE = re.compile(r"(?<![\\a-zA-Z])[^\W\d_]{2,}")
_CJK_RE = re.compile(r"[\u0600-\u06ff\u0900-\u097f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# Words allowed between \boxed{} groups that still form one multi-part answer.
_JOIN_WORDS = {"and", "or", "also", "for", "part", "as", "well", "respectively", "with", "the", "text", "quad",
               "qquad", "et", "ou", "und", "oder", "和", "或", "mbox", "textbf", "textnormal"}


def extract_answer(response: str, kind: str = "math", *, truncated: bool = False) -> str | None:
    """The final answer in `response`, or None when there is none (see docs/grading.md, "Extraction").

    `truncated` (the response hit the length limit): only explicit answers count -- a box, an answer phrase,
    a bold answer -- not the short-response rule nor the last value in the text, which in a cut-off
    response is an intermediate result.
    """
    text = final_section(response)
    if text is None:
        return None
    if kind == "choice":
        return extract_choice(text, truncated=truncated)
    return _extract_math(text, truncated)


def final_section(response: str) -> str | None:
    """Text after the last </think>; None when the response is cut off inside its think block. When that text
    has <answer>...</answer> tags, the content of the last non-empty pair (an unclosed one runs to the end)."""
    close = response.rfind(_THINK_CLOSE)
    if close >= 0:
        text = response[close + len(_THINK_CLOSE):]
    elif _THINK_OPEN in response:
        return None
    else:
        text = response
    if "<answer>" in text or "<ANSWER>" in text or "<Answer>" in text:
        tagged = [m.group(1) for m in _ANSWER_TAG_RE.finditer(text) if m.group(1).strip()]
        if tagged:
            return tagged[-1]
    return text


def has_answer_phrase(text: str, kind: str = "math") -> bool:
    if kind == "choice":
        return _CHOICE_PHRASE_RE.search(text) is not None
    return _ANSWER_PHRASE_RE.search(text) is not None


_BRACE_RE = re.compile(r"\\[{}]|[{}]")  # a brace, or an escaped one (\\{, \\}: not a brace)


def boxed_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, content start) of every complete \\boxed{...} / \\fbox{...}, nested braces allowed, in
    order of start; the content is text[content start:end - 1].

    One pass with a stack of open braces (a box's own brace marks its box), and no copies of contents, so
    nested or unclosed boxes cost linear time (scanning each box to its end on its own, and copying each
    content, was quadratic on `\\boxed{` repeated and nested). An unclosed box ends the list: boxes starting
    after it would be nested inside it, so none of them counts.
    """
    starts = {m.end() - 1: m.start() for m in _BOX_RE.finditer(text)}  # a box's opening brace -> its start
    if not starts:
        return []
    found: list[tuple[int, int, int]] = []
    stack: list[int] = []  # positions of open braces
    for m in _BRACE_RE.finditer(text, min(starts)):
        c = m[0]
        if c == "{":
            stack.append(m.start())
        elif c == "}" and stack:
            o = stack.pop()
            if o in starts:
                end = m.end()
                found.append((starts[o], end, o + 1))
    unclosed = min((starts[o] for o in stack if o in starts), default=None)
    found.sort()
    return [b for b in found if unclosed is None or b[0] < unclosed]


def last_boxed(text: str) -> str | None:
    """The content of the last complete \\boxed{...} / \\fbox{...} (boxes joined only by connectors form one
    answer, joined with ", "), or None when there is no complete box."""
    return _last_boxed(text)


def _last_boxed(text: str, boxes: list[tuple[int, int, int]] | None = None) -> str | None:
    if boxes is None:
        boxes = boxed_spans(text)
    if not boxes:
        return None
    # Drop boxes nested inside another box: the outer one is the answer.
    outer: list[tuple[int, int, int]] = []
    for b in boxes:
        if outer and b[0] < outer[-1][1]:
            continue
        outer.append(b)
    group = [outer[-1]]  # from the last box backwards
    for prev in reversed(outer[:-1]):
        if not _joinable_gap(text[prev[1]:group[-1][0]]):
            break
        group.append(prev)
    return ", ".join(text[b[2]:b[1] - 1].strip() for b in reversed(group))


_SENTENCE_END_RE = re.compile(r"[.;:!?。](?:\s|\$|$)")
_GAP_WORD_RE = re.compile(r"[^\W\d_]+")


def _joinable_gap(gap: str) -> bool:
    """Two boxes separated by only connectors ("and", commas, \\quad, at most one other word) are one answer."""
    if len(gap) > 60 or "\n\n" in gap:
        return False
    if not gap.strip(" ,\t\n"):
        return True  # (the common case, decided without the regexes: a response may hold 100k boxes)
    if _SENTENCE_END_RE.search(gap):
        return False  # a sentence ends between them: separate statements
    words = _GAP_WORD_RE.findall(gap)
    others = [w for w in words if w.lower() not in _JOIN_WORDS and len(w) > 1]
    return len(others) <= 1


def _strip_math_delims(s: str) -> str:
    s = s.strip()
    for a, b in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if s.startswith(a) and s.endswith(b) and len(s) >= len(a) + len(b):
            return s[len(a):len(s) - len(b)].strip()
    return s


def _math_segments(text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in _MATH_SEG_RE.finditer(text):
        content = next(g for g in m.groups() if g is not None)
        if content.strip():
            out.append((m.start(), m.end(), content.strip()))
    return out


def _is_prose(s: str) -> bool:
    stripped = re.sub(r"\\(?:text|mbox|textbf|textnormal|mathrm|operatorname)\s*\{[^{}]*\}", " ", s)
    if _CJK_RE.search(stripped):
        return True
    return len(_PROSE_WORD_RE.findall(stripped)) >= 2


def _last_math_or_number(text: str) -> str | None:
    """The last inline math segment or the last number, whichever ends later."""
    segs = _math_segments(text)
    seg = segs[-1] if segs else None
    num = None
    for m in _NUMBER_RE.finditer(text):
        num = m
    if seg is None and num is None:
        return None
    if num is not None and (seg is None or num.start() >= seg[1]):
        return num.group(0).strip()
    assert seg is not None
    return seg[2]


def _answer_from_phrase_tail(tail: str) -> str | None:
    """Turn the text after an answer phrase into an answer (docs/grading.md, "Answer phrases")."""
    t = tail.lstrip(" \t:：")
    t = re.sub(r"^(?:is|est|es|ist|是|为)\s*[:：]?\s*", "", t)
    segs = _math_segments(t[:4000])
    if segs and segs[0][0] == 0:  # the answer is the math right after the phrase (display math may span lines)
        return segs[0][2]
    # Otherwise the answer runs to the end of its line (a $ opened on one line and closed on another is not math).
    line = t.split("\n", 1)[0].strip()
    if not line:
        return None
    segs = _math_segments(line)
    if ("\\(" in line or "\\[" in line or "$" in line) and not segs and not re.search(r"\d\s*\$|\$\s*\d", line):
        return None  # an unclosed math delimiter: no complete answer on this line
    line = re.sub(r"(?:\.|。)\s*(?:I hope it is correct\.?)?\s*$", "", line).strip()
    line = re.split(r"(?<=[^\d\s])\.\s|\.\s+(?=[A-Z])|<\|", line, maxsplit=1)[0].strip()
    if not line:
        return None
    if segs and segs[0][0] == 0 and segs[0][1] >= len(line) - 1:
        return segs[0][2]
    if _is_prose(line) or segs:
        return _first_value(line)
    return line


def _first_value(text: str) -> str | None:
    """The first number or math segment holding a digit (a named quantity like $f(x)$ is skipped)."""
    cands: list[tuple[int, str]] = [(a, c) for a, _, c in _math_segments(text) if re.search(r"\d", c)]
    covered = [(a, b) for a, b, _ in _math_segments(text)]
    for m in _NUMBER_RE.finditer(text):
        if not any(a <= m.start() < b for a, b in covered):
            cands.append((m.start(), m.group(0).strip()))
    return min(cands)[1] if cands else None


def _is_strong_phrase(m: re.Match[str], text: str) -> bool:
    """An explicit "answer is"/"Answer:" (or "Answer" right before math) decides; a bare mention does not."""
    if re.search(r"(?:is|:|：|est|es|ist|是|为|هي|है)\s*$", m.group(0), re.IGNORECASE):
        return True
    return re.match(r"\s*(?:\$|\\\[|\\\()", text[m.end():]) is not None


def _extract_math(text: str, truncated: bool = False) -> str | None:
    boxes = boxed_spans(text)
    last_box_end = max((b[1] for b in boxes), default=-1)
    # Answer phrases are searched after the last box and within the last PHRASE_WINDOW characters: a final
    # answer is stated at the end, and scanning all of a 20k-character response dominates grading time.
    phrases = list(_ANSWER_PHRASE_RE.finditer(text, max(last_box_end, len(text) - PHRASE_WINDOW, 0)))
    if not boxes or phrases:
        # No box, or an answer phrase written after the last box: the phrase decides.
        for m in reversed(phrases):
            ans = _answer_from_phrase_tail(text[m.end():])
            if ans is not None:
                return ans
            if _is_strong_phrase(m, text):
                return None  # "The answer is" leading nowhere: the answer is missing, not elsewhere
    boxed = _last_boxed(text, boxes)
    if boxed is not None:
        return boxed.strip() or None
    bolds = [b.group(1) for b in _BOLD_RE.finditer(text) if re.search(r"\d", b.group(1))]
    if bolds:
        b = bolds[-1].strip()
        return _last_math_or_number(b) if _is_prose(b) or _CJK_RE.search(b) else _strip_math_delims(b)
    if truncated:
        return None
    stripped = text.strip()
    if len(stripped) <= SHORT_RESPONSE_CHARS:
        if not stripped:
            return None
        if _is_prose(stripped):
            return _last_math_or_number(stripped) or stripped
        return stripped
    return _last_math_or_number(text[-2000:])


# ----- multiple choice -----

# Choice letters: A-Z (records.CHOICE_LETTERS). In the case-insensitive phrase patterns the
# letter itself stays case-sensitive (A-Z; a-j only in parentheses), so "the answer is a number" is no choice.
# (Blanks before the letter are the preceding pattern's own trailing \s* / \s+; a second \s* here, "\(?\s*", made
# the split of a blank run ambiguous: quadratic on "answer" followed by a million spaces.)
_LETTER = r"(?:\(\s*)?\**((?-i:[A-Z])|(?<=\()(?-i:[a-j])(?=\)))\**\s*\)?"
_CHOICE_PHRASE_RE = re.compile(
    r"(?:answer|option|choice|réponse|respuesta|antwort|risposta|resposta|ответ|答案|选项|答|उत्तर|الإجابة)"
    r"(?:\s+(?:is|est|es|ist|è|é|would\s+be|should\s+be|must\s+be))?\s*(?:[:：是为]\s*)?"
    # (at most 8 filler words, each with one optional comma: an unbounded, ambiguous loop here was quadratic
    # on "option option option ..." and exponential in the blanks between them)
    r"(?:(?:for\s+sure|definitely|clearly|probably|therefore|likely|option|choice)(?:\s*,)?\s*){0,8}"
    + _LETTER + r"(?![A-Za-z])",
    re.IGNORECASE,
)
_CHOICE_IT_IS_RE = re.compile(r"\b(?:it'?s|it\s+is|choose|pick|select|go\s+with)\s+" + _LETTER + r"(?![A-Za-z])")
# A leading letter: "D. it can't be", "B。不是 A", "(C) Cecile", "C Cecile" -- but not the word "I am".
_CHOICE_LEADING_RE = re.compile(  # (one \s* when there is no bracket: two in a row were quadratic on blank runs)
    r"^\s*(?:[\(\[]\s*)?\**([A-Z])\**\s*(?:[\)\]\.:。．、,，]|$|(?=[^\sA-Za-z])|\s+(?=[A-Z\n]))"
)


def extract_choice(text: str, truncated: bool = False) -> str | None:
    """The chosen letter A-Z (see docs/grading.md, "Multiple choice")."""
    boxed = _last_boxed(text)
    if boxed is not None:
        inner = re.sub(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}", r"\1", boxed)
        m = re.match(r"^\s*[\(\[]?\s*([A-Za-z])\s*[\)\]]?(?:\s|$|[.:])", inner + " ")
        if m:
            return m.group(1).upper()
    cands: list[tuple[int, str]] = []
    for rx in (_CHOICE_PHRASE_RE, _CHOICE_IT_IS_RE):
        for m in rx.finditer(text):
            cands.append((m.start(), m.group(1)))
    if cands:
        return max(cands)[1].upper()
    bolds = [b.group(1).strip() for b in _BOLD_RE.finditer(text)]
    for b in reversed(bolds):
        m = re.fullmatch(r"[\(\[]?([A-Z])[\)\]\.]?(?:\s.*)?", b)
        if m:
            return m.group(1)
    m = None if truncated else _CHOICE_LEADING_RE.match(text)
    if m:
        return m.group(1)
    return None
