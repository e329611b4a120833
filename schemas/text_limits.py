"""Text limits of an action's payload: long text is cut at the edge, never refused.

Where any producer's event is validated (the client, ``publish`` and ``detect``, the
worker, the HTTP hooks, OTLP), a text over its limit keeps its first part, a cut
``result`` keeps the digest of the whole, ``truncated`` names the fields cut, and the
text is redacted around the cut first. :class:`~loopwarden.schemas.events.ActionPayload`
applies :func:`cut_long_text` before it validates.
"""

from __future__ import annotations

import hashlib
from typing import Any

from loopwarden.schemas.redaction import redact_text

RESULT_MAX_CHARS = 2000


def result_digest(text: str) -> str:
    """The digest of a result: sha1 of the text with whitespace runs collapsed."""
    collapsed = " ".join(text.split())
    return hashlib.sha1(collapsed.encode(), usedforsecurity=False).hexdigest()


TEXT_LIMITS = {
    "action_type": 200,
    "action_name": 500,
    "tool_call_id": 200,
    "response_id": 200,
    "agent": 200,
    "task": RESULT_MAX_CHARS,
    "result": RESULT_MAX_CHARS,
}
"""The action payload's text fields with a limit, in characters. Longer text is cut at
the edge, where any producer's event is validated, never refused (a real tool's
output is routinely longer): the first part is kept, a cut ``result`` keeps the digest
of the whole in ``result_digest``, and ``truncated`` names the fields cut."""


CUT_MARGIN = 4096
"""Characters past a limit redacted with the kept part before it is cut (a key or a
private-key block that straddles the cut is still seen whole)."""


def cut_long_text(data: Any) -> Any:
    """``data`` (a payload as received) with every text over its :data:`TEXT_LIMITS` cut."""
    if not isinstance(data, dict):
        return data
    cut: list[str] | None = None
    for name, limit in TEXT_LIMITS.items():
        value = data.get(name)
        if isinstance(value, str) and len(value) > limit:
            if cut is None:
                data = dict(data)
                earlier = data.get("truncated")
                cut = list(earlier) if isinstance(earlier, list) else []
            if name == "result" and not data.get("result_digest"):
                data["result_digest"] = result_digest(value)  # of the whole result
            # redacted around the cut first: a key cut in half no longer looks like one
            data[name] = redact_text(value[: limit + CUT_MARGIN])[:limit]
            if name not in cut:
                cut.append(name)
    if cut is not None:
        data["truncated"] = cut
    return data
