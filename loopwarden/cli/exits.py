"""One error style for the command line: a one-line message and a documented exit code.

=====  ==========================================================
code   meaning
=====  ==========================================================
0      success
1      any other error (a setting, a failed delivery, a bug)
2      usage: an unknown option or a bad argument (click's own)
3      cannot reach the broker at the bootstrap servers
4      bad input: some lines or events were rejected
5      nothing received before ``--timeout``
6      ``replay``: the replayed outputs differ from the recorded ones
130    interrupted (Ctrl-C)
=====  ==========================================================

Tracebacks are printed only with ``loopwarden --debug``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from enum import IntEnum
from typing import Any

import click

from loopwarden.errors import (
    BrokerUnavailableError,
    EventError,
    LoopwardenError,
    NothingReceivedError,
)


class Exit(IntEnum):
    """The exit codes of every command."""

    OK = 0
    ERROR = 1
    USAGE = 2
    BROKER_UNAVAILABLE = 3
    BAD_INPUT = 4
    NOTHING_RECEIVED = 5
    DIFFERS = 6
    INTERRUPTED = 130


class CommandFailed(click.ClickException):
    """A failure reported as one line on stderr with its exit code."""

    def __init__(self, message: str, code: Exit) -> None:
        super().__init__(message)
        self.exit_code = int(code)


def classify(exc: BaseException) -> CommandFailed | None:
    """The one-line report and exit code for ``exc``, or None to let it propagate."""
    if isinstance(exc, BrokerUnavailableError):
        return CommandFailed(str(exc), Exit.BROKER_UNAVAILABLE)
    if _is_kafka_connection_error(exc):
        return CommandFailed(f"cannot reach the broker: {exc}", Exit.BROKER_UNAVAILABLE)
    if isinstance(exc, ModuleNotFoundError):
        from loopwarden.cli.extras import for_missing_module

        hint = for_missing_module(exc.name)
        return None if hint is None else CommandFailed(hint, Exit.ERROR)
    if isinstance(exc, NothingReceivedError):
        return CommandFailed(str(exc), Exit.NOTHING_RECEIVED)
    if isinstance(exc, EventError):
        return CommandFailed(str(exc), Exit.BAD_INPUT)
    if isinstance(exc, LoopwardenError):
        return CommandFailed(str(exc), Exit.ERROR)
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return CommandFailed(f"timed out: {exc or 'no answer'}", Exit.ERROR)
    if isinstance(exc, OSError):
        return CommandFailed(f"{type(exc).__name__}: {exc}", Exit.ERROR)
    if type(exc).__name__ == "ValidationError" and hasattr(exc, "errors"):
        return CommandFailed(settings_problem(exc), Exit.ERROR)
    if type(exc).__name__ == "SettingsError":
        return CommandFailed(unparsed_setting(str(exc)), Exit.ERROR)
    return None


_UNPARSED = re.compile(r'error parsing value for field "(?P<field>[^"]+)" from source "Env')


def unparsed_setting(message: str) -> str:
    """pydantic-settings' "error parsing value for field …" as what to write instead: a
    list or a map in an environment variable is JSON."""
    found = _UNPARSED.search(message)
    if found is None:
        return f"settings: {message}"
    field = found["field"]
    variable = "LOOPWARDEN_" + field.upper()
    if field in EXAMPLES:
        return (
            f"setting {field} [{variable}] is not JSON: lists and maps are given as JSON in "
            f"the environment, e.g. {variable}='{EXAMPLES[field]}'"
        )
    suspects = sorted(
        name
        for name, value in os.environ.items()
        if name.upper().startswith(variable + "__") and not _is_json(value)
    )
    return (
        f"settings of {field}: {' or '.join(suspects) or variable + '__…'} is not JSON: lists "
        "and maps are given as JSON in the environment, e.g. "
        """LOOPWARDEN_DETECTION__TOOLS='{"kubectl get *": "poll"}'"""
    )


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


EXAMPLES = {
    "roles": '["monitor", "guardrails"]',
    "sinks": '["my_team.sinks:jsonl_sink"]',
    "log_library_info": '["faust.tables.recovery"]',
}


def settings_problem(exc: Any) -> str:
    """A settings validation error as one line per wrong setting, each naming its
    environment variable (pydantic's own text has a URL and three lines a field)."""
    lines = []
    for error in exc.errors():
        path = ".".join(str(part) for part in error["loc"])
        variable = "LOOPWARDEN_" + "__".join(str(part) for part in error["loc"]).upper()
        given = error.get("input")
        got = f" (got {given!r})" if isinstance(given, str | int | float) else ""
        lines.append(f"setting {path} [{variable}]: {error['msg']}{got}")
    return "; ".join(lines) or str(exc)


def _is_kafka_connection_error(exc: BaseException) -> bool:
    # aiokafka is imported only by commands that talk to Kafka: look it up by name
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"KafkaConnectionError", "NoBrokersAvailable"})
