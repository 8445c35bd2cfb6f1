"""results/fingerprint.py: the weights hash cache, a GGUF header's quantisation, old runs' partial fingerprints,
ids and differences; `runs` showing and grouping by them, `compare` saying whether two runs share one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest

from reasoneval.results import fingerprint
from reasoneval.results.schema import load_config, write_config
from tests.reliability._helpers import cli_inprocess

RUNS = Path(__file__).parent.parent / "fixtures" / "runs"


def _gguf(path: Path, file_type: int) -> Path:
    """A GGUF header (version 3) with a string key, an array key, then general.file_type."""
    def s(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    kv = (s("general.name") + struct.pack("<I", 8) + s("tiny")
          + s("tokenizer.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 0.1, 0.2, 0.3)
          + s("general.file_type") + struct.pack("<II", 4, file_type))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 3) + kv + b"\0" * 64)
    return path


def test_gguf_quantisation_is_read_from_the_header(tmp_path: Path) -> None:
    assert fingerprint.gguf_file_type(_gguf(tmp_path / "a.gguf", 3)) == "Q4_1"
    assert fingerprint.gguf_file_type(_gguf(tmp_path / "b.gguf", 15)) == "Q4_K_M"
    assert fingerprint.gguf_file_type(_gguf(tmp_path / "c.gguf", 999)) == "file_type 999"
    (tmp_path / "d.gguf").write_bytes(b"not a gguf")
    assert fingerprint.gguf_file_type(tmp_path / "d.gguf") == fingerprint.UNKNOWN


def test_weights_hash_is_cached_by_path_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache.json"
    monkeypatch.setenv(fingerprint.HASH_CACHE_ENV, str(cache))
    weights = tmp_path / "w.gguf"
    weights.write_bytes(b"x" * 3_000_000)
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert fingerprint.weights_sha256(weights) == digest
    entry = json.loads(cache.read_text())[str(weights.resolve())]
    assert entry["sha256"] == digest and entry["size"] == 3_000_000
    # The cache answers while the file's size and mtime are unchanged (the file is not read again)...
    entry["sha256"] = "cached"
    cache.write_text(json.dumps({str(weights.resolve()): entry}))
    assert fingerprint.weights_sha256(weights) == "cached"
    # ...and a file changed in place (new mtime) is hashed again.
    weights.write_bytes(b"y" * 3_000_000)
    os.utime(weights, ns=(entry["mtime_ns"] + 10**9, entry["mtime_ns"] + 10**9))
    assert fingerprint.weights_sha256(weights) == hashlib.sha256(b"y" * 3_000_000).hexdigest()


@pytest.mark.parametrize("name", ["v0_1_0", "pre_layout"])
def test_a_run_made_before_fingerprints_reads_with_a_partial_one(name: str) -> None:
    config = load_config(RUNS / name)
    assert not config.fingerprint
    fp = fingerprint.of_config(config)
    assert fp["partial"] is True
    assert fp["engine"] == "openai" and fp["seed"] == 42 and fp["sampling"]["max_tokens"] == 1024
    assert fp["concurrency"] == 4
    # what config.json never recorded is unknown, not guessed
    assert fp["engine_version"] == fp["weights_sha256"] == fp["accelerator"] == fingerprint.UNKNOWN
    assert fingerprint.fingerprint_id(fp).startswith("~")
    # a partial fingerprint never claims one setup, even against itself
    assert fingerprint.same(fp, fp) is None


def test_ids_and_differences() -> None:
    a = {"fingerprint_version": 1, "engine": "local", "threads": 2, "batch": 16, "weights_sha256": "ab"}
    b = {**a, "threads": 1}
    assert fingerprint.fingerprint_id(a) == fingerprint.fingerprint_id(dict(a))
    assert fingerprint.fingerprint_id(a) != fingerprint.fingerprint_id(b)
    assert fingerprint.differences(a, b) == [("threads", 2, 1)]
    assert fingerprint.same(a, dict(a)) is True and fingerprint.same(a, b) is False
    # only a fact one side could not know differs: cannot tell
    assert fingerprint.same(a, {**a, "weights_sha256": fingerprint.UNKNOWN}) is None


def _copy_run(src: Path, root: Path, name: str, **fp_changes: object) -> Path:
    """A copy of a fixture run under root/m/<name>, given a full fingerprint (as a run made now has)."""
    dst = root / "m" / name
    shutil.copytree(src, dst)
    config = load_config(dst)
    fp = {k: v for k, v in fingerprint.of_config(config).items() if k not in ("partial", "note")}
    fp.update({"engine_version": "vllm 0.11.0", "weights_sha256": "00" * 32, "accelerator": "1 x NVIDIA H100",
               **fp_changes})
    write_config(dst, dataclasses.replace(config, fingerprint=fp))
    summary = json.loads((dst / "summary.json").read_text())
    summary["config"]["fingerprint"] = fp
    (dst / "summary.json").write_text(json.dumps(summary))
    return dst


def test_compare_says_before_its_numbers_whether_the_setup_is_shared(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                                      ) -> None:
    a = _copy_run(RUNS / "pre_layout", tmp_path, "a")
    b = _copy_run(RUNS / "pre_layout", tmp_path, "b")
    c = _copy_run(RUNS / "pre_layout", tmp_path, "c", concurrency=1, engine_version="vllm 0.12.0")
    r = cli_inprocess(["compare", str(a), str(b)], capsys)
    assert r.returncode == 0, r.stderr
    assert r.stdout.index("share fingerprint") < r.stdout.index("pass@1")
    r = cli_inprocess(["compare", str(a), str(c), "--markdown"], capsys)
    first = r.stdout.splitlines()[0]
    assert first.startswith("WARNING: A (") and "different setups" in first
    assert "  concurrency: A 4 | B 1" in r.stdout and "  engine_version: A vllm 0.11.0 | B vllm 0.12.0" in r.stdout
    assert r.stdout.index("concurrency") < r.stdout.index("pass@1")
    # an old run against a new one: cannot tell
    r = cli_inprocess(["compare", str(RUNS / "pre_layout"), str(a)], capsys)
    assert "cannot tell whether they share a setup" in r.stdout.splitlines()[0]
    d = _copy_run(RUNS / "pre_layout", tmp_path, "d", weights_sha256="11" * 32)
    r = cli_inprocess(["compare", str(a), str(d)], capsys)
    assert r.stdout.splitlines()[0] == ("setup: A and B differ only in the model (weights_sha256); the rest of the "
                                        "setup is shared")
    r = cli_inprocess(["compare", str(a), str(c), "--json"], capsys)
    setup = json.loads(r.stdout)["setup"][0]
    assert setup["same_setup"] is False and ["concurrency", 4, 1] in setup["differences"]


def test_runs_shows_the_fingerprint_and_groups_by_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "results"
    _copy_run(RUNS / "pre_layout", root, "a")
    _copy_run(RUNS / "pre_layout", root, "b")
    _copy_run(RUNS / "pre_layout", root, "c", threads=1)
    shutil.copytree(RUNS / "v0_1_0", root / "old" / "r")
    r = cli_inprocess(["runs", str(root), "--csv"], capsys)
    assert r.returncode == 0, r.stderr
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    ids = {row["run_dir"].split("/")[-1]: row["fingerprint"] for row in rows}
    assert ids["a"] == ids["b"] != ids["c"] and ids["r"].startswith("~")
    r = cli_inprocess(["runs", str(root), "--group-by", "fingerprint"], capsys)
    assert r.returncode == 0, r.stderr
    titles = [line for line in r.stdout.splitlines() if line.lstrip().startswith("fingerprint ")]
    assert len(titles) == 3
    assert f"fingerprint {ids['a']} (2 runs)" in titles[0] and "engine_version=vllm 0.11.0" in titles[0]
    assert any("partial: made before fingerprints" in t for t in titles)
