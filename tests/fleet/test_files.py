"""What sweep and watch read and write, without a cluster: jobs and settings files, the typed state files,
the checkpoint folders watch recognises, and their flags."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pytest

from reasoneval.errors import UserError


def test_the_sweep_crash_hook_is_not_a_job_option(tmp_path: Path) -> None:
    from reasoneval.fleet.jobs import load_jobs

    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f"defaults: {{tasks: [arith], engine: echo}}\nmodels:\n  - {{model: m, test_crash_log: {tmp_path / 'x'}}}\n")
    with pytest.raises(UserError, match=r"models\[0\]: unknown option\(s\) test_crash_log; known: .*tasks"):
        load_jobs(jobs)


def test_a_jobs_resources_have_their_own_names_and_the_old_ones_still_work(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # num_gpus was both a job's reservation and the cluster's count (`sweep --num-gpus`): a job's is gpus_per_job.
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.run import flags

    monkeypatch.setattr(flags, "_WARNED_OLD_KEYS", set())
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("defaults: {tasks: [arith], engine: echo, gpus_per_job: 0.5, cpus_per_job: 2}\nmodels: [m]\n")
    (new,) = load_jobs(jobs)
    assert (new.gpus_per_job, new.cpus_per_job) == (0.5, 2.0)
    jobs.write_text("defaults: {tasks: [arith], engine: echo, num_gpus: 0.5, num_cpus: 2}\nmodels: [m, n]\n")
    logger = logging.getLogger("reasoneval")
    logger.addHandler(caplog.handler)
    try:
        old, other = load_jobs(jobs)
    finally:
        logger.removeHandler(caplog.handler)
    assert (old.gpus_per_job, old.cpus_per_job, other.gpus_per_job) == (0.5, 2.0, 0.5)
    assert old.fingerprint() == new.fingerprint()
    # (a record reaches caplog's handler twice where the logger also propagates to the root: counted once)
    assert sorted({id(r): r.getMessage() for r in caplog.records}.values()) == [  # once per file, not per job
        f"{jobs}: defaults: num_cpus is an old name of cpus_per_job; it still works, but use cpus_per_job",
        f"{jobs}: defaults: num_gpus is an old name of gpus_per_job; it still works, but use gpus_per_job"]
    jobs.write_text("defaults: {tasks: [arith], engine: echo, gpus_per_job: many}\nmodels: [m]\n")
    with pytest.raises(UserError, match=r"defaults: gpus_per_job and cpus_per_job must be numbers"):
        load_jobs(jobs)


def test_a_typo_in_the_defaults_is_reported_in_the_defaults(tmp_path: Path) -> None:
    """Issue 41.8: a typo in `defaults:` was reported as `models[0]`; in an entry it is still the entry's."""
    from reasoneval.fleet.jobs import load_jobs

    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("defaults: {tasks: [arith], engine: echo, temprature: 0.5}\nmodels: [m, n]\n")
    with pytest.raises(UserError, match=rf"^{jobs}: defaults: .*temprature") as e:
        load_jobs(jobs)
    assert "models[" not in str(e.value)
    jobs.write_text("defaults: {tasks: [arith], engine: echo}\nmodels: [m, {model: n, temprature: 0.5}]\n")
    with pytest.raises(UserError, match=rf"^{jobs}: models\[1\]: .*temprature"):
        load_jobs(jobs)


def test_a_settings_file_is_checked_when_it_is_read(tmp_path: Path) -> None:
    from reasoneval.fleet.jobs import load_settings

    settings = tmp_path / "eval.yaml"
    settings.write_text("tasks: [arith]\nengine: echo\ntemprature: 0.5\n")
    with pytest.raises(UserError, match=r"eval.yaml: unknown option\(s\) temprature; known: .*temperature"):
        load_settings(settings)
    settings.write_text("tasks: [arith]\nengine: echo\nproblem_field: q\ndata: mine.jsonl\n")
    loaded = load_settings(settings)
    assert loaded["data"] == str(tmp_path / "mine.jsonl") and loaded["output_dir"] == str(tmp_path / "results")
    settings.write_text("tasks: [arith\n")
    with pytest.raises(UserError, match="eval.yaml is not valid YAML"):
        load_settings(settings)


def test_state_files_written_before_the_types_read_the_same(tmp_path: Path) -> None:
    from reasoneval.fleet.state import JobState, WatchState, read_state, write_state

    # As 0.1.0 wrote them (json.dumps(state, indent=2, sort_keys=True)).
    old = {"m1": {"error": None, "fingerprint": "4016c1f818b67522", "generated": 48, "gpu_ids": ["0"],
                  "run_dir": "/r/m1/abc", "state": "done", "wall_s": 3.25},
           "m2": {"error": "worker died (2 retries used): X", "fingerprint": "370701e0b4a77fc7", "state": "failed"}}
    path = tmp_path / "jobs.yaml.state.json"
    path.write_text(json.dumps(old, indent=2, sort_keys=True))
    state = read_state(path)
    assert state["m1"] == JobState(state="done", fingerprint="4016c1f818b67522", run_dir="/r/m1/abc", gpu_ids=["0"],
                                   generated=48, wall_s=3.25)
    assert state["m2"].state == "failed" and state["m2"].gpu_ids == [] and state["m2"].run_dir is None
    write_state(path, state)
    again = json.loads(path.read_text())
    assert again["m1"] == old["m1"] and {k: v for k, v in again["m2"].items() if v not in (None, [])} == old["m2"]
    watch = tmp_path / ".reasoneval-watch.json"
    seen = {"seen": {"checkpoint-100": {"at": 5.0, "complete": True, "why": "marker"},
                     "checkpoint-200": {"signature": [["config.json", 2, 7]], "since": 3.0}}}
    watch.write_text(json.dumps(seen))
    ws = WatchState.read(watch)
    assert ws.seen["checkpoint-100"].complete and not ws.seen["checkpoint-200"].complete
    ws.write(watch)
    assert json.loads(watch.read_text()) == seen


@pytest.mark.parametrize("suffix", [".safetensors", ".bin", ".pt", ".pth", ".gguf"])
def test_watch_sees_a_checkpoint_with_each_weight_suffix(tmp_path: Path, suffix: str) -> None:
    from reasoneval.engines.checkpoint import WEIGHT_SUFFIXES
    from reasoneval.fleet.watch import WatchOptions, looks_like_checkpoint, scan

    assert suffix in WEIGHT_SUFFIXES  # the one list, used by the checkpoint identity and by watch
    folder = tmp_path / "ckpts" / "checkpoint-10"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert not looks_like_checkpoint(folder)
    (folder / f"model{suffix}").write_bytes(b"w")
    (folder / "COMPLETE").write_text("")
    opts = WatchOptions(settings={}, state_file=tmp_path / "state.json")
    assert [p.name for p in scan(tmp_path / "ckpts", opts)] == ["checkpoint-10"]


def _fleet_parser(command: str) -> argparse.ArgumentParser:
    from reasoneval.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[command]
    return parser


@pytest.mark.parametrize("command, path", [("sweep", "jobs.yaml"), ("watch", "ckpts")])
def test_job_retries_has_its_own_name_and_the_old_one_still_works(
        command: str, path: str, caplog: pytest.LogCaptureFixture) -> None:
    extra = ["--settings", "eval.yaml"] if command == "watch" else []
    p = _fleet_parser(command)
    assert p.parse_args([path, *extra]).job_retries == 2
    assert p.parse_args([path, *extra, "--job-retries", "5"]).job_retries == 5
    logger = logging.getLogger("reasoneval")
    logger.addHandler(caplog.handler)
    try:
        assert p.parse_args([path, *extra, "--max-retries", "4"]).job_retries == 4
    finally:
        logger.removeHandler(caplog.handler)
    assert "--max-retries is an old spelling of --job-retries" in caplog.text
    assert "retries of a job whose worker died" in p.format_help()


def test_sweep_options_come_from_the_flags() -> None:
    from reasoneval.cli.fleet import dashboard_defaults
    from reasoneval.fleet.loop import SweepOptions
    from reasoneval.run.flags import options_from_args

    a = _fleet_parser("sweep").parse_args(["jobs.yaml", "--busy-gpus", "1,3", "--num-gpus", "4", "--log-to", "mlflow",
                                           "--mlflow-experiment", "battery"])
    opts = SweepOptions(**options_from_args(SweepOptions, a), defaults=dashboard_defaults(a))
    assert (list(opts.busy_gpus), opts.num_gpus, opts.job_retries, opts.grading_workers) == ([1, 3], 4, 2, 1)
    assert opts.defaults == {"log_to": ("mlflow",), "log_args": {"mlflow_experiment": "battery"}}


def test_state_files_keep_the_keys_of_another_version_and_their_layout(tmp_path: Path) -> None:
    # The state records are the one serialiser's (keep_unknown): a newer version's keys are read, kept and written back
    # where the hand-written records put them, so the file's bytes are what dfcfac7 wrote.
    from reasoneval.fleet.state import JobState, SeenCheckpoint, WatchState, read_state, write_state

    path = tmp_path / "jobs.yaml.state.json"
    job = {"future": {"x": 1}, "state": "done", "fingerprint": "f", "error": None, "run_dir": "/r", "gpu_ids": ["0"],
           "generated": 4, "wall_s": 1.5}
    text = json.dumps({"a": job}, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text)
    state = read_state(path)
    assert state["a"].other == {"future": {"x": 1}} and state["a"].generated == 4
    write_state(path, state)
    assert path.read_text() == text
    assert JobState().to_json_dict() == {"state": "pending", "fingerprint": None, "error": None, "run_dir": None,
                                         "gpu_ids": [], "generated": None, "wall_s": None}
    watch = tmp_path / ".reasoneval-watch.json"
    seen = {"seen": {"c-1": {"later": True, "complete": True, "at": 5.0, "why": "marker"}, "c-2": {"since": 3.0}}}
    watch.write_text(json.dumps(seen))
    WatchState.read(watch).write(watch)
    assert json.loads(watch.read_text()) == seen
    assert SeenCheckpoint().to_json_dict() == {}
