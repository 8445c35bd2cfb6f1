"""`half_engine`: options and capabilities, but no `create`."""

from __future__ import annotations

from dataclasses import dataclass

from reasoneval.engines.base import Capabilities


@dataclass(frozen=True)
class Options:
    pass


CAPABILITIES = Capabilities(extra_body_keys=frozenset())
