"""An output sink for tests: keeps every named output it is handed."""

from __future__ import annotations

from typing import Any


class Recording:
    """Attach with ``app.outputs.attach(Recording("warnings", …))``."""

    def __init__(self, *outputs: str) -> None:
        self.outputs = frozenset(outputs)
        self.seen: list[tuple[str, Any]] = []

    def deliver(self, output: str, value: Any) -> None:
        self.seen.append((output, value))

    def of(self, output: str) -> list[Any]:
        """The values handed for ``output``, in order."""
        return [value for name, value in self.seen if name == output]
