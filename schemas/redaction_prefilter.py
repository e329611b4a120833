"""Hyperscan as the redactor's prefilter: one scan tells which patterns may match.

Redaction runs some fifty patterns over every text an event carries; on real tool
output nearly all of them find nothing, yet each one scans the text (60 µs a text
with the word gates of :mod:`~loopwarden.schemas.regex_gates`). Hyperscan (Intel's
multi-pattern matcher, a compiled wheel for Linux, macOS and Windows) compiles every
pattern in *prefilter* mode into one database and scans a text once (about 2 µs): a
pattern it does not report cannot match, so the redactor runs only the reported ones
with Python's ``re`` and the output is the same byte for byte.

Prefilter mode accepts every construct Python's patterns use (look-behinds, lazy
repeats) by widening it: a report may be false, a miss may not. The flags follow
Python's: UTF-8 with Unicode properties (``\\w``, ``\\d``, ``\\b`` on any script),
caseless where the pattern is, ``.`` over newlines where the pattern's is, and
multi-line anchors, so that texts joined by a newline are screened in one scan.

It is the worker's: ``pip install 'loopwarden[worker]'`` brings the wheel; without it,
or with ``LOOPWARDEN_NO_EXTENSIONS=1``, the word gates do the same job more slowly.
Compiling takes about 1.4–1.8 s of one core with the GIL released, so the process-wide
redactor compiles in a background thread and uses the gates until it is ready, and
keeps the compiled database in the user's cache directory (``LOOPWARDEN_CACHE_DIR``,
default platformdirs' user cache dir; ``off`` disables it): the next process on this
machine loads it in milliseconds. The file is named by a digest of the patterns, their
flags, Hyperscan's version and the CPU architecture; one that does not load is compiled
again and replaced.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import re
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopwarden.schemas.extensions import extensions_disabled

log = logging.getLogger(__name__)

CACHE_DIR = "LOOPWARDEN_CACHE_DIR"
"""Where compiled artefacts are kept between processes (``off``: nowhere)."""

# Python treats these as whitespace (``str.isspace``); Hyperscan's \s does not. They
# become spaces in the scanned copy, so a pattern that needs \s there is still reported.
_PYTHON_ONLY_SPACE = str.maketrans({ch: " " for ch in "\x1c\x1d\x1e\x1f\x85"})


class Prefilter:
    """Which of ``patterns`` (by index) may match a text."""

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        import hyperscan

        self._hs = hyperscan
        flags = []
        for pattern in patterns:
            flag = (
                hyperscan.HS_FLAG_PREFILTER
                | hyperscan.HS_FLAG_SINGLEMATCH
                | hyperscan.HS_FLAG_ALLOWEMPTY
                | hyperscan.HS_FLAG_UTF8
                | hyperscan.HS_FLAG_UCP
                | hyperscan.HS_FLAG_MULTILINE
            )
            if pattern.flags & re.IGNORECASE:
                flag |= hyperscan.HS_FLAG_CASELESS
            if pattern.flags & re.DOTALL:
                flag |= hyperscan.HS_FLAG_DOTALL
            flags.append(flag)
        expressions = [p.pattern.encode() for p in patterns]
        cached = cache_path(expressions, flags, getattr(hyperscan, "__version__", "?"))
        database = _load(hyperscan, cached) if cached is not None else None
        self.from_cache = database is not None
        """The database was read from the cache directory, not compiled."""
        if database is None:
            database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            database.compile(
                expressions=expressions,
                ids=list(range(len(patterns))),
                elements=len(patterns),
                flags=flags,
            )
            if cached is not None:
                _store(hyperscan, database, cached)
        self._database = database
        self._scratch = hyperscan.Scratch(database)
        self._local = threading.local()  # a scratch space is one thread's at a time

    def _thread_scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._scratch.clone()
        return scratch

    def candidates(self, text: str) -> set[int] | None:
        """Indexes of the patterns that may match ``text``; None when it cannot be
        scanned (a lone surrogate is not UTF-8): run every pattern then."""
        try:
            data = text.translate(_PYTHON_ONLY_SPACE).encode()
        except UnicodeEncodeError:
            return None
        found: set[int] = set()

        def report(index: int, start: int, end: int, flags: int, context: Any) -> None:
            found.add(index)

        try:
            self._database.scan(data, match_event_handler=report, scratch=self._thread_scratch())
        except self._hs.error as exc:
            log.debug("prefilter scan failed (%s): every pattern runs", exc)
            return None
        return found


def cache_path(expressions: Sequence[bytes], flags: Sequence[int], version: str) -> Path | None:
    """The cache file of a database of ``expressions`` compiled with ``flags``, or None
    when caching is off."""
    root = os.environ.get(CACHE_DIR, "").strip()
    if root.lower() == "off":
        return None
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("loopwarden")
    digest = hashlib.sha256()
    for part in (version.encode(), platform.machine().encode(), *expressions):
        digest.update(len(part).to_bytes(8, "big") + part)
    digest.update(b",".join(str(flag).encode() for flag in flags))
    return Path(root) / "redaction-prefilter" / f"{digest.hexdigest()[:32]}.hsdb"


def _load(hyperscan: Any, path: Path) -> Any:
    """The database cached at ``path``; None when there is none or it does not load."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
    except Exception as exc:  # another build's file, a truncated one
        log.info("cached redaction prefilter %s not usable (%s): compiling it again", path, exc)
        return None


def _store(hyperscan: Any, database: Any, path: Path) -> None:
    """Keep ``database`` at ``path`` (written whole, then renamed: readers never see half
    a file); a cache that cannot be written only costs the next process a compile."""
    part: str | None = None
    try:
        data = bytes(hyperscan.dumpb(database))
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as out:
            part = out.name
            out.write(data)
        os.replace(part, path)
    except Exception as exc:  # a read-only home, a full disk, a database it cannot dump
        log.debug("redaction prefilter not cached at %s: %s", path, exc)
        if part is not None:
            Path(part).unlink(missing_ok=True)


def build(patterns: Sequence[re.Pattern[str]]) -> Prefilter | None:
    """A :class:`Prefilter` of ``patterns``, or None when Hyperscan is not installed, not
    usable here, or switched off by ``LOOPWARDEN_NO_EXTENSIONS``."""
    if extensions_disabled():
        return None
    try:
        return Prefilter(patterns)
    except ImportError:
        return None
    except Exception as exc:  # a CPU without SSSE3, a pattern it cannot take
        log.warning("redaction prefilter unavailable, using the word gates: %s", exc)
        return None
