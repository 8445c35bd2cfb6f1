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
    local = {k: facts.pop(k) for k in list(facts) if k.startswith("local_kernels")}
    assert facts.pop("c++ compiler").startswith("/usr/bin/g++ (g++ -O2 -std=c++17")  # the codeforces judge's
    assert facts == sandbox.describe()
    assert local["local_kernels"].startswith("repacked") and local["local_kernels_cache"]


def test_doctor_says_which_kernels_the_embedded_model_uses_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    """A machine whose repacked llama.cpp kernels crashed (engines/local/kernels.py): doctor has the crash's detail."""
    from reasoneval.engines.local import kernels

    kernels.remember_plain("the self-test with cpu_repack=on crashed", "worker killed by SIGILL: Illegal instruction")
    assert main(["doctor", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["local_kernels"].startswith("plain since") and "self-test" in facts["local_kernels"]
    assert facts["local_kernels_detail"] == "worker killed by SIGILL: Illegal instruction"
    assert str(kernels.cache_path()) in facts["local_kernels_cache"]
