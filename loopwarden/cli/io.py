"""``loopwarden publish | tail | detect``: events in, warnings out.

The Kafka client, the schemas and the detectors are imported inside the
commands that use them, so ``--help`` and the other commands start fast.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import IO, TYPE_CHECKING, Any

import click

from loopwarden.cli.broker_watch import BrokerWatch
from loopwarden.cli.exits import Exit
from loopwarden.cli.options import bootstrap_option, settings_with
from loopwarden.errors import NothingReceivedError
from loopwarden.readable import render

if TYPE_CHECKING:
    from loopwarden.settings import Settings
    from loopwarden.streams.client.subscriber import TopicSubscriber


@click.command()
@click.argument("source", type=click.File("rb"), default="-")
@bootstrap_option
@click.option("--no-batching", is_flag=True, help="One record per event (no client batching).")
def publish(source: IO[bytes], bootstrap_servers: str | None, no_batching: bool) -> None:
    """Publish action events from JSON lines (a FILE or - for stdin).

    Each line is a full envelope ({"event_id", "loop_id", "occurred_at", "payload"})
    or the flat form {"loop_id": …, "action_type": …, <payload fields>}. Bad lines
    are reported on stderr and skipped; the good ones are published, and the exit
    code is 4 if any line was bad.

    Ids: a line without "event_id" gets one of its own, new at every run (RUN-line-N),
    so publishing a file twice publishes its events twice. Give each event its own
    "event_id" to make publishing again idempotent: the worker skips an id its loop
    has already applied, logs the first such skip per loop and counts every one
    (metric loopwarden.events.duplicates).
    """
    settings = settings_with(bootstrap_servers)
    bad = asyncio.run(_publish(settings, source, batching=not no_batching))
    if bad:
        raise click.exceptions.Exit(Exit.BAD_INPUT)


async def _publish(settings: Settings, source: IO[bytes], batching: bool) -> int:
    from loopwarden.cli.json_input import input_lines, line_events, report
    from loopwarden.cli.options import now, publish_id_prefix
    from loopwarden.streams.client.publisher import AsyncPublisher, encode_event

    bad = 0
    prefix = publish_id_prefix()
    limit = settings.limits.max_event_bytes
    async with AsyncPublisher(settings, batching=batching) as publisher:
        for line_no, line in input_lines(source):
            read = line_events(line, line_no, limit, now(), prefix)
            bad += report(line_no, read)
            for event in read.events:
                key = event.payload.root(event.loop_id)  # a family on its root's partition
                publisher.enqueue(key, event.event_id, encode_event(event))
        await publisher.flush()
        click.echo(f"published {publisher.published} event(s), {bad} bad line(s)", err=True)
    return bad


TAIL_TOPICS = (
    "warnings",
    "requests",
    "decisions",
    "reflections",
    "fleet-warnings",
    "memory-outcomes",
    "dead-letters",
    "all",
)


@click.command()
@bootstrap_option
@click.option(
    "--loop",
    "loop_id",
    help="Only this loop id (its family for decisions; the family's root loop id for "
    "fleet warnings).",
)
@click.option(
    "--fleet",
    is_flag=True,
    help="Fleet warnings as they come: findings about a whole family of delegated loops "
    "(the same as --topic fleet-warnings).",
)
@click.option("--scope", help="memory-outcomes: only this memory scope.")
@click.option(
    "--topic",
    type=click.Choice(TAIL_TOPICS),
    default="warnings",
    show_default=True,
    help="Which output topic; all: every one of them at once (memory outcomes only "
    "without --loop, as they are keyed by scope).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Human text or JSON lines.",
)
@click.option("--from-beginning", is_flag=True, help="Start at the oldest record, not the end.")
@click.option("--limit", type=int, default=0, help="Stop after this many records (0: no limit).")
@click.option(
    "--timeout",
    type=float,
    default=0.0,
    help="Stop after this many seconds (0: never); exit code 5 if nothing came.",
)
@click.option(
    "--give-up-after",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="When the broker stops answering, say so, keep retrying, and exit with code 3 "
    "after this many seconds of silence (0: retry forever).",
)
def tail(
    bootstrap_servers: str | None,
    loop_id: str | None,
    fleet: bool,
    scope: str | None,
    topic: str,
    fmt: str,
    from_beginning: bool,
    limit: int,
    timeout: float,
    give_up_after: float,
) -> None:
    """Follow loopwarden's outputs as they arrive: warnings (default), reflection requests,
    rerun decisions, the analyst's reflections, fleet warnings, memory outcomes, dead
    letters, or all."""
    settings = settings_with(bootstrap_servers)
    if fleet:
        topic = "fleet-warnings"
    names = [t for t in TAIL_TOPICS[:-1]] if topic == "all" else [topic]
    if topic == "all" and loop_id is not None:
        names.remove("memory-outcomes")
    subscribers = [_subscriber(settings, name, loop_id, scope, from_beginning) for name in names]
    shown = 0
    try:
        watch = BrokerWatch(
            subscribers[0].probe_broker,
            settings.kafka.bootstrap_servers,
            give_up_after,
            lambda line: click.echo(line, err=True),
        )
        where = f" of loop {loop_id}" if loop_id else (f" of scope {scope}" if scope else "")
        start = "from the oldest record" if from_beginning else "from now on"
        following = (
            f"tail: following {', '.join(names)}{where} at {settings.kafka.bootstrap_servers}, "
            f"{start}; Ctrl-C to stop"
        )
        shown = asyncio.run(_tail(subscribers, fmt, limit, timeout, watch, following))
    except KeyboardInterrupt:
        raise click.exceptions.Exit(Exit.INTERRUPTED) from None
    if timeout and not shown:
        raise NothingReceivedError(f"no {topic} within {timeout:g} s")


def _subscriber(
    settings: Settings, name: str, loop_id: str | None, scope: str | None, from_beginning: bool
) -> TopicSubscriber[Any]:
    from loopwarden.streams.client import json_subscribers as json_subs
    from loopwarden.streams.client import subscriber as subs

    if name == "memory-outcomes":
        return json_subs.MemoryOutcomeSubscriber(
            settings, scope=scope, from_beginning=from_beginning
        )
    kinds: dict[str, Any] = {
        "warnings": subs.WarningSubscriber,
        "requests": subs.ReflectionRequestSubscriber,
        "decisions": json_subs.DecisionSubscriber,
        "reflections": json_subs.AnalysisSubscriber,
        "fleet-warnings": json_subs.FleetWarningSubscriber,
        "dead-letters": subs.DeadLetterSubscriber,
    }
    subscriber: TopicSubscriber[Any] = kinds[name](
        settings, loop_id=loop_id, from_beginning=from_beginning
    )
    return subscriber


async def _tail(
    subscribers: list[TopicSubscriber[Any]],
    fmt: str,
    limit: int,
    timeout: float,
    watch: BrokerWatch,
    following: str,
) -> int:
    """Print what the subscribers read; ``following`` is said on stderr once all of them
    have joined (the wait is silent otherwise)."""
    shown = 0
    done = asyncio.Event()
    waiting_for = len(subscribers)

    async def follow(subscriber: TopicSubscriber[Any]) -> None:
        nonlocal shown, waiting_for
        async with subscriber:
            waiting_for -= 1
            if not waiting_for:
                click.echo(following, err=True)
            async for item in subscriber:
                if done.is_set():
                    return
                click.echo(render(item, fmt), nl=fmt == "text")
                shown += 1
                if limit and shown >= limit:
                    done.set()
                    return

    async def all_of_them() -> None:
        followers = asyncio.gather(*(follow(s) for s in subscribers))
        stop = asyncio.ensure_future(done.wait())
        watching = asyncio.ensure_future(watch.run())
        try:
            waiting: list[asyncio.Future[Any]] = [followers, stop, watching]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if watching.done():
                watching.result()  # the broker silent for too long
            if followers.done():
                followers.result()  # a subscriber's error
        finally:
            for task in (followers, stop, watching):
                task.cancel()
            await asyncio.gather(followers, stop, watching, return_exceptions=True)

    if timeout:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_of_them(), timeout)
    else:
        await all_of_them()
    return shown
