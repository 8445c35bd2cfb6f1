"""The ray engine on a real Ray cluster of two nodes on this machine (tests/conftest.py `ray_cluster`: 1 CPU
and 1 declared GPU per node).

The replicas' inner engine is `echo` (zero cost, a fixed delay) where the model is not the point, a test-only
engine registered in the test's process (any registered engine can be the inner one), and the embedded
`local` model once, end to end. What cannot run here: vLLM on real GPUs inside the replicas
(the declared GPUs have no hardware behind them; `inner=auto` runs `local` on such a cluster).
"""

from __future__ import annotations

import asyncio
import collections
import json
from pathlib import Path
from typing import Any

import pytest

from reasoneval.engines import ENGINES, CommonOptions, create_engine
from reasoneval.errors import EngineDown
from reasoneval.run.generation import generate_run, load_tasks
from reasoneval.run.options import EvalConfig
from tests.fixtures.ray_processes import clusters_started_in, ray_processes_in
from tests.plugins import register_for_the_test

pytestmark = pytest.mark.usefixtures("ray_cluster")


def _cfg(tmp_path: Path, **engine_args: Any) -> EvalConfig:
    return EvalConfig(tasks=["arith"], limit=20, n=4, engine="ray", engine_args=engine_args, concurrency=64,
                      output_dir=str(tmp_path / "results"), progress=False, print_table=False, max_retries=0)


def _journal(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


async def _run(cfg: EvalConfig, during: Any = None) -> tuple[Path, Any, Any]:
    engine = create_engine("ray", cfg.common_options(), cfg.engine_args)
    info = await engine.start()
    try:
        gen = asyncio.ensure_future(generate_run(cfg, load_tasks(cfg), engine, info))
        if during is not None:
            await during(engine, gen)
        run_dir, _, stats = await gen
        return run_dir, stats, engine
    finally:
        await engine.close()


def test_killed_replica_is_restarted_and_every_sample_is_journaled_exactly_once(tmp_path: Path) -> None:
    import ray

    cfg = _cfg(tmp_path, replicas=2, inner="echo", inner_args=("delay_s=0.05", "slots=2"), max_restarts=2)

    async def kill_mid_run(engine: Any, gen: asyncio.Future[Any]) -> None:
        while sum(engine.served()) < 20:
            await asyncio.sleep(0.01)
        ray.kill(engine.replicas[0].handle, no_restart=False)  # Ray restarts it (max_restarts)

    run_dir, stats, engine = asyncio.run(_run(cfg, kill_mid_run))
    keys = [(r["task"], r["problem_key"], r["index"]) for r in _journal(run_dir)]
    assert len(keys) == 80 and len(set(keys)) == 80, collections.Counter(keys).most_common(3)
    assert all(r["status"] == "ok" for r in _journal(run_dir))
    assert stats.done == 80 and stats.failed == 0
    # The killed replica had requests in flight: they went to a free slot, not to the journal as failures.
    assert engine.replicas == [] and engine.requeued >= 1
    assert engine.deaths == [1, 0]  # one kill, counted once however many requests it failed


@pytest.fixture
def slow_first_echo(monkeypatch: pytest.MonkeyPatch) -> str:
    """A test-only engine registered in this process only (tests/plugins/slow_echo.py): the replicas get it
    from the registry's reference, as they would a plugin's engine."""
    register_for_the_test(monkeypatch, ENGINES, "slow_first_echo", "tests.plugins.slow_echo")
    return "slow_first_echo"


def test_a_slow_replica_gets_few_requests_pull_based_not_round_robin(tmp_path: Path, slow_first_echo: str) -> None:
    # One replica takes 0.25 s a request, the other 0.02 s (2 slots each): a round robin would give each half.
    cfg = _cfg(tmp_path, replicas=2, inner=slow_first_echo,
               inner_args=(f"claim={tmp_path / 'slow'}", "slow_s=0.23", "delay_s=0.02", "slots=2"))
    served: list[int] = []

    async def record(engine: Any, gen: asyncio.Future[Any]) -> None:
        await asyncio.wait([gen])
        served.extend(engine.served())

    asyncio.run(_run(cfg, record))
    assert sum(served) == 80 and (tmp_path / "slow").exists()  # one replica claimed the slow role
    # The slow replica serves ~1/13 of the capacity; allow for a loaded machine slowing the fast one down.
    assert min(served) <= 0.25 * sum(served), served


def test_replicas_that_keep_dying_stop_the_run_with_the_cause_and_keep_what_finished(tmp_path: Path) -> None:
    import ray

    cfg = _cfg(tmp_path, replicas=1, inner="echo", inner_args=("delay_s=0.05", "slots=2"), max_restarts=1)

    async def kill_twice(engine: Any, gen: asyncio.Future[Any]) -> None:
        for _ in range(2):
            before = engine.replicas[0].deaths
            while sum(engine.served()) < 4 * (before + 1):
                await asyncio.sleep(0.01)
            ray.kill(engine.replicas[0].handle, no_restart=False)
            while engine.replicas[0].deaths == before and not gen.done():
                await asyncio.sleep(0.01)

    with pytest.raises(EngineDown, match="died more than 1 time"):
        asyncio.run(_run(cfg, kill_twice))
    (run_dir,) = (tmp_path / "results").glob("*/*")
    keys = [(r["task"], r["problem_key"], r["index"]) for r in _journal(run_dir)]
    assert 8 <= len(keys) < 80 and len(set(keys)) == len(keys)


@pytest.mark.slow
@pytest.mark.local_model
def test_replicas_run_the_local_model_end_to_end(tmp_path: Path) -> None:
    from reasoneval.run.pipeline import evaluate

    result = evaluate(tasks=["arith"], limit=3, n=2, max_tokens=24, engine="ray", output_dir=str(tmp_path),
                      engine_args={"replicas": 2, "inner_args": ("threads=1", "parallel=2")},
                      progress=False, print_table=False)
    assert result.complete and result.config.engine_config["inner_config"]["inner"] == "local"
    assert result.config.engine_config["gpus_per_replica"] == 1  # the declared GPUs were scheduled
    # The session's cluster has two nodes of one GPU each: one replica on each.
    assert result.config.engine_config["nodes"] == 2


def test_bad_options_are_one_line_errors() -> None:
    from reasoneval.errors import UserError

    with pytest.raises(UserError, match="needs 6 GPUs; the Ray cluster has 2"):
        asyncio.run(create_engine("ray", CommonOptions(), {"replicas": 3, "gpus_per_replica": 2}).start())
    with pytest.raises(UserError, match="needs 3 CPUs; the Ray cluster has 2"):
        asyncio.run(create_engine("ray", CommonOptions(), {"replicas": 3, "gpus_per_replica": 0}).start())
    with pytest.raises(UserError, match="inner=.tgi. of the ray engine is not valid"):
        create_engine("ray", CommonOptions(), {"inner": "tgi"})
    with pytest.raises(UserError, match=r"inner='ray' of the ray engine is not valid \(choose auto or a registered "
                                        r"engine other than ray: openai, local, launch, vllm, echo"):
        create_engine("ray", CommonOptions(), {"inner": "ray"})


def test_each_replica_checks_the_runs_options_against_the_engine_it_runs() -> None:
    """inner=auto is decided on each replica's node (vllm with GPUs, else local): a replica refuses, before its engine
    starts, an option the engine it runs would drop, even where the driver did not check (the engine made directly)."""
    from reasoneval.errors import UserError
    from reasoneval.records import SamplingParams

    common = CommonOptions(sampling=SamplingParams(extra_body={"min_tokens": 2}))  # vLLM takes it, llama.cpp not
    with pytest.raises(UserError, match=r"a Ray replica could not start its engine: --extra-body key\(s\) "
                                        r"min_tokens are not supported by the local engine, which would drop them"):
        asyncio.run(create_engine("ray", common, {"replicas": 1, "gpus_per_replica": 0}).start())


@pytest.mark.slow
def test_run_engine_ray_from_the_cli_starts_and_stops_its_own_cluster(tmp_path: Path, ray_tmpdir: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = f"{root / 'src'}{os.pathsep}{root}"
    env["RAY_TMPDIR"] = str(ray_tmpdir)  # its cluster's processes name this folder: told apart from any other's
    r = subprocess.run([sys.executable, "-m", "reasoneval", "run", "--engine", "ray", "--replicas", "2",
                        "--gpus-per-replica", "1", "--engine-arg", "inner=echo", "--engine-arg", "num_cpus=2",
                        "--engine-arg", "num_gpus=2", "--tasks", "arith", "--limit", "3", "--n", "2",
                        "--output-dir", str(tmp_path), "--json"], capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout)
    assert summary["complete"] and summary["config"]["engine_config"]["replicas"] == 2
    assert len(clusters_started_in(ray_tmpdir)) == 1  # the run started a cluster of its own
    assert ray_processes_in(ray_tmpdir) == []  # and it is gone (its raylets, its GCS server)
