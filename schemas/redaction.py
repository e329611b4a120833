"""Secret redaction, applied to every event right after validation (and again before LanceDB).

Two passes, both pure:

- **by key name** (structured values): the value under a key such as ``password``,
  ``api_key``, ``client_secret``, ``Authorization`` or ``AWS_SECRET_ACCESS_KEY``
  becomes ``[REDACTED]`` whatever it looks like;
- **by value pattern** (every string): the token shapes of detect-secrets' regex
  plugins (AWS, GitHub, GitLab, Slack, Stripe, JWT, basic-auth URLs, private-key
  headers, …, maintained upstream) plus what those plugins leave to code scanners'
  context — ``key=value`` and ``"key": "value"`` assignments, ``Authorization:
  Basic|Bearer …``, ``mysql -p…`` / ``--password …``, whole PEM private keys,
  ``sk-…`` keys, Luhn-valid card numbers and national id numbers.

Three cheap scans (a keyword, a run of token characters, a run of digits) decide
which patterns can match, so ordinary text costs a few microseconds. What is
replaced is the secret, not its context (``postgres://admin:[REDACTED]@db``), so
a redacted message still explains itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from pydantic import BaseModel

from loopwarden.schemas.regex_gates import required_words

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
_SECRET_SUFFIXES = r"key|value|str|string|confirm|confirmation|plain|plaintext|raw|b64|base64"
# A key that names a secret, optionally quoted, inside longer names (AWS_SECRET_ACCESS_KEY)
# but not as a prefix of another word (``max_tokens``, ``secretary``); a comparison
# (``==``, ``!=``, ``<=``) is not an assignment.
_ASSIGNMENT = re.compile(
    rf"((?:{_SECRET_WORDS})(?:[_.-](?:{_SECRET_WORDS}|{_SECRET_SUFFIXES}))*[\"']?"
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
_CARD = re.compile(r"(?<![\d.])(?:\d[ -]?){12,18}\d(?![\d.])")
_CN_ID = re.compile(r"\b\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")


def _plugin_patterns() -> list[re.Pattern[str]]:
    patterns: list[re.Pattern[str]] = []
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
    digits = re.sub(r"\D", "", match.group(0))
    return REDACTED if 13 <= len(digits) <= 19 and _luhn(digits) else match.group(0)


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


# Cheap checks that decide which patterns can match at all: most text has none of the
# words below, no run of 16 token characters and no run of 8 digits. Each pattern runs
# only on a text holding one of the words it cannot match without (read from its source,
# see regex_gates), or, when it has none, on a text its kind of check lets through.
WORDS = (
    "pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "bearer", "basic",
    "mysql", "mariadb", "://", "begin", "putty", "hooks", "密码", "口令",
)  # fmt: skip
"""Searched in the lower-cased text (plain substring scans: a case-insensitive regex
alternation is ten times slower)."""
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_-]{16}")
_DIGIT_RUN = re.compile(r"\d(?:[ -]?\d){7}")

Replace = Callable[[re.Pattern[str], str], str]


@dataclass(frozen=True, slots=True)
class _Step:
    """One pattern of the redactor, in order, with what lets a text reach it."""

    pattern: re.Pattern[str]
    replace: Replace
    words: frozenset[str] | None
    """Words of which a match holds one (None: unknown)."""
    check: str
    """Without ``words``: ``keyword``, ``token`` (a keyword or a long token run) or
    ``digits``."""

    def applies(self, words: frozenset[str], token: bool, digits: bool) -> bool:
        if self.words is not None:
            return not self.words.isdisjoint(words)
        if self.check == "digits":
            return digits
        return bool(words) or (token and self.check == "token")


def _with_prefix(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(_keep_prefix, text)


def _whole(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(REDACTED, text)


def _cards(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(_card, text)


class Redactor:
    """Replaces secrets in text and in JSON-like values with ``[REDACTED]``."""

    def __init__(self) -> None:
        plan: list[tuple[re.Pattern[str], Replace, str]] = [
            (_PRIVATE_KEY_BLOCK, _whole, "keyword"),
            *((p, _with_prefix, "keyword") for p in (_AUTH_HEADER, _ASSIGNMENT)),
            *((p, _with_prefix, "keyword") for p in (_SCHEME_CREDENTIAL, _CLI_PASSWORD)),
            *((p, _sub_tokens, "token") for p in _plugin_patterns()),
            (_KEY_SHAPES, _whole, "token"),
            (_CN_ID, _whole, "digits"),
            (_SSN, _whole, "digits"),
            (_CARD, _cards, "digits"),
        ]
        self.steps = [
            _Step(pattern, replace, required_words(pattern, WORDS), check)
            for pattern, replace, check in plan
        ]

    def patterns(self) -> list[re.Pattern[str]]:
        """Every pattern :meth:`text` may replace a match of: a text none of them
        matches comes back unchanged."""
        return [step.pattern for step in self.steps]

    @staticmethod
    def words_in(text: str) -> frozenset[str]:
        """The :data:`WORDS` ``text`` holds, case ignored."""
        lowered = text.lower()
        return frozenset(word for word in WORDS if word in lowered)

    @classmethod
    def triggers(cls, text: str) -> tuple[bool, bool, bool]:
        """Whether ``text`` holds one of the words, a long token run, a long digit run:
        without any of them no pattern can match."""
        return (
            bool(cls.words_in(text)),
            _LONG_TOKEN.search(text) is not None,
            _DIGIT_RUN.search(text) is not None,
        )

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        words = self.words_in(text)
        token = _LONG_TOKEN.search(text) is not None
        digits = _DIGIT_RUN.search(text) is not None
        if not (words or token or digits):
            return text
        for step in self.steps:
            if step.applies(words, token, digits):
                text = step.replace(step.pattern, text)
        return text

    def value(self, value: Any) -> Any:
        """``value`` with secrets replaced; the same object when it holds none."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            changed = False
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and is_secret_key(key) and _is_secret_scalar(item):
                    new: Any = REDACTED
                else:
                    new = self.value(item)
                changed = changed or new is not item
                out[key] = new
            return out if changed else value
        if isinstance(value, list | tuple):
            items = [self.value(item) for item in value]
            if any(new is not old for new, old in zip(items, value, strict=True)):
                return items
            return value
        return value


def _is_secret_scalar(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return bool(value) and value != REDACTED
    return isinstance(value, int | float)


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SECRET_KEY = re.compile(
    r"(?:^|_)(?:password|passwd|passphrase|pwd|pass|secret|token|apikey|api_key|access_key|"
    r"private_key|credentials?|authorization|auth|cookie|session_?id|cvv|cvc|pin|ssn|密码|口令)"
    rf"(?:_(?:{_SECRET_SUFFIXES}))?$"
)
"""A key whose last part names a secret (``db_password``, ``clientSecret``, ``X-Api-Key``,
``AWS_SECRET_ACCESS_KEY``); ``secret_name``, ``auth_method``, ``credentials_file`` or
``password_reset_url`` name something else."""


@lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """True for a key whose value is a secret (``password``, ``clientSecret``, ``X-Api-Key``)."""
    normalized = _CAMEL.sub(r"\1_\2", key).lower().replace("-", "_").replace(".", "_")
    return _SECRET_KEY.search(normalized) is not None


_DEFAULT: Redactor | None = None


def default_redactor() -> Redactor:
    """The process-wide :class:`Redactor` (its patterns are compiled once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Redactor()
    return _DEFAULT


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED]``."""
    return default_redactor().text(text)


def redact(value: Any) -> Any:
    """Redact a JSON-like value: secret keys entirely, every string by pattern."""
    return default_redactor().value(value)


M = TypeVar("M", bound=BaseModel)


def _screened_strings(values: Iterable[Any]) -> list[str] | None:
    """Every string held by ``values`` (nested in lists and dicts too), for one screen;
    None when a dict holds a secret scalar under a secret key (redact the slow way)."""
    texts: list[str] = []
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and is_secret_key(key) and _is_secret_scalar(item):
                    return None
                if isinstance(item, str):
                    texts.append(item)
                elif isinstance(item, dict | list | tuple):
                    pending.append(item)
        elif isinstance(value, list | tuple):
            pending.extend(value)
    return texts


def redact_fields(model: M, names: Iterable[str]) -> M:
    """``model`` with the named fields redacted; the same object when none held a secret.

    Every string of the fields, nested ones too, is screened together first (one pass
    of the three cheap checks over all of them: a newline joins them, so no match
    spans two); only a field set that may hold a secret is walked value by value."""
    redactor = default_redactor()
    names = tuple(names)
    texts = _screened_strings(getattr(model, name) for name in names)
    if texts is not None and not any(redactor.triggers("\n".join(texts))):
        return model
    update = {}
    for name in names:
        value = getattr(model, name)
        new = redactor.value(value)
        if new is not value:
            update[name] = new
    return model.model_copy(update=update) if update else model
