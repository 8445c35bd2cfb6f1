"""`ray`: N engine replicas as Ray actors (`--replicas N --gpus-per-replica G`), on one node or many.

Each replica is a Ray actor that runs an inner engine in its own process: vLLM on its G GPUs
(tensor parallel G), or, on a cluster without GPUs, the embedded `local` engine, so the whole path
runs on a laptop. Any other registered engine can be the inner one (`--engine-arg inner=NAME`): `echo`
(zero cost) for tests and for measuring the driver itself, a plugin's engine. The replica imports it by
the registry's reference (`ENGINES.reference`), so an engine registered only in the driver's process
works too, as long as its module is importable on the cluster's nodes.

The driver (this process) hands each request to whichever replica has a free slot: pull-based, not
round robin, so a slow replica serves fewer requests and never holds the run back. Only the driver
writes the sample store: the runner's queue (longest expected first), resume, K-extension and every
guarantee of a single-process run hold unchanged. An actor that dies is restarted by Ray
(`max_restarts`); the requests it had in flight go to the next free slot (on any replica) without
reaching the runner, so nothing is lost or journaled twice. A replica that died more than
`max_restarts` times is given up; when every replica is given up the run stops with the cause
(EngineDown, exit status 4).

The GPU path (vLLM in the actors) cannot run on a machine without GPUs: it is the `vllm` engine
inside the actor, with tensor_parallel_size = gpus_per_replica; nothing else differs.

`ray` is imported only when this engine starts: it is an optional dependency (`reasoneval[ray]`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.engines import ENGINES
from reasoneval.engines.base import Capabilities, CommonOptions, EngineError, EngineInfo
from reasoneval.engines.options import RayOptions as Options
from reasoneval.errors import UserError
from reasoneval.records import Completion, Request

log = logging.getLogger("reasoneval")

INSTALL_HINT = "pip install 'reasoneval[ray]'"


# What the default inner engines (auto: vllm or local) both take; `configured_capabilities` asks the configured inner
# engine, and each replica checks the run's options again against the engine it runs (Replica.start).
def configured_capabilities(options: Options) -> Capabilities:
    from reasoneval.engines import capabilities, parse_engine_args

    label = f"ray engine (inner={options.inner})"
    if options.inner == "auto":  # vllm where a replica has GPUs, else local: only what both take
        return capabilities("vllm").meet(capabilities("local"), label=label)
    inner = capabilities(options.inner, parse_engine_args(list(options.inner_args)))
    return dataclasses.replace(inner, renamed={}, label=label)


CAPABILITIES = Capabilities(extra_body_keys=frozenset())  # Options() is inner=auto: configured_capabilities says


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError(f"the ray engine and `reasoneval sweep` need Ray: {INSTALL_HINT}") from None
    return ray


def init_ray(address: str | None, *, num_cpus: int | None = None, num_gpus: int | None = None,
             object_store_mb: int = 100) -> bool:
    """Connect to (address) or start (None) a Ray cluster unless one is connected; True if this call did."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    else:
        # A new local cluster (address "local": never a running one found by accident), small: no
        # dashboard, a small object store (requests and answers are small).
        ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False, log_to_driver=False,
                 object_store_memory=object_store_mb << 20, logging_level=logging.WARNING)
    return True


def resolve_inner(inner: str, gpu_ids: list[Any]) -> str:
    """`auto`: vLLM where the replica got GPUs that exist (NVIDIA devices), else the local engine.
    A cluster may declare GPUs that are not there (tests do): those replicas run `local`."""
    if inner != "auto":
        return inner
    return "vllm" if gpu_ids and Path("/dev/nvidiactl").exists() else "local"


class Replica:
    """The actor: one inner engine in its own process, started on the first call (again after a restart).

    inner_ref: the driver registry's reference of the inner engine ("package.module"), registered in this
    process when the name is not known here (an engine a test or a notebook registered in the driver).
    """

    def __init__(self, index: int, inner: str, inner_ref: str | None, common: CommonOptions,
                 inner_args: dict[str, Any], gpus: int) -> None:
        self.index = index
        self.inner = inner
        self.inner_ref = inner_ref
        self.common = common
        self.inner_args = dict(inner_args)
        self.gpus = gpus
        self._engine: Any = None
        self._info: EngineInfo | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> tuple[EngineInfo, dict[str, Any], str]:
        async with self._lock:
            if self._engine is None:
                import ray

                from reasoneval.engines import capabilities, check_supported, create_engine

                if self.inner_ref is not None and self.inner not in ENGINES:
                    ENGINES.add_lazy(self.inner, self.inner_ref)
                inner = resolve_inner(self.inner, ray.get_gpu_ids() if self.gpus else [])
                args = dict(self.inner_args)
                if inner == "vllm":
                    args.setdefault("tensor_parallel_size", max(1, self.gpus))
                self.inner = inner
                if self.common.sampling is not None:  # the backend is known only here: check the run against it
                    check_supported(inner, capabilities(inner, args), self.common.api, self.common.sampling)
                engine = create_engine(inner, self.common, args)
                self._info = await engine.start()
                self._engine = engine
        assert self._info is not None
        import ray

        return self._info, {"inner": self.inner, **self._engine.describe()}, ray.get_runtime_context().get_node_id()

    async def generate(self, request: Request) -> tuple[str, Any]:
        """("ok", Completion) or ("error", the EngineError's fields): an exception would reach the driver
        wrapped by Ray, and EngineError does not survive pickling."""
        if self._engine is None:
            await self.start()
        try:
            completion: Completion = await self._engine.generate(request)
        except EngineError as e:
            return "error", {"message": str(e), **e.fields(),
                             "incident": f"replica {self.index}: {e.incident}" if e.incident else None}
        return "ok", completion

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.close()
            self._engine = None


@dataclass
class _Slot:
    """The driver's view of one replica."""

    index: int
    handle: Any
    free: int
    served: int = 0
    deaths: int = 0
    epoch: int = 0  # bumped per death, so the requests one death failed count it once
    given_up: bool = False
    restarting: bool = False  # died; no request goes to it until it answers again
    node_id: str = ""


class RayEngine:
    name = "ray"

    def __init__(self, common: CommonOptions, options: Options) -> None:
        self.common = common
        self.opts = options
        self.replicas: list[_Slot] = []
        self._started_ray = False
        self._free = asyncio.Condition()
        self._inner_config: dict[str, Any] = {}
        self._gpus = 0
        self.requeued = 0  # requests a replica's death sent to another slot
        self.deaths: list[int] = []  # deaths per replica, kept after close
        self._probes: list[asyncio.Future[None]] = []
        self.startup_s: float | None = None

    async def start(self) -> EngineInfo:
        t0 = time.perf_counter()
        ray = import_ray()
        o = self.opts
        self._started_ray = init_ray(o.ray_address, num_cpus=o.num_cpus, num_gpus=o.num_gpus,
                                     object_store_mb=o.object_store_mb)
        try:
            return await self._start_replicas(ray, t0)
        except BaseException:
            await self.close()
            raise

    async def _start_replicas(self, ray: Any, t0: float) -> EngineInfo:
        o = self.opts
        cluster_gpus = int(ray.cluster_resources().get("GPU", 0))
        self._gpus = o.gpus_per_replica if cluster_gpus else 0
        if cluster_gpus and o.replicas * o.gpus_per_replica > cluster_gpus:
            raise UserError(f"--replicas {o.replicas} x --gpus-per-replica {o.gpus_per_replica} needs "
                            f"{o.replicas * o.gpus_per_replica} GPUs; the Ray cluster has {cluster_gpus}")
        cluster_cpus = float(ray.cluster_resources().get("CPU", 0))
        if o.replicas * o.cpus_per_replica > cluster_cpus:
            raise UserError(f"--replicas {o.replicas} x cpus_per_replica {o.cpus_per_replica:g} needs "
                            f"{o.replicas * o.cpus_per_replica:g} CPUs; the Ray cluster has {cluster_cpus:g} (lower "
                            "--engine-arg cpus_per_replica=..., e.g. 0.5)")
        if not cluster_gpus and o.inner == "vllm":
            raise UserError("the ray engine's inner engine vllm needs GPUs; the Ray cluster has none "
                            "(use --engine-arg inner=local)")
        from reasoneval.engines import parse_engine_args

        inner_args = parse_engine_args(list(o.inner_args))
        actor = ray.remote(Replica).options(num_gpus=self._gpus, num_cpus=o.cpus_per_replica,
                                            max_restarts=o.max_restarts, max_task_retries=0,
                                            max_concurrency=1000)
        inner_ref = None if o.inner == "auto" else ENGINES.reference(o.inner)
        handles = [actor.remote(i, o.inner, inner_ref, self.common, inner_args, self._gpus) for i in range(o.replicas)]
        try:
            started = await asyncio.wait_for(asyncio.gather(*(h.start.remote() for h in handles)),
                                             o.startup_timeout)
        except asyncio.TimeoutError:
            raise UserError(f"the {o.replicas} Ray replica(s) did not start within {o.startup_timeout:g} s "
                            "(not enough free CPUs/GPUs in the cluster? raise --engine-arg startup_timeout=...)") from None
        except Exception as e:
            cause = getattr(e, "cause", None)  # Ray's RayTaskError carries the replica's exception
            if isinstance(cause, UserError):  # the replica's own check (the run's options against its engine)
                raise UserError(f"a Ray replica could not start its engine: {cause}") from None
            raise UserError(f"a Ray replica could not start its engine: {_cause(e)}") from None
        infos = [info for info, _, _ in started]
        self._inner_config = started[0][1]
        per_replica = o.slots_per_replica or min(infos[0].max_concurrency or self.common.concurrency,
                                                 max(1, self.common.concurrency // o.replicas))
        self.replicas = [_Slot(i, h, per_replica, node_id=node) for i, (h, (_, _, node)) in enumerate(zip(handles, started))]
        self.startup_s = time.perf_counter() - t0
        log.info("ray engine: %d replica(s) of %s, %d slot(s) each, started in %.1f s", o.replicas,
                 self._inner_config.get("inner"), per_replica, self.startup_s)
        first = infos[0]
        return EngineInfo(model=first.model, model_identity=first.model_identity, max_model_len=first.max_model_len,
                          max_concurrency=per_replica * o.replicas)

    async def _acquire(self) -> _Slot:
        async with self._free:
            while True:
                live = [s for s in self.replicas if not s.given_up]
                if not live:
                    raise EngineError(f"all {len(self.replicas)} Ray replicas died more than {self.opts.max_restarts} "
                                      "time(s) each or could not restart (--engine-arg max_restarts)",
                                      retryable=False, fatal=True, engine_failure=True)
                ready = [s for s in live if not s.restarting and s.free > 0]
                if ready:
                    best = max(ready, key=lambda s: s.free)  # pull-based: the replica with the most free slots
                    best.free -= 1
                    return best
                await self._free.wait()

    async def _release(self, slot: _Slot) -> None:
        async with self._free:
            slot.free += 1
            self._free.notify()

    async def _died(self, slot: _Slot, epoch: int, e: BaseException) -> None:
        async with self._free:
            if slot.epoch == epoch:  # the first of this death's failed requests: one death counts once
                slot.epoch += 1
                slot.deaths += 1
                log.warning("ray engine: replica %d died (%d time(s)): %s", slot.index, slot.deaths, _cause(e))
                if slot.deaths > self.opts.max_restarts:
                    slot.given_up = True
                    log.warning("ray engine: replica %d is given up", slot.index)
                elif not slot.restarting:
                    slot.restarting = True
                    self._probes.append(asyncio.ensure_future(self._wait_restarted(slot)))
            self._free.notify_all()

    async def _wait_restarted(self, slot: _Slot) -> None:
        """Ray restarts a dead actor (max_restarts); its engine starts again on this first call."""
        ray = import_ray()
        epoch = slot.epoch
        try:
            await asyncio.wait_for(slot.handle.start.remote(), self.opts.startup_timeout)
        except ray.exceptions.RayActorError as e:
            async with self._free:
                slot.restarting = False
            await self._died(slot, epoch, e)  # it died again (or for good)
            return
        except Exception as e:
            log.warning("ray engine: replica %d did not come back (%s): given up", slot.index, _cause(e))
            async with self._free:
                slot.given_up = True
                self._free.notify_all()
            return
        async with self._free:
            slot.restarting = False
            log.info("ray engine: replica %d is back", slot.index)
            self._free.notify_all()

    async def generate(self, request: Request) -> Completion:
        ray = import_ray()
        while True:
            slot = await self._acquire()
            epoch = slot.epoch
            try:
                status, value = await slot.handle.generate.remote(request)
            except ray.exceptions.RayActorError as e:
                # The replica died (or is unreachable) with this request: it was not answered, so it goes to
                # the next free slot; the runner never saw this attempt and journals the one answer.
                await self._died(slot, epoch, e)
                self.requeued += 1
                continue
            finally:
                await self._release(slot)
            if status == "ok":
                slot.served += 1
                completion: Completion = value
                return completion
            raise EngineError(value.pop("message"), **value)

    async def close(self) -> None:
        ray = import_ray()
        for probe in self._probes:
            probe.cancel()
        handles = [s.handle for s in self.replicas]
        if self.replicas:
            self.deaths = [s.deaths for s in self.replicas]
        self.replicas = []
        if handles:
            try:
                await asyncio.wait_for(asyncio.gather(*(h.close.remote() for h in handles), return_exceptions=True), 30)
            except asyncio.TimeoutError:
                pass
            for h in handles:
                ray.kill(h, no_restart=True)
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    def attach_run(self, run_dir: Path) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        o = self.opts
        return {"replicas": o.replicas, "gpus_per_replica": self._gpus, "ray_address": o.ray_address,
                "max_restarts": o.max_restarts, "inner_config": self._inner_config,
                "nodes": len({s.node_id for s in self.replicas})}

    def served(self) -> list[int]:
        """Requests each replica answered (for tests and benchmarks)."""
        return [s.served for s in self.replicas]


def _cause(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}"


def create(common: CommonOptions, options: Options) -> RayEngine:
    return RayEngine(common, options)


__all__ = ["INSTALL_HINT", "Options", "RayEngine", "Replica", "create", "import_ray", "init_ray", "resolve_inner"]
