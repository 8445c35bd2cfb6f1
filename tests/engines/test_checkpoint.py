"""Checkpoint folders as models: one-line errors for broken layouts, a content identity for the run id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasoneval.engines.checkpoint import check_checkpoint, checkpoint_identity
from reasoneval.engines.launch import build_plan
from reasoneval.engines.vllm import resolve_model
from reasoneval.errors import UserError
from tests.engines._options import split_options

ROOT = Path(__file__).resolve().parents[2]


def make_checkpoint(d: Path, weights: bytes = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + b"\x01" * 4096) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    (d / "model.safetensors").write_bytes(weights)
    (d / "tokenizer.json").write_text("{}")
    (d / "tokenizer_config.json").write_text("{}")
    return d


def test_a_complete_folder_passes(tmp_path: Path) -> None:
    check_checkpoint(make_checkpoint(tmp_path / "ckpt"))


@pytest.mark.parametrize("breakage, message", [
    (lambda d: (d / "config.json").unlink(), "has no config.json"),
    (lambda d: (d / "config.json").write_text("{not json"), "config.json cannot be read as JSON"),
    (lambda d: (d / "model.safetensors").unlink(), "has no weight files"),
    (lambda d: (d / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"lm_head.weight": "model-00001-of-00001.safetensors"}})),
     "model.safetensors.index.json names shard\\(s\\) model-00001-of-00001.safetensors that are not in the folder "
     "\\(it has: model.safetensors\\)"),
    (lambda d: (d / "model.safetensors.index.json").write_text("[]"), "is not a valid weight index"),
    (lambda d: (d / "tokenizer.json").unlink(), "has no tokenizer"),
])
def test_broken_layouts_are_one_line_errors(tmp_path: Path, breakage: object, message: str) -> None:
    d = make_checkpoint(tmp_path / "ckpt")
    breakage(d)  # type: ignore[operator]
    with pytest.raises(UserError, match=message) as e:
        check_checkpoint(d)
    assert "\n" not in str(e.value)


def test_identity_follows_the_content_not_the_path(tmp_path: Path) -> None:
    d = make_checkpoint(tmp_path / "ckpt")
    first = checkpoint_identity(d)
    assert first.startswith("hf-checkpoint:") and checkpoint_identity(d) == first
    # Saved again under the same path with new weights of the same size: a new identity.
    make_checkpoint(d, weights=b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + b"\x02" * 4096)
    second = checkpoint_identity(d)
    assert second != first
    # The same bytes written again (a new modification time): also new, never a reuse of old samples.
    st = (d / "model.safetensors").stat()
    os.utime(d / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert checkpoint_identity(d) != second
    # A changed config or tokenizer is a different model too.
    third = checkpoint_identity(d)
    (d / "tokenizer_config.json").write_text('{"bos_token": "<s>"}')
    assert checkpoint_identity(d) != third


def test_vllm_engine_checks_and_identifies_a_folder(tmp_path: Path) -> None:
    d = make_checkpoint(tmp_path / "step-100")
    path, name, identity = resolve_model(None, str(d))
    assert path == str(d.resolve()) and name == "step-100" and identity == checkpoint_identity(d.resolve())
    (d / "tokenizer.json").unlink()
    with pytest.raises(UserError, match="has no tokenizer"):
        resolve_model(None, str(d))


def test_launch_serves_a_folder_under_its_name(tmp_path: Path) -> None:
    d = make_checkpoint(tmp_path / "step-200")
    common, opts = split_options("launch", server="vllm", model_path=str(d))
    plan = build_plan(common.model, opts, 8123)
    cmd = plan.command
    assert cmd[cmd.index("serve") + 1] == str(d.resolve())
    assert cmd[cmd.index("--served-model-name") + 1] == "step-200"
    assert plan.identity == checkpoint_identity(d.resolve())
    (d / "config.json").unlink()
    with pytest.raises(UserError, match="has no config.json"):
        build_plan(common.model, opts, 8123)


def test_cli_reports_a_stale_index_in_one_line(tmp_path: Path) -> None:
    d = make_checkpoint(tmp_path / "ckpt")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "model-00001-of-00001.safetensors"}}))
    r = subprocess.run([sys.executable, "-m", "reasoneval.cli.main", "run", "--engine", "vllm", "--model-path", str(d),
                        "--tasks", "arith", "--limit", "1", "--n", "1", "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("reasoneval: error:")]
    assert len(lines) == 1 and "model-00001-of-00001.safetensors that are not in the folder" in lines[0]
