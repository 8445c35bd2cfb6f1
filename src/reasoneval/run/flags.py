"""Options declared once, as dataclass fields: the machinery. A field made with `run_option(...)` (or a sampling option,
`records.sampling_option`) carries its default, one line of help, its group in `--help` and how the command line
spells and parses it; from it:

    add_options(parser, cls)          the argparse flags, each in its group
    options_from_args(cls, ns)        the parsed flags as the class's keyword arguments
    rename_old_keys / check_values    a jobs / settings file's mapping (or a Python caller's), checked key by key

`reasoneval run`'s options (run.options.EvalConfig) and sweep's and watch's cluster flags (fleet.loop.SweepOptions)
are declared with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import CLI

log = logging.getLogger("reasoneval")

# The `--help` group of the sampling options (SamplingParams' fields).
SAMPLING = "sampling"


# ---- the schema ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CliOption:
    """How a field appears on the command line.

    flag: the flag (default: --field-name); aliases: older spellings, still accepted (a warning says the new
    one). action: "store" (a value parsed with `parse`), "true" / "false" (a switch that sets True / False),
    "const" (sets `const`), "append" (repeatable; `split` also splits on commas). add / collect: a field
    whose flags are built elsewhere (engine options, dashboards): `add(parser, group)` adds them, `collect(ns)`
    is the field's value from the parsed flags.
    """

    help: str | Callable[[], str]
    group: str
    flag: str | None = None
    aliases: tuple[str, ...] = ()
    action: str = "store"
    parse: Callable[[str], Any] | None = None
    choices: Sequence[str] | Callable[[], Sequence[str]] | None = None
    metavar: str | None = None
    const: Any = None
    split: bool = False
    add: Callable[[Any, Any], None] | None = None
    collect: Callable[[argparse.Namespace], Any] | None = None

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help


def run_option(default: Any = dataclasses.MISSING, *, help: str | Callable[[], str], group: str,
               default_factory: Callable[[], Any] | Any = dataclasses.MISSING, **cli: Any) -> Any:
    """A field of an options dataclass: its default (or default_factory), its help, its `--help` group, and
    how the command line gives it (CliOption's fields)."""
    meta = {"cli": CliOption(help=help, group=group, **cli)}
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def cli_of(f: dataclasses.Field[Any]) -> CliOption | None:
    """How the field appears on the command line: a run_option's CliOption, or a sampling option's (records.CLI:
    SamplingParams' fields, which EvalConfig inherits) in the "sampling" group."""
    opt = f.metadata.get("cli")
    if isinstance(opt, CliOption):
        return opt
    sampling = f.metadata.get(CLI)
    return CliOption(group=SAMPLING, **sampling) if isinstance(sampling, Mapping) else None


def flag_of(f: dataclasses.Field[Any]) -> str:
    opt = cli_of(f)
    return (opt.flag if opt and opt.flag else None) or "--" + f.name.replace("_", "-")


def field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _warn_old_spelling(option_string: str | None, aliases: Sequence[str], flag: str) -> None:
    if option_string in aliases:
        log.warning("%s is an old spelling of %s; it still works, but use %s", option_string, flag, flag)


GIVEN = "_given"  # the namespace attribute holding the fields whose flags the command line gave


def given_flags(ns: argparse.Namespace) -> set[str]:
    """The fields (dests) whose flags were on the command line, not left at their defaults."""
    return set(getattr(ns, GIVEN, None) or ())


def _mark_given(namespace: Any, dest: str) -> None:
    given = getattr(namespace, GIVEN, None)
    if given is None:
        given = set()
        setattr(namespace, GIVEN, given)
    given.add(dest)


class _Store(argparse.Action):
    """Stores the value; a flag given by an old spelling (`aliases`) logs the new one."""

    def __init__(self, *args: Any, aliases: Sequence[str] = (), **kw: Any) -> None:
        self.aliases = tuple(aliases)
        super().__init__(*args, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        _warn_old_spelling(option_string, self.aliases, self.option_strings[0])
        _mark_given(namespace, self.dest)
        setattr(namespace, self.dest, values)


class _StoreConst(_Store):
    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, nargs=0, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        _warn_old_spelling(option_string, self.aliases, self.option_strings[0])
        _mark_given(namespace, self.dest)
        setattr(namespace, self.dest, self.const)


class _Append(_Store):
    """Repeatable; with split, each value is also split on commas. Starts a new list (the default is kept)."""

    def __init__(self, *args: Any, split: bool = False, **kw: Any) -> None:
        self.split = split
        super().__init__(*args, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        _warn_old_spelling(option_string, self.aliases, self.option_strings[0])
        _mark_given(namespace, self.dest)
        items = list(getattr(namespace, self.dest, None) or ())
        if self.split:
            items.extend(x.strip() for x in str(values).split(",") if x.strip())
        else:
            items.append(values)
        setattr(namespace, self.dest, items)


def add_field(parser: Any, group: Any, f: dataclasses.Field[Any]) -> None:
    """The flag of one field, in `group` of `parser`; its parsed value lands in `f.name`."""
    opt = cli_of(f)
    if opt is None:
        raise TypeError(f"{f.name} has no CLI metadata: declare it with run_option(...)")
    if opt.add is not None:
        opt.add(parser, group)
        return
    names = [flag_of(f), *opt.aliases]
    help_ = opt.help_text() + (f" (old spelling: {', '.join(opt.aliases)})" if opt.aliases else "")
    default = field_default(f)
    kw: dict[str, Any] = {"dest": f.name, "default": default, "help": help_, "aliases": opt.aliases}
    if opt.metavar:
        kw["metavar"] = opt.metavar
    choices = opt.choices() if callable(opt.choices) else opt.choices
    if opt.action in ("true", "false", "const"):
        const = {"true": True, "false": False}.get(opt.action, opt.const)
        group.add_argument(*names, action=_StoreConst, const=const, **kw)
    elif opt.action == "append":
        group.add_argument(*names, action=_Append, split=opt.split, type=opt.parse, choices=choices, **kw)
    else:
        group.add_argument(*names, action=_Store, type=opt.parse, choices=choices, **kw)


def add_options(parser: argparse.ArgumentParser, cls: type, names: Sequence[str] | None = None,
                groups: dict[str, Any] | None = None) -> dict[str, Any]:
    """The flags of `cls`'s fields (all, or `names`), each in its group (argument groups are made on first
    use, in field order); returns the groups by title, for a caller that adds more to one."""
    groups = {} if groups is None else groups
    wanted = None if names is None else set(names)
    order = {g: i for i, g in enumerate(getattr(cls, "GROUPS", ()))}  # `--help`'s order, where the class states one
    for f in sorted(dataclasses.fields(cls), key=lambda f: order.get(getattr(cli_of(f), "group", None), len(order))):
        if wanted is not None and f.name not in wanted:
            continue
        opt = cli_of(f)
        if opt is None:
            continue
        if opt.group not in groups and opt.add is None:  # a field that adds its own flags may make its own group
            groups[opt.group] = parser.add_argument_group(opt.group) if opt.group else parser
        add_field(parser, groups.get(opt.group, parser), f)
    return groups


def options_from_args(cls: type, ns: argparse.Namespace, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Keyword arguments of `cls` from parsed flags (those add_options added)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        opt = cli_of(f)
        if opt is None or (names is not None and f.name not in names):
            continue
        out[f.name] = opt.collect(ns) if opt.collect is not None else getattr(ns, f.name)
    return out


def known_keys(cls: type) -> dict[str, str]:
    """Every key a jobs / settings file may use for `cls`: field names and their old spellings -> field name."""
    out = {}
    for f in dataclasses.fields(cls):
        out[f.name] = f.name
        opt = cli_of(f)
        for alias in opt.aliases if opt else ():
            out[alias.lstrip("-").replace("-", "_")] = f.name
    return out


def _bad_value(where: str, name: str, value: Any, want: str) -> UserError:
    return UserError(f"{where}: {name} must be {want}, got {value!r}")


def check_values(cls: type, options: Mapping[str, Any], where: str) -> None:
    """Values from a file must be what the flag would give: numbers for numeric flags, one of the choices."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, value in options.items():
        f = fields.get(name)
        opt = cli_of(f) if f is not None else None
        if opt is None or value is None or opt.add is not None:
            continue
        if opt.parse is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise _bad_value(where, name, value, "an integer")
        if opt.parse is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _bad_value(where, name, value, "a number")
        if opt.action in ("true", "false") and not isinstance(value, bool):
            raise _bad_value(where, name, value, "true or false")
        choices = opt.choices() if callable(opt.choices) else opt.choices
        if choices is not None and value not in choices:
            raise _bad_value(where, name, value, f"one of {', '.join(map(str, choices))}")


_WARNED_OLD_KEYS: set[str] = set()


def rename_old_keys(cls: type, options: Mapping[str, Any], where: str, extra: Sequence[str] = (),
                    hint: str = "", old_extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A file's (or Python caller's) keys as field names: dashes read as underscores, old spellings as their
    new names (with a warning); an unknown key is one line naming it and the known ones (`extra` keys are
    known too and kept as they are, `old_extra` maps old names of them; `hint` ends the line)."""
    known = {**known_keys(cls), **{k: k for k in extra}, **(old_extra or {})}
    out: dict[str, Any] = {}
    unknown = []
    for key, value in options.items():
        k = str(key).replace("-", "_")
        if k in known:
            if known[k] != k and k not in _WARNED_OLD_KEYS:  # once, not once per job of a jobs file
                _WARNED_OLD_KEYS.add(k)
                log.warning("%s: %s is an old name of %s; it still works, but use %s", where, k, known[k], known[k])
            out[known[k]] = value
        else:
            unknown.append(str(key))
    if unknown:
        names = sorted(f.name for f in dataclasses.fields(cls))
        raise UserError(f"{where}: unknown option(s) {', '.join(sorted(unknown))}; known: "
                        f"{', '.join([*names, *extra])}{hint}")
    return out


# For hand-written flags that keep an old spelling: add_argument(new, old, action=StoreWithOldSpellings, aliases=(old,)).
StoreWithOldSpellings = _Store
