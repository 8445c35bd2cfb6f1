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
value is None), `omit_empty` (no key when the mapping or sequence is empty), `omit_default` (no key when the
value equals the field's default: a field added to a hashed record, e.g. a sampling option, leaves the hash of
every record that does not set it as it was), `skip` (not persisted: supplied by the reader, e.g. a run's
directory), `keep_unknown` (a dict field that holds the object's keys no other field reads, written back in its
place: a file of another version keeps them).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, TypeVar, Union

from reasoneval.errors import UserError

T = TypeVar("T")

_OMIT_NONE = "reasoneval.omit_none"
_OMIT_EMPTY = "reasoneval.omit_empty"
_OMIT_DEFAULT = "reasoneval.omit_default"
_SKIP = "reasoneval.skip"
_KEEP_UNKNOWN = "reasoneval.keep_unknown"


def json_options(*, omit_none: bool = False, omit_empty: bool = False, omit_default: bool = False,
                 skip: bool = False, keep_unknown: bool = False) -> dict[str, Any]:
    """Field metadata for `dataclasses.field(metadata=...)`; see the module docstring."""
    return {_OMIT_NONE: omit_none, _OMIT_EMPTY: omit_empty, _OMIT_DEFAULT: omit_default, _SKIP: skip,
            _KEEP_UNKNOWN: keep_unknown}


def json_field(*, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
               omit_none: bool = False, omit_empty: bool = False, omit_default: bool = False,
               skip: bool = False, keep_unknown: bool = False) -> Any:
    """`dataclasses.field` with serialiser options."""
    meta = json_options(omit_none=omit_none, omit_empty=omit_empty, omit_default=omit_default, skip=skip,
                        keep_unknown=keep_unknown)
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


_SCALARS = (str, int, float, bool, type(None))


@functools.cache
def _out_fields(cls: type) -> tuple[tuple[str, bool, bool, Any], ...]:
    """(name, omit_none, omit_empty, the default it is left out at or _ABSENT) of the fields `to_json` writes,
    in order."""
    return tuple((f.name, bool(f.metadata.get(_OMIT_NONE)), bool(f.metadata.get(_OMIT_EMPTY)),
                  _default(f) if f.metadata.get(_OMIT_DEFAULT) else _ABSENT)
                 for f in dataclasses.fields(cls) if not f.metadata.get(_SKIP))


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    if f.default is dataclasses.MISSING:
        raise TypeError(f"{f.name}: omit_default needs a default")
    return f.default


def to_json(obj: Any) -> Any:
    """`obj` as plain JSON values (dicts, lists, str, numbers, bools, None)."""
    if isinstance(obj, _SCALARS):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for name, omit_none, omit_empty, default in _out_fields(type(obj)):
            value = getattr(obj, name)
            if name == _unknown_keys_field(type(obj)):
                out.update(to_json(value))
                continue
            if default is not _ABSENT and value == default:
                continue
            if value is None:
                if not omit_none:
                    out[name] = None
            elif not (omit_empty and len(value) == 0):
                out[name] = value if isinstance(value, _SCALARS) else to_json(value)
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
    kwargs: dict[str, Any] = {}
    for name, keys, convert, has_default, allows_none in _in_fields(typing.cast(type, cls)):
        if name in given:
            kwargs[name] = given[name]
            continue
        raw: Any = _ABSENT
        for key in keys:
            if key in data:
                raw = data[key]
                break
        if raw is _ABSENT or (raw is None and has_default and not allows_none):
            if not has_default:
                raise UserError(f"{cls.__name__} in JSON has no {name!r}")
            continue
        kwargs[name] = raw if convert is None or raw is None else convert(raw)
    rest = _unknown_keys_field(typing.cast(type, cls))
    if rest is not None and rest not in given:
        read = {key for _, keys, _, _, _ in _in_fields(typing.cast(type, cls)) for key in keys}
        kwargs[rest] = {k: v for k, v in data.items() if k not in read}
    return cls(**kwargs)


@functools.cache
def _unknown_keys_field(cls: type) -> str | None:
    """The field that keeps the keys no other field reads (keep_unknown), if any."""
    return next((f.name for f in dataclasses.fields(cls) if f.metadata.get(_KEEP_UNKNOWN)), None)


_ABSENT = object()
Converter = Callable[[Any], Any]


@functools.cache
def _in_fields(cls: type) -> tuple[tuple[str, tuple[str, ...], Converter | None, bool, bool], ...]:
    """Per field `from_json` reads: (name, JSON keys to try, converter or None for as-is, has a default,
    None is a value of its type)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        keys = () if f.metadata.get(_SKIP) or f.metadata.get(_KEEP_UNKNOWN) else (f.name,)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        out.append((f.name, keys, _converter(hints[f.name]), has_default, _allows_none(hints[f.name])))
    return tuple(out)


def _allows_none(tp: Any) -> bool:
    return tp is Any or tp is object or (_is_union(tp) and type(None) in typing.get_args(tp))


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _converter(tp: Any) -> Converter | None:
    """How a JSON value becomes a value of type `tp` (None: it is one as it is). Numbers are not coerced."""
    if tp is Any or tp is object or tp in _SCALARS:
        return None
    if _is_union(tp):
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(arms) == 1:
            return _converter(arms[0])
        # several: the arm whose JSON shape the value has; a scalar passes through as it is
        by_shape = [(dict if dataclasses.is_dataclass(a) or _origin(a) is dict else list, _converter(a))
                    for a in arms if dataclasses.is_dataclass(a) or _origin(a) in (dict, tuple, list, frozenset)]
        if not by_shape:
            return None

        def union(v: Any) -> Any:
            for shape, conv in by_shape:
                if isinstance(v, Mapping if shape is dict else list):
                    return conv(v) if conv is not None else v
            return v
        return union
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        cls = tp
        return lambda v: from_json(cls, v)
    origin, args = _origin(tp), typing.get_args(tp)
    if origin is Literal:
        return None
    if origin is dict:
        kt, vt = args if args else (Any, Any)
        key = int if kt is int else float if kt is float else None
        conv = _converter(vt)
        if key is None and conv is None:
            return dict
        return lambda v: {(key(k) if key else k): (conv(x) if conv is not None and x is not None else x)
                          for k, x in v.items()}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = _converter(args[0])
            return lambda v: tuple(each(x) if each is not None and x is not None else x for x in v)
        convs = [_converter(a) for a in args]
        if not convs or all(c is None for c in convs):
            return tuple
        return lambda v: tuple(c(x) if c is not None and x is not None else x for c, x in zip(convs, v))
    if origin in (list, frozenset):
        each = _converter(args[0]) if args else None
        make: Callable[[Any], Any] = list if origin is list else frozenset
        return lambda v: make(each(x) if each is not None and x is not None else x for x in v)
    if tp is Path:
        return Path
    return None


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


class JsonRecord:
    """`to_json_dict()` / `from_json_dict(d)` for a dataclass, by `to_json` / `from_json`."""

    def to_json_dict(self) -> dict[str, Any]:
        return typing.cast(dict[str, Any], to_json(self))

    @classmethod
    def from_json_dict(cls: type[T], d: Mapping[str, Any]) -> T:
        return from_json(cls, d)
