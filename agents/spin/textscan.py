"""The monitor's passes over a text, compiled, each with its pure-Python twin.

- :func:`mask_volatile` replaces the tokens that change between two runs of the same
  call (uuids, ISO and clock times, temporary paths, addresses, hex ids, durations,
  numbers) by ``#``, before a text is compared (:func:`~loopwarden.agents.spin.
  normalise.normalised`).
- :func:`figures` keeps the numbers of a tool result that are figures (what a call
  reports: bytes left, a count, a percentage), taking out first what changes on its
  own (uuids, dates and times, temporary paths, addresses, hex ids, durations, ages),
  for :func:`~loopwarden.agents.spin.progress.figures_key`.
- :func:`scan` reads a normalised text's words once for its word count (short turns
  are not compared) and its sketch (:func:`~loopwarden.agents.spin.normalise.sketch`).
  A word is a run of ``\\w`` starting with a letter or digit; its hash is
  ``zlib.crc32`` of its UTF-8 bytes.

All three are compiled (Cython, ``_textscan.pyx``, built by ``pip install`` where a C
compiler is found). :func:`py_mask_volatile`, :func:`py_figures` and :func:`py_scan`
are the reference:
the same outputs, used where the extension was not built or with
``LOOPWARDEN_NO_EXTENSIONS=1``; ``tests/unit/test_textscan.py`` checks the pairs
agree.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

from loopwarden.schemas.extensions import extensions_disabled

Scan = Callable[[str, int], tuple[int, list[int]]]
Mask = Callable[[str], str]
Figures = Callable[[str], str]

UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
TEMP_PATH = r"(/tmp|/var/folders|/private/var)/\S+"
ADDRESS = r"\b0x[0-9a-fA-F]+\b"
HEX_ID = r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{7,}\b"
"""Volatile tokens shared with :mod:`~loopwarden.agents.spin.progress` (a result's
figures are the numbers left when these and times are taken out)."""

# Every alternative starts with a hex digit (or any digit) or a slash: the look-ahead
# says so once, and the engine skips other positions without trying eight alternatives
# (72 -> 29 µs a real tool result here, the same output).
_VOLATILE = re.compile(
    r"(?=[\da-fA-F/])(?:"
    + UUID
    + r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"  # ISO time
    r"|\b\d{1,2}:\d{2}(:\d{2})?\b"  # clock time
    r"|"
    + TEMP_PATH
    + r"|"
    + ADDRESS
    + r"|"
    + HEX_ID
    + r"|\b\d+(\.\d+)?\s?(ms|s|sec|secs|seconds|m|min|h)\b"  # durations
    r"|\d+(\.\d+)?"  # any other number
    r")"
)
_NOT_FIGURES = re.compile(
    r"(?=[\da-fA-F/])(?:"  # as in _VOLATILE: every alternative starts so (90 -> 30 µs)
    + UUID
    + r"|\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?"  # dates
    r"|\b\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?\b"  # clock times
    r"|"
    + TEMP_PATH
    + r"|"
    + ADDRESS
    + r"|"
    + HEX_ID  # ids, digests, epoch times, pids
    + r"|\b\d+(\.\d+)?\s?(ms|s|sec|secs|seconds|m|min|h|us|µs|ns)\b"  # durations
    r"|\b\d+(\.\d+)?[smh]\d"  # compound durations (1m30s)
    r"|\b\d+(\.\d+)?\s?(ago|left)\b"  # ages
    r")"
)
_FIGURE = re.compile(r"\d+(?:\.\d+)?")
_WORD_RUN = re.compile(r"\w+")


def py_mask_volatile(text: str) -> str:
    """``text`` with each volatile token replaced by ``#`` (the regex the compiled mask
    follows, alternative by alternative)."""
    return _VOLATILE.sub("#", text)


def py_figures(text: str) -> str:
    """The numbers of ``text`` left when what is not a figure is taken out, joined by a
    space (the regexes the compiled pass follows)."""
    return " ".join(_FIGURE.findall(_NOT_FIGURES.sub(" ", text)))


def py_scan(text: str, limit: int) -> tuple[int, list[int]]:
    """``(words, hashes)``: how many words ``text`` holds, and the ``limit`` smallest
    distinct CRC-32s of their UTF-8 bytes, ascending (the reference the compiled scan
    is checked against)."""
    words = [token for token in _WORD_RUN.findall(text) if token[0].isalnum()]
    return len(words), sorted({zlib.crc32(word.encode()) for word in words})[:limit]


def compiled() -> tuple[Mask, Figures, Scan] | None:
    """The compiled passes, or None where they were not built (or are switched off)."""
    if extensions_disabled():
        return None
    try:
        from loopwarden.agents.spin import _textscan
    except ImportError:
        return None
    return _textscan.mask_volatile, _textscan.figures, _textscan.scan


mask_volatile, figures, scan = compiled() or (py_mask_volatile, py_figures, py_scan)
"""The passes this process uses: compiled where they can be."""
