"""A local engine worker process: `python -m reasoneval.engines.local.worker FD CONFIG_JSON`.

FD is its end of a socket pair with the parent (supervisor.py), CONFIG_JSON its WorkerConfig (messages.py: the
messages both ways). It
loads the model, runs the decoder's self-test, says ready, then takes jobs and cancellations and sends each
finished request's reply: JSON lines both ways (reasoneval.workers.JsonLines).
"""

from __future__ import annotations

import faulthandler
import json
import signal
import sys
import time
from typing import Any

from reasoneval.engines.local.decoder import Decoder
from reasoneval.engines.local.messages import CANCEL, ERROR, READY, WorkerConfig
from reasoneval.engines.local.model import INSTALL_HINT
from reasoneval.workers import JsonLines


def main() -> None:
    """Entry point of a worker process: argv = [fd of its socket end, config as JSON]."""
    fd = int(sys.argv[1])
    serve(JsonLines(fd, fd), WorkerConfig(**json.loads(sys.argv[2])))


def serve(conn: JsonLines, config: WorkerConfig) -> None:
    # Ctrl-C reaches the whole foreground process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A crash in llama.cpp (SIGSEGV, SIGABRT...) prints the Python stack to stderr, which the
    # parent keeps and quotes in its error message.
    faulthandler.enable()
    t0 = time.perf_counter()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        conn.send((ERROR, f"llama-cpp-python is not installed: run {INSTALL_HINT}"))
        return
    try:
        decoder = Decoder(config)
    except Exception as e:  # a bad file, not enough memory: report it, do not hang the parent
        conn.send((ERROR, f"could not load {config.model_path}: {type(e).__name__}: {e}"))
        return
    load_s = time.perf_counter() - t0
    try:
        decoder.self_test()
    except Exception as e:
        conn.send((ERROR, f"the start-up self-test failed: {type(e).__name__}: {e}"))
        return
    conn.send((READY, {"load_s": load_s, "self_test_s": time.perf_counter() - t0 - load_s,
                         "n_ctx": decoder.n_ctx, "reuse_prefix": decoder.reuse}))
    while True:
        try:
            if not decoder.busy():
                msg = conn.recv()  # idle: block until the parent sends something
                if not _handle(conn, decoder, msg):
                    return
            while conn.poll(0):
                if not _handle(conn, decoder, conn.recv()):
                    return
        except (EOFError, OSError):  # parent gone
            return
        if decoder.busy():
            for reply in decoder.step():
                conn.send(reply)


def _handle(conn: JsonLines, decoder: Decoder, msg: Any) -> bool:
    if msg is None:
        return False
    if msg[0] == CANCEL:
        decoder.cancel(msg[1])
        return True
    job_id, job = msg
    try:
        reply = decoder.add(job_id, job)
    except Exception as e:
        reply = (job_id, "error", f"{type(e).__name__}: {e}")
    if reply is not None:
        conn.send(reply)
    return True


if __name__ == "__main__":
    main()
