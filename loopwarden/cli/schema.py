"""``loopwarden schema``: the JSON Schema of every topic's records."""

from __future__ import annotations

import json
from pathlib import Path

import click

from loopwarden.schemas.contract import TOPIC_RECORDS, topic_schema, topic_schemas
from loopwarden.schemas.events import MAX_TIMESTAMP
from loopwarden.schemas.refusals import REFUSAL_TYPES, TRANSIENT_STATUSES
from loopwarden.schemas.text_limits import CUT_MARKER, RESULT_TAIL_CHARS, TEXT_LIMITS
from loopwarden.schemas.tool_calls import CONTEXT_HEADER, MEMORY_HEADER, STOP_HEADER
from loopwarden.settings import LimitSettings
from loopwarden.streams.tools.asyncapi import ASYNCAPI_FILE, asyncapi_document

CONSTANTS_FILE = "constants.json"
"""Beside the schemas: what a client in another language must do alike."""


def client_constants() -> dict[str, object]:
    """The limits and texts a client in another language reads instead of copying them:
    how long text is cut (per field, the kept tail of a result, the marker), the latest
    timestamp and the largest record the worker reads by default, and the headers of the
    note an agent reads (its warnings, the memories its run started with) and of the
    reason its run was stopped, and which failures are refusals (a call's ``rejected``)."""
    return {
        "text_limits": dict(TEXT_LIMITS),
        "result_tail_chars": RESULT_TAIL_CHARS,
        "cut_marker": CUT_MARKER,
        "max_timestamp": int(MAX_TIMESTAMP),
        "max_event_bytes": LimitSettings().max_event_bytes,
        "context_header": CONTEXT_HEADER,
        "stop_header": STOP_HEADER,
        "memory_header": MEMORY_HEADER,
        "refusal_types": sorted(REFUSAL_TYPES),
        "transient_statuses": sorted(TRANSIENT_STATUSES),
    }


def schema_text(schema: dict[str, object]) -> str:
    """A schema as written to a file: indented, keys in the models' order, a newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<role>.json`` for every topic role into ``folder`` (made if missing), an
    ``index.json`` naming each role's file and direction, and the AsyncAPI document of
    them all (``asyncapi.json``) and the limits and texts clients share
    (``constants.json``); the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    index = {}
    for role, schema in topic_schemas().items():
        path = folder / f"{role}.json"
        path.write_text(schema_text(schema))
        written.append(path)
        index[role] = {"file": path.name, "direction": TOPIC_RECORDS[role][1]}
    (folder / "index.json").write_text(schema_text({"topics": index}))
    files = {role: entry["file"] for role, entry in index.items()}
    (folder / ASYNCAPI_FILE).write_text(schema_text(asyncapi_document(files)))
    (folder / CONSTANTS_FILE).write_text(schema_text(client_constants()))
    return [*written, folder / "index.json", folder / ASYNCAPI_FILE, folder / CONSTANTS_FILE]


@click.command()
@click.argument("role", required=False, type=click.Choice(sorted(TOPIC_RECORDS)))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write every topic's schema as <role>.json (and index.json) into this folder.",
)
def schema(role: str | None, out: Path | None) -> None:
    """Print the JSON Schema of the records of topic ROLE (a settings.topics name:
    actions, warnings …), or with --out write every topic's, and the AsyncAPI 3
    document of them all (asyncapi.json).

    \b
      loopwarden schema warnings
      loopwarden schema --out schemas/     # then e.g. json-schema-to-typescript
    """
    if out is not None:
        if role is not None:
            raise click.UsageError("give a ROLE or --out, not both")
        for path in write_schemas(out):
            click.echo(path)
        return
    if role is None:
        raise click.UsageError(f"name a topic role ({', '.join(TOPIC_RECORDS)}) or give --out")
    click.echo(schema_text(topic_schema(role)), nl=False)
