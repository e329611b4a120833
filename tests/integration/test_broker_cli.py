"""`loopwarden broker`: starts Tansu on loopback, prints where, stops on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from loopwarden.streams.tools.broker import free_port

pytestmark = pytest.mark.integration


async def test_broker_command_serves_kafka_and_stops_cleanly():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "broker", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=os.environ.copy(),
    )
    try:
        first_line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 20)
        assert first_line.decode().strip() == f"broker listening on 127.0.0.1:{port}"
        admin = AIOKafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}")
        await admin.start()
        try:
            assert isinstance(await admin.list_topics(), list)
        finally:
            await admin.close()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(15)
    assert code == 0


def test_broker_on_a_port_in_use_says_so_and_fails():
    """Issue 7: it printed "listening" although the broker had died, then waited forever."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "loopwarden", "broker", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"Error: port {port} on 127.0.0.1 is in use: choose another --port"
    )


async def test_dev_has_made_the_topics_when_it_prints_where_the_broker_is():
    """Found walking the README on a fresh clone: the tour, started as soon as ``dev``
    printed its export line, failed with "topic 'loopwarden.warnings' does not exist"
    (the worker made the topics a few seconds later)."""
    from loopwarden import Settings, WarningSubscriber
    from loopwarden.cli.runtime import stop_process

    process = start_dev()
    try:
        export = ""
        while not export.startswith("export "):
            line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 60)
            assert line, "dev ended before printing its export line"
            export = line.decode()
        servers = export.strip().split("=", 1)[1]
        settings = Settings().model_copy(
            update={"kafka": Settings().kafka.model_copy(update={"bootstrap_servers": servers})}
        )
        async with WarningSubscriber(settings, loop_id="tour-1"):  # raised before the fix
            pass
    finally:
        assert stop_process(process) == 0


def start_dev() -> subprocess.Popen[bytes]:
    """``loopwarden dev`` as a reader starts it (no LOOPWARDEN_ settings), no web port."""
    return subprocess.Popen(
        [sys.executable, "-m", "loopwarden", "dev", "--web-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={k: v for k, v in os.environ.items() if not k.startswith("LOOPWARDEN_")},
        start_new_session=True,
    )


def _children(pid: int) -> list[int]:
    path = f"/proc/{pid}/task/{pid}/children"
    with open(path) as handle:
        return [int(child) for child in handle.read().split()]


def test_a_sigterm_while_dev_is_still_starting_stops_it_cleanly():
    """Found by the test above failing under load with exit 143: ``dev`` caught SIGTERM
    only once its worker had started, so a stop asked for while the broker was still
    starting killed it outright. Here SIGTERM comes as soon as its broker process
    exists, long before the worker (topics are made in between)."""
    from loopwarden.cli.runtime import stop_process

    process = start_dev()
    try:
        children: list[int] = []
        while not children:  # the broker is a child of dev's: it is starting now
            assert process.poll() is None, process.stdout.read().decode()
            children = _children(process.pid)
        broker = children[0]
    finally:
        code = stop_process(process, timeout_s=60)
    output = process.stdout.read().decode()
    assert code == 0, output
    assert "starting a worker" not in output  # stopped before it started one
    assert not os.path.exists(f"/proc/{broker}") or _zombie_or_gone(broker)


def _zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True
