"""Where a LanceDB failure is understood: the storage is away, or the call is at fault.

LanceDB raises ``RuntimeError``/``ValueError`` with a Rust error's text for every
kind of failure, a missing data file and a bad cast alike. Instead of reading that
text, the boundary looks at the storage itself when a call fails:

- a local directory that is gone, is no longer the directory that was opened
  (moved away, replaced), or does not take a write; a table whose version log
  is gone — the storage is **unavailable**: :class:`StorageUnavailableError`,
  the record is not at fault and the worker pauses until it is back;
- an object store (``s3://``, ``gs://``, ``az://`` …) that does not list its
  tables — unavailable too;
- a storage that answers — the call itself failed: :class:`StorageError`, not
  retriable (the record goes to the dead-letter topic or is rejected).

``OSError`` raised by the call (no space left, an I/O error) means unavailable
without a look.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from loopwarden.errors import LoopwardenError, StorageError, StorageUnavailableError

PROBE_FILE = ".loopwarden-probe"


class StorageBoundary:
    """The failure classifier of one storage URI (see the module doc)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.path: Path | None = _local_path(uri)
        self._identity: tuple[int, int] | None = None
        self.tables: set[str] = set()
        """Names of the tables opened here (their version logs are checked)."""

    def opened(self, table: str | None = None) -> None:
        """Remember the directory as it is now (the storage was just opened), and
        ``table`` as one of its tables."""
        if table is not None:
            self.tables.add(table)
        if self.path is not None and self._identity is None:
            with contextlib.suppress(OSError):
                self._identity = _identity(self.path)

    def unavailable(self) -> str | None:
        """Why the storage is away now, or None when it answers."""
        if self.path is None:
            return self._remote_unavailable()
        path = self.path
        try:
            if not path.is_dir():
                return f"{path} is not there"
            if self._identity is not None and _identity(path) != self._identity:
                return f"{path} is no longer the directory that was opened (moved or replaced)"
            for table in sorted(self.tables):
                versions = path / f"{table}.lance" / "_versions"
                if not versions.is_dir():
                    return f"table {table!r} has lost its version log ({versions})"
            probe = path / PROBE_FILE
            probe.write_bytes(b"1")
            probe.unlink()
        except OSError as exc:
            return f"{path} does not answer ({exc.strerror or exc})"
        return None

    def _remote_unavailable(self) -> str | None:
        from loopwarden.storage.lancedb_tables import connect

        try:
            connect(self.uri, None).list_tables()
        except Exception as exc:
            return f"{self.uri} does not answer ({type(exc).__name__}: {exc})"
        return None

    @contextlib.contextmanager
    def calls(self, what: str) -> Iterator[None]:
        """Run LanceDB calls; a failure leaves as :class:`StorageUnavailableError` or
        :class:`StorageError` (``what``: the operation, for the message)."""
        try:
            yield
        except LoopwardenError:
            raise  # already says what it is
        except OSError as exc:
            raise StorageUnavailableError(f"{what}: {self.uri} failed: {_text(exc)}") from exc
        except Exception as exc:
            why = self.unavailable()
            if why is not None:
                raise StorageUnavailableError(f"{what}: storage unavailable: {why}") from exc
            raise StorageError(f"{what} failed: {_text(exc)}") from exc


_boundaries: dict[str, StorageBoundary] = {}
_lock = threading.Lock()


def boundary_for(uri: str) -> StorageBoundary:
    """The one :class:`StorageBoundary` of ``uri`` in this process."""
    path = _local_path(uri)
    uri = uri if path is None else os.path.abspath(path)
    with _lock:
        boundary = _boundaries.get(uri)
        if boundary is None:
            boundary = _boundaries[uri] = StorageBoundary(uri)
        return boundary


def _local_path(uri: str) -> Path | None:
    if uri.startswith("file://"):
        return Path(uri.removeprefix("file://"))
    return None if "://" in uri else Path(uri)


def _identity(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
