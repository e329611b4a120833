"""The line of a failed call's output that says why it failed, pure.

A failure's first line is rarely its reason: a test run starts with ``==== test
session starts ====``, a traceback with ``Traceback (most recent call last):``, a
linter with the file name. :func:`failure_line` picks the line that says why — the last
exception line, ``E …`` or ``FAILED …`` line of a test run, ``error:``/``fatal:`` line —
from the result, else the error message's; :func:`failure_key` is that line with its
volatile tokens (numbers, ids, times) masked, so the same refusal with another count
("found 3 actions", then "found 2 actions") is the same failure.
"""

from __future__ import annotations

import re
from typing import Any

from loopwarden.agents.spin.normalise import normalised
from loopwarden.schemas.text_limits import result_digest

_REASON = re.compile(
    r"^\s*(?:"
    r"E\s{2,}\S"  # pytest's assertion detail
    r"|FAILED\b|ERROR\b"  # a test run's summary
    r"|(?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure)\b\s*(?::|$)"
    r"|(?:error|fatal|failed|failure)\b\s*[:\[]"  # tools' own reasons
    r")",
    re.IGNORECASE,
)
_NAMED = re.compile(r"\b\w*(?:Error|Exception)\b:")
"""An exception named inside a line (``E999 SyntaxError: invalid syntax``)."""
MAX_LINE = 300


def failure_line(payload: Any) -> str:
    """The line that says why the call failed ("" when nothing was published)."""
    for text in (payload.result, payload.error_message):
        if not text:
            continue
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        reasons = [line for line in lines if _REASON.match(line) or _NAMED.search(line)]
        if reasons:
            return reasons[-1][:MAX_LINE]
    first = (payload.error_message or payload.result or "").strip().splitlines()
    return first[0][:MAX_LINE] if first else ""


def failure_key(payload: Any) -> str:
    """A digest of :func:`failure_line` with volatile tokens masked ("" when none)."""
    line = failure_line(payload)
    return result_digest(normalised(line))[:16] if line else ""
