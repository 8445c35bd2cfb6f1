"""Engines made the way the pipeline makes them: common options plus the engine's own Options."""

from __future__ import annotations

import dataclasses
from typing import Any

from reasoneval.engines import CommonOptions, Engine, engine_module, make_options

COMMON = {f.name for f in dataclasses.fields(CommonOptions)}


def split_options(kind: str, **kw: Any) -> tuple[CommonOptions, Any]:
    common = CommonOptions(**{k: v for k, v in kw.items() if k in COMMON})
    return common, make_options(kind, {k: v for k, v in kw.items() if k not in COMMON})


def make_engine(kind: str, **kw: Any) -> Engine:
    engine: Engine = engine_module(kind).create(*split_options(kind, **kw))
    return engine
