"""`reasoneval runs` (the table of all runs) and `reasoneval export` (training data) on real runs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reasoneval.cli.main import main
from reasoneval.errors import UserError
from reasoneval.results.store import SampleStore
from reasoneval.run.export import ExportFilter, export_run
from tests.analysis.runs import TASK, make_run, problems

Q, K = 6, 4


def right(i: int, j: int) -> bool:
    return j < i % 4 + 1  # problem i: i % 4 + 1 of 4 right


def cut(i: int, j: int) -> bool:
    return i == 0 and j == 3  # one truncated response


def test_runs_table_filters_csv_markdown(make_openai_server: Any, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    make_run(make_openai_server, tmp_path, "org/alpha-7b", right, q=Q, n=K)
    make_run(make_openai_server, tmp_path, "beta-1b", lambda i, j: j == 0, q=Q, n=K)
    results = tmp_path / "results"
    (results / "junk").mkdir()  # not a run: ignored
    assert main(["runs", str(results), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(r["model"] for r in rows) == ["beta-1b", "org/alpha-7b"]
    alpha = next(r for r in rows if r["model"] == "org/alpha-7b")
    assert float(alpha[f"{TASK}_pass1"]) == pytest.approx(sum(i % 4 + 1 for i in range(Q)) / (4 * Q))
    assert alpha["complete"] == "True" and alpha["n"] == "4" and len(alpha["run_id"]) == 12 and alpha["date"]
    beta = next(r for r in rows if r["model"] == "beta-1b")
    assert float(beta[f"{TASK}_pass1"]) == pytest.approx(0.25)
    assert main(["runs", str(results), "--model", "org/*", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "org/alpha-7b" in md and "beta-1b" not in md and md.startswith("| model |")
    assert main(["runs", str(results), "--task", "aime*"]) == 0
    assert "beta" not in capsys.readouterr().out
    assert main(["runs", str(results)]) == 0
    out = capsys.readouterr().out
    assert "alpha" in out and "beta" in out and "pass@1" in out
    assert main(["runs", str(tmp_path / "nowhere")]) == 2


def test_export_jsonl_filters_and_chat_form(make_openai_server: Any, tmp_path: Path) -> None:
    run = make_run(make_openai_server, tmp_path, "m", right, q=Q, n=K, truncated=cut,
                   tokens=lambda i, j: 100 * (j + 1))
    out = tmp_path / "all.jsonl"
    counts = export_run(run, out, ExportFilter())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert counts.written == len(rows) == Q * K - 1 and counts.dropped == {"truncated": 1}  # truncated dropped by default
    r = next(x for x in rows if x["problem_id"] == "p001" and x["sample_index"] == 0)
    text, answer, _ = problems(Q)[1]
    assert r["messages"][0]["role"] == "user" and r["messages"][0]["content"].startswith(text)
    assert "\\boxed{}" in r["messages"][0]["content"]  # the task's prompt, as the run sent it
    assert r["messages"][1] == {"role": "assistant", "content": f"Adding gives \\boxed{{{answer}}}."}
    assert r["correct"] is True and r["score"] == 1.0 and r["extracted"] == answer and r["reference"] == answer
    assert r["run_id"] == run.name and r["model"] == "m" and isinstance(r["seed"], int)
    assert r["completion_tokens"] == 100 and r["finish_reason"] == "stop"

    ok = tmp_path / "ok.jsonl"
    c = export_run(run, ok, ExportFilter(correct_only=True, max_per_problem=2))
    got = [json.loads(line) for line in ok.read_text().splitlines()]
    assert all(x["correct"] for x in got)
    per = {i: min(2, i % 4 + 1) for i in range(Q)}
    assert len(got) == sum(per.values()) == c.written
    assert {x["problem_id"] for x in got} == {f"p{i:03d}" for i in range(Q)}

    c = export_run(run, tmp_path / "len.jsonl", ExportFilter(min_tokens=200, max_tokens=300, keep_truncated=True))
    lens = [json.loads(line)["completion_tokens"] for line in (tmp_path / "len.jsonl").read_text().splitlines()]
    assert lens and all(200 <= t <= 300 for t in lens) and c.written == 2 * Q

    c = export_run(run, tmp_path / "cut.jsonl", ExportFilter(keep_truncated=True))
    assert c.written == Q * K and c.dropped["truncated"] == 0


def test_export_parquet_from_the_cli_and_bad_format(make_openai_server: Any, tmp_path: Path) -> None:
    run = make_run(make_openai_server, tmp_path, "m", right, q=Q, n=K)
    out = tmp_path / "sft.parquet"
    assert main(["export", str(run), "-o", str(out), "--correct-only"]) == 0
    t = pq.read_table(out).to_pylist()
    assert len(t) == sum(i % 4 + 1 for i in range(Q)) and t[0]["messages"][-1]["role"] == "assistant"
    assert all(r["correct"] for r in t)
    with pytest.raises(UserError, match="format"):
        export_run(run, tmp_path / "x.txt", ExportFilter())


def test_export_streams_from_the_store_skipping_failed_and_duplicate_lines(make_openai_server: Any,
                                                                            tmp_path: Path) -> None:
    run = make_run(make_openai_server, tmp_path, "m", right, q=Q, n=K)
    recs = list(SampleStore(run).records())
    with open(run / "samples.jsonl", "a") as f:  # a repeated line and a failed retry: neither doubles a row
        f.write(json.dumps(recs[0].to_json_dict()) + "\n")
        f.write(json.dumps({**recs[1].to_json_dict(), "status": "failed", "text": None}) + "\n")
    c = export_run(run, tmp_path / "e.jsonl", ExportFilter())
    assert c.written == Q * K


HUB = Path(__file__).resolve().parents[1] / "fixtures" / "hub"


def gsm8k_data(d: Path) -> Path:
    """A data dir with a made-up GSM8K train split (the Hub's layout; lm-eval's gsm8k style draws each problem's
    exemplars from it) and five test problems."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "gsm8k_train.jsonl").write_text((HUB / "gsm8k_train.jsonl").read_text())
    with open(d / "gsm8k.jsonl", "w") as f:
        for i in range(5):
            f.write(json.dumps({"id": f"gsm8k-{i}", "problem": f"Zoe has {i} hats and buys {i + 2} more. How many hats?",
                                "answer": str(2 * i + 2)}) + "\n")
    return d


def sent_by_seed(server: Any) -> dict[int, list[dict[str, str]]]:
    """What the server received for each request, by the request's seed, as export writes a prompt."""
    out = {}
    for r in server.requests():
        if r.path == "/v1/chat/completions":
            out[r.body["seed"]] = r.body["messages"]
        elif r.path == "/v1/completions":
            out[r.body["seed"]] = [{"role": "user", "content": r.body["prompt"]}]
    return out


@pytest.mark.parametrize("options", [
    {"api": "chat", "num_fewshot": 4},  # lm-eval's gsm8k: 4 exemplars drawn per problem from the train split
    {"api": "completions", "num_fewshot": 3, "prompt_style": "gsm8k_cot", "system_prompt": "Be brief."},
])
def test_export_of_a_few_shot_run_holds_exactly_the_prompts_that_were_sent(
        make_openai_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]) -> None:
    monkeypatch.setenv("REASONEVAL_OFFLINE", "1")
    monkeypatch.setenv("REASONEVAL_CACHE_DIR", str(tmp_path / "cache"))
    data = gsm8k_data(tmp_path / "data")
    server = make_openai_server(model="m")
    import reasoneval

    result = reasoneval.evaluate(base_url=server.base_url, model="m", tasks=["gsm8k"], n=2, data_dir=str(data),
                                 output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                 print_table=False, **options)
    sent = sent_by_seed(server)
    assert len(sent) == 10
    monkeypatch.setenv("REASONEVAL_DATA_DIR", str(data))  # where export finds the train split, as `run` does
    out = tmp_path / "sft.jsonl"
    assert main(["export", str(result.run_dir), "-o", str(out), "--keep-truncated"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10
    for r in rows:
        assert r["messages"][:-1] == sent[r["seed"]], (r["problem_id"], r["sample_index"])
    few = rows[0]["messages"][:-1]
    if options["api"] == "chat":  # the exemplars as turns, different per problem (drawn)
        assert [m["role"] for m in few] == ["user", "assistant"] * 4 + ["user"]
        assert len({json.dumps(r["messages"][:-1]) for r in rows}) == 5
    else:
        assert few[0]["content"].startswith("Be brief.\n\nQ: There are 15 trees")
    # Given the data dir directly, the same.
    monkeypatch.delenv("REASONEVAL_DATA_DIR")
    export_run(result.run_dir, tmp_path / "again.jsonl", ExportFilter(keep_truncated=True), data_dir=data)
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()
