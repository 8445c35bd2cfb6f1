"""The sandbox mode fixture every family of sandbox tests runs under (tests/scoring/programs/judging.py)."""

from tests.scoring.programs.judging import mode  # noqa: F401
