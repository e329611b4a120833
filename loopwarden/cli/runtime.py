"""``loopwarden broker | worker | dev | topics``: running the parts."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from loopwarden.cli.exits import Exit
from loopwarden.cli.options import bootstrap_option, settings_with

if TYPE_CHECKING:
    from loopwarden.settings import Settings


@click.command()
@click.option("--port", type=int, default=0, help="Port on 127.0.0.1 (default: a free one).")
def broker(port: int) -> None:
    """Run the embedded Tansu broker (memory only) on loopback until Ctrl-C."""
    from loopwarden.streams.tools.broker import EmbeddedBroker

    stop = StopRequest()
    with EmbeddedBroker(port or None) as running:
        click.echo(f"broker listening on {running.bootstrap_servers}")
        click.echo(f"export LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS={running.bootstrap_servers}")
        _wait_for_signal(running.process, "broker", stop)


@click.command()
@bootstrap_option
@click.option("--app-id", help="Consumer group / Faust app id [env LOOPWARDEN_APP_ID].")
@click.option("--web-port", type=int, help="Serve Faust's web endpoints on this port.")
def worker(bootstrap_servers: str | None, app_id: str | None, web_port: int | None) -> None:
    """Run a worker: consume actions, detect spins, publish warnings.

    Creates loopwarden's topics if they are missing. Stops on SIGINT/SIGTERM.
    """
    settings = settings_with(bootstrap_servers, app_id=app_id, web_port=web_port)
    if settings.web_port:
        check_port_free(settings.web_port, "--web-port / LOOPWARDEN_WEB_PORT")
    _run_worker(settings)


def check_port_free(port: int, name: str) -> None:
    """One line and exit 1 when ``port`` is taken (Faust would fail later, with a long
    traceback, after the worker had announced its API)."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as exc:
            raise click.ClickException(
                f"port {port} ({name}) is not free: {exc.strerror}; pick another port"
            ) from None


@click.command()
@bootstrap_option
@click.option(
    "--plan",
    "show_plan",
    is_flag=True,
    help="Print the kafka-topics.sh commands that create exactly these topics, with their "
    "configs, and connect to nothing (for a cluster that forbids clients to create topics).",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Create nothing: describe the topics back and exit 1 when one is missing or "
    "differs from the plan (partitions, replicas, configs).",
)
def topics(bootstrap_servers: str | None, show_plan: bool, check_only: bool) -> None:
    """Create loopwarden's topics, then check them as the cluster describes them.

    Partitions, replicas, min.insync.replicas and retention come from LOOPWARDEN_TOPICS__*
    (docs/operations.md, "Running on your Kafka").
    """
    from loopwarden.agents.capabilities import CAPABILITIES
    from loopwarden.streams.tools.topic_plan import create_commands, topic_plan
    from loopwarden.streams.tools.topics import check_topics, ensure_topics

    settings = settings_with(bootstrap_servers)
    if show_plan:
        for line in create_commands(
            topic_plan(settings, CAPABILITIES), settings.kafka.bootstrap_servers
        ):
            click.echo(line)
        return
    if not check_only:
        created = asyncio.run(ensure_topics(settings, CAPABILITIES))
        for name in created:
            click.echo(f"created {name}")
    problems = asyncio.run(check_topics(settings, CAPABILITIES))
    for problem in problems:
        click.echo(f"differs: {problem}", err=True)
    if problems:
        raise click.exceptions.Exit(1)
    click.echo(f"all {len(topic_plan(settings, CAPABILITIES))} topics exist as planned")


@click.command()
@click.option("--port", type=int, default=0, help="Broker port on 127.0.0.1 (default: free).")
@click.option(
    "--web-port",
    type=int,
    default=6066,
    show_default=True,
    envvar="LOOPWARDEN_WEB_PORT",
    help="The worker's HTTP API (guardrails, Claude Code hooks, /loops, /metrics); 0: none "
    "[env LOOPWARDEN_WEB_PORT].",
)
def dev(port: int, web_port: int) -> None:
    """Embedded broker plus one worker, for local development. Ctrl-C stops both."""
    from loopwarden.streams.tools.broker import EmbeddedBroker

    if web_port:
        check_port_free(web_port, "--web-port / LOOPWARDEN_WEB_PORT")
    from loopwarden.agents.capabilities import CAPABILITIES
    from loopwarden.streams.tools.topics import ensure_topics

    stop = StopRequest()
    with EmbeddedBroker(port or None) as running:
        if stop.requested:  # stopped while the broker was starting
            return
        settings = settings_with(running.bootstrap_servers, web_port=web_port or None)
        # the topics exist before the line that points other commands here is printed:
        # an agent started at once finds them (the worker would make them a little later)
        asyncio.run(ensure_topics(settings, CAPABILITIES))
        click.echo(f"broker on {running.bootstrap_servers}; starting a worker…")
        click.echo(f"export LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS={running.bootstrap_servers}")
        if settings.web_port and settings.api.token is None:  # overrides need a token
            api = settings.api.model_copy(update={"overrides_enabled": False})
            settings = settings.model_copy(update={"api": api})
        if settings.web_port:
            base = f"http://127.0.0.1:{settings.web_port}"
            click.echo(
                f"worker API on {base}: loop health {base}/loops, Prometheus {base}/metrics, "
                "memory search (`loopwarden memory search --worker "
                f"{base} QUESTION`), guardrails and Claude Code hooks (`loopwarden hooks`)"
            )
        store = settings.memory.uri
        where = store if "://" in store else str(Path(store).resolve())
        click.echo(f"memory store: {where} (LOOPWARDEN_MEMORY__URI)")
        if stop.requested:
            return
        process = start_worker_process(settings)
        try:
            _wait_for_signal(process, "worker", stop)
        finally:
            stop_process(process)


def _run_worker(settings: Settings) -> None:
    from loopwarden.worker import (
        run_worker,  # imports faust: keep other commands fast
    )

    run_worker(settings)  # a LoopwardenError becomes one line and an exit code


def start_worker_process(
    settings: Settings, log_path: str | None = None
) -> subprocess.Popen[bytes]:
    """Start ``loopwarden worker`` as a child process with exactly ``settings``."""
    from loopwarden.settings import settings_env
    from loopwarden.streams.tools.children import die_with_parent

    env = {**os.environ, **settings_env(settings)}
    output = open(log_path, "ab") if log_path else None  # noqa: SIM115
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "loopwarden", "worker"],
            env=env,
            stdout=output or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if output else None,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent(),  # one syscall in the child, no locks
        )
    finally:
        if output:
            output.close()


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 15.0) -> int | None:
    """Stop a child we started, by its pid: SIGTERM, then SIGKILL."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout_s)
    return process.returncode


class StopRequest:
    """SIGTERM caught from the moment a command starts its parts: a stop asked for while
    they are still starting is kept until the command can act on it (SIGTERM's default
    action would end the command at once, with exit 143, before it stops its children)."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.requested = True


def _wait_for_signal(process: subprocess.Popen[bytes] | None, name: str, stop: StopRequest) -> None:
    """Wait for Ctrl-C or SIGTERM; fail with one line if ``process`` exits first."""
    try:
        while not stop.requested:
            if process is not None and process.poll() is not None:
                raise click.ClickException(f"the {name} exited with code {process.returncode}")
            time.sleep(0.2)
    except KeyboardInterrupt:
        raise click.exceptions.Exit(Exit.INTERRUPTED) from None
