"""Which words a regular expression cannot match without: a prefilter for redaction.

Redaction runs some forty patterns over every text an agent publishes. Most of them
can only match where a word occurs (``password``, ``://``, ``BEGIN``): a text without
any of a pattern's words is skipped for that pattern without running it, as regex
engines with a literal prefilter (RE2, Hyperscan) do. :func:`required_words` reads the
pattern's source and answers conservatively: a set of words one of which every match
surely holds (lower-cased, as the text is searched), or None when it cannot tell, and
the pattern then always runs.

What it understands: alternation at any depth, groups (capturing, non-capturing,
named, positive look-arounds, inline-flag scoped), character classes, escapes and
quantifiers. Negative look-arounds, conditionals and anything else it does not know
are never taken as evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

_OPTIONAL_AFTER = re.compile(r"[?*]|\{0*,|\{0+\}")  # ?, *, {0}, {,n}, {0,n}
# What surely matches itself in a piece of pattern source: optional atoms, classes and
# escaped letters (\w, \d, \b, back-references) become a separator; escaped punctuation
# is itself.
_QUANTIFIED_ATOM = re.compile(r"(\\.|\[(?:\\.|[^\]\\])*\]|.)(?:[?*]|\{0*,?\d*\})")
_CLASS_OR_LETTER_ESCAPE = re.compile(r"\\[A-Za-z0-9]|\[\^?\]?(?:\\.|[^\]\\])*\]|\.")
_ESCAPED = re.compile(r"\\(.)")
_SEPARATOR = "\x00"
_GROUP_PREFIX = re.compile(r"\?(?::|P<\w+>|=|<=|[aiLmsux-]+:)")


def required_words(pattern: str | re.Pattern[str], words: Iterable[str]) -> frozenset[str] | None:
    """Words of ``words`` one of which every match of ``pattern`` holds (case ignored),
    or None when that cannot be told from its source."""
    source = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    return _required(source, tuple(w.lower() for w in words))


def _required(source: str, words: tuple[str, ...]) -> frozenset[str] | None:
    branches = _split_alternatives(source)
    if len(branches) > 1:
        found: set[str] = set()
        for branch in branches:
            needed = _required(branch, words)
            if needed is None:
                return None
            found |= needed
        return frozenset(found)
    outside, groups = _parts(source)
    text = _surely_literal(outside)
    present = frozenset(w for w in words if w in text)
    if present:
        return present
    for body in groups:
        needed = _required(body, words)
        if needed is not None:
            return needed
    return None


def _surely_literal(piece: str) -> str:
    piece = _QUANTIFIED_ATOM.sub(_SEPARATOR, piece)
    piece = _CLASS_OR_LETTER_ESCAPE.sub(_SEPARATOR, piece)
    return _ESCAPED.sub(r"\1", piece).lower()


def _skip_class(source: str, i: int) -> int:
    """The index after the character class starting at ``source[i] == '['``."""
    j = i + 1
    if j < len(source) and source[j] == "^":
        j += 1
    if j < len(source) and source[j] == "]":
        j += 1
    while j < len(source) and source[j] != "]":
        j += 2 if source[j] == "\\" else 1
    return j + 1


def _atoms(source: str) -> Iterator[tuple[str, int, int]]:
    """Each atom of ``source`` with its span: an escape, a character class, or one
    character (so that brackets and bars inside those are not read as syntax)."""
    i = 0
    while i < len(source):
        if source[i] == "\\":
            end = i + 2
        elif source[i] == "[":
            end = _skip_class(source, i)
        else:
            end = i + 1
        yield source[i:end], i, end
        i = end


def _split_alternatives(source: str) -> list[str]:
    """``source`` split at its own ``|`` (not those inside groups or classes)."""
    parts, depth, start = [], 0, 0
    for atom, i, end in _atoms(source):
        if atom == "(":
            depth += 1
        elif atom == ")":
            depth -= 1
        elif atom == "|" and depth == 0:
            parts.append(source[start:i])
            start = end
    return [*parts, source[start:]]


def _parts(source: str) -> tuple[str, list[str]]:
    """The source outside any group (each group a separator), and the bodies of the
    top-level groups that a match cannot skip and that assert presence."""
    outside: list[str] = []
    groups: list[str] = []
    depth, start = 0, 0
    for atom, i, end in _atoms(source):
        if atom == "(":
            if depth == 0:
                start = i
            depth += 1
        elif atom == ")":
            depth -= 1
            if depth == 0:
                if not _OPTIONAL_AFTER.match(source, end):
                    evidence = _evidence(source[start + 1 : i])
                    if evidence is not None:
                        groups.append(evidence)
                outside.append(_SEPARATOR)
        elif depth == 0:
            outside.append(atom)
    return "".join(outside), groups


def _evidence(body: str) -> str | None:
    """A group's body as text that surely occurs, or None (negative look-arounds,
    conditionals, comments, bare flags)."""
    if not body.startswith("?"):
        return body
    prefix = _GROUP_PREFIX.match(body)
    return body[prefix.end() :] if prefix else None
