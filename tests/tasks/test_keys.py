from __future__ import annotations

import pytest

from reasoneval.tasks import problem_key, reference_text


@pytest.mark.parametrize("raw, want", [
    ("055", "55"), (" 7 ", "7"), (27.0, "27"), ("27.0", "27"), ("-003", "-3"), (12, "12"),
    ("1.50", "1.50"), (0.5, "0.5"), ("\\frac{1}{2}", "\\frac{1}{2}"), ("1,000", "1,000"), ("+4", "4"),
])
def test_normalize_answer(raw: object, want: str) -> None:
    assert reference_text(raw) == want  # type: ignore[arg-type]


def test_problem_key_ignores_whitespace_only() -> None:
    k = problem_key("Find $x$ if  $x+1=2$.", "1")
    assert k == problem_key("  Find $x$\nif $x+1=2$. \n", "1")
    assert len(k) == 16 and int(k, 16) >= 0
    assert k != problem_key("Find $x$ if $x+1=3$.", "1")
    assert k != problem_key("Find $x$ if  $x+1=2$.", "2")
    assert k != problem_key("Find$x$ if $x+1=2$.", "1")
