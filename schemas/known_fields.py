"""The typed Python client refuses fields its models do not know.

The wire format stays lenient (unknown fields are ignored, so newer producers
and other languages can add fields), but ``publisher.publish(..., succes=False)``
from Python is a typo that would silently drop the failure: the publisher
checks keyword fields against the payload model first and names the closest
known field.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from loopwarden.errors import EventValidationError, FieldError


def unknown_fields(
    fields: Mapping[str, Any], *, known: Iterable[str], path: str = "payload"
) -> list[FieldError]:
    """Each key of ``fields`` not in ``known``, with a "did you mean" when one is close."""
    names = set(known)
    prefix = f"{path}." if path else ""
    return [
        FieldError(prefix + name, _explain(name, names)) for name in fields if name not in names
    ]


def refuse_unknown_fields(
    fields: Mapping[str, Any], model: type[BaseModel], *, path: str = "payload"
) -> None:
    """Raise :class:`EventValidationError` naming each key of ``fields`` that
    ``model`` has no field for (with a "did you mean" when one is close)."""
    errors = tuple(unknown_fields(fields, known=model.model_fields, path=path))
    if errors:
        raise EventValidationError(
            f"unknown field(s) for {model.__name__}: "
            + "; ".join(f"{e.path}: {e.message}" for e in errors),
            errors,
        )


def _explain(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"unknown field, did you mean {close[0]!r}?" if close else "unknown field"
