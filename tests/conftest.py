"""Shared pytest fixtures."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from tests.fixtures.openai_server import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started OpenAI-compatible loopback server with default settings (model "test-model")."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def make_openai_server() -> Iterator[Callable[..., OpenAIServer]]:
    """A factory: make_openai_server(**OpenAIServer kwargs) -> a started server; all are stopped
    at teardown."""
    servers: list[OpenAIServer] = []

    def make(**kwargs: Any) -> OpenAIServer:
        server = OpenAIServer(**kwargs)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()
