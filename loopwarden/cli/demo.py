"""``loopwarden demo``: broker, worker and simulated agents, start to finish."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import click

from loopwarden.cli.exits import Exit
from loopwarden.cli.options import settings_with
from loopwarden.cli.runtime import start_worker_process, stop_process


@click.command()
@click.option(
    "--timeout",
    type=float,
    default=90.0,
    show_default=True,
    help="Give up waiting for warnings after this many seconds.",
)
@click.option(
    "--keep-logs",
    is_flag=True,
    help="Keep the broker and worker logs (and the demo's data) and print where.",
)
def demo(timeout: float, keep_logs: bool) -> None:
    """Run the whole path on the embedded broker and print the warnings.

    Starts Tansu on a free loopback port and a worker process, publishes
    simulated agent loops (healthy, spinning, stuck editing, failing, and a family of
    delegated runs handing one task around) plus two bad events, prints each warning
    with the timeline text an agent would inject and each dead letter, then stops
    everything it started. Its temporary folder (logs, memory) is removed afterwards
    unless --keep-logs is given or the demo failed.
    """
    from loopwarden.demo import run_demo
    from loopwarden.streams.tools.broker import EmbeddedBroker
    from loopwarden.streams.tools.topics import ensure_topics

    logs = Path(tempfile.mkdtemp(prefix="loopwarden-demo-"))
    started = time.monotonic()
    with EmbeddedBroker(log_path=logs / "broker.log") as broker:
        settings = settings_with(broker.bootstrap_servers, app_id="loopwarden-demo")
        settings = settings.model_copy(
            update={
                "data_dir": str(logs),
                "memory": settings.memory.model_copy(update={"uri": str(logs / "memory")}),
            }
        )
        click.echo(f"embedded broker (Tansu) on {broker.bootstrap_servers}")
        asyncio.run(ensure_topics(settings))
        worker = start_worker_process(settings, log_path=str(logs / "worker.log"))
        try:  # from here on, however the demo ends, the worker is stopped
            click.echo(f"worker started (pid {worker.pid}); it joins its group in a few seconds")
            result = asyncio.run(run_demo(settings, click.echo, timeout_s=timeout))
        finally:
            code = stop_process(worker)
    elapsed = time.monotonic() - started
    click.echo("")
    for line in result.summaries:
        click.echo(line)
    click.echo(
        f"\n{len(result.received)}/{result.expected} detector warnings received, each as "
        f"the detectors give it offline; {len(result.other)} from the reflection analyst "
        f"({result.analyst_expected} expected without a model); {result.dead_letters} dead "
        f"letters; in {elapsed:.1f}s (worker exit code {code})"
    )
    if keep_logs or not result.ok:
        click.echo(f"logs and data kept in {logs}")
    else:
        shutil.rmtree(logs, ignore_errors=True)
    if not result.ok:
        click.echo(f"missing: {', '.join(result.missing) or 'dead letters'}", err=True)
        raise click.exceptions.Exit(Exit.ERROR)
