"""Settings changed for one command: ``--set detection.spin_threshold=4`` and ``--config FILE``.

Values are parsed as JSON when they are JSON (``4``, ``true``, ``["a"]``) and
taken as strings otherwise; every change is validated by the section's own
model, so a wrong name or value is one clear error naming the setting.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from loopwarden.errors import ConfigurationError, EventDecodeError
from loopwarden.schemas import codec
from loopwarden.settings import Settings


def parse_assignment(text: str) -> tuple[str, Any]:
    """``"section.name=value"`` → ``("section.name", value)``."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise ConfigurationError(
            f"expected NAME=VALUE (e.g. detection.spin_threshold=4), got {text!r}"
        )
    try:
        value: Any = codec.loads(raw)
    except EventDecodeError:
        value = raw
    return name.strip(), value


def load_config_file(path: Path) -> dict[str, Any]:
    """A TOML (``.toml``) or JSON file of nested settings, as a dict."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = tomllib.loads(text.decode()) if path.suffix == ".toml" else codec.loads(text)
    except (ValueError, UnicodeDecodeError, EventDecodeError) as exc:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise ConfigurationError(f"{path} is not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path} must hold a table of settings, not {type(data).__name__}")
    return data


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{name}.")
        else:
            yield name, value


def with_overrides(
    settings: Settings, assignments: Iterable[str] = (), config: Path | None = None
) -> Settings:
    """A copy of ``settings`` with the file's values, then the assignments, applied."""
    changes: list[tuple[str, Any]] = []
    if config is not None:
        changes.extend(_flatten(load_config_file(config)))
    changes.extend(parse_assignment(text) for text in assignments)
    return with_values(settings, changes)


def with_values(settings: Settings, changes: Iterable[tuple[str, Any]]) -> Settings:
    """A copy of ``settings`` with ``(dotted name, value)`` changes applied, each section
    validated by its own model (a wrong name or value: :class:`ConfigurationError`)."""
    grouped: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for name, value in changes:
        section, _, field_name = name.partition(".")
        if section not in Settings.model_fields:
            known = ", ".join(sorted(Settings.model_fields))
            raise ConfigurationError(
                f"unknown setting {name!r}: {_hint(name, 'sections are ' + known)}"
            )
        if field_name:
            grouped.setdefault(section, {})[field_name] = value
        else:
            top[section] = value
    update: dict[str, Any] = dict(top)
    for section, values in grouped.items():
        current = getattr(settings, section)
        if not isinstance(current, BaseModel):
            raise ConfigurationError(f"setting {section!r} has no fields")
        unknown = sorted(set(values) - set(type(current).model_fields))
        if unknown:
            known = ", ".join(sorted(type(current).model_fields))
            wrong = f"{section}.{unknown[0]}"
            raise ConfigurationError(
                f"unknown setting {wrong}: {_hint(wrong, f'{section} has {known}')}"
            )
        try:
            update[section] = type(current).model_validate({**dict(current), **values})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigurationError(f"{section}.{where}: {first['msg']}") from exc
    return settings.model_copy(update=update)


def _setting_names() -> list[str]:
    """Every setting's dotted name (``detection.outcome_repeats``, ``roles``)."""
    names = []
    for section, info in Settings.model_fields.items():
        model = info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            names += [f"{section}.{field}" for field in model.model_fields]
        else:
            names.append(section)
    return names


def _hint(name: str, otherwise: str) -> str:
    """``did you mean 'detection.outcome_repeats'?`` for a misspelt or misplaced name,
    else ``otherwise`` (the names there are)."""
    names = _setting_names()
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    if not close:  # the right field in the wrong section
        field = name.rpartition(".")[2]
        close = [known for known in names if known.rpartition(".")[2] == field][:1]
    return f"did you mean {close[0]!r}?" if close else otherwise
