"""Shared pytest fixtures."""

from __future__ import annotations

import gc
import logging
from typing import Any, Callable, Iterator

import pytest

from tests.fixtures.openai_server import OpenAIServer


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own remembered llama.cpp kernels (engines/local/kernels.py): a test that makes the repacked
    kernels crash must not change which kernels the next test's engine starts on, nor the user's cache."""
    monkeypatch.setenv("REASONEVAL_KERNEL_CACHE", str(tmp_path_factory.mktemp("kernels") / "kernels.json"))


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started OpenAI-compatible loopback server with default settings (model "test-model")."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def make_openai_server() -> Iterator[Callable[..., OpenAIServer]]:
    """A factory: make_openai_server(**OpenAIServer kwargs) -> a started server; all are stopped
    at teardown."""
    servers: list[OpenAIServer] = []

    def make(**kwargs: Any) -> OpenAIServer:
        server = OpenAIServer(**kwargs)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """One real Ray cluster for the whole session, of two nodes on this machine (ray.cluster_utils.Cluster:
    a head and a worker node, each its own raylet), small: 1 CPU and 1 declared GPU per node (Ray
    schedules them for real; no hardware behind them), no dashboard, 80 MB object stores. Yields the
    address, for subprocesses that join it; shut down (no process left) at the end."""
    import os
    from pathlib import Path

    import ray
    from ray.cluster_utils import Cluster

    # Ray's workers inherit the environment: the checkout's src/ must be importable there, and the test-only
    # engines of tests/plugins/fleet_site known (an entry point: the `dying` engine of the sweep tests).
    root = Path(__file__).resolve().parents[1]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(root / "src"), str(root), str(root / "tests/plugins/fleet_site"),
                                                *filter(None, [os.environ.get("PYTHONPATH")])])
    node = {"num_cpus": 1, "num_gpus": 1, "object_store_memory": 80 << 20}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
        yield str(cluster.address)
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Collect garbage before pytest renders a failure, not while it renders it.

    pytest keeps the last failure's exception in `sys.last_value`; the next failure replaces it, and
    the old exception's frames become cyclic garbage. If they hold an asyncio Task or Future whose
    exception was never retrieved, its finalizer logs a traceback, and on CPython 3.11 a traceback
    is formatted with `ast.parse`. When the cyclic GC runs that finalizer in the middle of pytest's
    own `ast.parse` of the failing test's source, the two parses share one AST recursion counter
    (CPython gh-106905) and pytest dies with `INTERNALERROR ... SystemError: AST constructor
    recursion depth mismatch`, ending the whole session. Collecting first runs those finalizers
    at a safe point, so a failing test fails alone.
    """
    if call.excinfo is not None:
        gc.collect()
    return (yield)


@pytest.fixture(autouse=True)
def _reasoneval_logger_restored() -> Iterator[None]:
    """A test that runs `main()` in-process calls setup_logging, which stops the reasoneval logger from
    propagating and adds a handler on that test's (then closed) captured stderr. Later tests' caplog would see
    nothing, and records would hit a closed file. Undo both after each test."""
    yield
    root = logging.getLogger("reasoneval")
    root.propagate = True
    for h in [h for h in root.handlers if getattr(h, "_reasoneval", False)]:
        root.removeHandler(h)
