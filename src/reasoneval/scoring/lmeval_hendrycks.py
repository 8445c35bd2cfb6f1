"""lm-eval's hendrycks_math rules (lm_eval/tasks/hendrycks_math/utils.py, 0.4.13): the answer a response gives, the
reference it is compared with, and Hendrycks' is_equiv. The scorer that applies them is scoring/lmeval.py's
ExactMatchScorer with the `hendrycks_math` pattern (docs/lm-eval.md)."""

from __future__ import annotations

from reasoneval.records import Problem

# lm_eval/tasks/hendrycks_math/utils.py (0.4.13): the `hendrycks_math` task's answer and Hendrycks' is_equiv.
# A `pattern` of this value (the `hendrycks_math` prompt style's answer format) selects it.
HENDRYCKS = "hendrycks_math"


def lmeval_last_boxed_only_string(string: str) -> str | None:
    """last_boxed_only_string of lm-eval's minerva_math and hendrycks_math utils.py (the same code), unchanged in
    behaviour: the last `\\boxed{...}` (or `\\fbox{...}`) with its braces, or the text after a `\\boxed ` up to the
    next `$`."""
    idx = string.rfind("\\boxed")
    if "\\boxed " in string:
        return "\\boxed " + string.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    depth = 0
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
        if string[i] == "}":
            depth -= 1
            if depth == 0:
                return string[idx:i + 1]
    return None


def lmeval_remove_boxed(s: str) -> str | None:
    """remove_boxed of the same files; None where lm-eval's asserts would fail (`\\fbox`)."""
    if "\\boxed " in s:
        return s[len("\\boxed "):] if s.startswith("\\boxed ") else None
    if s.startswith("\\boxed{") and s.endswith("}"):
        return s[len("\\boxed{"):-1]
    return None


def lmeval_boxed_answer(solution: str) -> str | None:
    """remove_boxed(last_boxed_only_string(solution)): the reference both MATH tasks of lm-eval compare with,
    and hendrycks_math's few-shot target; None where lm-eval would fail on the row."""
    boxed = lmeval_last_boxed_only_string(solution)
    return lmeval_remove_boxed(boxed) if boxed is not None else None


def hendrycks_reference(problem: Problem) -> str:
    """What lm-eval's hendrycks_math compares a response with: the boxed answer of the problem's solution where
    the task has solutions (the Hub's MATH), else its answer."""
    solution = problem.metadata.get("solution")
    found = lmeval_boxed_answer(str(solution)) if solution else None
    return problem.answer if found is None else found


def hendrycks_answer(text: str) -> str:
    """process_results' answer: the text between the first and the last `$`, or all of it with fewer than two."""
    first, last = text.find("$"), text.rfind("$")
    return text if first == last else text[first + 1:last]


def hendrycks_is_equiv(str1: str, str2: str) -> bool:
    """Hendrycks' is_equiv: strip_string on both, then equality; where strip_string raises (as it does on some
    strings: `a/b` with non-integers, a trailing `\\sqrt`, two `\\text{ `), the strings themselves."""
    try:
        return _strip_string(str1) == _strip_string(str2)
    except Exception:
        return str1 == str2


def _fix_fracs(string: str) -> str:
    substrs = string.split("\\frac")
    new_str = substrs[0]
    if len(substrs) > 1:
        for substr in substrs[1:]:
            new_str += "\\frac"
            if substr[0] == "{":  # (an empty one raises IndexError, as in lm-eval: is_equiv falls back)
                new_str += substr
            else:
                if len(substr) < 2:
                    return string
                a, b = substr[0], substr[1]
                if b != "{":
                    new_str += "{" + a + "}{" + b + "}" + substr[2:]
                else:
                    new_str += "{" + a + "}" + b + substr[2:]
    return new_str


def _fix_a_slash_b(string: str) -> str:
    if len(string.split("/")) != 2:
        return string
    a_text, b_text = string.split("/")
    a, b = int(a_text), int(b_text)  # a ValueError propagates, as in lm-eval (only AssertionError is caught)
    if string != f"{a}/{b}":
        return string
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


def _remove_right_units(string: str) -> str:
    if "\\text{ " in string:
        splits = string.split("\\text{ ")
        if len(splits) != 2:
            raise ValueError("more than one \\text{ ")  # lm-eval's assert
        return splits[0]
    return string


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    new_string = splits[0]
    for split in splits[1:]:
        if split[0] != "{":  # (an empty one raises IndexError, as in lm-eval)
            new_string += "\\sqrt{" + split[0] + "}" + split[1:]
        else:
            new_string += "\\sqrt" + split
    return new_string


def _strip_string(string: str) -> str:
    """Hendrycks' strip_string, step for step (each step a replace or a split: linear in the length)."""
    string = string.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    string = string.replace("tfrac", "frac").replace("dfrac", "frac")
    string = string.replace("\\left", "").replace("\\right", "")
    string = string.replace("^{\\circ}", "").replace("^\\circ", "")
    string = string.replace("\\$", "")
    string = _remove_right_units(string)
    string = string.replace("\\%", "")
    string = string.replace(" .", " 0.").replace("{.", "{0.")
    if len(string) == 0:
        return string
    if string[0] == ".":
        string = "0" + string
    if len(string.split("=")) == 2 and len(string.split("=")[0]) <= 2:
        string = string.split("=")[1]
    string = _fix_sqrt(string)
    string = string.replace(" ", "")
    string = _fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    return _fix_a_slash_b(string)
