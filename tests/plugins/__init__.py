"""Plugins as a contributor writes them: the docs' examples (docs/architecture.md) as modules, a test-only
engine, and `site/`, a folder holding a third-party package (demo_plugin) with its installed metadata."""

from __future__ import annotations

from typing import Any

import pytest

from reasoneval.registry import Registry


def register_for_the_test(monkeypatch: pytest.MonkeyPatch, registry: Registry[Any], name: str, ref: str) -> None:
    """`registry.add_lazy(name, ref)` for one test: the registry gets its own entries back afterwards (the product
    never removes an entry, so the removal is the test's, through monkeypatch)."""
    monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    registry.add_lazy(name, ref)
