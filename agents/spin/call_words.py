"""What a failed call looked for, pure: telling a retried call from a new one.

A retry rarely repeats its call byte for byte: the agent rewords a query, narrows a
search, changes one argument. :func:`call_words` keeps a failed call's words (type,
name, arguments), the identifiers among them and its argument values;
:func:`call_similarity` and :func:`shares_target` say whether two failed calls are the
same attempt.
"""

from __future__ import annotations

import re
from typing import Any

from loopwarden.agents.spin.normalise import identifiers, similarity, sketch


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [" ".join(str(value).lower().split())] if value not in (None, "") else []


def call_words(payload: Any) -> list[Any]:
    """A call's words (type, name, arguments), the identifiers among them and its argument
    values, for telling a trivial variant: the words or the arguments may differ a
    little, the identifiers not at all."""
    text = f"{payload.action_type} {payload.action_name or ''} {payload.params}"
    return [sketch(text, mask=False), identifiers(text), sorted(set(_leaves(payload.params)))]


def call_similarity(a: list[Any], b: list[Any]) -> float:
    """How alike two failed calls are: their words' similarity, or the share of the
    smaller call's argument values the other has too (``search(name='X', file='f')``
    and ``search(name='X')`` look for the same ``X``: one narrows the other), whichever
    is higher; 0 when their identifiers differ."""
    if a[1] != b[1]:
        return 0.0
    words = similarity(a[0], b[0])
    if len(a) < 3 or len(b) < 3 or not a[2] or not b[2]:
        return words
    mine, theirs = set(a[2]), set(b[2])
    return max(words, len(mine & theirs) / min(len(mine), len(theirs)))


_PLACE = re.compile(
    r"/|\\|\.(py|pyi|js|jsx|ts|tsx|java|kt|go|rs|c|h|cc|cpp|hpp|cs|rb|php|swift|scala|sh"
    r"|md|rst|txt|json|ya?ml|toml|cfg|ini|xml|html|css|sql|csv|log)$",
    re.IGNORECASE,
)
"""An argument value that names a place (a path, a source or data file), not the thing
looked for (``Basic.atoms`` is a name, ``basic.py`` a place)."""


def shares_target(
    a: list[Any], b: list[Any], most_chars: int | None = None, identifiers: bool = True
) -> bool:
    """Two failed calls look for the same thing: they share an argument value that is
    not a place (``get_response_async`` in ``search(name=X, file=f)`` and
    ``search(name=X, class=C)``; sharing only ``file=f`` is looking elsewhere in one
    file), and their identifiers agree (unless ``identifiers`` is false: a refused call
    retried with another amount). ``most_chars``: longer values are texts, not targets."""
    if len(a) < 3 or len(b) < 3 or (identifiers and a[1] != b[1]):
        return False
    return any(
        not _PLACE.search(value) and (most_chars is None or len(value) <= most_chars)
        for value in set(a[2]) & set(b[2])
    )
