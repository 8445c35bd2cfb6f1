"""code_runs.jsonl, the code scorer's cache of program outcomes, is a typed record (CodeRun): a file written before keeps
its bytes, and a torn last line (a kill mid-write) is left out, so that program runs again."""

from pathlib import Path

from reasoneval.scoring.programs.run_cache import ProgramRunCache
from reasoneval.scoring.programs.scorer import CodeRun, RunOutcome

OLD = Path(__file__).parents[2] / "fixtures" / "runs" / "pre_layout" / "code_runs.jsonl"


def test_code_runs_jsonl_keeps_its_bytes_and_skips_a_torn_line(tmp_path: Path) -> None:
    text = OLD.read_text()
    path = tmp_path / "code_runs.jsonl"
    path.write_text(text + '{"key": "abc", "outcome": {"result": "pass')
    cache = ProgramRunCache(path, CodeRun)
    assert len(cache.entries) == len(text.splitlines()) and cache.get("abc") is None
    key = text.split('"', 4)[3]
    outcome = cache.get(key)
    assert isinstance(outcome, RunOutcome) and outcome.result == "failed" and outcome.tests_total == 3
    again = ProgramRunCache(tmp_path / "again.jsonl", CodeRun)
    for k, o in cache.entries.items():
        again.put(k, o)
    assert (tmp_path / "again.jsonl").read_text() == text
    assert CodeRun("k", outcome).to_json_dict() == {"key": "k", "outcome": {
        "result": "failed", "tests_passed": outcome.tests_passed, "tests_total": 3, "returncode": outcome.returncode,
        "stderr": outcome.stderr}}
