"""Engines: one module each, registered by name in ENGINES (built in, or from another package's entry point).

An engine module defines `Options` (a frozen dataclass of its own settings, each made with
`base.option`; the built-in engines import theirs from `options.py`, which `run --help` reads without importing
an engine), `CAPABILITIES`, and `create(common: CommonOptions, options: Options) -> Engine`.
Modules import their heavy dependency (llama.cpp, vLLM, Ray) only when the engine starts, so the
CLI can read every engine's options without them. `--engine-arg KEY=VALUE` sets any option; the
fields marked as flags are also top-level CLI flags (e.g. --replicas). See docs/architecture.md.
"""

from __future__ import annotations

import dataclasses
import shlex
import types
import typing
from typing import Any, Mapping

from reasoneval.engines.base import (
    Capabilities,
    CommonOptions,
    Engine,
    EngineError,
    EngineInfo,
    check_supported,
)
from reasoneval.errors import UserError
from reasoneval.registry import ENGINE_GROUP, Registry


def _check_engine(name: str, module: Any) -> None:
    """An engine module has `Options` (a dataclass: its options make flags and --engine-arg keys), `CAPABILITIES`
    (a Capabilities) and `create(common, options) -> Engine`."""
    missing = [what for what, ok in (
        ("Options (a dataclass)", dataclasses.is_dataclass(getattr(module, "Options", None))),
        ("CAPABILITIES (an engines.Capabilities)", isinstance(getattr(module, "CAPABILITIES", None), Capabilities)),
        ("create(common, options)", callable(getattr(module, "create", None)))) if not ok]
    if missing:
        raise UserError(f"engine {name!r} ({getattr(module, '__name__', module)!r}) is not an engine module: "
                        f"it lacks {', '.join(missing)}")


# Built-in engines, imported by module path only when used. Other packages add engines through the
# `reasoneval.engines` entry point group (`name = "package.module"`; reasoneval.registry).
ENGINES: Registry[types.ModuleType] = Registry("engine", group=ENGINE_GROUP, check=_check_engine)
ENGINES.add_lazy("openai", "reasoneval.engines.openai")
ENGINES.add_lazy("local", "reasoneval.engines.local.engine")
ENGINES.add_lazy("launch", "reasoneval.engines.launch.engine")
ENGINES.add_lazy("vllm", "reasoneval.engines.vllm")
ENGINES.add_lazy("ray", "reasoneval.engines.ray")
ENGINES.add_lazy("echo", "reasoneval.engines.echo")


def engine_module(engine: str) -> types.ModuleType:
    """The module of a registered engine (imported on first use)."""
    return ENGINES.get(engine)


def options_class(engine: str) -> type:
    cls: type = engine_module(engine).Options
    return cls


def capabilities(engine: str, args: Mapping[str, Any] | None = None) -> Capabilities:
    """What the engine takes configured with `args` (--engine-arg): its module's `configured_capabilities(options)`
    where its options change it (launch's --server, ray's inner engine), else its `CAPABILITIES`."""
    module = engine_module(engine)
    configured = getattr(module, "configured_capabilities", None)
    if configured is not None:
        caps: Capabilities = configured(make_options(engine, args or {}))
        return caps
    fixed: Capabilities = module.CAPABILITIES
    return fixed


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(engine: str, name: str, tp: Any, value: Any) -> Any:
    """A value given on the command line (a string) or from Python, as the option's declared type."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "")):
            return None
        tp = next(a for a in args if a is not type(None))
        args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    try:
        if origin is typing.Literal:
            if value not in args:
                raise ValueError(f"choose one of {', '.join(map(str, args))}")
            return value
        if origin is tuple:
            if isinstance(value, str):
                return tuple(shlex.split(value))
            return tuple(str(v) for v in value)
        if tp is bool:
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError("use true or false")
        if tp in (int, float, str):
            if tp is int and isinstance(value, float) and not value.is_integer():
                raise ValueError("not an integer")
            return tp(value)
    except (TypeError, ValueError) as e:
        raise UserError(f"engine option {name}={value!r} of the {engine} engine is not valid ({e})") from None
    return value


def make_options(engine: str, args: Mapping[str, Any]) -> Any:
    """The engine's Options from KEY=VALUE settings; an unknown key or a bad value is a one-line error."""
    cls = options_class(engine)
    hints = _field_types(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    values: dict[str, Any] = {}
    for key, value in args.items():
        name = key.replace("-", "_")
        if name not in hints:
            raise UserError(f"the {engine} engine has no option {key!r}; its options: {', '.join(names) or 'none'} "
                            f"(`reasoneval engines` lists every engine's options)")
        values[name] = _convert(engine, name, hints[name], value)
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise UserError(f"{engine} engine options: {e}") from None


def parse_engine_args(pairs: list[str]) -> dict[str, str]:
    """`--engine-arg KEY=VALUE` strings -> {KEY: VALUE}."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--engine-arg {pair!r} is not KEY=VALUE (e.g. --engine-arg replicas=2)")
        out[key.strip()] = value
    return out


def create_engine(engine: str, common: CommonOptions, args: Mapping[str, Any] | None = None) -> Engine:
    module = engine_module(engine)
    instance: Engine = module.create(common, make_options(engine, args or {}))
    return instance


__all__ = ["ENGINES", "Capabilities", "CommonOptions", "Engine", "EngineError", "EngineInfo", "capabilities",
           "check_supported", "create_engine", "engine_module", "make_options", "options_class",
           "parse_engine_args"]
