"""One registry mechanism for engines, tasks, scorers and prompt styles, built in or from other packages.

An entry is an object (`add`) or a lazy reference `"package.module:attr"` (`add_lazy`; `"package.module"`
for a module itself), imported on the first `get`. `names()`, `in` and iteration never import anything.
Each registry's `check(name, obj)` holds an entry to its protocol (an engine module's `Options`, `CAPABILITIES`
and `create`; a scorer's `name`, `version` and `score_many`; a TaskSpec; a PromptStyle) when it is first
resolved, so a plugin that lacks something is one line naming its package and what is missing, before any
sample is generated.

Other packages add entries through Python entry points (`importlib.metadata`), one group per registry
(`reasoneval.engines`, `reasoneval.tasks`, `reasoneval.scorers`, `reasoneval.prompts`), each entry
`name = "package.module:attr"`. They are discovered the first time a name that is not built in is asked
for (or the names are listed), and imported only when used. A plugin whose target cannot be imported, or
that fails its check, is a one-line `UserError` naming the package when it is asked for; a listing of every
entry (`available()`: `reasoneval tasks`, `engines`, `run`'s engine flags) leaves it out with a warning
instead. `provenance(name)` is the `distribution==version` a plugin entry comes from (config.json's
`plugins`). A built-in name always wins: a plugin entry with a built-in's name is left out with a warning,
so installing a package never changes what a built-in name means. Two packages giving the same name make
that name an error until one is uninstalled.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import re
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar

from reasoneval.errors import UserError

T = TypeVar("T")

log = logging.getLogger("reasoneval")

# The entry point groups other packages register in (pyproject.toml: [project.entry-points."reasoneval.tasks"]).
ENGINE_GROUP = "reasoneval.engines"
TASK_GROUP = "reasoneval.tasks"
SCORER_GROUP = "reasoneval.scorers"
PROMPT_GROUP = "reasoneval.prompts"


def load_reference(ref: str) -> Any:
    """The object `"package.module:attr.attr"` names (the module itself for `"package.module"`)."""
    module_name, _, attrs = ref.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for attr in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, attr)
    return obj


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


@dataclass(frozen=True)
class _Lazy:
    ref: str


@dataclass(frozen=True)
class Plugin:
    """An entry another package declared: its reference and the distribution that declared it."""

    ref: str
    package: str
    version: str = ""

    def provenance(self) -> str:
        return f"{self.package}=={self.version}" if self.version else self.package


@functools.lru_cache(maxsize=4)
def _entry_points(search_path: tuple[str, ...]) -> dict[str, list[tuple[str, Plugin]]]:
    """group -> [(name, Plugin)] of the reasoneval.* groups of every installed package, read once per sys.path (one scan serves all
    four registries). A package found twice on the path counts once, its first copy, as importlib does."""
    seen: set[str] = set()
    out: dict[str, list[tuple[str, Plugin]]] = {}
    for dist in importlib.metadata.distributions():
        ours = [ep for ep in dist.entry_points if ep.group.startswith("reasoneval.")]
        if not ours:  # most packages: their metadata is not read
            continue
        package = dist.metadata["Name"] or "an installed package"
        key = re.sub(r"[-_.]+", "-", package).lower()
        if key in seen:
            continue
        seen.add(key)
        for ep in ours:
            out.setdefault(ep.group, []).append((ep.name, Plugin(ep.value, package, dist.version or "")))
    return out


class Registry(Generic[T]):
    """Names -> objects of one kind. `check(name, obj)` validates an entry when it is resolved (raising
    UserError); `group` is the entry point group other packages add entries through."""

    def __init__(self, what: str, *, group: str | None = None,
                 check: Callable[[str, Any], None] | None = None) -> None:
        self.what = what
        self.group = group
        self._check = check
        # Built-in entries in the order added: the object, or a _Lazy reference until first used.
        self._entries: dict[str, Any] = {}
        self._plugins: dict[str, Plugin] | None = None  # None until discovered
        self._clashes: dict[str, list[Plugin]] = {}
        self._resolved_plugins: dict[str, Any] = {}
        self._left_out: set[str] = set()  # plugins available() warned about
        self._lock = threading.Lock()

    # --- adding -------------------------------------------------------------------------------------
    def add(self, name: str, obj: T) -> None:
        """A built-in entry, as an object."""
        self._claim(name)
        if self._check is not None:
            self._check(name, obj)
        self._entries[name] = obj

    def add_lazy(self, name: str, ref: str) -> None:
        """A built-in entry imported on first use: `"package.module:attr"`, or `"package.module"`."""
        self._claim(name)
        self._entries[name] = _Lazy(ref)

    def _claim(self, name: str) -> None:
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        if self._plugins is not None and self._plugins.pop(name, None) is not None:
            log.warning("%s %r is now built in; the plugin entry of that name is left out", self.what, name)

    # --- discovery ----------------------------------------------------------------------------------
    def plugins(self) -> dict[str, Plugin]:
        """The entries other packages declare in this registry's entry point group (found once)."""
        if self._plugins is None:
            with self._lock:
                if self._plugins is None:
                    self._plugins = self._discover()
        return self._plugins

    def _discover(self) -> dict[str, Plugin]:
        found: dict[str, Plugin] = {}
        if self.group is None:
            return found
        for name, plugin in _entry_points(tuple(sys.path)).get(self.group, []):
            if name in self._entries:
                log.warning("%s %r of package %s (entry point %s) is left out: %r is a built-in %s",
                            self.what, name, plugin.package, self.group, name, self.what)
            elif name in found and found[name] != plugin:
                self._clashes.setdefault(name, [found[name]]).append(plugin)
            else:
                found[name] = plugin
        return found

    def origin(self, name: str) -> str | None:
        """The package a plugin entry comes from; None for a built-in."""
        if name in self._entries:
            return None
        plugin = self.plugins().get(name)
        return plugin.package if plugin is not None else None

    def provenance(self, name: str) -> str | None:
        """`distribution==version` of the package a plugin entry comes from; None for a built-in."""
        if name in self._entries:
            return None
        plugin = self.plugins().get(name)
        return plugin.provenance() if plugin is not None else None

    def available(self, names: Sequence[str] | None = None) -> list[tuple[str, T]]:
        """Every entry (of `names`; default: all, in `names()` order) that loads and passes its check. A plugin that
        does not is left out with a warning (once), so one broken package never stops a listing of the others; a
        built-in that does not is a bug, raised."""
        out = []
        for name in self.names() if names is None else names:
            try:
                out.append((name, self.get(name)))
            except UserError as e:
                if name in self._entries:
                    raise
                if name not in self._left_out:
                    self._left_out.add(name)
                    log.warning("%s; it is left out", e)
        return out

    # --- lookup -------------------------------------------------------------------------------------
    def get(self, name: str) -> T:
        entry = self._entries.get(name)
        if isinstance(entry, _Lazy):
            return self._resolve(name, entry.ref, plugin=None)
        if name in self._entries:
            found: T = self._entries[name]
            return found
        plugin = self.plugins().get(name)
        if name in self._clashes:
            packages = ", ".join(f"{p.package} ({p.ref})" for p in self._clashes[name])
            raise UserError(f"{self.what} {name!r} is declared by several installed packages: {packages}; "
                            "uninstall all but one")
        if name in self._resolved_plugins:
            cached: T = self._resolved_plugins[name]
            return cached
        if plugin is None:
            raise UserError(f"unknown {self.what} {name!r}; known {self.what}s: {', '.join(sorted(self.names()))}")
        return self._resolve(name, plugin.ref, plugin=plugin)

    def _resolve(self, name: str, ref: str, plugin: Plugin | None) -> T:
        if plugin is None:  # a built-in: an import error is a bug here, shown with its traceback
            obj = load_reference(ref)
        else:
            try:
                obj = load_reference(ref)
            except Exception as e:
                raise UserError(f"{self.what} {name!r} of package {plugin.package} cannot be loaded (entry point "
                                f"{self.group}: {name} = {ref!r}): {_one_line(e)}") from None
        if self._check is not None:
            try:
                self._check(name, obj)
            except UserError as e:
                if plugin is None:
                    raise
                raise UserError(f"{e} (package {plugin.package}, entry point {self.group}: {name} = {ref!r})") from None
        if plugin is None:
            self._entries[name] = obj
        else:
            self._resolved_plugins[name] = obj
        resolved: T = obj
        return resolved

    def reference(self, name: str) -> str:
        """Where an entry comes from, as `"package.module:attr"` (`"package.module"` for a module), so another
        process (a Ray replica) can import the same object."""
        entry = self._entries.get(name)
        if isinstance(entry, _Lazy):
            return entry.ref
        if name not in self._entries:
            plugin = self.plugins().get(name)
            if plugin is not None:
                return plugin.ref
        obj: Any = self.get(name)
        if isinstance(obj, types.ModuleType):
            return obj.__name__
        return f"{obj.__module__}:{obj.__qualname__}"

    def names(self) -> list[str]:
        """Built-in names in the order they were added, then the plugins' names, sorted; nothing is imported."""
        return [*self._entries, *sorted(n for n in self.plugins() if n not in self._entries)]

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.plugins()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
