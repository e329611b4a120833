"""``loopwarden experience list | show | match | stats | maintain``: the experience store.

Works on the store directly (``memory.uri``, table ``experience.table``); agents
reach it through the stream (``start_task``/``end_task``). LanceDB and the
embedder are loaded only when a command runs.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from loopwarden.schemas import codec

if TYPE_CHECKING:
    from loopwarden.agents.experience.store import ExperienceStore


def _store() -> ExperienceStore:
    from loopwarden.agents.experience.store import ExperienceStore
    from loopwarden.settings import Settings

    settings = Settings()
    return ExperienceStore(settings.experience, settings.memory)


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")


def _echo_json(value: Any) -> None:
    click.echo(codec.dumps(value).decode())


@click.group()
def experience() -> None:
    """Task experience in LanceDB (seed 004): what agents learned to do directly.

    Agents start and end tasks on the stream (loopwarden.streams.client.tasks.start_task /
    end_task); workers with the experience role answer with advice and learn.
    """


@experience.command(name="list")
@click.option("--app", help="Only this app's experiences.")
@click.option("--failed", is_flag=True, help="Only negative experiences (what failed).")
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_(app: str | None, failed: bool, limit: int, as_json: bool) -> None:
    """Experiences, most used first."""
    columns = [
        "id",
        "task_description",
        "app_name",
        "outcome",
        "total_steps",
        "success_rate",
        "use_count",
        "last_used_at",
    ]
    rows = _store().table.all(columns)
    if app:
        rows = [r for r in rows if (r["app_name"] or "").casefold() == app.casefold()]
    if failed:
        rows = [r for r in rows if r["outcome"] == "failure"]
    rows.sort(key=lambda r: (-r["use_count"], -r["last_used_at"]))
    for row in rows[:limit]:
        if as_json:
            _echo_json(row)
            continue
        click.echo(
            f"{row['id'][:12]}  {row['outcome']:<7} {row['success_rate']:.2f}  "
            f"used {row['use_count']:>3}  {row['total_steps']:>3} steps  "
            f"{_when(row['last_used_at'])}  [{row['app_name'] or '-'}] {row['task_description']}"
        )
    if not rows:
        click.echo("no experiences yet", err=True)


@experience.command()
@click.argument("experience_id")
def show(experience_id: str) -> None:
    """One experience as JSON (a unique id prefix is enough)."""
    from loopwarden.storage.memory_schema import quote

    store = _store()
    rows = store.table.where(f"id LIKE {quote(experience_id + '%')}", limit=2)
    if len(rows) != 1:
        which = "no experience" if not rows else "more than one experience"
        raise click.ClickException(f"{which} with id {experience_id!r}")
    _echo_json(rows[0])


@experience.command()
@click.argument("task_description")
@click.option("--intent")
@click.option("--app", "app_name")
@click.option("--app-version")
@click.option("--json", "as_json", is_flag=True, help="The advice as JSON.")
def match(
    task_description: str,
    intent: str | None,
    app_name: str | None,
    app_version: str | None,
    as_json: bool,
) -> None:
    """The advice a task start would get now (nothing is recorded)."""
    from loopwarden.schemas.tasks import TaskSpec

    spec = TaskSpec(
        task_description=task_description,
        intent=intent,
        app_name=app_name,
        app_version=app_version,
    )
    result = _store().match(spec, "cli", "cli", time.time())
    if as_json:
        _echo_json(result.advice)
        return
    click.echo(result.advice["timeline_message"])
    click.echo(f"({result.seconds * 1000:.1f} ms; scores {result.match.scores})", err=True)


@experience.command()
def stats() -> None:
    """Totals (seed 004 §6): experiences, patterns, reuse, replay success, size."""
    _echo_json(_store().stats())


@experience.command()
def maintain() -> None:
    """Generalise patterns, remove decayed experiences, build indexes (as a worker's
    leader does every experience.maintenance_interval_s)."""
    report = _store().maintain(time.time())
    _echo_json(report.__dict__)
