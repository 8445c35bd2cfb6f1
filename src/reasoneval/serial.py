"""One JSON serialiser for every persisted record (config.json, summary.json, samples.jsonl, grades).

Driven by the dataclass fields and their type hints, so a record is declared once and written and read
the same way everywhere:

- `to_json(obj)`: a dataclass becomes a dict in field order; mappings, tuples, lists and paths become
  JSON values; mapping keys become strings (`dict[int, float]` is written `{"1": ...}`).
- `from_json(cls, data)`: the inverse, by the type hints: nested dataclasses, `X | None`, tuples,
  `dict[int, ...]` keys read back as ints, `Path`. Unknown keys are ignored (a newer minor writer), a
  missing or null field takes its default (an older writer). Numbers are not coerced, so a file read
  and written again keeps its bytes.

Per-field options (`json_field(...)`, or `metadata=json_options(...)`): `omit_none` (no key when the
value is None), `omit_empty` (no key when the mapping or sequence is empty), `skip` (not persisted:
supplied by the reader, e.g. a run's directory), `old_names` (names an older version wrote the field
under, read when the current name is absent).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Any, Literal, Mapping, TypeVar, Union

from reasoneval.errors import UserError

T = TypeVar("T")

_OMIT_NONE = "reasoneval.omit_none"
_OMIT_EMPTY = "reasoneval.omit_empty"
_SKIP = "reasoneval.skip"
_OLD_NAMES = "reasoneval.old_names"


def json_options(*, omit_none: bool = False, omit_empty: bool = False, skip: bool = False,
                 old_names: tuple[str, ...] = ()) -> dict[str, Any]:
    """Field metadata for `dataclasses.field(metadata=...)`; see the module docstring."""
    return {_OMIT_NONE: omit_none, _OMIT_EMPTY: omit_empty, _SKIP: skip, _OLD_NAMES: old_names}


def json_field(*, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
               omit_none: bool = False, omit_empty: bool = False, skip: bool = False,
               old_names: tuple[str, ...] = ()) -> Any:
    """`dataclasses.field` with serialiser options."""
    meta = json_options(omit_none=omit_none, omit_empty=omit_empty, skip=skip, old_names=old_names)
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def to_json(obj: Any) -> Any:
    """`obj` as plain JSON values (dicts, lists, str, numbers, bools, None)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            meta = f.metadata
            if meta.get(_SKIP):
                continue
            value = getattr(obj, f.name)
            if value is None and meta.get(_OMIT_NONE):
                continue
            if meta.get(_OMIT_EMPTY) and value is not None and len(value) == 0:
                continue
            out[f.name] = to_json(value)
        return out
    if isinstance(obj, Mapping):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [to_json(v) for v in sorted(obj)]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def from_json(cls: type[T], data: Any, **given: Any) -> T:
    """An instance of the dataclass `cls` from its JSON form; `given`: field values not read from `data`
    (the `skip` fields, or overrides)."""
    if not isinstance(data, Mapping):
        raise UserError(f"expected a JSON object for {cls.__name__}, got {type(data).__name__}")
    return typing.cast(T, _dataclass_from(cls, data, given))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _dataclass_from(cls: type, data: Mapping[str, Any], given: Mapping[str, Any]) -> Any:
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in given:
            kwargs[f.name] = given[f.name]
            continue
        if f.metadata.get(_SKIP) or not f.init:
            continue
        raw: Any = dataclasses.MISSING
        for name in (f.name, *f.metadata.get(_OLD_NAMES, ())):
            if name in data:
                raw = data[name]
                break
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if raw is dataclasses.MISSING or (raw is None and has_default and not _allows_none(hints[f.name])):
            if not has_default:
                raise UserError(f"{cls.__name__} in JSON has no {f.name!r}")
            continue
        kwargs[f.name] = _convert(hints[f.name], raw)
    return cls(**kwargs)


def _allows_none(tp: Any) -> bool:
    return tp is Any or tp is object or (_is_union(tp) and type(None) in typing.get_args(tp))


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _convert(tp: Any, value: Any) -> Any:
    if value is None or tp is Any or tp is object:
        return value
    if _is_union(tp):
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(arms) == 1:
            return _convert(arms[0], value)
        for arm in arms:  # the arm whose JSON shape the value has; a scalar passes through as it is
            if isinstance(value, Mapping) and (dataclasses.is_dataclass(arm) or _origin(arm) is dict):
                return _convert(arm, value)
            if isinstance(value, list) and _origin(arm) in (tuple, list, frozenset):
                return _convert(arm, value)
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_json(tp, value)
    origin, args = _origin(tp), typing.get_args(tp)
    if origin is Literal:
        return value
    if origin is dict:
        kt, vt = args if args else (Any, Any)
        return {_key(kt, k): _convert(vt, v) for k, v in value.items()}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v) for v in value)
        if args:
            return tuple(_convert(a, v) for a, v in zip(args, value))
        return tuple(value)
    if origin is list:
        return [_convert(args[0] if args else Any, v) for v in value]
    if origin is frozenset:
        return frozenset(_convert(args[0] if args else Any, v) for v in value)
    if tp is Path:
        return Path(value)
    return value


def _origin(tp: Any) -> Any:
    """The container kind of a hint: dict for Mapping/dict, list for Sequence/list, tuple, frozenset."""
    origin = typing.get_origin(tp)
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        return dict
    if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence):
        return list
    if origin in (frozenset, collections.abc.Set, set):
        return frozenset
    return origin


def _key(kt: Any, k: str) -> Any:
    if kt is int:
        return int(k)
    if kt is float:
        return float(k)
    return k


class JsonRecord:
    """`to_json_dict()` / `from_json_dict(d)` for a dataclass, by `to_json` / `from_json`."""

    def to_json_dict(self) -> dict[str, Any]:
        return typing.cast(dict[str, Any], to_json(self))

    @classmethod
    def from_json_dict(cls: type[T], d: Mapping[str, Any]) -> T:
        return from_json(cls, d)
