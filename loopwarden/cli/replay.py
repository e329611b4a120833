"""``loopwarden replay``: reproduce the workers' decisions from the topics and compare.

Reads the actions and loop-completions topics with its own consumer (never the
workers' group), re-runs the record processors the workers run, reads what the
workers recorded on the warnings, reflection-requests, decisions and
dead-letter topics, and reports every difference with its explanation.
"""

from __future__ import annotations

import asyncio
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from loopwarden.cli.exits import Exit
from loopwarden.cli.options import bootstrap_option, settings_with

if TYPE_CHECKING:
    from loopwarden.agents.audit.compare import AuditReport
    from loopwarden.agents.audit.driver import AuditResult

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SPEC = re.compile(r"^(?:(actions|completions):)?(\d+):(\d*)-(\d*)$")


def parse_time(text: str, now: datetime | None = None) -> int:
    """ISO-8601 (``2026-11-20T10:00:00Z``), ``now``, or relative (``90m`` ago) → epoch ms."""
    now = now or datetime.now(UTC)
    text = text.strip()
    if text == "now":
        return int(now.timestamp() * 1000)
    relative = _RELATIVE.match(text)
    if relative:
        ago = timedelta(seconds=float(relative[1]) * _UNITS[relative[2]])
        return int((now - ago).timestamp() * 1000)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither ISO-8601 (2026-11-20T10:00:00Z) nor relative (30m, 2h, 7d)",
            param_hint="--since/--until",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_offsets(specs: tuple[str, ...]) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """``[actions|completions:]PARTITION:START-END`` (either bound may be empty), repeatable
    and comma-separated, → ``{(input, partition): (start, end)}``."""
    ranges: dict[tuple[str, int], tuple[int | None, int | None]] = {}
    for spec in (part.strip() for text in specs for part in text.split(",")):
        match = _SPEC.match(spec)
        if match is None:
            raise click.BadParameter(
                f"{spec!r}: expected [actions|completions:]PARTITION:START-END, e.g. 0:120-480",
                param_hint="--offsets",
            )
        name, partition, start, end = match.groups()
        first, stop = (int(start) if start else None), (int(end) if end else None)
        if first is not None and stop is not None and stop < first:
            raise click.BadParameter(
                f"{spec!r}: the end offset is before the start", param_hint="--offsets"
            )
        ranges[(name or "actions", int(partition))] = (first, stop)
    return ranges


@click.command()
@bootstrap_option
@click.option("--since", help="Range start: ISO-8601 time or relative (30m, 2h, 7d ago).")
@click.option("--until", help="Range end (exclusive), same forms; default: now.")
@click.option(
    "--offsets",
    "offset_specs",
    multiple=True,
    metavar="[INPUT:]P:START-END",
    help="Offsets of input partitions, e.g. 0:120-480,completions:3:0- (repeatable).",
)
@click.option("--loop", "loop_id", help="Only this loop (and its family): reads its partition.")
@click.option(
    "--input",
    "inputs",
    type=click.Choice(["all", "actions", "completions"]),
    default="all",
    show_default=True,
    help="Which input topics to replay.",
)
@click.option(
    "--rebuild",
    type=click.Choice(["history", "none"]),
    default="history",
    show_default=True,
    help="history: replay every earlier record first, so loops that began before the range "
    "have their state; none: start the range with empty state.",
)
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="NAME=VALUE",
    help="Replay with another setting, e.g. detection.spin_threshold=4 (repeatable).",
)
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Replay with the settings of a TOML or JSON file (nested like the env names).",
)
@click.option(
    "--current-settings",
    is_flag=True,
    help="Replay with this shell's settings (LOOPWARDEN_*) instead of the ones the recorded "
    "outputs carry in produced_by (the deployment's, the default); --set and --config apply "
    "on top of either.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
@click.option("--emit-to", metavar="TOPIC", help="Publish the reproduced outputs to TOPIC.")
@click.option("--show", default=50, show_default=True, help="Differences listed (0: all).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a tty).")
def replay(
    bootstrap_servers: str | None,
    since: str | None,
    until: str | None,
    offset_specs: tuple[str, ...],
    loop_id: str | None,
    inputs: str,
    rebuild: str,
    assignments: tuple[str, ...],
    config: Path | None,
    current_settings: bool,
    as_json: bool,
    emit_to: str | None,
    show: int,
    progress: bool | None,
) -> None:
    """Reproduce every warning, reflection request and rerun decision for a range of the
    input topics, and compare them with what the workers recorded.

    \b
    Without a range the whole topics are replayed. Examples:
      loopwarden replay --since 2h                     the last two hours
      loopwarden replay --loop checkout-42             one loop, whole history
      loopwarden replay --offsets 0:1200-1500          a slice of partition 0
      loopwarden replay --since 7d --set detection.spin_threshold=4
                                                       what would N = 4 have done?

    The replay decides with the settings the recorded outputs carry (produced_by),
    whatever this shell's LOOPWARDEN_* say; --current-settings uses the shell's.

    Exit code 0 when the replay agrees with the recording, 6 when anything differs
    (each difference is listed with its explanation), 5 when the scope held nothing
    to audit (no event of --loop, a range with no record). Outputs older than what
    their topic still holds (its retention deleted them) are counted apart, not as
    differences.
    """
    # the arguments first: a wrong one is reported before seconds of imports
    since_ms = parse_time(since) if since else None
    until_ms = parse_time(until) if until else None
    offsets = parse_offsets(offset_specs) if offset_specs else None
    if since_ms and until_ms and until_ms <= since_ms:
        raise click.BadParameter("must be after --since", param_hint="--until")
    from loopwarden.errors import ConfigurationError
    from loopwarden.settings.overrides import with_overrides

    settings = settings_with(bootstrap_servers)
    try:
        with_overrides(settings, assignments, config)  # checked now, applied on the base
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc), param_hint="--set/--config") from None
    from loopwarden.agents.audit.driver import INPUTS, AuditScope, emit

    def adjust(base: Any) -> Any:
        return with_overrides(base, assignments, config)

    scope = AuditScope(
        inputs=INPUTS if inputs == "all" else (inputs,),
        loop_id=loop_id,
        offsets=offsets,
        since_ms=since_ms,
        until_ms=until_ms,
        rebuild=rebuild == "history",
    )
    show_bar = progress if progress is not None else sys.stderr.isatty()
    result = asyncio.run(_run(settings, scope, show_bar, not current_settings, adjust))
    if emit_to:
        sent = asyncio.run(emit(settings, result, emit_to))
        click.echo(f"published {sent} reproduced output(s) to {emit_to}", err=True)
    report = result.report
    if as_json:
        from loopwarden.schemas import codec

        click.echo(codec.dumps(report.to_json_dict()).decode())
    else:
        click.echo(render(report, show))
    if report.empty:
        raise click.exceptions.Exit(Exit.NOTHING_RECEIVED)
    if not report.agree:
        raise click.exceptions.Exit(Exit.DIFFERS)


async def _run(
    settings: Any, scope: Any, show_bar: bool, recorded_settings: bool, adjust: Any
) -> AuditResult:
    from loopwarden.agents.audit.driver import run_audit

    bar: Any = None

    def started(total: int) -> None:
        nonlocal bar
        bar = click.progressbar(length=max(total, 1), label="replay", file=sys.stderr)
        if show_bar:
            bar.__enter__()

    def advance(count: int) -> None:
        if show_bar and bar is not None:
            bar.update(count)

    try:
        return await run_audit(settings, scope, advance, started, recorded_settings, adjust)
    finally:
        if show_bar and bar is not None:
            bar.__exit__(None, None, None)


_COLUMNS = ("inputs", "reproduced", "recorded", "matched", "missing", "unexpected", "changed")


def render(report: AuditReport, show: int = 50) -> str:
    """The report for people: a table per loop, the totals, the differences, the notes."""
    rows = sorted(report.rows.values(), key=lambda r: r.loop_id)
    width = max([len("loop"), *(len(r.loop_id) for r in rows)]) if rows else 4
    width = min(width, 40)
    head = "loop".ljust(width) + "".join(f"{c:>11}" for c in (*_COLUMNS, "dup"))
    lines = [head, "-" * len(head)]
    for row in [*rows, report.totals()]:
        if row.loop_id == "(all)":
            lines.append("-" * len(head))
        values = [getattr(row, c) for c in _COLUMNS] + [row.duplicates]
        lines.append(row.loop_id[:width].ljust(width) + "".join(f"{v:>11}" for v in values))
    differences = report.differences
    explained = sum(d.explained for d in differences)
    verdict = (
        "NOTHING AUDITED: no input event and no recorded output in the scope "
        "(check --loop, --since/--until and --offsets)"
        if report.empty
        else "AGREE: every recorded output was reproduced, nothing else"
        if report.agree
        else f"DIFFER: {len(differences)} difference(s), {explained} explained, "
        f"{len(differences) - explained} unexplained"
    )
    lines.append(
        "inputs: events replayed (actions, reflection requests, loop completions); "
        "reproduced: outputs the replay made; recorded: outputs on the topics"
    )
    lines += ["", verdict]
    listed = differences if not show else differences[:show]
    for d in listed:
        mark = "explained" if d.explained else "UNEXPLAINED"
        lines.append(f"  {d.status:<10} {d.loop_id} {d.position}: {d.summary}")
        lines.append(f"  {'':<10} → {mark}: {d.explanation}")
    if len(listed) < len(differences):
        lines.append(f"  … {len(differences) - len(listed)} more (--show 0 lists all)")
    if report.notes:
        lines += ["", "Notes:"] + [f"  - {note}" for note in report.notes]
    return "\n".join(lines)
