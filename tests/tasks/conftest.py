"""Every tasks test runs offline with its own empty cache and no data dir unless it sets one."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

HUB_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REASONEVAL_OFFLINE", "1")
    monkeypatch.setenv("REASONEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("REASONEVAL_DATA_DIR", raising=False)
    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: object) -> object:
        # Nothing in these tests may reach the network; loopback and unix sockets stay usable.
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0] if isinstance(address, tuple) else str(address)
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise AssertionError(f"network access attempted in a test: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture
def shared_data_dir(real_data_dir: Path) -> Path:
    """The benchmark files (for tests marked `real_data`, tests/real_data.py)."""
    return real_data_dir
