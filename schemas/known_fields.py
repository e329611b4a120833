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


def refuse_unknown_fields(
    fields: Mapping[str, Any], model: type[BaseModel], *, path: str = "payload"
) -> None:
    """Raise :class:`EventValidationError` naming each key of ``fields`` that
    ``model`` has no field for (with a "did you mean" when one is close)."""
    known = model.model_fields
    unknown = [name for name in fields if name not in known]
    if unknown:
        errors = tuple(FieldError(f"{path}.{name}", _explain(name, known)) for name in unknown)
        raise EventValidationError(
            f"unknown field(s) for {model.__name__}: "
            + "; ".join(f"{e.path}: {e.message}" for e in errors),
            errors,
        )


def _explain(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"unknown field, did you mean {close[0]!r}?" if close else "unknown field"
