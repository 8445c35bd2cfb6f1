"""Stable identities: problem keys, dataset hashes, answer normalisation."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from reasoneval.records import Problem

_WS = re.compile(r"\s+")
_INT = re.compile(r"[+-]?\d+")
_INT_FLOAT = re.compile(r"([+-]?\d+)\.0*")


def normalize_ws(text: str) -> str:
    """Collapse runs of whitespace so reformatted copies of a problem hash the same."""
    return _WS.sub(" ", text).strip()


def problem_key(problem_text: str, answer: str) -> str:
    """Stable id of a problem: sha256 of the whitespace-normalised text and reference answer.

    Sources differ in line breaks and trailing spaces but not in content; normalising them keeps
    the key equal for the same problem loaded from the Hub or from a data dir.
    """
    blob = normalize_ws(problem_text) + "\x1f" + normalize_ws(answer)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reference_text(value: str | int | float) -> str:
    """Reference answer as a string; integers without leading zeros or a trailing `.0`.

    AIME copies store "055", AMC copies store 27.0: both would otherwise differ from the
    canonical "55" / "27" in keys and in exact-match grading.
    """
    if isinstance(value, bool):  # bool is an int subclass; never a valid answer
        raise TypeError("answer must be a string or a number, not a boolean")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return repr(value)
    s = value.strip()
    if _INT.fullmatch(s):
        return str(int(s))
    m = _INT_FLOAT.fullmatch(s)
    if m:
        return str(int(m.group(1)))
    return s


def dataset_hash(problems: Sequence[Problem]) -> str:
    """Hash of a loaded problem list (order matters: `limit` takes the first N), for config.json."""
    h = hashlib.sha256()
    for p in problems:
        h.update(f"{p.task}\x1f{p.id}\x1f{p.key}\n".encode())
    return h.hexdigest()[:16]
