"""The generation loop: keep `concurrency` requests in flight, retry what may succeed, journal each sample.

No batches: each of C workers takes the next request the moment its previous one finishes, so a
slow answer never holds back the others and the server stays full.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Sequence

from reasoneval.engines.base import Engine, EngineError
from reasoneval.errors import EngineDown, UserError
from reasoneval.records import Completion, Request, SampleRecord
from reasoneval.results.schema import GenerationTiming
from reasoneval.results.store import SampleStore
from reasoneval.run.plan import RequestQueue
from reasoneval.run.retry import RetryPolicy

log = logging.getLogger("reasoneval")
_DEFAULT_POLICY = RetryPolicy()


@dataclass
class GenerationStats:
    """The live counters of a generation pass (the progress line reads them); `timing()` is what config.json
    keeps of them (`last_generation`)."""

    total: int = 0
    done: int = 0
    failed: int = 0
    in_flight: int = 0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    output_tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None

    @property
    def wall_s(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    def timing(self) -> GenerationTiming:
        wall = self.wall_s
        return GenerationTiming(wall_s=round(wall, 3),
                                output_tokens_per_s=round(self.output_tokens / wall, 3) if wall > 0 else 0.0,
                                requests=self.requests, retries=self.retries, errors=self.errors,
                                generated=self.done, failed=self.failed, output_tokens=self.output_tokens)


class ServerDown(EngineDown):
    """The server stopped answering (connection errors): exit status 4, like every engine that is down."""


class _EngineHealth:
    """Failures of the engine itself since the last finished sample, counted once per incident."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.incidents: list[object] = []

    def finished(self) -> None:
        self.incidents.clear()

    def check(self, e: EngineError) -> None:
        """Record an engine failure; raise EngineDown when the run must stop."""
        if e.fatal:
            raise EngineDown(f"the engine cannot serve, so the run stopped: {_one_line(e)}. Finished samples "
                             "are kept; re-run the same command to resume")
        # An engine may fail every request of one batch with one death: it tags them with one incident.
        key = e.incident or object()
        if key not in self.incidents:
            self.incidents.append(key)
        if len(self.incidents) >= self.policy.engine_down_after:
            raise EngineDown(f"the engine failed {len(self.incidents)} times in a row with no sample finished in "
                             f"between, so the run stopped: {_one_line(e)}. Finished samples are kept; re-run "
                             "the same command to resume")


_UNAVAILABLE = {502, 503, 504}


class Breaker:
    """Stops a run whose server answers every request with an error (it cannot serve), instead of retrying each
    of its samples until every one has failed.

    It counts the failed answers (an error status other than 429, a reply that is no answer) since the last
    success. It trips when there are at least `breaker_after` of them and none succeeded for `breaker_window_s`
    (`unavailable_window_s` when all were 502/503/504), or when there are `breaker_burst` + 2 x concurrency of
    them (a server that fails every request at once fills every slot with failures), provided no request has been
    open that long meanwhile: a request the server holds for longer than its failures take is being generated,
    so a server with 50% 503s and answers that take minutes is not stopped. Rate limits (429) neither count
    nor reset that streak: they have their own bound (`rate_limited`). Connection errors have their own rule
    (ServerDown)."""

    def __init__(self, policy: RetryPolicy, concurrency: int) -> None:
        self.policy = policy
        self.burst = policy.breaker_burst + 2 * concurrency
        self.streak = 0
        self.since = 0.0
        self.unavailable_only = True
        self.open: dict[int, float] = {}  # attempt -> when it was sent
        self.rate_since: float | None = None  # the first 429 since the last success
        self.rate_count = 0

    def succeeded(self) -> None:
        self.streak = 0
        self.rate_since, self.rate_count = None, 0

    def rate_limited(self, e: EngineError, req: Request) -> None:
        """Count a 429; raise EngineDown when the server has rate-limited every answer for the policy's
        rate_limit_window_s with none succeeding, or asks to wait longer than that."""
        now = time.monotonic()
        if self.rate_since is None:
            self.rate_since = now
        self.rate_count += 1
        window = self.policy.rate_limit_window_s
        elapsed = now - self.rate_since
        wait = e.retry_after or 0.0
        if elapsed < window and wait <= window:
            return
        why = (f"asked to wait {wait:g} s (Retry-After), longer than the --rate-limit-window of {window:g} s"
               if wait > window else f"answered {self.rate_count} requests in a row with HTTP 429 (rate limited) and "
               f"none succeeded for {elapsed:.0f} s (--rate-limit-window {window:g})")
        raise EngineDown(f"the server {why}, so the run stopped: {_one_line(e)} (the last was {_describe(req)}). "
                         "Finished samples are kept: wait for the rate limit to lift (or raise it, or lower "
                         "--concurrency) and re-run the same command to resume")

    def failed(self, e: EngineError, req: Request) -> None:
        """Count a failed answer; raise EngineDown when the run must stop."""
        if not e.answered or e.status == 429:
            return
        now = time.monotonic()
        if self.streak == 0:
            self.since, self.unavailable_only = now, True
        self.streak += 1
        self.unavailable_only &= e.status in _UNAVAILABLE
        window = self.policy.unavailable_window_s if self.unavailable_only else self.policy.breaker_window_s
        elapsed = now - self.since
        if self.streak < self.policy.breaker_after or not (elapsed >= window or
                                                           (self.streak >= self.burst and not self.unavailable_only)):
            return
        if any(now - t >= min(elapsed, window) for t in self.open.values()):
            return  # a request is being generated: the server serves some
        raise EngineDown(f"the server answered {self.streak} requests in a row with an error and none succeeded for "
                         f"{elapsed:.0f} s, so the run stopped: {_one_line(e)} (the last was {_describe(req)}). Finished "
                         "samples are kept: fix the server and re-run the same command to resume")


def _describe(req: Request) -> str:
    return f"{req.task}/{req.problem_id} sample {req.index}, max_tokens {req.params.max_tokens}"


def _refused(e: EngineError, req: Request) -> UserError:
    return UserError(f"the server refused {_describe(req)}: {_one_line(e)}; {e.hint or 'check the request settings'}. "
                     "No retry can fix that, so the run stopped; finished samples are kept: change it and re-run the "
                     "same command to resume")


def _one_line(e: BaseException) -> str:
    return " | ".join(part.strip() for part in str(e).splitlines() if part.strip())


async def _generate_one(engine: Engine, req: Request, policy: RetryPolicy, stats: GenerationStats,
                        rng: random.Random, max_model_len: int | None,
                        health: _EngineHealth | None = None, breaker: Breaker | None = None,
                        ) -> tuple[Completion | None, EngineError | None, int]:
    """Returns (completion, last error, attempts). Raises EngineDown when the engine cannot serve, UserError when
    the server refuses the request in a way no retry fixes."""
    attempts = 0
    retries_left = policy.max_retries
    lowered = False
    if max_model_len and req.params.max_tokens > max_model_len:
        req = dataclasses.replace(req, params=dataclasses.replace(req.params, max_tokens=max_model_len))
    while True:
        attempts += 1
        stats.requests += 1
        try:
            completion = await _attempt(engine, req, breaker)
        except EngineError as e:
            stats.errors += 1
            if e.engine_failure and health is not None:
                health.check(e)
            if e.fatal:
                raise
            if e.context_limit and not lowered:
                # The prompt plus max_tokens exceed the context: lower max_tokens once to fit.
                prompt = e.prompt_tokens
                fit = e.context_limit - prompt if prompt is not None else None
                if fit is not None and 0 < fit < req.params.max_tokens:
                    lowered = True
                    req = dataclasses.replace(req, params=dataclasses.replace(req.params, max_tokens=fit))
                    log.info("%s/%s#%d: lowering max_tokens to %d to fit the %d-token context", req.task,
                             req.problem_id, req.index, fit, e.context_limit)
                    continue
            if breaker is not None and e.status == 429 and e.answered:
                # Rate limited: wait as asked and ask again without using a retry; the breaker bounds how long.
                breaker.rate_limited(e, req)
                stats.retries += 1
                await asyncio.sleep(policy.delay(min(breaker.rate_count, 8), rng, e.retry_after))
                continue
            if breaker is not None:
                breaker.failed(e, req)
            # A refusal no retry fixes stops the run, except a prompt that alone exceeds the context: only that
            # problem's samples fail (the others fit).
            if e.permanent and not (e.context_limit and e.prompt_tokens is not None
                                    and e.prompt_tokens >= e.context_limit):
                raise _refused(e, req) from None
            if not e.retryable or retries_left <= 0:
                return None, e, attempts
            retries_left -= 1
            stats.retries += 1
            await asyncio.sleep(policy.delay(policy.max_retries - retries_left, rng, e.retry_after))
            continue
        if breaker is not None:
            breaker.succeeded()
        return completion, None, attempts


async def _attempt(engine: Engine, req: Request, breaker: Breaker | None) -> Completion:
    """One request to the engine, counted open by the breaker while the engine has it."""
    key = object()
    if breaker is not None:
        breaker.open[id(key)] = time.monotonic()
    try:
        return await engine.generate(req)
    finally:
        if breaker is not None:
            breaker.open.pop(id(key), None)


async def generate(engine: Engine, requests: Sequence[Request] | RequestQueue, store: SampleStore, *, concurrency: int,
                   policy: RetryPolicy = _DEFAULT_POLICY, max_model_len: int | None = None,
                   stats: GenerationStats | None = None,
                   on_progress: Callable[[GenerationStats], None] | None = None,
                   on_sample: Callable[[SampleRecord], None] | None = None,
                   refill: Callable[[], Awaitable[Sequence[Request]]] | None = None) -> GenerationStats:
    """Generate every request and journal it; returns the counters.

    on_sample: called with each journaled record. refill (adaptive runs): asked for more requests
    whenever fewer than `concurrency` are queued; they join the queue while the others run, so the
    server never drains between rounds. The run ends when the queue is empty, nothing is in flight and
    refill has nothing more.

    Raises EngineDown (exit status 4: the engine itself failed `policy.engine_down_after` times with no
    sample finished in between, or fatally), ServerDown (the server stopped answering) or UserError (a
    fatal engine error). Every sample that finished is journaled; requests still in flight when the run
    stops are cancelled, not journaled, so re-running generates them.
    """
    stats = stats or GenerationStats()
    stats.total += len(requests)
    # A plain sequence starts in its own order; a RequestQueue re-ranks as samples finish.
    queue = requests if isinstance(requests, RequestQueue) else RequestQueue(requests, schedule="sample-major")
    n_workers = concurrency if refill is not None else min(concurrency, len(requests))
    generation = _Generation(engine, queue, store, stats, concurrency=concurrency, policy=policy,
                             max_model_len=max_model_len, on_progress=on_progress, on_sample=on_sample, refill=refill)
    await generation.run(max(1, n_workers))
    return stats


class _Generation:
    """One call of `generate`: C workers, each taking the next queued request the moment its last one ends.

    State shared by the workers (all on one event loop): the queue, the counters, the first error that stops the
    run (`fatal`), the engine's health and the breaker, the server-down streak."""

    def __init__(self, engine: Engine, queue: RequestQueue, store: SampleStore, stats: GenerationStats, *,
                 concurrency: int, policy: RetryPolicy, max_model_len: int | None,
                 on_progress: Callable[[GenerationStats], None] | None,
                 on_sample: Callable[[SampleRecord], None] | None,
                 refill: Callable[[], Awaitable[Sequence[Request]]] | None) -> None:
        self.engine, self.queue, self.store, self.stats = engine, queue, store, stats
        self.concurrency, self.policy, self.max_model_len = concurrency, policy, max_model_len
        self.on_progress, self.on_sample, self.refill = on_progress, on_sample, refill
        self.rng = random.Random(0x5EED)
        self.health = _EngineHealth(policy)
        self.breaker = Breaker(policy, concurrency)
        self.consecutive_down = 0  # samples in a row that failed on connection errors (ServerDown)
        self.fatal: list[BaseException] = []  # the error that stops the run: the first one
        self.workers: list[asyncio.Task[None]] = []
        self.changed = asyncio.Condition()  # a sample ended or requests were added: waiting workers look again
        self.refilling = asyncio.Lock()

    # -- the workers' lifetime ---------------------------------------------------------------------

    async def run(self, n_workers: int) -> None:
        """Run the workers until the queue is done or the run stops; raise what stopped it."""
        self.workers.extend(asyncio.create_task(self.worker()) for _ in range(n_workers))
        for w in self.workers:
            w.add_done_callback(self.on_worker_done)
        syncer = asyncio.create_task(self.fsync_every_second())
        try:
            if self.workers:
                results = await asyncio.gather(*self.workers, return_exceptions=True)
                if not self.fatal:
                    for r in results:
                        if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                            raise r
        finally:
            for w in [*self.workers, syncer]:
                w.cancel()
            await asyncio.gather(*self.workers, syncer, return_exceptions=True)
            self.store.sync()
            self.stats.finished = time.monotonic()
        if self.fatal:
            raise self.run_error(self.fatal[0])

    @staticmethod
    def run_error(err: BaseException) -> BaseException:
        """What `generate` raises for the error that stopped the run."""
        if isinstance(err, EngineError) and err.engine_failure:
            return EngineDown(f"the engine cannot serve, so the run stopped: {_one_line(err)}. Finished samples are "
                              "kept; re-run the same command to resume")
        if isinstance(err, EngineError):
            return UserError(f"the engine cannot continue: {err}. Finished samples are kept; "
                             "re-run the same command to resume")
        return err

    def stop(self, err: BaseException) -> None:
        """The run stops now (err, unless an earlier error already stopped it): cancel what is in flight instead of
        letting it fail (and be journaled as failed) against an engine that is gone."""
        if not self.fatal:
            self.fatal.append(err)
        self.stop_others()

    def stop_others(self) -> None:
        current = asyncio.current_task()
        for w in self.workers:
            if w is not current:
                w.cancel()

    def on_worker_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.stop_others()  # e.g. the journal cannot be written: stop the others, raise it in run()

    async def fsync_every_second(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.store.sync_if_due()

    # -- admission and refill ----------------------------------------------------------------------

    async def worker(self) -> None:
        """Take the next queued request, generate and journal it, until the queue is done or the run stops."""
        while not self.fatal:
            await self.top_up()
            if not self.queue:
                if self.refill is None or (self.stats.in_flight == 0 and not self.refilling.locked()):
                    await self.notify()  # the others waiting: the run is over
                    return
                async with self.changed:  # others are running or asking: their outcomes may call for more
                    await self.changed.wait()
                continue
            req = self.queue.pop()
            self.stats.in_flight += 1
            try:
                if not await self.run_one(req):
                    return
            finally:
                self.stats.in_flight -= 1
                if self.refill is not None:
                    await self.notify()

    async def top_up(self) -> None:
        """Ask `refill` for more requests when fewer than C are queued. One worker asks at a time; the others go on
        starting what is queued meanwhile."""
        if self.refill is None or self.refilling.locked() or len(self.queue) >= self.concurrency or self.fatal:
            return
        async with self.refilling:
            more = await self.refill()
            for r in more:
                self.queue.add(r)
            self.stats.total += len(more)
        if more:
            await self.notify()

    async def notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    # -- one request: generate, journal, progress ---------------------------------------------------

    async def run_one(self, req: Request) -> bool:
        """Generate and journal one request; False when the run must stop."""
        try:
            completion, err, attempts = await _generate_one(self.engine, req, self.policy, self.stats, self.rng,
                                                            self.max_model_len, self.health, self.breaker)
        except (EngineError, UserError) as e:
            self.stop(e)
            return False
        if completion is not None:
            self.journal_sample(req, completion, attempts)
        else:
            assert err is not None
            self.journal_failure(req, err, attempts)
            if not self.server_still_answers(err):
                return False
        if self.on_progress is not None:
            self.on_progress(self.stats)  # the slot is still counted in flight: its next request starts right away
        return True

    def journal_sample(self, req: Request, completion: Completion, attempts: int) -> None:
        self.consecutive_down = 0
        self.health.finished()
        record = SampleRecord(
            task=req.task, problem_key=req.problem_key, problem_id=req.problem_id, index=req.index,
            seed=req.seed, status="ok", text=completion.text, reasoning=completion.reasoning,
            finish_reason=completion.finish_reason, prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens, latency_s=round(completion.latency_s, 4),
            attempts=attempts, time=round(time.time(), 3))
        self.store.append(record)
        self.stats.done += 1
        self.stats.output_tokens += completion.completion_tokens or 0
        self.queue.finished(req, completion.completion_tokens)
        if self.on_sample is not None:
            self.on_sample(record)

    def journal_failure(self, req: Request, err: EngineError, attempts: int) -> None:
        record = SampleRecord(
            task=req.task, problem_key=req.problem_key, problem_id=req.problem_id, index=req.index,
            seed=req.seed, status="failed", attempts=attempts, error=str(err), time=round(time.time(), 3))
        self.store.append(record)
        self.stats.failed += 1
        if self.on_sample is not None:
            self.on_sample(record)
        log.warning("%s/%s#%d failed after %d attempt(s): %s", req.task, req.problem_id, req.index, attempts, err)

    def server_still_answers(self, err: EngineError) -> bool:
        """After a failed sample: False (the run stopped with ServerDown) when `policy.down_after` samples in a row
        used up their retries on connection errors."""
        if not err.connection:
            self.consecutive_down = 0
            return True
        self.consecutive_down += 1
        if self.consecutive_down < self.policy.down_after:
            return True
        self.stop(ServerDown(
            f"the server stopped answering ({_one_line(err)}); {self.policy.down_after} samples in a "
            f"row used up their {self.policy.max_retries} retries. Finished samples are kept: re-run "
            "the same command to resume"))
        return False
