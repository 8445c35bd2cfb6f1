"""The `livecodebench` prompt style, pinned against text written with lcb_runner's own prompt builder
(bench/lcb_prompt_files.py, run in an environment with the PyPI package nvidia-livecodebench)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reasoneval.prompts import PROMPTS, PromptConfig, build_messages, build_prompt
from reasoneval.prompts.contests import SYSTEM
from reasoneval.tasks import load_task

EXPECTED = Path(__file__).parent / "lcb_expected"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"


@pytest.fixture()
def problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    monkeypatch.setenv("REASONEVAL_OFFLINE", "1")
    monkeypatch.setenv("REASONEVAL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    shutil.copy(FIXTURES / "livecodebench.jsonl", tmp_path / "data" / "livecodebench.jsonl")
    return load_task("livecodebench", data_dir=tmp_path / "data")[1]


def test_chat_prompt_is_lcb_runners_text(problems: list) -> None:
    cfg = PromptConfig(style="livecodebench")
    for i, p in enumerate(problems):
        want = (EXPECTED / f"livecodebench-{i}.txt").read_text(encoding="utf-8")
        assert build_messages(p, cfg) == ({"role": "user", "content": want},)
        assert build_prompt(p, cfg) == want  # completions: the same text
    # stdin problems ask for a program reading stdin, functional ones show the starter code
    assert "# YOUR CODE HERE" in PROMPTS.get("livecodebench").chat(problems[0])
    assert "class Solution:" in PROMPTS.get("livecodebench").chat(problems[1])


def test_lcb_runners_system_message_is_one_flag_away(problems: list) -> None:
    assert SYSTEM == (EXPECTED / "system.txt").read_text(encoding="utf-8")
    cfg = PromptConfig(style="livecodebench", system_prompt=SYSTEM)
    msgs = build_messages(problems[0], cfg)
    assert msgs[0] == {"role": "system", "content": SYSTEM}


@pytest.mark.parametrize("task", ["livecodebench", "code_contests", "apps", "taco"])
def test_contest_tasks_use_the_style_and_the_contest_scorer(task: str) -> None:
    from reasoneval.tasks import TASKS

    spec = TASKS.get(task)
    assert spec.prompt == "livecodebench" and spec.scoring.scorer == "contest"
