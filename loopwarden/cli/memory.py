"""``loopwarden memory write | import | search | show | maintain | stats | rebuild``.

LanceDB (about 1.7 s to import) is loaded only when a memory command runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from loopwarden.schemas import codec

if TYPE_CHECKING:
    from loopwarden.agents.memory.service import MemoryService


def _service() -> MemoryService:
    from loopwarden.agents.memory.service import MemoryService
    from loopwarden.settings import Settings

    return MemoryService(Settings().memory)


@click.group()
def memory() -> None:
    """Agent memory in LanceDB (LOOPWARDEN_MEMORY__URI, default .loopwarden/memory).

    These commands work on the store directly; agents publish memory writes to
    the stream (AsyncPublisher.remember), where workers apply them.
    """


@memory.command()
@click.argument("content")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--question", "questions", multiple=True, help="A question it answers.")
@click.option("--entity", "entities", multiple=True, help="An entity it mentions.")
@click.option("--scope", default="default", show_default=True)
@click.option("--type", "memory_type", default="fact", show_default=True)
@click.option(
    "--score",
    "scores",
    multiple=True,
    metavar="DIM=VALUE",
    help="C.O.R.E. P.A.C.T. score, e.g. --score r=0.9 (dims c o r e p a t).",
)
def write(
    content: str,
    tags: tuple[str, ...],
    questions: tuple[str, ...],
    entities: tuple[str, ...],
    scope: str,
    memory_type: str,
    scores: tuple[str, ...],
) -> None:
    """Store a memory (redacted, de-duplicated, conflict-checked) and print the outcome."""
    from loopwarden.schemas.events import envelope
    from loopwarden.schemas.memory import validate_memory_write

    try:
        parsed = {k.strip(): float(v) for k, v in (s.split("=", 1) for s in scores)}
        payload = {
            "content": content,
            "tags": list(tags),
            "potential_questions": list(questions),
            "entity_refs": list(entities),
            "scope": scope,
            "memory_type": memory_type,
            "scores": parsed,
        }
        event = validate_memory_write(envelope(payload))
    except ValueError as exc:  # a --score that is not DIM=NUMBER
        raise click.BadParameter(str(exc), param_hint="--score") from exc
    (outcome,) = _service().writer.write([event], time.time())
    click.echo(codec.dumps(outcome).decode())


@memory.command(name="import")
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--batch", default=10_000, show_default=True, help="Memories per append.")
def import_(source: IO[bytes], batch: int) -> None:
    """Bulk-load memory writes from JSON lines, Parquet or Arrow (a FILE or - for stdin).

    Each JSON line is a memory write as published to the stream ({"event_id",
    "occurred_at", "payload": {"content", …}}); a Parquet or Arrow file (IPC file or
    stream, told by its first bytes) has one row per write, with the columns of an
    Arrow record of the memory-writes topic (event_id, occurred_at, content, and
    optionally scope, tags, embedding, …; see the README). Memories are redacted,
    scored and appended; ids come from event ids, so a second import of a file
    stores nothing again. Duplicates and contradictions are not checked one by one
    (that is the write path's cost): the next maintenance cycle consolidates and
    relates them. Bad lines or rows are reported on stderr and skipped; the exit
    code is then 4.
    """
    from loopwarden.agents.memory.importer import ImportCounts, MemoryImporter
    from loopwarden.cli.exits import Exit
    from loopwarden.errors import EventError
    from loopwarden.schemas.memory import validate_memory_write

    service = _service()
    importer = MemoryImporter(service.table, service.embedder, service.settings)
    data = source.read()
    if data[:4] in (b"PAR1", b"ARRO", b"\xff\xff\xff\xff"):
        counts, bad = _import_table(importer, data, batch)
        click.echo(
            codec.dumps(
                {
                    "imported": counts.imported,
                    "already_stored": counts.already_stored,
                    "rejected": bad,
                }
            ).decode()
        )
        if bad:
            raise click.exceptions.Exit(Exit.BAD_INPUT)
        return
    total, bad = ImportCounts(), 0
    pending: list[Any] = []

    def flush() -> None:
        counts = importer.import_batch(pending, time.time())
        total.imported += counts.imported
        total.already_stored += counts.already_stored
        pending.clear()

    lines = data.splitlines()
    with click.progressbar(lines, label="importing", file=click.get_text_stream("stderr")) as bar:
        for number, line in enumerate(bar, 1):
            if not line.strip():
                continue
            try:
                pending.append(validate_memory_write(codec.loads(line)))
            except (EventError, ValueError) as exc:
                bad += 1
                click.echo(f"line {number}: {exc}", err=True)
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
    click.echo(
        codec.dumps(
            {"imported": total.imported, "already_stored": total.already_stored, "rejected": bad}
        ).decode()
    )
    if bad:
        raise click.exceptions.Exit(Exit.BAD_INPUT)


def _import_table(importer: Any, data: bytes, batch: int) -> tuple[Any, int]:
    """Import a Parquet or Arrow file's rows, ``batch`` at a time; (counts, bad rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from loopwarden.agents.memory.importer import ImportCounts
    from loopwarden.schemas.memory_columns import check_columns

    try:
        if data[:4] == b"PAR1":
            table = pq.read_table(pa.BufferReader(data))
        elif data[:4] == b"ARRO":
            table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
        else:
            table = pa.ipc.open_stream(data).read_all()
    except (pa.ArrowException, OSError) as exc:
        raise click.ClickException(f"not a readable Parquet or Arrow file: {exc}") from exc
    total, bad = ImportCounts(), 0
    starts = range(0, table.num_rows, batch)
    with click.progressbar(starts, label="importing", file=click.get_text_stream("stderr")) as bar:
        for start in bar:
            checked = check_columns(table.slice(start, batch))
            for index, _, error in checked.errors:
                bad += 1
                click.echo(f"row {start + index}: {error}", err=True)
            now = time.time()
            for outcome in importer.import_columns([checked.columns], now)[0]:
                if outcome["status"] == "stored":
                    total.imported += 1
                elif outcome["status"] == "already_stored":
                    total.already_stored += 1
                else:
                    bad += 1
                    click.echo(f"event {outcome['event_id']}: {outcome['reason']}", err=True)
            counts = importer.import_batch([w for _, w in checked.writes], now)
            total.imported += counts.imported
            total.already_stored += counts.already_stored
    return total, bad


@memory.command()
@click.argument("query")
@click.option("--scope", default="default", show_default=True)
@click.option("--budget", default=4096, show_default=True, help="Bytes of content.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines instead of text.")
@click.option(
    "--worker",
    "worker",
    metavar="URL",
    help="Ask a running worker's API (e.g. http://127.0.0.1:6066, what `loopwarden dev` "
    "serves) instead of opening the store here: the light client needs no LanceDB.",
)
def search(query: str, scope: str, budget: int, as_json: bool, worker: str | None) -> None:
    """Ranked memories for QUERY, with scores and matched_by."""
    if worker is not None:
        from loopwarden.streams.client.memory_search import search_memories

        found = search_memories(query, scope=scope, budget_bytes=budget, url=worker)
        _show(found.memories, found.intent, found.content_bytes, as_json)
        return
    _existing_store()
    result = _service().search.search(query, scope=scope, budget_bytes=budget, now=time.time())
    _show(result.memories, result.intent, result.content_bytes, as_json)


def _existing_store() -> None:
    """Refuse, saying where to look, when the configured store is a folder that does not
    exist here (opening it would make an empty one and answer "0 memories")."""
    from loopwarden.errors import ConfigurationError
    from loopwarden.settings import Settings

    uri = Settings().memory.uri
    if "://" in uri or Path(uri).exists():
        return
    raise ConfigurationError(
        f"no memory store at {Path(uri).resolve()}: point LOOPWARDEN_MEMORY__URI at the "
        "store a worker uses (`loopwarden dev` prints it), or ask a running worker: "
        "--worker http://127.0.0.1:6066"
    )


def _show(memories: list[Any], intent: Any, content_bytes: int, as_json: bool) -> None:
    if as_json:
        for item in memories:
            click.echo(codec.dumps(item).decode())
        return
    click.echo(f"intent: {intent}; {len(memories)} memories, {content_bytes} bytes")
    for i, item in enumerate(memories, 1):
        click.echo(
            f"{i}. [{item['relevance']:.3f} rrf {item['rrf']:.4f} "
            f"{'+'.join(item['matched_by'])}] {item['content']}"
        )


@memory.command()
@click.argument("memory_id")
def show(memory_id: str) -> None:
    """One memory with its relations."""
    service = _service()
    rows = service.table.get([memory_id])
    if not rows:
        raise click.ClickException(f"no memory {memory_id!r}")
    row: dict[str, Any] = {
        k: v for k, v in rows[0].items() if k not in ("vector", "question_vector")
    }
    row["relations"] = [
        {k: r[k] for k in ("src", "type", "dst", "confidence")}
        for r in service.table.relations_of([memory_id])
    ]
    click.echo(codec.dumps(row).decode())


@memory.command()
def maintain() -> None:
    """Run one maintenance cycle and print its report."""
    from loopwarden.agents.memory.maintenance import Maintenance

    service = _service()
    report = Maintenance(service.table, service.settings).run(time.time())
    click.echo(codec.dumps(report.to_json_dict()).decode())


@memory.command()
@click.option(
    "--digest",
    is_flag=True,
    help="Add the rows' count and content digest (the same after a rebuild from the topics).",
)
def stats(digest: bool) -> None:
    """Counts by layer, deleted rows and relations."""
    table = _service().table
    counts: dict[str, Any] = {
        "memories": table.count("deleted = false"),
        "long_term": table.count("deleted = false AND layer = 'long_term'"),
        "short_term": table.count("deleted = false AND layer = 'short_term'"),
        "soft_deleted": table.count("deleted = true"),
        "relations": table.relations.count_rows(),
    }
    if digest:
        from loopwarden.storage.memory_digest import content_digest

        found = content_digest(table)
        counts.update(rows=found.rows, digest=found.digest)
    click.echo(codec.dumps(counts).decode())


@memory.command()
@click.option(
    "--into",
    "uri",
    metavar="URI",
    help="Rebuild into this store (a folder or a LanceDB URI) instead of "
    "LOOPWARDEN_MEMORY__URI: build beside the live one, compare, then swap.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a tty).")
def rebuild(uri: str | None, progress: bool | None) -> None:
    """Rebuild a memory store from the memory topics (writes and lessons).

    Reads both topics from their first offset to their end now and applies every
    record as a worker does (redaction, de-duplication, conflict checks). Writes are
    idempotent: a store that holds some of them gets only what it lacks. Prints what
    the store then holds: its memories and their digest (`memory stats --digest`).
    """
    import asyncio
    import sys

    from loopwarden.agents.memory.rebuild import rebuild_memory
    from loopwarden.agents.memory.service import MemoryService
    from loopwarden.settings import Settings
    from loopwarden.storage.memory_digest import content_digest

    settings = Settings()
    if uri:
        settings = settings.model_copy(
            update={"memory": settings.memory.model_copy(update={"uri": uri})}
        )
    service = MemoryService(settings.memory)
    click.echo(
        f"rebuilding {settings.memory.uri} from {settings.kafka.bootstrap_servers}", err=True
    )
    show_bar = progress if progress is not None else sys.stderr.isatty()
    bar: Any = None

    def start_bar(total: int) -> None:
        nonlocal bar
        if show_bar:
            bar = click.progressbar(length=max(total, 1), label="rebuild", file=sys.stderr)
            bar.__enter__()

    try:
        report = asyncio.run(
            rebuild_memory(
                settings,
                service,
                progress=lambda done: bar.update(done) if bar is not None else None,
                on_total=start_bar,
            )
        )
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    click.echo(report.summary(), err=True)
    click.echo(f"{settings.memory.uri}: {content_digest(service.table)}")
