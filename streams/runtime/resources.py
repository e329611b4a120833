"""What the capabilities of one worker share, made on first use.

A worker's capabilities share a few things — the decoded actions the monitor and the
fleet both read, the tool outages both follow, the memory service the memory, lesson,
experience and analyst capabilities write and search. :class:`WorkerResources` keeps
one of each per worker, made the first time a capability asks for it, so a worker
without the memory role never opens LanceDB. The runtime knows no capability: each
capability's own module names what it shares and how it is made
(``resources.shared(OutageBoard, make)``), and the composition root hands every
wiring the same instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from loopwarden.settings import Settings

T = TypeVar("T")


class WorkerResources:
    """One shared instance per kind for the capabilities of a worker (module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._made: dict[type[Any], Any] = {}

    def shared(self, kind: type[T], make: Callable[[], T] | None = None) -> T:
        """The worker's one ``kind``, made by ``make`` (default: ``kind()``) on first use."""
        if kind not in self._made:
            made = make() if make is not None else kind()
            if not isinstance(made, kind):
                raise TypeError(f"the maker of {kind.__name__} made a {type(made).__name__}")
            self._made[kind] = made
        return cast(T, self._made[kind])

    def made(self) -> list[type[Any]]:
        """The kinds made so far, in the order they were first asked for."""
        return list(self._made)
