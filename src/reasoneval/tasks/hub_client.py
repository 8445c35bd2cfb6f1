"""The Hugging Face Hub: whether to reach it, and a dataset's raw rows from it (the `datasets` package, imported
late). Both a registered task's download (tasks/loading.py) and a user's Hub dataset (tasks/user_data.py) use it."""

from __future__ import annotations

import os
import socket
from typing import Any

from reasoneval.errors import UserError
from reasoneval.tasks.spec import HubSource

_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    # Checked before importing `datasets` (which reads HF_* offline flags only at import time),
    # so an offline process never tries the network.
    return any(os.environ.get(v, "").strip().lower() in _TRUE
               for v in ("REASONEVAL_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


OFFLINE_HINT = ("put <task>.jsonl files in a folder and point --data-dir (or REASONEVAL_DATA_DIR) at it, or run "
                "`reasoneval data pull` where the Hub is reachable and copy ~/.cache/reasoneval/data here; "
                "HF_HUB_OFFLINE=1 stops every attempt to reach the Hub")


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def check_hub_reachable(timeout_s: float = 5.0) -> None:
    """A one-line error within seconds when the Hub cannot be reached (offline, a firewall), instead of the
    Hub client's own retries (25 s and more) ending in an error that names no way out."""
    from urllib.parse import urlsplit

    url = urlsplit(hub_endpoint())
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as e:
        raise UserError(f"cannot reach the Hugging Face Hub at {hub_endpoint()} ({e.strerror or type(e).__name__}): "
                        + OFFLINE_HINT) from None


def load_hub_rows(dataset_id: str, config: str | None, split: str | None, hint: str = "") -> list[dict[str, Any]]:
    """The raw rows of a Hub dataset split, via `datasets` (network); one-line errors."""
    try:
        import datasets  # imported late: slow, and not needed when data is local
    except ImportError:
        raise UserError("the `datasets` package is needed to load Hub datasets; pip install datasets") from None
    cfg = f" ({config})" if config else ""
    check_hub_reachable()
    try:
        ds = datasets.load_dataset(dataset_id, config, split=split)
    except Exception as e:  # datasets raises many types (HTTP, auth, FileNotFound, ...)
        msg = (str(e).strip().splitlines() or [""])[0][:200]
        raise UserError(f"could not load {dataset_id}{cfg} from the Hugging Face Hub: "
                        f"{type(e).__name__}: {msg}{hint}; offline? {OFFLINE_HINT}") from None
    if isinstance(ds, datasets.DatasetDict):
        if len(ds) != 1:
            raise UserError(f"{dataset_id}{cfg} has splits {', '.join(ds)}; choose one with --split")
        ds = next(iter(ds.values()))
    return [dict(r) for r in ds]


def download_rows(src: HubSource) -> list[dict[str, Any]]:
    """The raw rows of a task's Hub source."""
    hint = (f" (gated: accept the terms at https://huggingface.co/datasets/{src.dataset_id} and set HF_TOKEN)"
            if src.gated else "")
    if src.configs:
        return [r for c in src.configs for r in load_hub_rows(src.dataset_id, c, src.split, hint)]
    return load_hub_rows(src.dataset_id, src.config, src.split, hint)
