"""`--log-to tensorboard|mlflow|wandb`: each backend's real library writing to a local store, read back with
that library's own reader (TensorBoard's EventAccumulator, MlflowClient on a SQLite store, W&B's offline
run file parsed with W&B's own protobuf records); `run` against the loopback server, `watch` and `sweep`
at each checkpoint's training step, and backends that fail without costing the run anything."""

from __future__ import annotations

import glob
import json
import os
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from reasoneval.metrics import GroupMetrics, TaskMetrics, TokenStats
from reasoneval.report.dashboards import checkpoint_step, lmeval_name, result_metrics
from tests.run.test_pipeline import base_args, write_data_dir

ROOT = Path(__file__).resolve().parents[2]


# ---- the backends' own readers ------------------------------------------------------------------

def tensorboard_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def mlflow_history(uri: str, experiment: str = "reasoneval") -> tuple[Any, dict[str, list[tuple[int, float]]]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    return run, {k: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, k))
                 for k in run.data.metrics}


def _wandb_file_records(path: str) -> list[Any]:
    """The `Record` protobufs of one offline run's `.wandb` file: a log of W&B's records in 32 KiB blocks of (crc32,
    length, type) chunks after a 7-byte header."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B"
    pos, chunk, out = 7, b"", []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            break
        chunk += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL, LAST
            record = pb.Record()
            record.ParseFromString(chunk)
            chunk = b""
            out.append(record)
    return out


def wandb_records(wandb_dir: Path, wait_s: float = 30.0) -> Iterator[Any]:
    """The records of the offline runs under wandb_dir, each file once it ends with its run's exit record: W&B's
    service process writes the file after `finish()` has returned (a test that read it at once on a loaded machine
    found no run in it), so each file is read again until it is complete, for up to `wait_s`."""
    deadline = time.monotonic() + wait_s
    paths: list[str] = []
    while not paths and time.monotonic() < deadline:
        paths = sorted(glob.glob(str(wandb_dir / "wandb" / "offline-run-*" / "*.wandb")))
        if not paths:
            time.sleep(0.1)
    for path in paths:
        while True:
            try:
                records = _wandb_file_records(path)
            except Exception:  # (a chunk being written)
                records = []
            if (records and records[-1].HasField("exit")) or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        yield from records


def wandb_history(wandb_dir: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Run names and history rows of the offline runs under wandb_dir."""
    names, rows = [], []
    for record in wandb_records(wandb_dir):
        if record.HasField("run"):
            names.append(record.run.display_name)
        if record.HasField("history"):
            rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item})
    return names, rows


def wandb_config(wandb_dir: Path) -> dict[str, Any]:
    """The config the offline runs under wandb_dir recorded (the last value of each key)."""
    out: dict[str, Any] = {}
    for record in wandb_records(wandb_dir):
        if record.HasField("config"):
            out.update({i.key: json.loads(i.value_json) for i in record.config.update})
    return out


def tensorboard_hparams(log_dir: Path) -> dict[str, Any]:
    """The newest HParams record in the event files under log_dir (TensorBoard's own loader and protos)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import plugin_data_pb2

    records = [(e.wall_time, v.metadata.plugin_data.content) for path in sorted(log_dir.glob("events.out.tfevents.*"))
               for e in EventFileLoader(str(path)).Load() for v in e.summary.value
               if v.tag == "_hparams_/session_start_info"]
    info = plugin_data_pb2.HParamsPluginData.FromString(max(records)[1]).session_start_info
    return {k: getattr(v, v.WhichOneof("kind")) for k, v in info.hparams.items()}


@pytest.fixture
def offline_wandb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """W&B in offline mode writing under tmp_path; its process-wide state (which reads WANDB_* once) reset after."""
    import wandb

    d = tmp_path / "wandb-dir"
    d.mkdir()
    for k, v in {"WANDB_MODE": "offline", "WANDB_DIR": str(d), "WANDB_SILENT": "true", "WANDB_CONSOLE": "off",
                 "WANDB_DISABLE_GIT": "true", "WANDB_DISABLE_CODE": "true"}.items():
        monkeypatch.setenv(k, v)
    wandb.teardown()
    yield d
    wandb.teardown()


# ---- names ----------------------------------------------------------------------------------------

def test_metric_names_are_lm_evals_and_steps_come_from_checkpoint_names() -> None:
    g = GroupMetrics(num_problems=4, mean=0.25, stderr=0.1)
    m = TaskMetrics(num_problems=4, num_samples=2, num_missing=0, mean=0.5, stderr=0.2, ci95=None,
                    stderr_resample=None, pass_at_k={1: 0.5, 2: 0.75}, pass_at_k_stderr={}, maj_at_k={1: 0.5, 2: 0.5},
                    tokens=TokenStats(mean=10.0, median=9.0, p90=12.0, max=20), truncation_rate=0.0, no_answer_rate=0.25,
                    breakdown={"subject": {"Algebra": g}},
                    extra={"strict-match": g, "flexible-extract": g, "exact_match": g, "prompt_strict": g})
    out = result_metrics(type("R", (), {"tasks": {"gsm8k": m}})())
    assert out["gsm8k/pass@1"] == 0.5 and out["gsm8k/pass@1_stderr"] == 0.2 and out["gsm8k/pass@2"] == 0.75
    assert out["gsm8k/maj@2"] == 0.5 and "gsm8k/maj@1" not in out
    assert out["gsm8k/exact_match,strict-match"] == 0.25 and out["gsm8k/exact_match_stderr,strict-match"] == 0.1
    assert out["gsm8k/exact_match,flexible-extract"] == 0.25 and out["gsm8k/exact_match"] == 0.25
    assert out["gsm8k/prompt_level_strict_acc"] == 0.25 and out["gsm8k/prompt_level_strict_acc_stderr"] == 0.1
    assert out["gsm8k/subject/Algebra"] == 0.25 and out["gsm8k/tokens_mean"] == 10.0
    assert out["gsm8k/truncation_rate"] == 0.0 and out["gsm8k/no_answer_rate"] == 0.25
    assert lmeval_name("math_verify") == "math_verify"
    for name, step in [("checkpoint-1200", 1200), ("/ckpt/run7/step_1200", 1200), ("global_step1200", 1200),
                       ("step-300/", 300), ("iter_0001200", 1200), ("m1", None), ("Qwen2.5-7B", None)]:
        assert checkpoint_step(name) == step, name


# ---- reasoneval run --------------------------------------------------------------------------------

def test_run_logs_every_task_once_to_each_backend(make_openai_server: Any, tmp_path: Path, offline_wandb: Path) -> None:
    from reasoneval.cli.main import main

    write_data_dir(tmp_path / "data")
    server = make_openai_server(script={"x+1=5": "so \\boxed{4}", "2 \\cdot 5": "\\boxed{10}",
                                        "3^2": ["\\boxed{9}", "\\boxed{6}"], "frac{2}{4}": "\\boxed{0.5}",
                                        "7-2": "The answer is \\boxed{3}"})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "4", "--log-to", "tensorboard,mlflow",
                     "--log-to", "wandb", "--mlflow-tracking-uri", uri, "--log-run-name", "eval-a",
                     "--tensorboard-dir", str(tmp_path / "tb"))
    assert main(args) == 0
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    expected: dict[str, float] = {}
    for task, t in summary["tasks"].items():
        expected[f"{task}/pass@1"], expected[f"{task}/pass@1_stderr"] = t["mean"], t["stderr"]
        expected[f"{task}/pass@4"], expected[f"{task}/maj@4"] = t["pass_at_k"]["4"], t["maj_at_k"]["4"]
        expected[f"{task}/truncation_rate"], expected[f"{task}/tokens_mean"] = t["truncation_rate"], t["tokens"]["mean"]
        for name, g in (t.get("extra") or {}).items():  # lm-eval's columns, under lm-eval's names
            expected[f"{task}/{lmeval_name(name)}"] = g["mean"]
    expected["all/pass@1"] = summary["aggregate"]["mean"]
    assert 0 < expected["aime24/pass@1"] < 1 and expected["math500/pass@1"] == 0.5

    tb = tensorboard_scalars(tmp_path / "tb" / "eval-a")
    run, ml = mlflow_history(uri)
    names, rows = wandb_history(offline_wandb)
    assert run.info.run_name == "eval-a" and run.data.tags["reasoneval.run_id"] == summary["run_id"]
    assert names == ["eval-a"] and len(rows) == 1  # logged once
    for key, value in expected.items():
        assert tb[key] == [(0, pytest.approx(value, rel=1e-6))], key  # TensorBoard keeps float32
        assert ml[key.replace("@", "_at_").replace(",", "_")] == [(0, pytest.approx(value, rel=1e-12))], key
        assert rows[0][key] == pytest.approx(value, rel=1e-12), key


def test_the_step_is_the_served_models_and_each_backend_records_the_settings(
        make_openai_server: Any, tmp_path: Path, offline_wandb: Path) -> None:
    """`--model` left out: the server's only model, `run7/checkpoint-300`, was evaluated, so its figures go at step 300
    (they went to step 0: the step was read from the absent --model); and the run's settings are each backend's
    run-level record, read back with its own reader (they were not logged at all)."""
    from reasoneval.cli.main import main

    write_data_dir(tmp_path / "data")
    server = make_openai_server(model="run7/checkpoint-300", script={"": "\\boxed{4}"})
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = [a for a in base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "3", "--temperature", "0.7",
                                 "--top-p", "0.9", "--max-tokens", "512", "--seed", "7", "--log-to", "tensorboard,mlflow,wandb",
                                 "--mlflow-tracking-uri", uri, "--tensorboard-dir", str(tmp_path / "tb"),
                                 "--log-run-name", "eval")
            if a not in ("--model", "test-model")]
    assert main(args) == 0
    (run_dir,) = (tmp_path / "results" / "run7--checkpoint-300").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    tb = tensorboard_scalars(tmp_path / "tb" / "eval")
    run, ml = mlflow_history(uri)
    _, rows = wandb_history(offline_wandb)
    assert tb["aime24/pass@1"] == [(300, pytest.approx(summary["tasks"]["aime24"]["mean"]))]
    assert ml["aime24/pass_at_1"] == [(300, pytest.approx(summary["tasks"]["aime24"]["mean"]))]
    assert rows[0]["checkpoint_step"] == 300
    want = {"n": 3, "temperature": 0.7, "top_p": 0.9, "max_tokens": 512, "seed": 7, "prompt_style": "default",
            "engine": "openai", "api": "chat", "task_version/aime24": "1", "task_version/math500": "1",
            "model": "run7/checkpoint-300"}
    hp = tensorboard_hparams(tmp_path / "tb" / "eval")
    params = run.data.params
    config = wandb_config(offline_wandb)
    for key, value in want.items():
        assert hp[key] == pytest.approx(value) if isinstance(value, float) else hp[key] == value, key
        assert params[key] == str(value), key
        assert config[key] == value, key
    assert hp["reasoneval_version"] == params["reasoneval_version"] == config["reasoneval_version"] != ""


def test_a_sweep_records_a_jobs_other_settings_under_its_step() -> None:
    from reasoneval.report.dashboards import Dashboards

    d = Dashboards()
    key = ("mlflow", "jobs")
    assert d._new_params(key, {"n": 4, "temperature": 0.6}, 100) == {"n": 4, "temperature": 0.6}
    assert d._new_params(key, {"n": 4, "temperature": 0.6}, 200) == {}  # recorded already
    assert d._new_params(key, {"n": 16, "temperature": 0.6}, 300) == {"n.step_300": 16}  # a job with another K


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reasoneval", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **(env or {})})


def test_a_failing_backend_warns_once_and_the_run_completes(make_openai_server: Any, tmp_path: Path) -> None:
    write_data_dir(tmp_path / "data")
    server = make_openai_server(script={"": "\\boxed{4}"})
    (tmp_path / "not-a-dir").write_text("a file where TensorBoard wants a folder")
    with socket.socket() as sock:  # a port nothing listens on: an MLflow server that is down
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    t0 = time.monotonic()
    r = _cli(*base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "3", "--log-to", "mlflow,tensorboard",
                        "--mlflow-tracking-uri", f"http://127.0.0.1:{port}", "--tensorboard-dir", str(tmp_path / "not-a-dir")))
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 60  # MLflow's own retries of a down server take minutes
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True and len((run_dir / "samples.jsonl").read_text().splitlines()) == 15
    for name, fix in (("mlflow", "--mlflow-tracking-uri"), ("tensorboard", "--tensorboard-dir")):
        lines = [line for line in r.stderr.splitlines() if f"--log-to {name} failed" in line]
        assert len(lines) == 1 and fix in lines[0] and f"reasoneval report {run_dir} --log-to {name}" in lines[0], r.stderr
    # Fixed, the same results go to the dashboard from the run directory (no request sent).
    before = server.count_requests()
    r = _cli("report", str(run_dir), "--log-to", "tensorboard", "--tensorboard-dir", str(tmp_path / "tb"),
             "--step", "500", "--grading-workers", "1")
    assert r.returncode == 0, r.stderr
    assert server.count_requests() == before
    tb = tensorboard_scalars(tmp_path / "tb" / f"test-model-{summary['run_id']}")
    assert tb["math500/pass@1"] == [(500, pytest.approx(summary["tasks"]["math500"]["mean"]))]


def test_a_missing_library_is_a_one_line_error_before_any_request(make_openai_server: Any, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    write_data_dir(tmp_path / "data")
    server = make_openai_server(script={"": "\\boxed{4}"})
    hide = tmp_path / "hide"
    hide.mkdir()
    # A Python where wandb is not installed: an import hook that finds no `wandb`.
    (hide / "sitecustomize.py").write_text(
        "import sys\nclass Hide:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'wandb':\n            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n")
    r = subprocess.run([sys.executable, "-m", "reasoneval", *base_args(server, tmp_path, "--tasks", "aime24", "--n", "1",
                                                                      "--log-to", "wandb")],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), str(ROOT / "src")])})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == ("reasoneval: error: --log-to wandb needs the wandb package: "
                                                  "pip install 'reasoneval[wandb]' (or pip install wandb)")
    assert server.count_requests() == 0 and not (tmp_path / "results").exists()
    from reasoneval.cli.main import main

    assert main(base_args(server, tmp_path, "--tasks", "aime24", "--log-to", "neptune")) == 2
    assert "unknown dashboard 'neptune'; known dashboards: mlflow, tensorboard, wandb" in capsys.readouterr().err
    assert server.count_requests() == 0


# ---- watch and sweep: one dashboard run, each checkpoint at its step ---------------------------------

@pytest.mark.usefixtures("ray_cluster")
def test_watch_logs_each_checkpoint_at_its_step_to_each_backend(tmp_path: Path, offline_wandb: Path) -> None:
    from reasoneval.fleet.state import read_state
    from reasoneval.fleet.watch import WatchOptions, watch_once
    from reasoneval.report.dashboards import Dashboards

    root = tmp_path / "run7"
    root.mkdir()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    settings = {"tasks": ["arith"], "limit": 4, "n": 2, "engine": "echo", "output_dir": str(tmp_path / "results"),
                "log_to": ["tensorboard", "mlflow", "wandb"],
                "log_args": {"mlflow_tracking_uri": uri, "tensorboard_dir": str(tmp_path / "tb")}}
    with Dashboards(root.name) as dashboards:
        opts = WatchOptions(settings=settings, state_file=root / ".reasoneval-watch.json", stable_s=60,
                            dashboards=dashboards)
        for name in ("global_step200", "checkpoint-100"):  # the later step is complete first
            (root / name).mkdir()
            for f in ("config.json", "model.safetensors", "COMPLETE"):
                (root / name / f).write_text("{}")
            assert watch_once(root, opts) == [name]
    jobs = read_state(root / ".reasoneval-watch.json.jobs.json")
    means = {int(n.split("-")[-1].removeprefix("global_step")): json.loads(
        (Path(e.run_dir) / "summary.json").read_text())["tasks"]["arith"]["mean"] for n, e in jobs.items()}
    assert sorted(means) == [100, 200]

    tb = tensorboard_scalars(tmp_path / "tb" / "run7")
    assert sorted(tb["arith/pass@1"]) == [(s, pytest.approx(means[s])) for s in (100, 200)]
    run, ml = mlflow_history(uri)
    assert run.info.run_name == "run7" and ml["arith/pass_at_1"] == [(s, pytest.approx(means[s])) for s in (100, 200)]
    names, rows = wandb_history(offline_wandb)
    assert names == ["run7"]  # one W&B run for the watcher
    assert [(r["checkpoint_step"], r["arith/pass@1"]) for r in rows] == [(200, means[200]), (100, means[100])]


@pytest.mark.usefixtures("ray_cluster")
def test_sweep_logs_at_the_jobs_files_steps_and_logging_options_do_not_rerun_jobs(
        tmp_path: Path, offline_wandb: Path, caplog: pytest.LogCaptureFixture) -> None:
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.fleet.loop import run_jobs
    from reasoneval.fleet.status import show_status

    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text(f"""
defaults: {{tasks: [arith], limit: 3, n: 2, engine: echo, log_to: "tensorboard,mlflow,wandb",
            log_args: {{tensorboard_dir: {tmp_path / 'tb'}, mlflow_tracking_uri: "sqlite:///{tmp_path / 'ml.db'}"}}}}
models:
  - {{model: m-a, step: 1000}}
  - {{model: m-b, step: 3000}}
  - /ckpt/checkpoint-2000
""")
    jobs = load_jobs(jobs_file)
    assert [j.step for j in jobs] == [1000, 3000, 2000]
    state = run_jobs(jobs, tmp_path / "jobs.yaml.state.json")
    assert {e.state for e in state.values()} == {"done"}
    means = {j.step: json.loads((Path(state[j.name].run_dir) / "summary.json").read_text())["tasks"]["arith"]["mean"]
             for j in jobs}
    tb = tensorboard_scalars(tmp_path / "tb" / "jobs")
    assert sorted(tb["arith/pass@1"]) == [(s, pytest.approx(means[s])) for s in (1000, 2000, 3000)]
    run, ml = mlflow_history(f"sqlite:///{tmp_path / 'ml.db'}")
    assert run.info.run_name == "jobs" and ml["arith/pass_at_1"] == [(s, pytest.approx(v)) for s, v in sorted(tb["arith/pass@1"])]
    names, rows = wandb_history(offline_wandb)
    assert names == ["jobs"] and sorted(r["checkpoint_step"] for r in rows) == [1000, 2000, 3000], caplog.text
    assert {r["checkpoint_step"]: r["arith/pass@1"] for r in rows} == {s: pytest.approx(v) for s, v in tb["arith/pass@1"]}
    # The sweep's table by step (`sweep --status` writes it beside the jobs file), the values logged.
    assert show_status(jobs_file, jobs)
    md = (tmp_path / "jobs.yaml.checkpoints.md").read_text().splitlines()
    # each job's training run (its model's folder: /ckpt for /ckpt/checkpoint-2000), then its step
    assert md[0].startswith("| training run | checkpoint | step | arith/pass@1 |")
    logged = dict(tb["arith/pass@1"])
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in md[2:]]
    assert [tuple(c[:3]) for c in cells] == [("", "m-a", "1000"), ("", "m-b", "3000"),
                                             ("/ckpt", "checkpoint-2000", "2000")]
    assert [float(c[3].split(" ")[0]) for c in cells] == [pytest.approx(logged[s], abs=5e-5) for s in (1000, 3000, 2000)]
    # Another dashboard for the same jobs: finished jobs are not run again (the fingerprint ignores log_*).
    again = load_jobs(jobs_file, {"log_to": [], "log_args": {}})
    assert [j.fingerprint() for j in again] == [j.fingerprint() for j in jobs]


def test_bad_logging_options_in_a_jobs_file_are_one_line_errors(tmp_path: Path) -> None:
    from reasoneval.errors import UserError
    from reasoneval.fleet.jobs import load_jobs

    jobs_file = tmp_path / "jobs.yaml"
    for text, error in [("{model: m, step: soon}", "models\\[0\\]: step must be an integer"),
                        ("{model: m, log_to: neptune}", "unknown dashboard 'neptune'"),
                        ("{model: m, log_to: mlflow, log_args: {mlflow_uri: x}}", "unknown log_args key\\(s\\) mlflow_uri")]:
        jobs_file.write_text(f"defaults: {{tasks: [arith], engine: echo}}\nmodels:\n  - {text}\n")
        with pytest.raises(UserError, match=error):
            load_jobs(jobs_file)


# ---- the commands: `reasoneval watch` and `reasoneval sweep` with a backend that fails -------------------

@pytest.fixture
def dashboard_warnings(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """The `reasoneval` logger's records (main() stops it propagating to the root logger, where caplog listens)."""
    import logging

    logger = logging.getLogger("reasoneval")
    logger.addHandler(caplog.handler)
    yield caplog
    logger.removeHandler(caplog.handler)


@pytest.mark.usefixtures("ray_cluster")
def test_watch_command_warns_once_for_a_failing_backend_and_logs_the_others_at_each_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dashboard_warnings: pytest.LogCaptureFixture) -> None:
    from reasoneval.cli.main import main
    from reasoneval.fleet.state import read_state

    monkeypatch.chdir(tmp_path)  # MLflow's default store (./mlflow.db or ./mlruns) would land here if the URI were lost
    root = tmp_path / "run7"
    root.mkdir()
    for name in ("checkpoint-100", "checkpoint-200"):
        (root / name).mkdir()
        for f in ("config.json", "model.safetensors", "COMPLETE"):
            (root / name / f).write_text("{}")
    uri = f"sqlite:///{tmp_path / 'store' / 'ml.db'}"
    (tmp_path / "store").mkdir()
    (tmp_path / "eval.yaml").write_text(f"tasks: [arith]\nlimit: 4\nn: 2\nengine: echo\nlog_to: mlflow\n"
                                        f"log_args: {{mlflow_tracking_uri: '{uri}'}}\n")
    (tmp_path / "not-a-dir").write_text("a file where TensorBoard wants a folder")
    # --log-to replaces the settings file's; --tensorboard-dir is added to its log_args (the URI stays).
    assert main(["watch", str(root), "--settings", str(tmp_path / "eval.yaml"), "--once", "--log-to", "tensorboard,mlflow",
                 "--tensorboard-dir", str(tmp_path / "not-a-dir")]) == 0
    jobs = read_state(root / ".reasoneval-watch.json.jobs.json")
    assert {e.state for e in jobs.values()} == {"done"} and len(jobs) == 2
    means = {}
    for name, e in jobs.items():
        summary = json.loads((Path(e.run_dir) / "summary.json").read_text())
        assert summary["complete"] and len((Path(e.run_dir) / "samples.jsonl").read_text().splitlines()) == 8
        means[int(name.split("-")[1])] = summary["tasks"]["arith"]["mean"]
    failed = [r.getMessage() for r in dashboard_warnings.records if "--log-to tensorboard failed" in r.getMessage()]
    assert len(failed) == 1, failed  # once, not once per checkpoint
    run, ml = mlflow_history(uri)
    assert run.info.run_name == "run7" and ml["arith/pass_at_1"] == [(s, pytest.approx(means[s])) for s in (100, 200)]
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlflow.db").exists()


@pytest.mark.usefixtures("ray_cluster")
def test_sweep_command_warns_once_for_a_failing_backend_and_finishes_every_job(
        tmp_path: Path, dashboard_warnings: pytest.LogCaptureFixture) -> None:
    from reasoneval.cli.main import main
    from reasoneval.fleet.state import read_state

    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text("defaults: {tasks: [arith], limit: 3, n: 2, engine: echo}\n"
                         "models:\n  - {model: m-a, step: 10}\n  - /ckpt/step_20\n  - /ckpt/step_30\n")
    (tmp_path / "not-a-dir").write_text("a file where TensorBoard wants a folder")
    uri = f"sqlite:///{tmp_path / 'ml.db'}"
    assert main(["sweep", str(jobs_file), "--log-to", "tensorboard", "--log-to", "mlflow", "--mlflow-tracking-uri", uri,
                 "--tensorboard-dir", str(tmp_path / "not-a-dir"), "--mlflow-experiment", "battery"]) == 0
    state = read_state(tmp_path / "jobs.yaml.state.json")
    assert [e.state for e in state.values()] == ["done"] * 3
    for e in state.values():
        assert len((Path(e.run_dir) / "samples.jsonl").read_text().splitlines()) == 6
    failed = [r.getMessage() for r in dashboard_warnings.records if "--log-to tensorboard failed" in r.getMessage()]
    assert len(failed) == 1, failed
    run, ml = mlflow_history(uri, "battery")
    assert run.info.run_name == "jobs" and [s for s, _ in ml["arith/pass_at_1"]] == [10, 20, 30]
    # (each job's training run: /ckpt for /ckpt/step_20, none for m-a)
    assert (tmp_path / "jobs.yaml.checkpoints.csv").read_text().splitlines()[0].startswith(
        "training_run,checkpoint,step,arith/pass@1")
