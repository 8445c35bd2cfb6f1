"""samples.jsonl: one finished sample per line, written whole and flushed before it counts as done.

Durability: each line is written with one write() and flushed; fsync runs at most once a second
and at close, so a kill loses nothing that was counted done and a power cut loses at most a second.
A failed write (disk full, read-only, quota) cuts the file back to its last whole line and raises
StoreWriteError (a one-line UserError): the journal stays readable and every finished sample is kept.
Each line starts with its format version (`"v": SAMPLES_VERSION`; none: version 1).
A torn last line (from a kill mid-write) is cut off when the store is opened for writing, so the
next append cannot glue onto it; readers skip it with a warning.
Exclusivity: an fcntl lock on `<run_dir>/.lock`; a second writer gets a clear error.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from reasoneval.errors import UserError
from reasoneval.records import SampleRecord
from reasoneval.run_files import LOCK_FILE, SAMPLES_FILE

log = logging.getLogger("reasoneval")

SampleKey = tuple[str, str, int]  # (task, problem key, sample index)


class StoreWriteError(UserError):
    """The journal could not be written (disk full, read-only, ...); what was written is kept."""


# The format of a samples.jsonl line, written first on every line as `"v"` (a header line would break
# readers that count lines, seek to offsets or cut a torn tail). Lines without it (written before it
# existed) are version 1, the same format. Bump it when a line's fields change meaning.
SAMPLES_VERSION = 1


def iter_jsonl(path: Path, *, with_offsets: bool = False) -> Iterator[Any]:
    """Yield parsed lines (or (offset, parsed) pairs); skip a torn or corrupt line with a warning."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        offset = 0
        lineno = 0
        for raw in f:
            lineno += 1
            start = offset
            offset += len(raw)
            if not raw.strip():
                continue
            if not raw.endswith(b"\n"):
                log.warning("%s: skipping torn last line %d (%d bytes; the writer was interrupted)",
                            path, lineno, len(raw))
                break
            try:
                obj = json.loads(raw)
            except ValueError:
                log.warning("%s:%d: skipping unreadable line", path, lineno)
                continue
            yield (start, obj) if with_offsets else obj


def iter_samples(path: Path, *, with_offsets: bool = False) -> Iterator[Any]:
    """The lines of a samples.jsonl (as iter_jsonl); a line written by a newer format than this reasoneval
    reads stops the reader with a UserError instead of being misread. A line without `v` is version 1."""
    for item in iter_jsonl(path, with_offsets=with_offsets):
        d = item[1] if with_offsets else item
        v = d.get("v", 1) if isinstance(d, dict) else 1
        if not isinstance(v, int) or v > SAMPLES_VERSION:
            raise UserError(f"{path} holds samples of format version {v!r}, newer than this reasoneval reads "
                            f"({SAMPLES_VERSION}): upgrade reasoneval")
        yield item


# UTF-16 surrogate code points: a str may hold them (a server's JSON "\\ud800" decodes to one), UTF-8 cannot.
_SURROGATES = re.compile("[\ud800-\udfff]")


def _utf8_line(line: str) -> bytes:
    """`line` + newline as UTF-8; a lone surrogate in a response becomes U+FFFD (what a UTF-8 decoder makes of
    invalid bytes), so the journal, the scorers' workers, results.parquet and report.html all get valid text
    instead of a UnicodeEncodeError stopping the run."""
    try:
        return (line + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (_SURROGATES.sub("\ufffd", line) + "\n").encode("utf-8")


@dataclass
class _Status:
    ok: set[SampleKey]
    failed: set[SampleKey]
    # Mean output length (completion tokens) of each problem's finished samples that report it.
    lengths: dict[tuple[str, str], float] = field(default_factory=dict)


class SampleStore:
    """The journal of one run directory. Open it for writing with `open()`, read with `scan()`."""

    def __init__(self, run_dir: Path, drawing: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        # What the command writing this store will draw, said in the lock file while it holds it (read_lock): `view`'s
        # live page counts against it, not against config.json, which describes the headline (issue 52.4/7).
        self.drawing = drawing
        self.path = self.run_dir / SAMPLES_FILE
        self._f: IO[bytes] | None = None
        self._lock_f: IO[str] | None = None
        self._last_fsync = 0.0
        self._dirty = False
        self.appended = 0
        self._size = 0  # bytes of whole lines in the file
        self._failed: OSError | None = None

    # -- writer ----------------------------------------------------------------------------

    def open(self) -> SampleStore:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        lock_f = open(self.run_dir / LOCK_FILE, "a+")
        try:
            fcntl.flock(lock_f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock_f.seek(0)
            holder = lock_f.readline().strip()
            lock_f.close()
            raise UserError(f"another reasoneval process{f' ({holder})' if holder else ''} is writing "
                            f"{self.run_dir}; wait for it to finish or stop it first") from None
        # One write of the whole record, whose last line ends it: a page that reads the file between the lock and this
        # write (empty: close() empties it; or torn) knows the command is only starting (read_lock). Only a record
        # left by a killed holder could be read in that window (for microseconds), as its own.
        lock_f.seek(0)
        lock_f.truncate()
        lock_f.write(f"pid {os.getpid()}\n{json.dumps(self.drawing, sort_keys=True)}\n")
        lock_f.flush()
        self._lock_f = lock_f
        self._cut_torn_tail()
        # Unbuffered: a line is in the file (or cut back out) when append returns, and no
        # half-written buffer is left to be flushed onto the next line after a failed write.
        self._f = open(self.path, "ab", buffering=0)
        self._size = os.fstat(self._f.fileno()).st_size
        return self

    def _cut_torn_tail(self) -> None:
        if not self.path.exists():
            return
        size = self.path.stat().st_size
        if size == 0:
            return
        with open(self.path, "rb+") as f:
            # Find the last newline, reading backwards in blocks.
            pos = size
            block = 1 << 16
            while pos > 0:
                start = max(0, pos - block)
                f.seek(start)
                chunk = f.read(pos - start)
                nl = chunk.rfind(b"\n")
                if nl != -1:
                    end = start + nl + 1
                    break
                pos = start
            else:
                end = 0
            if end < size:
                log.warning("%s: cutting a torn last line of %d bytes (the previous writer was interrupted)",
                            self.path, size - end)
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())

    def append(self, record: SampleRecord) -> None:
        """Journal one sample. When this returns the line is whole in the file (written)."""
        if self._f is None:
            raise RuntimeError("SampleStore.open() was not called")
        if self._failed is not None:
            raise self._write_error(self._failed)
        line = json.dumps({"v": SAMPLES_VERSION, **record.to_json_dict()}, ensure_ascii=False, separators=(",", ":"))
        data = memoryview(_utf8_line(line))
        written = 0
        try:
            while written < len(data):
                written += self._f.write(data[written:]) or 0
        except OSError as e:
            self._fail(e)
            raise self._write_error(e) from None
        self._size += written
        self.appended += 1
        self._dirty = True
        self.sync_if_due()

    def sync_if_due(self) -> None:
        """fsync when the last one is a second old; the runner also calls this once a second."""
        if self._f is not None and self._dirty and time.monotonic() - self._last_fsync >= 1.0:
            self.sync()

    def sync(self) -> None:
        if self._f is not None and self._failed is None:
            try:
                os.fsync(self._f.fileno())
            except OSError as e:
                self._fail(e)
                raise self._write_error(e) from None
            self._last_fsync = time.monotonic()
            self._dirty = False

    def _fail(self, e: OSError) -> None:
        self._failed = e
        assert self._f is not None
        try:  # cut a partly written line back out, so the journal ends with a whole line
            os.ftruncate(self._f.fileno(), self._size)
        except OSError:
            pass  # readers and the next open() skip / cut a torn last line anyway

    def _write_error(self, e: OSError) -> StoreWriteError:
        return StoreWriteError(f"cannot write {self.path}: {e.strerror or e}; the finished samples in it are "
                               "kept. Free space (or make it writable) and re-run the same command to resume")

    def close(self) -> None:
        if self._f is not None:
            try:
                if self._failed is None:
                    self.sync()
            finally:
                try:
                    self._f.close()
                except OSError:
                    pass  # unbuffered: nothing is lost here
                self._f = None
        if self._lock_f is not None:
            try:  # emptied before it is let go: the next command of this process (same pid) never shows this record
                self._lock_f.truncate(0)
            except OSError:
                pass
            fcntl.flock(self._lock_f.fileno(), fcntl.LOCK_UN)
            self._lock_f.close()
            self._lock_f = None

    def __enter__(self) -> SampleStore:
        return self.open() if self._f is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reader ----------------------------------------------------------------------------

    def scan(self) -> _Status:
        """Which samples are finished (ok) and which last failed, without holding any text."""
        ok: set[SampleKey] = set()
        failed: set[SampleKey] = set()
        sums: dict[tuple[str, str], list[float]] = {}
        for d in iter_samples(self.path):
            try:
                key = (d["task"], d["problem_key"], int(d["index"]))
            except (KeyError, TypeError, ValueError):
                continue
            if d.get("status") == "ok":
                if key not in ok and isinstance(d.get("completion_tokens"), (int, float)):
                    acc = sums.setdefault(key[:2], [0.0, 0])
                    acc[0] += d["completion_tokens"]
                    acc[1] += 1
                ok.add(key)
                failed.discard(key)
            elif key not in ok:
                failed.add(key)
        return _Status(ok=ok, failed=failed, lengths={k: total / count for k, (total, count) in sums.items()})

    def records(self) -> Iterator[SampleRecord]:
        for d in iter_samples(self.path):
            yield SampleRecord.from_json_dict(d)


def read_lock(run_dir: Path) -> tuple[int, dict[str, Any] | None] | None:
    """The record of the command holding run_dir's lock: (its pid, what it said it will draw: SampleStore's `drawing`,
    {"tasks": {task: {"problems": [its problem keys], "per_problem": K or --max-n, "adaptive": bool}}}, or None when
    it said none: an import, a repro). None when the file holds no whole record: no command, or one that has the lock
    but has not written yet."""
    try:
        text = (Path(run_dir) / LOCK_FILE).read_text(encoding="utf-8")
        pid_line, drawing_line, end = text.split("\n")
        pid = int(pid_line.removeprefix("pid "))
        d = json.loads(drawing_line)
    except (OSError, ValueError):
        return None
    if end or not (d is None or isinstance(d, dict) and isinstance(d.get("tasks"), dict)):
        return None
    return pid, d
