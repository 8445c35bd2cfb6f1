"""`reasoneval doctor`: the sandbox's mode, what the candidate can reach and the memory bound in force, as the
code scorer would use them, in both modes."""

from __future__ import annotations

import json

import pytest

from reasoneval.cli.main import main
from reasoneval.scoring.programs.sandbox import get_sandbox


def test_doctor_says_the_mode_the_judge_and_the_memory_bound(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--sandbox", mode]) == 0
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    sandbox = get_sandbox(mode)
    assert lines["mode"].strip().split()[0] == mode
    assert lines["memory bound"].strip() == sandbox.memory_bound()
    assert "PID namespace of its own" in lines["judge"]
    assert lines["dies with the harness"].strip() == ("bwrap --die-with-parent" if mode == "bwrap"
                                                      else "setpriv --pdeathsig KILL")
    assert main(["doctor", "--sandbox", mode, "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts == sandbox.describe()
