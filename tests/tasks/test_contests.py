"""Competition programming tasks: the loaders on fixtures in each source's own schema, LiveCodeBench's compressed
private tests, its release and date window, and the shared data dir's real copies."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import zlib
from pathlib import Path

import pytest

from reasoneval.errors import UserError
from reasoneval.run.generation import task_options
from reasoneval.tasks import load_task
from reasoneval.tasks.contests import decode_lcb_private
from tests.tasks.conftest import HUB_FIXTURES


def _data_dir(tmp_path: Path, task: str) -> Path:
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    shutil.copy(HUB_FIXTURES / f"{task}.jsonl", d / f"{task}.jsonl")
    return d


def test_livecodebench_rows_in_the_hub_schema(tmp_path: Path) -> None:
    spec, problems = load_task("livecodebench", data_dir=_data_dir(tmp_path, "livecodebench"))
    assert [p.metadata["difficulty"] for p in problems] == ["easy", "medium", "hard"]
    assert [p.metadata["platform"] for p in problems] == ["atcoder", "leetcode", "codeforces"]
    assert [p.metadata["contest_date"] for p in problems] == ["2024-08-10", "2024-12-01", "2023-06-01"]
    stdin, call, plain = problems
    # public then private tests, the private ones decoded from base64(zlib(pickle(JSON)))
    assert stdin.payload["tests"] == [{"input": "1 2\n", "output": "3\n", "kind": "public"},
                                      {"input": "10 20\n", "output": "30\n", "kind": "private"},
                                      {"input": "-5 5\n", "output": "0\n", "kind": "private"}]
    assert stdin.payload["mode"] == "stdin"
    assert call.payload["mode"] == "call" and call.payload["func_name"] == "takeK"
    assert call.payload["starter_code"].startswith("class Solution:")
    assert [t["kind"] for t in plain.payload["tests"]] == ["public", "private"]  # private tests as plain JSON
    assert spec.options_given == ()


def test_private_tests_refuse_a_pickle_that_names_a_global() -> None:
    good = base64.b64encode(zlib.compress(pickle.dumps(json.dumps([{"input": "1", "output": "2"}])))).decode()
    assert decode_lcb_private("x", good) == [{"input": "1", "output": "2"}]
    evil = base64.b64encode(zlib.compress(pickle.dumps(Path("/etc/passwd")))).decode()
    with pytest.raises(UserError, match="private_test_cases"):
        decode_lcb_private("x", evil)
    with pytest.raises(UserError, match="neither JSON nor"):
        decode_lcb_private("x", "not base64 at all!")


def test_livecodebench_release_and_date_window(tmp_path: Path) -> None:
    d = _data_dir(tmp_path, "livecodebench")
    spec, problems = load_task("livecodebench", data_dir=d, options={"since": "2024-08-01", "until": "2025-02-01"})
    assert [p.metadata["source_id"] for p in problems] == ["abc999_a", "3999"]
    assert dict(spec.options_given) == {"since": "2024-08-01", "until": "2025-02-01"}
    # release v4 ends in September 2024: the December problem is not in it
    spec, problems = load_task("livecodebench", data_dir=d, options={"release": "v4"})
    assert [p.metadata["source_id"] for p in problems] == ["abc999_a", "1999A"]
    assert dict(spec.options_given) == {"release": "v4"}
    for bad, msg in (({"release": "v9"}, "not a LiveCodeBench release"), ({"since": "2024/08/01"}, "YYYY-MM-DD"),
                     ({"color": "red"}, "unknown --task-arg 'color'"), ({"since": "2030-01-01"}, "no problem between")):
        with pytest.raises(UserError, match=msg):
            load_task("livecodebench", data_dir=d, options=bad)


def test_task_args_name_their_task_or_every_task_with_options() -> None:
    assert task_options(["release=v5", "livecodebench:since=2024-08-01"], ["aime24", "livecodebench"]) == {
        "livecodebench": {"release": "v5", "since": "2024-08-01"}}
    with pytest.raises(UserError, match="takes options"):
        task_options(["release=v5"], ["aime24"])
    with pytest.raises(UserError, match="KEY=VALUE"):
        task_options(["release"], ["livecodebench"])
    with pytest.raises(UserError, match="not among"):
        task_options(["taco:x=1"], ["livecodebench"])
    with pytest.raises(UserError, match="takes no --task-arg"):
        load_task("aime24", options={"x": "1"})


def test_all_tests_option_becomes_the_scorers_setting(tmp_path: Path) -> None:
    spec, _ = load_task("code_contests", data_dir=_data_dir(tmp_path, "code_contests"), options={"all_tests": "yes"})
    assert spec.scoring.settings["all_tests"] is True and dict(spec.options_given) == {"all_tests": "true"}
    spec, _ = load_task("livecodebench", data_dir=_data_dir(tmp_path, "livecodebench"),
                        options={"all_tests": "true", "release": "v6"})
    assert spec.scoring.settings["all_tests"] is True
    assert dict(spec.options_given) == {"release": "v6", "all_tests": "true"}
    spec, _ = load_task("code_contests", data_dir=_data_dir(tmp_path, "code_contests"))
    assert "all_tests" not in spec.scoring.settings
    with pytest.raises(UserError, match="true or false"):
        load_task("code_contests", data_dir=_data_dir(tmp_path, "code_contests"), options={"all_tests": "maybe"})
    with pytest.raises(UserError, match="unknown --task-arg 'release'"):
        load_task("code_contests", data_dir=_data_dir(tmp_path, "code_contests"), options={"release": "v5"})


def test_code_contests_rows_in_the_hub_schema(tmp_path: Path) -> None:
    _, problems = load_task("code_contests", data_dir=_data_dir(tmp_path, "code_contests"))
    first, second = problems
    assert [t["kind"] for t in first.payload["tests"]] == ["public", "private", "generated", "generated"]
    assert first.payload["time_limit_s"] == 2.5 and first.payload["memory_mb"] == 256
    assert first.metadata == {"difficulty": "A", "platform": "codeforces", "rating": 800,
                              "rating_band": "<1200 (newbie-pupil)", "source_id": "1000_A. Double"}
    assert "time_limit_s" not in second.payload and second.payload["memory_mb"] == 128
    assert second.metadata["platform"] == "aizu" and second.metadata["difficulty"] == "unknown"


def test_apps_and_taco_rows(tmp_path: Path) -> None:
    _, apps = load_task("apps", data_dir=_data_dir(tmp_path, "apps"))
    assert len(apps) == 2  # the row without tests is skipped
    assert apps[0].payload["mode"] == "stdin" and apps[0].payload["compare"] == "tokens"
    assert apps[1].payload["mode"] == "call" and apps[1].payload["func_name"] == "double"
    assert apps[1].payload["tests"][0] == {"input": "2", "output": "[4]", "kind": "test"}
    assert [p.metadata["difficulty"] for p in apps] == ["introductory", "interview"]
    _, taco = load_task("taco", data_dir=_data_dir(tmp_path, "taco"))
    assert taco[0].payload["time_limit_s"] == 1.0 and taco[0].payload["memory_mb"] == 256
    assert taco[0].metadata["platform"] == "codeforces" and taco[1].payload["func_name"] == "square"


@pytest.mark.real_data("livecodebench_public.jsonl", "code_contests.jsonl")
def test_shared_data_dir_copies(shared_data_dir: Path) -> None:
    spec, lcb = load_task("livecodebench", data_dir=shared_data_dir)
    assert len(lcb) == 879 and spec.origin is not None and spec.origin.endswith("livecodebench_public.jsonl")
    modes = [p.payload["mode"] for p in lcb]
    assert modes.count("stdin") > 0 and modes.count("call") > 0
    assert all(p.payload["func_name"] for p in lcb if p.payload["mode"] == "call")
    assert sum(len(p.payload["tests"]) for p in lcb) == 2299
    with pytest.raises(UserError, match="no contest_date"):
        load_task("livecodebench", data_dir=shared_data_dir, options={"release": "v5"})
    _, cc = load_task("code_contests", data_dir=shared_data_dir)
    assert len(cc) == 165 and sum(len(p.payload["tests"]) for p in cc) == 1837
    assert all(p.payload["time_limit_s"] >= 0.5 and p.payload["memory_mb"] in (256, 512, 1024) for p in cc)
