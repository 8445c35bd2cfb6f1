"""Shared pytest fixtures."""

from __future__ import annotations

import gc
from typing import Any, Callable, Iterator

import pytest

from tests.fixtures.openai_server import OpenAIServer


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
    """One real local Ray cluster for the whole session, small: 2 CPUs, 2 declared GPUs (Ray schedules
    them for real; no hardware behind them), no dashboard, a 100 MB object store. Yields its address,
    for subprocesses that join it; shut down (no process left) at the end."""
    import os

    import ray

    # Ray's workers inherit the environment: the checkout's src/ must be importable there.
    src = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "src")
    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join([src, root, *filter(None, [os.environ.get("PYTHONPATH")])])
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, object_store_memory=100 << 20,
             log_to_driver=False, logging_level="WARNING")
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


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
