"""`reasoneval runs DIR --by-checkpoint`: the table of a sweep teams paste into reports, checkpoints by training
step x (task, metric) with lm-eval's metric names, as CSV and Markdown, on real runs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from reasoneval.cli.main import main
from reasoneval.report.dashboards import lmeval_name
from tests.analysis.runs import SUBJECTS, TASK, make_run

Q, K = 6, 4


def test_checkpoints_by_step_times_task_and_metric_in_csv_and_markdown(make_openai_server: Any, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Three checkpoints of one training run, evaluated in another order than their steps.
    runs = {name: make_run(make_openai_server, tmp_path, f"run7/{name}", lambda i, j, s=s: j < s + i % 2, q=Q, n=K)
            for name, s in (("checkpoint-1200", 3), ("global_step300", 1), ("step_600", 2))}
    summaries = {name: json.loads((d / "summary.json").read_text()) for name, d in runs.items()}
    # The battery runs one checkpoint twice more on the same task with other settings: one row, more columns.
    shots = {k: make_run(make_openai_server, tmp_path, "run7/step_600", lambda i, j, k=k: j < k, q=Q, n=K, num_fewshot=k,
                         prompt_style="gsm8k_wei") for k in (2, 3)}
    t = summaries["step_600"]["tasks"][TASK]
    extras = [lmeval_name(e) for e in t.get("extra") or {}]  # lm-eval's columns the task has (exact_match, ...)
    columns = [f"{TASK}/pass@1", *[f"{TASK}/{e}" for e in extras], f"{TASK}/pass@{K}", f"{TASK}/maj@{K}",
               *[f"{TASK}/subject/{s}" for s in sorted(SUBJECTS)]]

    assert main(["runs", str(tmp_path / "results"), "--by-checkpoint", "--csv"]) == 0
    reader = csv.DictReader(io.StringIO(capsys.readouterr().out))
    rows = list(reader)
    assert [(r["checkpoint"], r["step"]) for r in rows] == [("global_step300", "300"), ("step_600", "600"),
                                                            ("checkpoint-1200", "1200")]  # by step
    shot_columns = {k: [f"{TASK} (gsm8k_wei, {k}-shot)/pass@1"] for k in (2, 3)}
    fields = [c for c in reader.fieldnames or [] if "/" in c and "_stderr" not in c]
    assert fields[:len(columns)] == columns
    for k, d in shots.items():
        assert shot_columns[k][0] in fields
        shot = json.loads((d / "summary.json").read_text())["tasks"][TASK]
        assert float(rows[1][shot_columns[k][0]]) == shot["mean"] == (k + 0.0) / K  # step_600's row
        assert rows[0][shot_columns[k][0]] == rows[2][shot_columns[k][0]] == ""  # the others have no such run
        assert str(d) in rows[1]["run_dir"].split(";")
    for r in rows:
        s = summaries[r["checkpoint"]]["tasks"][TASK]
        assert float(r[f"{TASK}/pass@1"]) == s["mean"] and float(r[f"{TASK}/pass@1_stderr"]) == s["stderr"]
        assert float(r[f"{TASK}/maj@{K}"]) == s["maj_at_k"][str(K)]
        for name, g in (s.get("extra") or {}).items():
            assert float(r[f"{TASK}/{lmeval_name(name)}"]) == g["mean"]
            assert float(r[f"{TASK}/{lmeval_name(name, stderr=True)}"]) == g["stderr"]
        for subject in SUBJECTS:
            assert float(r[f"{TASK}/subject/{subject}"]) == s["breakdown"]["subject"][subject]["mean"]
        assert r["complete"] == "True" and str(runs[r["checkpoint"]]) in r["run_dir"].split(";")
    means = [summaries[n]["tasks"][TASK]["mean"] for n in ("global_step300", "step_600", "checkpoint-1200")]
    assert len(set(means)) == 3  # three different rows, not one repeated

    assert main(["runs", str(tmp_path / "results"), "--by-checkpoint", "--markdown"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0] == "| " + " | ".join(["training run", "checkpoint", "step", *fields]) + " |"
    assert md[1] == "|---|---|---|" + "|".join(["---:"] * len(fields)) + "|"
    assert len(md) == 5  # three checkpoints
    s = summaries["step_600"]["tasks"][TASK]
    assert md[3].startswith(f"| run7 | step_600 | 600 | {s['mean']:.4f} ± {s['stderr']:.4f} |")
    assert [line.split(" | ")[1] for line in md[2:]] == ["global_step300", "step_600", "checkpoint-1200"]

    # Only some metrics, for a narrower table.
    assert main(["runs", str(tmp_path / "results"), "--by-checkpoint", "--markdown", "--metric", "pass@1"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0] == (f"| training run | checkpoint | step | {TASK}/pass@1 | {TASK} (gsm8k_wei, 2-shot)/pass@1 | "
                     f"{TASK} (gsm8k_wei, 3-shot)/pass@1 |")


def test_two_training_runs_with_one_checkpoint_name_are_two_rows(make_openai_server: Any, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """run7/checkpoint-100 and run8/checkpoint-100 in one results folder: each keeps its own figures (they were
    one row holding run8's, run7's gone)."""
    runs = {name: make_run(make_openai_server, tmp_path, name, lambda i, j, s=s: j < s, q=Q, n=K)
            for name, s in (("run7/checkpoint-100", 1), ("run8/checkpoint-100", 3), ("run8/checkpoint-50", 2))}
    means = {name: json.loads((d / "summary.json").read_text())["tasks"][TASK]["mean"] for name, d in runs.items()}
    assert len(set(means.values())) == 3
    assert main(["runs", str(tmp_path / "results"), "--by-checkpoint", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    got = [(r["training_run"], r["checkpoint"], r["step"], float(r[f"{TASK}/pass@1"])) for r in rows]
    assert got == [("run7", "checkpoint-100", "100", means["run7/checkpoint-100"]),
                   ("run8", "checkpoint-50", "50", means["run8/checkpoint-50"]),
                   ("run8", "checkpoint-100", "100", means["run8/checkpoint-100"])]


def test_two_runs_of_one_checkpoint_with_other_settings_are_two_rows(make_openai_server: Any, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41.1: `--n 8 --temperature 0.6`, then `--n 4 --temperature 1.0` (and another seed) of one model. Each
    is a row of its own with its own pass@1, pass@K and maj@K, and a `settings` column says what differs (the row
    was one, pass@1 from the T=1.0 run beside pass@8 and maj@8 from the T=0.6 run)."""
    name = "run7/checkpoint-100"
    runs = {"a": make_run(make_openai_server, tmp_path, name, lambda i, j: j < 5, q=Q, n=8, temperature=0.6),
            "b": make_run(make_openai_server, tmp_path, name, lambda i, j: j < 1, q=Q, n=4, temperature=1.0),
            "c": make_run(make_openai_server, tmp_path, name, lambda i, j: j < 2, q=Q, n=4, temperature=1.0, seed=7)}
    summaries = {k: json.loads((d / "summary.json").read_text()) for k, d in runs.items()}
    assert main(["runs", str(tmp_path / "results"), "--by-checkpoint", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3
    by_run = {r["run_dir"]: r for r in rows}
    assert set(by_run) == {str(d) for d in runs.values()}  # one run each
    labels = {k: by_run[str(d)]["settings"] for k, d in runs.items()}
    assert labels == {"a": "temperature=0.6, seed=42, K=8", "b": "temperature=1, seed=42, K=4",
                      "c": "temperature=1, seed=7, K=4"}
    for k, d in runs.items():
        r, t = by_run[str(d)], summaries[k]["tasks"][TASK]
        assert float(r[f"{TASK}/pass@1"]) == t["mean"]
        K = max(int(x) for x in t["pass_at_k"])
        assert float(r[f"{TASK}/pass@{K}"]) == t["pass_at_k"][str(K)] and float(r[f"{TASK}/maj@{K}"]) == t["maj_at_k"][str(K)]
        other = 4 if K == 8 else 8
        assert r[f"{TASK}/pass@{other}"] == "" and r[f"{TASK}/maj@{other}"] == ""  # never a figure of another run
    # The terminal table: headers whole (folded, not cut with "…"), and a footer that describes these rows.
    assert main(["runs", str(tmp_path / "results"), "--by-checkpoint"]) == 0
    out, err = capsys.readouterr()
    assert "…" not in out and "settings" in out
    assert "Each row is one evaluation of a checkpoint" in err and "a run's headline: its widest" not in err
