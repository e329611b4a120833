"""``loopwarden demo``: broker, worker and simulated agents, start to finish."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import click

from loopwarden.cli.exits import Exit
from loopwarden.cli.options import settings_with
from loopwarden.cli.runtime import start_worker_process, stop_process


async def _unless_it_exits(run: Any, worker: subprocess.Popen[bytes], log: Path) -> Any:
    """``run``'s result, or a one-line failure as soon as the worker exits (the demo
    would otherwise wait out its timeout for warnings nobody sends)."""
    task = asyncio.create_task(run)
    while not task.done():
        if worker.poll() is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise click.ClickException(
                f"the worker exited with code {worker.returncode}: {last_error(log)} "
                f"(its log: {log})"
            )
        await asyncio.wait({task}, timeout=0.5)
    return task.result()


def last_error(log: Path) -> str:
    """The line of a log that says what went wrong: the last one naming an error, else
    the last line."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    except OSError:
        return "no log"
    lines = [line for line in lines if line]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or ["an empty log"])[-1][:300]


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
    from loopwarden.agents.capabilities import CAPABILITIES
    from loopwarden.demo import LEGEND, run_demo
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
        asyncio.run(ensure_topics(settings, CAPABILITIES))
        worker = start_worker_process(settings, log_path=str(logs / "worker.log"))
        try:  # from here on, however the demo ends, the worker is stopped
            click.echo(f"worker started (pid {worker.pid}); it joins its group in a few seconds")
            click.echo(textwrap.fill(LEGEND, width=88, subsequent_indent="  "))
            demo_run = run_demo(settings, click.echo, timeout_s=timeout)
            result = asyncio.run(_unless_it_exits(demo_run, worker, logs / "worker.log"))
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
