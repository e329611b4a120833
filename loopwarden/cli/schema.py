"""``loopwarden schema``: the JSON Schema of every topic's records."""

from __future__ import annotations

import json
from pathlib import Path

import click

from loopwarden.schemas.contract import TOPIC_RECORDS, topic_schema, topic_schemas
from loopwarden.streams.tools.asyncapi import ASYNCAPI_FILE, asyncapi_document


def schema_text(schema: dict[str, object]) -> str:
    """A schema as written to a file: indented, keys in the models' order, a newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<role>.json`` for every topic role into ``folder`` (made if missing), an
    ``index.json`` naming each role's file and direction, and the AsyncAPI document of
    them all (``asyncapi.json``); the files written."""
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
    return [*written, folder / "index.json", folder / ASYNCAPI_FILE]


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
