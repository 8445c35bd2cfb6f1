"""The sandbox mode fixture, for `reasoneval doctor` (tests/scoring/programs/judging.py)."""

from tests.scoring.programs.judging import mode  # noqa: F401
