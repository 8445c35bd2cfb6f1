"""--greedy from the CLI: temperature 0, one sample, a table of accuracy ± SE with lm-eval's numbers beside."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reasoneval.results.schema import load_run
from tests.run.test_pipeline import base_args, cli

QUESTIONS = [("Tom has 3 apples and buys 4 more. How many apples?", "7"),
             ("A box holds 1,000 pens; 234 more arrive. How many pens?", "1234"),
             ("It was 2 degrees and fell by 5. What is the temperature?", "-3"),
             ("Sam reads 10 pages a day for 3 days. How many pages?", "30")]


def test_greedy_table_shows_accuracy_and_lmeval_numbers(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(script={
        "Tom has 3": "3 + 4 = 7.\n#### 7",  # all three right
        "A box holds": "1,000 + 234 = 1,234 pens.\n#### 1,234",  # all three right (separators deleted)
        "It was 2": "2 - 5 = -3, so it is -3 degrees now, colder by 5",  # all wrong: no ####, last number 5
        "Sam reads": "10 * 3 = 30 pages. The answer is \\boxed{30}.",  # ours and flexible right, strict wrong
    })
    data = tmp_path / "data"
    data.mkdir()
    (data / "gsm8k.jsonl").write_text("".join(json.dumps({"id": f"gsm8k-{i}", "problem": q, "answer": a}) + "\n"
                                              for i, (q, a) in enumerate(QUESTIONS)))
    # The gsm8k style draws its exemplars from the train split, as lm-eval does (a made-up one here).
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "hub" / "gsm8k_train.jsonl", data / "gsm8k_train.jsonl")
    # (--temperature or --n beside --greedy would be ignored: an error, tests/run/test_option_combinations.py)
    r = cli(*base_args(server, tmp_path, "--tasks", "gsm8k", "--greedy", "--api", "completions", "--num-fewshot", "2"))
    assert r.returncode == 0, r.stderr
    assert "greedy" in r.stdout and "accuracy ± SE (%)" in r.stdout and "maj@" not in r.stdout
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:]]
            for line in r.stdout.splitlines() if line.count("│") > 3}
    assert rows["gsm8k"][:2] == ["4", "75.0 ± 25.0"]
    assert rows["gsm8k [strict-match]"][:2] == ["4", "50.0 ± 28.9"]
    assert rows["gsm8k [flexible-extract]"][:2] == ["4", "75.0 ± 25.0"]
    run = load_run(next((tmp_path / "results" / "test-model").iterdir()))
    assert run.config.n == 1 and run.config.settings.sampling is not None and run.config.settings.sampling.temperature == 0.0
    assert run.config.settings.prompt_style is not None and run.config.settings.prompt_style["num_fewshot"] == 2
    assert run.tasks["gsm8k"].extra["strict-match"].mean == 0.5
    # results.parquet keeps each extraction per sample, to see why the numbers differ.
    rows = {r["id"]: r for r in pq.read_table(run.run_dir / "results.parquet").to_pylist()}
    assert dict(rows["gsm8k-2"]["extra_extracted"]) == {"strict-match": [None], "flexible-extract": ["5"]}
    assert dict(rows["gsm8k-3"]["extra_correct"]) == {"strict-match": [False], "flexible-extract": [True]}
    assert rows["gsm8k-3"]["correct"] == [True]


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.timeout(900)
@pytest.mark.real_data("gsm8k.jsonl")
def test_embedded_model_four_shot_gsm8k_on_the_completions_api(tmp_path: Path, real_data_dir: Path) -> None:
    """The embedded base-model setup end to end: 4-shot gsm8k prompt, completions API, greedy, 6 problems (each
    about 10 s on one thread: 20 took 224 s of the suite)."""
    r = cli("run", "--tasks", "gsm8k", "--limit", "6", "--api", "completions", "--num-fewshot", "4", "--greedy",
            "--max-tokens", "128", "--engine-arg", "threads=1", "--data-dir", str(real_data_dir),
            "--output-dir", str(tmp_path), "--no-progress", timeout=840)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "accuracy ± SE (%)" in r.stdout
    assert "gsm8k [strict-match]" in r.stdout and "gsm8k [flexible-extract]" in r.stdout
    run = load_run(next(tmp_path.glob("*/*/summary.json")).parent)
    m = run.tasks["gsm8k"]
    assert run.complete and m.num_problems == 6 and set(m.extra) == {"strict-match", "flexible-extract"}
    assert all(g.num_problems == 6 for g in m.extra.values())
    style = run.config.settings.prompt_style
    assert style is not None and style["num_fewshot"] == 4 and run.config.settings.api == "completions"
    texts = [json.loads(line)["text"] for line in (run.run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(texts) == 6
    # The 4-shot prompt shapes the answers into the exemplars' "#### N" form, and the style's stop
    # ("Question:") ends each one before the model writes a fifth exemplar.
    assert any("\n#### " in t for t in texts)
    assert not any("Question:" in t for t in texts)
