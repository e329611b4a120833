"""The patterns of secrets in text and how each match is replaced (pure, no state).

The token shapes of detect-secrets' regex plugins (AWS, GitHub, GitLab, Slack, Stripe,
JWT, basic-auth URLs, private-key headers, …, maintained upstream) plus what those
plugins leave to code scanners' context — ``key=value`` and ``"key": "value"``
assignments, ``Authorization: Basic|Bearer …``, ``mysql -p…`` / ``--password …``,
whole PEM private keys, ``sk-…`` keys, Luhn-valid card numbers and national id
numbers. What is replaced is the secret, not its context
(``postgres://admin:[REDACTED]@db``), so a redacted message still explains itself.
:func:`plan` lists them in the order :class:`~loopwarden.schemas.redaction.Redactor`
applies them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector

REDACTED = "[REDACTED]"

# detect-secrets plugins whose patterns are not about secrets in free text.
_SKIPPED_PLUGINS = frozenset({"IPPublicDetector", "ArtifactoryDetector"})

_SECRET_WORDS = (
    r"password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|token|"
    r"credentials?|密码|口令"
)
# What may follow a secret word in a key that still names the secret (SECRET_ACCESS_KEY,
# password_confirm); anything else names something else (secret_name, password_reset_url).
SECRET_SUFFIXES = r"key|value|str|string|confirm|confirmation|plain|plaintext|raw|b64|base64"
# A key that names a secret, optionally quoted, inside longer names (AWS_SECRET_ACCESS_KEY)
# but not as a prefix of another word (``max_tokens``, ``secretary``); a comparison
# (``==``, ``!=``, ``<=``) is not an assignment.
_ASSIGNMENT = re.compile(
    rf"((?:{_SECRET_WORDS})(?:[_.-](?:{_SECRET_WORDS}|{SECRET_SUFFIXES}))*[\"']?"
    rf"(?:\s*(?<![=!<>])[:=：](?![=])\s*|\s+is\s+)[\"']?)"
    rf"((?:Bearer|Basic)\s+)?(?!\[REDACTED\])([^\s\"',;&}}\]]+)",  # not redacted already
    re.IGNORECASE,
)
# Values after a secret key that are not secrets: words of an error message or a state,
# and empty values (detect-secrets' heuristics filter the same kinds of false positives).
_NOT_SECRET_VALUES = frozenset(
    {
        "none", "null", "nil", "undefined", "true", "false", "empty", "missing", "required",
        "optional", "expired", "invalid", "incorrect", "wrong", "denied", "not", "no",
        "unknown", "unset", "set", "changed", "updated", "reset", "failed", "error",
        "found", "mismatch", "rejected", "revoked", "ok", "valid", "hidden", "redacted",
    }
)  # fmt: skip
# A code reference rather than a literal: ``settings.SECRET_KEY``, ``get_secret(…)``.
_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*[(\[].*")
_PROSE_GOES_ON = re.compile(r"\s+[A-Za-z]")
_AUTH_HEADER = re.compile(
    r"(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|bearer|digest|token|"
    r"negotiate)\s+)?)([^\s\"',;]+)",
    re.IGNORECASE,
)
_SCHEME_CREDENTIAL = re.compile(r"(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_CLI_PASSWORD = re.compile(
    r"(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p)([^\s\"']+)"
    r"|(--password[= ]\s*|\bsshpass\s+-p\s*)([^\s\"']+)",
    re.IGNORECASE,
)
_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|$)",
    re.DOTALL,
)
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
    r"xox[abpors]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})"
)
_CARD = re.compile(r"(?<!\d)(?<!\d\.)\d(?:[ -]?\d){12,}(?!\d|\.\d)")
"""A run of 13 or more digits, spaces and dashes, whole (not part of a decimal: a dot
after it ends a sentence, a dot between digits is a number's)."""
_DIGIT_GROUP = re.compile(r"\d+")
CARD_DIGITS = (13, 19)
_CN_ID = re.compile(r"\b\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")


def _plugin_patterns() -> list[re.Pattern[str]]:
    patterns: list[re.Pattern[str]] = []
    plugin: Any
    for plugin in get_mapping_from_secret_type_to_class().values():
        if issubclass(plugin, RegexBasedDetector) and plugin.__name__ not in _SKIPPED_PLUGINS:
            patterns.extend(plugin.denylist)
    return patterns


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
    """A run of digits and separators: the whole run when it is a card number, else
    every card number inside it, wherever it starts (``card2 4539 1488 0343 6467``,
    ``item 3 5500 0000 0000 0004``)."""
    run = match.group(0)
    digits = re.sub(r"\D", "", run)
    low, high = CARD_DIGITS
    if low <= len(digits) <= high and _luhn(digits):
        return REDACTED
    return _cards_within(run)


def _cards_within(run: str) -> str:
    """``run`` with every card number inside it redacted: groups of digits from one
    separator to another, 13–19 digits in all, Luhn-valid, and shaped like a card (one
    group, or groups of 3 digits or more: a list of small numbers is not a card).
    Overlapping candidates are redacted together (one of them may pass the check by
    chance; showing part of the real one would leak it)."""
    groups = [(m.start(), m.end(), m.group()) for m in _DIGIT_GROUP.finditer(run)]
    low, high = CARD_DIGITS
    covered = [False] * len(groups)
    for first in range(len(groups)):
        count = 0
        for last in range(first, len(groups)):
            count += len(groups[last][2])
            shaped = last == first or min(len(g[2]) for g in groups[first : last + 1]) >= 3
            if count > high or not shaped:
                break
            if count >= low and _luhn("".join(g[2] for g in groups[first : last + 1])):
                covered[first : last + 1] = [True] * (last - first + 1)
    out: list[str] = []
    kept = 0
    for index, (start, end, _) in enumerate(groups):
        if covered[index] and (index == 0 or not covered[index - 1]):
            out += [run[kept:start], REDACTED]
        if covered[index]:
            kept = end
    return "".join(out) + run[kept:]


_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_+/=-]*")
_PUNCTUATION = re.compile(r"\W*")


def _redact_match(match: re.Match[str]) -> str:
    """Redact a detect-secrets match.

    Its plugins are written for detection: a group may be the secret (``://user:(pw)@``)
    or only a prefix (``(ghp)_…``). A first group that starts the match stands for the
    whole match; otherwise the text from the group on is redacted, keeping a
    punctuation-only suffix (``@``, a quote). A lazily ended token (a JWT's signature)
    is redacted to its last token character.
    """
    whole = match.group(0)
    offset = match.start(0)
    for index in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(index)
        if start < 0:
            continue
        if start == offset:
            break
        suffix = whole[end - offset :]
        keep = suffix if _PUNCTUATION.fullmatch(suffix) else ""
        return whole[: start - offset] + REDACTED + keep
    return REDACTED


def _keep_prefix(match: re.Match[str]) -> str:
    if match.re is _CLI_PASSWORD:
        prefix = match.group(1) if match.group(1) is not None else match.group(3)
        return prefix + REDACTED
    if match.re is _ASSIGNMENT:
        if match.group(2) is None and not _assigned_secret(match):
            return match.group(0)
        return match.group(1) + (match.group(2) or "") + REDACTED
    if match.re is _SCHEME_CREDENTIAL and match.group(2).isalpha() and match.group(2).islower():
        return match.group(0)  # "basic implementation": a word, not a credential
    return match.group(1) + REDACTED


def _assigned_secret(match: re.Match[str]) -> bool:
    """Whether the value after a secret key is a secret, not words of a message
    (``passwd: Permission denied``, ``a password is required``), a code reference
    (``secret = settings.SECRET_KEY``) or an empty value (``secret=None``)."""
    key_and_separator, value = match.group(1), match.group(3)
    bare = value.rstrip(".,:;!?)")
    if not bare or bare[0] in "=<>$%{([" or bare.lower() in _NOT_SECRET_VALUES:
        return False
    if key_and_separator.endswith(("'", '"')):
        return True  # a quoted literal
    if _REFERENCE.fullmatch(bare) and not any(ch.isdigit() for ch in bare.split("(")[0]):
        return False
    if bare.lower() in re.findall(r"[a-z]+", key_and_separator.lower()):
        return False  # a variable named like the key: ``self.password = password``
    # "password: x", "password is x", "s = x": a word of a sentence that goes on is prose
    prose = key_and_separator[-1].isspace() and bare.isalpha()
    return not (prose and _PROSE_GOES_ON.match(match.string, match.end(3)))


def _sub_tokens(pattern: re.Pattern[str], text: str) -> str:
    """``pattern.sub`` with whole-match redactions extended over trailing token characters."""
    out: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        if match.start() < position:
            continue
        end = match.end()
        replacement = _redact_match(match)
        if replacement == REDACTED:
            end = _TOKEN_TAIL.match(text, end).end()  # type: ignore[union-attr]
        out.append(text[position : match.start()])
        out.append(replacement)
        position = end
    if not out:
        return text
    out.append(text[position:])
    return "".join(out)


Replace = Callable[[re.Pattern[str], str], str]
"""How a pattern's matches are replaced in a text."""


def _with_prefix(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(_keep_prefix, text)


def _whole(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(REDACTED, text)


def _cards(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(_card, text)


def plan() -> list[tuple[re.Pattern[str], Replace, str]]:
    """Every pattern in order, with its replacement and the cheap check that lets a text
    reach it when its words are unknown: ``keyword``, ``token`` (a keyword or a long
    token run) or ``digits``."""
    return [
        (_PRIVATE_KEY_BLOCK, _whole, "keyword"),
        *((p, _with_prefix, "keyword") for p in (_AUTH_HEADER, _ASSIGNMENT)),
        *((p, _with_prefix, "keyword") for p in (_SCHEME_CREDENTIAL, _CLI_PASSWORD)),
        *((p, _sub_tokens, "token") for p in _plugin_patterns()),
        (_KEY_SHAPES, _whole, "token"),
        (_CN_ID, _whole, "digits"),
        (_SSN, _whole, "digits"),
        (_CARD, _cards, "digits"),
    ]
