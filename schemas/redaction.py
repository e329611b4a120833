"""Secret redaction, applied to every event right after validation (and again before LanceDB).

Two passes, both pure:

- **by key name** (structured values): the value under a key such as ``password``,
  ``api_key``, ``client_secret``, ``Authorization`` or ``AWS_SECRET_ACCESS_KEY``
  becomes ``[REDACTED]`` whatever it looks like;
- **by value pattern** (every string): the patterns of
  :mod:`~loopwarden.schemas.secret_patterns`.

Most text holds no secret, so what decides is which patterns can match at all: in the
worker one Hyperscan scan says so (:mod:`~loopwarden.schemas.redaction_prefilter`);
elsewhere, or with ``LOOPWARDEN_NO_EXTENSIONS=1``, each pattern runs only on a text
holding a word it cannot match without (:mod:`~loopwarden.schemas.regex_gates`), a
long token run or a long digit run. Either way the output is the same.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel

from loopwarden.schemas.redaction_prefilter import Prefilter, build
from loopwarden.schemas.regex_gates import required_words
from loopwarden.schemas.secret_patterns import REDACTED, SECRET_SUFFIXES, Replace, plan

__all__ = ["REDACTED", "WORDS", "Redactor", "default_redactor", "redact", "redact_fields"]

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


class Redactor:
    """Replaces secrets in text and in JSON-like values with ``[REDACTED]``."""

    def __init__(self) -> None:
        self.steps = [
            _Step(pattern, replace, required_words(pattern, WORDS), check)
            for pattern, replace, check in plan()
        ]
        self.prefilter: Prefilter | None = None
        self._prefilter_ready = threading.Event()

    def use_prefilter(self, background: bool = True) -> threading.Event:
        """Build the Hyperscan prefilter (when installed and not switched off), in a
        daemon thread unless ``background`` is false; the gates work until it is ready.
        Returns an event set once the attempt is over (``prefilter`` may stay None)."""

        def attach() -> None:
            try:
                self.prefilter = build(self.patterns())
            finally:
                self._prefilter_ready.set()

        if self.prefilter is None and not self._prefilter_ready.is_set():
            if background:
                threading.Thread(target=attach, name="redaction-prefilter", daemon=True).start()
            else:
                attach()
        return self._prefilter_ready

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
    def _screen(cls, text: str) -> tuple[frozenset[str], bool, bool] | None:
        """The three cheap checks (its words, a long token run, a long digit run), or
        None when none holds: then no pattern can match ``text``."""
        words = cls.words_in(text)
        token = _LONG_TOKEN.search(text) is not None
        digits = _DIGIT_RUN.search(text) is not None
        return (words, token, digits) if words or token or digits else None

    def may_hold_secret(self, text: str) -> bool:
        """False when no pattern can match ``text`` (one prefilter scan, else the three
        cheap checks)."""
        prefilter = self.prefilter
        if prefilter is not None:
            found = prefilter.candidates(text)
            if found is not None:
                return bool(found)
        return self._screen(text) is not None

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        return self._filtered(text, 0)

    def _filtered(self, text: str, start: int) -> str:
        """Steps from ``start`` on that the prefilter reports, in order; after a
        replacement the new text is scanned again for the later ones."""
        found = self.prefilter.candidates(text) if self.prefilter is not None else None
        if found is None:
            return self._gated(text, start)
        for index in sorted(i for i in found if i >= start):
            step = self.steps[index]
            new = step.replace(step.pattern, text)
            if new != text:
                return self._filtered(new, index + 1)
        return text

    def _gated(self, text: str, start: int) -> str:
        """Steps from ``start`` on, each where its gate lets the text through."""
        screen = self._screen(text)
        if screen is None:
            return text
        words, token, digits = screen
        for step in self.steps[start:]:
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
    rf"(?:_(?:{SECRET_SUFFIXES}))?$"
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

    Every string of the fields, nested ones too, is screened together first (one
    prefilter scan or one pass of the cheap checks over all of them: a newline joins
    them, so no match spans two); only a field set that may hold a secret is walked
    value by value."""
    redactor = default_redactor()
    names = tuple(names)
    texts = _screened_strings(getattr(model, name) for name in names)
    if texts is not None and not redactor.may_hold_secret("\n".join(texts)):
        return model
    update = {}
    for name in names:
        value = getattr(model, name)
        new = redactor.value(value)
        if new is not value:
            update[name] = new
    return model.model_copy(update=update) if update else model
