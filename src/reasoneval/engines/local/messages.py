"""What the local engine's parent (supervisor.py) and its worker process (worker.py, decoder.py) say to each other:
the worker's configuration (argv, as JSON) and the JSON-lines messages on their socket pair. Both sides import this
module, and nothing else of each other.

Parent -> worker: `(job_id, job)` a request (job: {"params", "seed", "messages", "prompt"}); `(CANCEL, job_id)`;
`None`: exit.
Worker -> parent: `(READY, {"load_s", "self_test_s", "n_ctx", "reuse_prefix"})` once its self-test passed, or
`(ERROR, why)` when it could not start; then one `(job_id, status, payload)` per request: status "ok" with
{"text", "finish_reason", "prompt_tokens", "completion_tokens"}, or "error" with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

READY = "ready"
ERROR = "error"
CANCEL = "cancel"


@dataclass(frozen=True)
class WorkerConfig:
    model_path: str
    n_ctx: int  # per sequence
    n_threads: int
    parallel: int
    cpu_repack: bool
    reuse_prefix: bool = False
    n_batch: int = 512
    adapt_threads: bool = False  # measure and choose the thread count while decoding (threads.py)
