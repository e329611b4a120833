"""Comparing results and messages by meaning, not by bytes.

Two results of the same call rarely match byte for byte: a timestamp, a pid, a
temporary path or a duration changes every time. :func:`normalised` masks such
volatile tokens (numbers, hex ids, UUIDs, ISO times, temp paths, durations), and
:func:`sketch` turns the masked text into a small, fixed-size set of stable word
hashes (a bottom-k sketch) that :func:`similarity` compares as an estimate of the
Jaccard similarity of the two texts' word sets. Sketches are plain lists of ints,
so they live in loop state and replay gives the very same decisions.

:func:`targets` picks the quoted names in a message's first line (``'Sylvia'``,
``"Email the Department"``): a message naming another record is another request,
however alike the rest of the words are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from loopwarden.agents.spin.textscan import mask_volatile, scan

SKETCH_SIZE = 64
"""Word hashes kept per sketch: the estimate's error is about 1/sqrt(64) = 0.12 at
worst, far less for texts shorter than 64 distinct words (those are kept whole)."""
SKETCH_CHARS = 2000
"""Only this much of a text is sketched."""

_WORD = re.compile(r"\w+|[^\w\s]")
_DIGIT = re.compile(r"\d")
# a quote opens after a non-word character and closes before one: the apostrophe of
# "Children's" is not a quote
_QUOTED = re.compile(r"(?<!\w)'([^'\n]{1,120}?)'(?!\w)|\"([^\"\n]{1,120})\"|`([^`\n]{1,120})`")


@lru_cache(maxsize=8)
def normalised(text: str) -> str:
    """``text`` lower-cased, volatile tokens masked as ``#``, whitespace runs collapsed
    (the last few are remembered: one event's text is counted, then sketched)."""
    return " ".join(mask_volatile(text[:SKETCH_CHARS].lower()).split())


@lru_cache(maxsize=8)
def _scanned(plain: str) -> tuple[int, list[int]]:
    """One scan of a normalised text, for both its word count and its sketch."""
    return scan(plain, SKETCH_SIZE)


def word_count(text: str) -> int:
    """Words of ``text`` after normalisation (punctuation is not a word)."""
    return _scanned(normalised(text))[0]


def sketch(text: str, mask: bool = True) -> list[int]:
    """The bottom-k sketch of ``text``'s normalised words: the ``SKETCH_SIZE`` smallest
    stable 32-bit word hashes (``zlib.crc32`` of the UTF-8 bytes), sorted. Empty text
    gives an empty sketch. ``mask=False`` keeps volatile tokens (for calls, whose
    numbers may name records)."""
    plain = normalised(text) if mask else " ".join(text[:SKETCH_CHARS].lower().split())
    return list(_scanned(plain)[1])


def similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """Estimated Jaccard similarity of the two word sets behind sketches ``a`` and ``b``
    (1.0 for two empty texts, 0.0 when only one is empty)."""
    if not a or not b:
        return 1.0 if not a and not b else 0.0
    if len(a) < SKETCH_SIZE and len(b) < SKETCH_SIZE:  # both whole sets: exact
        sa, sb = set(a), set(b)
        return len(sa & sb) / len(sa | sb)
    union = sorted(set(a) | set(b))[:SKETCH_SIZE]
    sa, sb = set(a), set(b)
    return sum(1 for h in union if h in sa and h in sb) / len(union)


def identifiers(text: str) -> list[str]:
    """The tokens of ``text`` that hold a digit (record ids, line numbers), sorted."""
    return sorted({token for token in _WORD.findall(text[:SKETCH_CHARS]) if _DIGIT.search(token)})


def targets(text: str) -> list[str]:
    """The quoted names in ``text``'s first line, normalised and sorted."""
    first = text.split("\n", 1)[0]
    found = {normalised(a or b or c) for a, b, c in _QUOTED.findall(first)}
    return sorted(found)


_NAME = re.compile(r"(?<![.!?:\n]\s)(?<!^)\b[A-Z][\w'&-]*")


def names(text: str) -> list[str]:
    """The capitalised words of ``text``'s first line that do not start a sentence
    (``Nimble``, ``Fitness``, ``CompleteBody``), sorted: the things a request is about."""
    first = text.split("\n", 1)[0][:SKETCH_CHARS]
    return sorted({match.group() for match in _NAME.finditer(first)})


def head_and_body(text: str) -> tuple[str, str]:
    """The first non-empty line (what was said or done) and the rest (what was seen)."""
    stripped = text.strip()
    head, _, body = stripped.partition("\n")
    return head, body.strip()
