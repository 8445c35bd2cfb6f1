"""The contest limits' calibration (scoring/programs/calibrate.py): timed on the interpreter and flags that run the
programs, measured once per machine and interpreter and reused from the cache."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from reasoneval.scoring.programs import calibrate
from reasoneval.scoring.programs.sandbox.run import get_sandbox


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The interpreters each workload timing ran on (a spy around the real timing)."""
    seen: list[str] = []
    real = calibrate.time_workload

    def spy(python: str) -> Any:
        seen.append(python)
        return real(python)

    monkeypatch.setattr(calibrate, "time_workload", spy)
    monkeypatch.setattr(calibrate, "REPEATS", 2)  # (the default's spacing and repeats cost seconds a measurement)
    monkeypatch.setattr(calibrate, "SPACING_S", 0.05)
    return seen


def test_factor_is_measured_once_then_reused_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(calibrate.CACHE_ENV, str(tmp_path / "cache.json"))
    seen = _counting(monkeypatch)
    first = calibrate.machine_calibration(tmp_path / "run1")
    assert first.source == "measured" and len(seen) == calibrate.REPEATS and first.repeats == calibrate.REPEATS
    assert calibrate.FACTOR_RANGE[0] <= first.factor <= calibrate.FACTOR_RANGE[1]
    second = calibrate.machine_calibration(tmp_path / "run2")  # a later run on this machine: nothing measured
    assert len(seen) == calibrate.REPEATS
    assert second.factor == first.factor and second.cpu_s == first.cpu_s
    assert second.source == f"cache {tmp_path / 'cache.json'}"
    # each run keeps the factor it used, and a re-scoring of the run reads it there (not the cache)
    assert (tmp_path / "run2" / calibrate.CALIBRATION_FILE).is_file()
    (tmp_path / "cache.json").unlink()
    assert calibrate.machine_calibration(tmp_path / "run2").factor == first.factor and len(seen) == calibrate.REPEATS


def test_factor_is_taken_on_the_programs_interpreter_and_flags(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(calibrate.CACHE_ENV, str(tmp_path / "cache.json"))
    seen = _counting(monkeypatch)
    cal = calibrate.machine_calibration(None)
    sandbox_python = get_sandbox(os.environ.get("REASONEVAL_SANDBOX", "auto") or "auto").python
    assert set(seen) == {sandbox_python}  # the sandbox's interpreter, not necessarily the one running reasoneval
    assert cal.interpreter == os.path.realpath(sandbox_python) + " -I"
    # another interpreter is another entry, timed with the sandbox's flags
    log = tmp_path / "argv.log"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$1 $2" >> {log}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    assert calibrate.machine_key(str(wrapper)) != calibrate.machine_key(sandbox_python)
    other = calibrate.machine_calibration(None, python=str(wrapper))
    assert other.source == "measured" and seen[-1] == str(wrapper)
    assert [line.split() for line in log.read_text().splitlines()] == [["-I", "-c"]] * calibrate.REPEATS
    assert calibrate.machine_calibration(None, python=str(wrapper)).source.startswith("cache ")
    assert calibrate.machine_calibration(None).factor == cal.factor


def test_an_interpreter_that_cannot_run_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(calibrate.CACHE_ENV, str(tmp_path / "cache.json"))
    with pytest.raises(calibrate.UserError, match="calibration: could not run the reference workload"):
        calibrate.machine_calibration(None, python=str(tmp_path / "no-such-python"))
