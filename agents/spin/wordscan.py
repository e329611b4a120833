"""One pass over a normalised text: how many words it holds, and their hashes.

The monitor counts a message's words (short turns are not compared) and sketches
results and messages by their word hashes (:func:`~loopwarden.agents.spin.normalise.
sketch`); both read the same words, so one scan yields both. A word is a run of
``\\w`` starting with a letter or digit; its hash is ``zlib.crc32`` of its UTF-8 bytes.

The scan is compiled (Cython, ``_wordscan.pyx``, built by ``pip install`` where a C
compiler is found); :func:`py_scan` is its pure-Python twin, with the same outputs, and
runs where the extension was not built or with ``LOOPWARDEN_NO_EXTENSIONS=1``.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable

from loopwarden.schemas.extensions import extensions_disabled

Scan = Callable[[str, int], tuple[int, list[int]]]

_WORD_RUN = re.compile(r"\w+")


def py_scan(text: str, limit: int) -> tuple[int, list[int]]:
    """``(words, hashes)``: how many words ``text`` holds, and the ``limit`` smallest
    distinct CRC-32s of their UTF-8 bytes, ascending (the reference the compiled scan
    is checked against)."""
    words = [token for token in _WORD_RUN.findall(text) if token[0].isalnum()]
    return len(words), sorted({zlib.crc32(word.encode()) for word in words})[:limit]


def compiled_scan() -> Scan | None:
    """The compiled scan, or None where it was not built (or is switched off)."""
    if extensions_disabled():
        return None
    try:
        from loopwarden.agents.spin._wordscan import scan as compiled
    except ImportError:
        return None
    return compiled


scan: Scan = compiled_scan() or py_scan
"""The scan this process uses: compiled where it can be."""
