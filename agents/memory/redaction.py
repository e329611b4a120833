"""Secret redaction before anything is stored or embedded.

Passwords, API keys and tokens, payment card numbers (Luhn-checked) and national
id numbers (Chinese resident id, US SSN) become ``[REDACTED]``. Applied to text
and, recursively, to JSON-like values.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

_ASSIGNED_SECRET = re.compile(
    r"(?i)\b(password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token|"
    r"token|密码|口令)(\s*[:=：]\s*|\s+is\s+)(\"[^\"]*\"|'[^']*'|\S+)"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")
_KEY_SHAPES = re.compile(
    r"\b(sk-[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"xox[abp]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})\b"
)
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
_CN_ID = re.compile(r"\b\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")


def _luhn(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return REDACTED if 13 <= len(digits) <= 19 and _luhn(digits) else match.group(0)


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED]``."""
    text = _ASSIGNED_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _KEY_SHAPES.sub(REDACTED, text)
    text = _CN_ID.sub(REDACTED, text)
    text = _SSN.sub(REDACTED, text)
    return _CARD.sub(_card, text)


_SECRET_KEYS = re.compile(r"(?i)(password|passwd|pwd|secret|token|api[_-]?key|credential)")


def redact(value: Any) -> Any:
    """Redact strings inside ``value``; values under secret-looking keys entirely."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(k, str) and _SECRET_KEYS.search(k) and v else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
