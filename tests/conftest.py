"""Shared pytest fixtures."""

from __future__ import annotations

import gc
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests import real_data
from tests.fixtures.openai_server import OpenAIServer

# No test sees the data folder unless it is marked `real_data` (then `_real_data_only_where_marked` puts it back
# for that test alone): removed here, before any fixture of any scope runs.
os.environ.pop(real_data.ENV, None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A `real_data` test skips, with the reason, where the benchmark files it names are not (tests/real_data.py)."""
    for item in items:
        marker = item.get_closest_marker(real_data.MARKER)
        if marker is not None:
            why = real_data.missing(tuple(marker.args))
            if why is not None:
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist (scripts/recipe_check.py) starts its workers after this module removed the data folder's variable
    from the environment: each worker is handed the folder this process read (tests/real_data.py)."""
    node.workerinput["real_data_dir"] = "" if real_data.DATA_DIR is None else str(real_data.DATA_DIR)


def pytest_configure(config: pytest.Config) -> None:
    given = getattr(config, "workerinput", {}).get("real_data_dir")
    if given is not None:  # a pytest-xdist worker, before it collects: the folder the main process read
        real_data.DATA_DIR = Path(given) if given else None


@pytest.fixture(autouse=True)
def _real_data_only_where_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a `real_data` test sees $REASONEVAL_DATA_DIR: any other test runs as it would on a machine without the
    data folder, so one that needs the data and is not marked fails in CI (which has the folder) and not at a user's."""
    if request.node.get_closest_marker(real_data.MARKER) is None:
        monkeypatch.delenv(real_data.ENV, raising=False)  # should an earlier test have set it by hand
    elif real_data.DATA_DIR is not None:
        monkeypatch.setenv(real_data.ENV, str(real_data.DATA_DIR))


@pytest.fixture
def real_data_dir(request: pytest.FixtureRequest) -> Path:
    """The benchmark files' folder, for a test marked `real_data("<task>.jsonl", ...)` naming the files it reads."""
    if request.node.get_closest_marker(real_data.MARKER) is None:
        pytest.fail("a test that reads the benchmark files must be marked @pytest.mark.real_data(\"<task>.jsonl\", ...)")
    assert real_data.DATA_DIR is not None  # unmarked or without the folder: skipped at collection
    return real_data.DATA_DIR


@pytest.fixture(scope="session")
def _machine_kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This machine's kernel choice, decided once for the session as a user's first run decides it: a default
    (cpu_repack=auto) local engine started and closed on an empty cache. On a CPU whose repacked kernels crash
    (AMX), the file then says "plain"; elsewhere it stays empty and every engine runs its self-test."""
    path = tmp_path_factory.mktemp("machine-kernels") / "kernels.json"
    import asyncio

    from reasoneval.engines.base import CommonOptions
    from reasoneval.engines.local import LocalEngine, Options

    async def start_and_close() -> None:
        engine = LocalEngine(CommonOptions(), Options())
        await engine.start()
        await engine.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REASONEVAL_KERNEL_CACHE", str(path))
        asyncio.run(start_and_close())
    return path


@pytest.fixture(autouse=True, scope="session")
def _calibration_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The contest limits' calibration (scoring/programs/calibrate.py) cached for the session, never in the user's
    cache: measured once for the whole session, as once per machine."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REASONEVAL_CALIBRATION_CACHE", str(tmp_path_factory.mktemp("calibration") / "calibration.json"))
        yield


@pytest.fixture(autouse=True)
def _kernel_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own remembered llama.cpp kernels (engines/local/kernels.py): a test that makes the repacked
    kernels crash must not change which kernels the next test's engine starts on, nor the user's cache.

    A `local_model` test starts from this machine's own choice, as a user's second run does (on an AMX CPU the
    self-test's crash and restart cost about 3 s an engine: minutes of the suite); a test of the first run's
    choice itself is marked `fresh_kernel_cache` and starts from an empty cache."""
    path = tmp_path_factory.mktemp("kernels") / "kernels.json"
    if request.node.get_closest_marker("local_model") and not request.node.get_closest_marker("fresh_kernel_cache"):
        machine = request.getfixturevalue("_machine_kernels")
        if machine.is_file():
            shutil.copyfile(machine, path)
    monkeypatch.setenv("REASONEVAL_KERNEL_CACHE", str(path))
    # and its own cache of weights files' sha256 (results/fingerprint.py), never the user's
    monkeypatch.setenv("REASONEVAL_HASH_CACHE", str(path.parent / "weights_sha256.json"))


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


@pytest.fixture
def ray_tmpdir() -> Iterator[Path]:
    """A new folder for a test's subprocesses' RAY_TMPDIR (tests/fixtures/ray_processes.py tells their Ray processes
    from any other's by it), removed afterwards. Under /tmp, not tmp_path: Ray's sockets in it must fit a Unix socket
    path (107 bytes)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


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
