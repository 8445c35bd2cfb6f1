"""The store's disk fills up or turns read-only mid-run: a one-line error, a readable journal, nothing
finished lost, and the next run resumes."""

from __future__ import annotations

import errno
import json
import resource
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import reasoneval
from reasoneval.errors import UserError
from reasoneval.results.store import SampleStore
from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import (
    arith_reply,
    assert_clean_error,
    cli,
    journal,
    journal_lines,
    ok_keys,
    run_args,
    write_data,
)

TOTAL = 160  # 10 problems x 16 samples


def _whole_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the journal, which must all be whole JSON objects (no torn tail)."""
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), "the journal ends in a partial line"
    return [json.loads(line) for line in raw.splitlines()]


def _resume_and_check(server: OpenAIServer, tmp_path: Path, before: list[dict[str, Any]]) -> None:
    server.reset()
    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "16", "--json"))
    assert r.returncode == 0, r.stderr
    path = journal(tmp_path / "results")
    assert path is not None
    after = _whole_lines(path)
    keys = ok_keys(after)
    assert len(keys) == len(set(keys)) == TOTAL
    assert after[:len(before)] == before  # nothing finished was lost or rewritten
    kept = {d["seed"] for d in before}
    assert not kept & set(server.seeds_seen()) and len(server.seeds_seen()) == TOTAL - len(before)
    assert json.loads(r.stdout)["complete"] is True


@pytest.fixture
def server(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> OpenAIServer:
    write_data(tmp_path / "data", {"aime24": 10})
    return make_openai_server(responder=arith_reply, delay_s=0.002)


def test_file_size_limit_mid_run(server: OpenAIServer, tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the journal's write fail mid-line with EFBIG, like a full disk, without root."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    r = cli(*run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "16"), preexec_fn=limit)
    assert_clean_error(r, 2, r"cannot write .*samples\.jsonl: File too large; the finished samples in it are kept")
    path = journal(tmp_path / "results")
    assert path is not None
    before = _whole_lines(path)
    assert 10 < len(before) < TOTAL and all(d["status"] == "ok" for d in before)
    assert path.stat().st_size <= 20_000
    _resume_and_check(server, tmp_path, before)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "results"
    mnt.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_full_disk_mid_run_then_freed(server: OpenAIServer, tmp_path: Path, tiny_tmpfs: Path) -> None:
    args = run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "16")
    r = cli(*args)
    assert_clean_error(r, 2, r"cannot write .*samples\.jsonl: No space left on device")
    path = journal(tiny_tmpfs)
    assert path is not None
    before = _whole_lines(path)
    assert 10 < len(before) < TOTAL
    # Still full: the next run and a report stop with the same kind of one-line error.
    assert_clean_error(cli(*args), 2, r"No space left on device")
    assert_clean_error(cli("report", str(path.parent), "--grading-workers", "1"), 2, r"No space left on device")
    assert _whole_lines(path) == before
    subprocess.run(["mount", "-o", "remount,size=8m", str(tiny_tmpfs)], check=True)  # space freed
    _resume_and_check(server, tmp_path, before)
    r = cli("report", str(path.parent), "--grading-workers", "1", "--json")
    assert r.returncode == 0, r.stderr


class _ReadOnlyAfter:
    """The journal's file object, whose write fails with EROFS after `ok` writes (the volume was
    remounted read-only); everything else goes to the real file."""

    def __init__(self, f: Any, ok: int) -> None:
        self._f, self._ok = f, ok

    def write(self, data: Any) -> int:
        if self._ok <= 0:
            raise OSError(errno.EROFS, "Read-only file system")
        self._ok -= 1
        return int(self._f.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def test_store_turns_read_only_mid_run(server: OpenAIServer, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = SampleStore.open

    def open_then_fail(self: SampleStore) -> SampleStore:
        real_open(self)
        self._f = _ReadOnlyAfter(self._f, 25)  # type: ignore[assignment]
        return self

    monkeypatch.setattr(SampleStore, "open", open_then_fail)
    opts: dict[str, Any] = dict(base_url=server.base_url, model="test-model", data_dir=str(tmp_path / "data"),
                                output_dir=str(tmp_path / "results"), retry_backoff=0.01, grading_workers=1,
                                progress=False, print_table=False, tasks=["aime24"], n=16, concurrency=4)
    with pytest.raises(UserError) as ei:
        reasoneval.evaluate(**opts)
    msg = str(ei.value)
    assert "samples.jsonl: Read-only file system" in msg and "re-run the same command" in msg
    assert "\n" not in msg
    path = journal(tmp_path / "results")
    assert path is not None
    before = _whole_lines(path)
    assert len(before) == 25
    assert len(SampleStore(path.parent).scan().ok) == 25  # readable by the store itself
    monkeypatch.setattr(SampleStore, "open", real_open)
    server.reset()
    s = reasoneval.evaluate(**opts)
    assert s.complete and len(ok_keys(journal_lines(path))) == TOTAL
    assert _whole_lines(path)[:25] == before
    assert not {d["seed"] for d in before} & set(server.seeds_seen())
