"""Misspelt ``LOOPWARDEN_*`` environment variables, named once at start.

pydantic-settings ignores a variable that matches no setting, so
a misspelt detection profile variable left the worker on the default profile without a
word. The first :class:`~loopwarden.settings.Settings` a process builds from the
environment names every ``LOOPWARDEN_*`` variable that is neither a setting nor one of
the tooling variables below, with the closest known name, in one warning — the worker,
``loopwarden dev``, every CLI command and the client alike (``--set`` already refuses
an unknown name).
"""

from __future__ import annotations

import difflib
import logging
import os
import types
import typing
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

log = logging.getLogger("loopwarden.settings")

PREFIX = "LOOPWARDEN_"
NESTED = "__"

TOOL_VARIABLES = frozenset(
    {
        "LOOPWARDEN_AGENT_CLIS",  # the agent-CLI tests: where the installed CLIs are
        "LOOPWARDEN_AGENT_CLIS_CACHE",  # make test-gateway-clis: where the agent CLIs go
        "LOOPWARDEN_BENCH_PREVIOUS",  # benchmarks: the checkout to compare with
        "LOOPWARDEN_CACHE_DIR",  # the redaction prefilter's compiled database
        "LOOPWARDEN_FAULTS_LOGS",  # make reliability: where the fault suite's logs go
        "LOOPWARDEN_KAFKA_CACHE",  # make test-kafka: the Apache Kafka download
        "LOOPWARDEN_NO_EXTENSIONS",  # the pure-Python twins instead of the compiled core
        "LOOPWARDEN_PYTHON",  # the TypeScript suites: the Python that starts brokers
        "LOOPWARDEN_TEST_BROKER",  # tests: embedded or kafka
        "LOOPWARDEN_TRAJECTORIES",  # benchmarks: the trajectories dataset
        "LOOPWARDEN_TS_SECURED",  # the TypeScript suites: the secured broker's settings
    }
)
"""Variables read by the tooling, not by :class:`~loopwarden.settings.Settings`."""

_warned = False


def setting_variables(model: type[BaseModel], prefix: str = PREFIX) -> set[str]:
    """Every environment variable ``model`` reads: each field, and each field of a
    nested section (``LOOPWARDEN_KAFKA__SECURITY__SASL_PASSWORD``), upper case."""
    names: set[str] = set()
    for field_name, info in model.model_fields.items():
        name = f"{prefix}{field_name}".upper()
        names.add(name)
        section = _model_in(info.annotation)
        if section is not None:
            names |= setting_variables(section, f"{name}{NESTED}")
    return names


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The settings model an annotation holds (``KafkaSecurity | None`` too), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def unknown_variables(environ: Mapping[str, str], known: Iterable[str]) -> list[str]:
    """One line per ``LOOPWARDEN_*`` variable of ``environ`` that no setting and no tool
    reads, with the closest known name when there is one."""
    valid = set(known) | TOOL_VARIABLES
    lines = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in valid or upper.startswith(f"_{PREFIX}"):
            continue
        close = difflib.get_close_matches(upper, sorted(valid), n=1, cutoff=0.8)
        hint = f"did you mean {close[0]}?" if close else "no setting has a name close to it"
        lines.append(f"{name} is not a loopwarden setting and is ignored: {hint}")
    return lines


def warn_unknown_variables_once(model: type[BaseModel]) -> list[str]:
    """Log the unknown ``LOOPWARDEN_*`` variables once per process; the lines logged."""
    global _warned
    if _warned:
        return []
    _warned = True
    lines = unknown_variables(os.environ, setting_variables(model))
    if lines:
        log.warning("%s", "\n".join(lines))
    return lines
