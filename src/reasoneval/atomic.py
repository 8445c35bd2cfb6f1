"""Files that are either whole or absent: written to a temporary file beside the target, fsynced, then renamed
over it, so a kill or a power cut leaves the old file or the new one, never a torn one. Every whole-file
writer of a run directory (config.json, summary.json, report.html, results.parquet, exports) goes through here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import IO, Any, Iterator


def json_text(obj: Any) -> str:
    """The JSON text of config.json and summary.json: indented by 2, UTF-8 as is, a final newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def temp_path(path: Path) -> Path:
    """Beside `path`, hidden, one per process (two processes filling the same cache file never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems cannot open or fsync a directory
        _fsync(path)


def replace_synced(tmp: Path, path: Path) -> None:
    """Make a finished temporary file durable and move it over `path` (for writers that own the file, like
    Parquet's), then sync the directory so the rename itself survives a power cut."""
    _fsync(tmp)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class FileSet:
    """Files (and folders) that change together, or not at all: each is written to a temporary beside its target
    (`temp(target)`, `temp_dir(target)`), and `commit()` moves them all over their targets once every one is
    written. A command that fails before the commit (an error, a full disk) leaves every target as it was and
    removes the temporaries (`with FileSet() as files:` commits at the end of the block, or aborts on an error).
    The moves at the commit are renames, done one after another: nothing is written then."""

    def __init__(self) -> None:
        self._files: dict[Path, Path] = {}  # target -> temporary
        self._dirs: dict[Path, Path] = {}
        self._scratch: list[Path] = []

    def temp(self, target: Path | str) -> Path:
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._files.setdefault(target, temp_path(target))
        tmp.unlink(missing_ok=True)  # left by an earlier process of the same pid
        return tmp

    def temp_dir(self, target: Path | str) -> Path:
        """A temporary folder to fill, which replaces `target` (a folder, possibly absent) at the commit."""
        target = Path(target)
        tmp = self._dirs.setdefault(target, temp_path(target))
        if tmp.exists():
            shutil.rmtree(tmp)
        return tmp

    def scratch(self, near: Path | str) -> Path:
        """A temporary beside `near` whose target is decided later (`adopt`); removed if never adopted."""
        near = Path(near)
        tmp = near.with_name(f".{near.name}.{os.getpid()}.{len(self._scratch)}.scratch")
        tmp.unlink(missing_ok=True)
        self._scratch.append(tmp)
        return tmp

    def adopt(self, scratch: Path, target: Path | str) -> None:
        """`scratch` (written) replaces `target` at the commit."""
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._files[target] = scratch

    def write_text(self, target: Path | str, text: str) -> None:
        with open(self.temp(target), "w", encoding="utf-8") as f:
            f.write(text)

    def write_json(self, target: Path | str, obj: Any) -> None:
        self.write_text(target, json_text(obj))

    def staged(self, target: Path | str) -> Path | None:
        """The temporary that replaces `target` at the commit (None: not staged)."""
        return self._files.get(Path(target))

    def changes(self, target: Path | str) -> bool:
        """Whether the commit would change `target`: it is staged, and absent now or with other bytes."""
        tmp = self._files.get(Path(target))
        if tmp is None:
            return False
        try:
            return Path(target).read_bytes() != tmp.read_bytes()
        except FileNotFoundError:
            return True

    def commit(self) -> None:
        for tmp in self._files.values():
            _fsync(tmp)
        for target, tmp in self._dirs.items():
            old = target.with_name(f".{target.name}.{os.getpid()}.old")
            if old.exists():
                shutil.rmtree(old)
            if target.exists():
                os.replace(target, old)
            if tmp.exists():
                os.replace(tmp, target)
            if old.exists():
                shutil.rmtree(old, ignore_errors=True)
        for target, tmp in self._files.items():
            os.replace(tmp, target)
        for parent in {t.parent for t in [*self._files, *self._dirs]}:
            _fsync_dir(parent)
        for tmp in self._scratch:
            tmp.unlink(missing_ok=True)  # never adopted
        self._files.clear()
        self._dirs.clear()
        self._scratch.clear()

    def abort(self) -> None:
        for tmp in [*self._files.values(), *self._scratch]:
            tmp.unlink(missing_ok=True)
        for tmp in self._dirs.values():
            shutil.rmtree(tmp, ignore_errors=True)
        self._files.clear()
        self._dirs.clear()
        self._scratch.clear()

    def __enter__(self) -> FileSet:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


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
