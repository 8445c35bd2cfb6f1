"""One registry mechanism for tasks, engines and graders."""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from reasoneval.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UserError(
                f"unknown {self.what} {name!r}; known {self.what}s: {', '.join(sorted(self._items))}"
            ) from None

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
