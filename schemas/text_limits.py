"""Text limits of an action's payload: long text is cut at the edge, never refused.

Where any producer's event is validated (the client, ``publish`` and ``detect``, the
worker, the HTTP hooks, OTLP), a text over its limit keeps its first part — a
``result`` its start and its end, where a test run, a traceback or a build says why it
failed — a cut ``result`` keeps the digest of the whole, ``truncated`` names the fields
cut, and the text is redacted around each cut first.
:class:`~loopwarden.schemas.events.ActionPayload` applies :func:`cut_long_text` before
it validates.
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
output is routinely longer): the first part is kept (a ``result``: its start and its
last :data:`RESULT_TAIL_CHARS`), a cut ``result`` keeps the digest of the whole in
``result_digest``, and ``truncated`` names the fields cut."""

RESULT_TAIL_CHARS = 600
"""The end of a cut result that is kept: the last lines of a traceback or a test run
(``E   CardDeclined: insufficient_funds``, ``FAILED …``) say why it failed."""


CUT_MARKER = "\n… [{cut} characters cut] …\n"
"""What stands where a result's middle was cut out (``{cut}``: how many characters)."""


def cut_marker(cut: int) -> str:
    """What stands where a result's middle was cut out."""
    return CUT_MARKER.format(cut=cut)


CUT_MARGIN = 4096
"""Characters past a limit redacted with the kept part before it is cut (a key or a
private-key block that straddles the cut is still seen whole)."""


def _head(value: str, limit: int) -> str:
    return redact_text(value[: limit + CUT_MARGIN])[:limit]


def _head_and_tail(value: str) -> str:
    """A long result's start and end, within :data:`RESULT_MAX_CHARS`."""
    marker = cut_marker(len(value) - RESULT_MAX_CHARS)
    head = RESULT_MAX_CHARS - RESULT_TAIL_CHARS - len(marker)
    tail = redact_text(value[-(RESULT_TAIL_CHARS + CUT_MARGIN) :])[-RESULT_TAIL_CHARS:]
    return _head(value, head) + marker + tail


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
            data[name] = _head_and_tail(value) if name == "result" else _head(value, limit)
            if name not in cut:
                cut.append(name)
    if cut is not None:
        data["truncated"] = cut
    return data
