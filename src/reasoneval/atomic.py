"""Files that are either whole or absent: written to a temporary file beside the target, fsynced, then renamed
over it, so a kill or a power cut leaves the old file or the new one, never a torn one. Every whole-file
writer of a run directory (config.json, summary.json, report.html, results.parquet, exports) goes through here.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import IO, Any, Iterator


def json_text(obj: Any) -> str:
    """The JSON text of config.json and summary.json: indented by 2, UTF-8 as is, a final newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def temp_path(path: Path) -> Path:
    """Beside `path`, hidden, one per process (two processes filling the same cache file never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def replace_synced(tmp: Path, path: Path) -> None:
    """Make a finished temporary file durable and move it over `path` (for writers that own the file, like
    Parquet's), then sync the directory so the rename itself survives a power cut."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # some filesystems cannot open or fsync a directory
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


@contextlib.contextmanager
def atomic_open(path: Path | str, mode: str = "w") -> Iterator[IO[Any]]:
    """A file to write `path` through ("w" text as UTF-8, or "wb"): it replaces `path` when the block ends
    without an error; on an error `path` is untouched and the temporary file removed."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        with open(tmp, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
        replace_synced(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path | str, text: str) -> None:
    with atomic_open(path) as f:
        f.write(text)


def atomic_write_json(path: Path | str, obj: Any) -> None:
    atomic_write_text(path, json_text(obj))
