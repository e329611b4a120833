"""``kill -USR1 <worker pid>``: log what the worker is doing, for a stalled worker's post-mortem.

A worker that stops producing with every thread idle leaves nothing in a
thread dump (py-spy shows an event loop waiting in ``select``): the state that
matters is asyncio's and the consumer's. On SIGUSR1 the worker logs, at
WARNING under ``loopwarden.diagnostics``:

- per input partition: the consumer's position, the last offset read, the
  committed offset and the acked offsets not yet committed; paused and active partitions;
- the output sink's pending records and latched delivery error;
- each agent runner's processed, failed and retried counts;
- every asyncio task with its innermost frames.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

from loopwarden.streams.runtime.workarounds import consumer_state, partition_offsets

log = logging.getLogger("loopwarden.diagnostics")


def register_diagnostics(app: Any) -> None:
    """Log :func:`describe` on SIGUSR1 once the worker's event loop runs."""

    @app.task
    async def install_diagnostics_handler() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, lambda: log.warning("%s", describe(app)))


def describe(app: Any) -> str:
    """A multi-line account of the consumer, the sink, the runners and the tasks."""
    lines = ["worker diagnostics (SIGUSR1)"]
    lines += _consumer_lines(app)
    sink = app.sink
    lines.append(
        f"sink: {sink.pending_records} pending record(s), {sink.sent} sent, "
        f"delivery error: {sink.delivery_error!r}"
    )
    for runner in app.runners.values():
        lines.append(
            f"runner {runner.name}: processed {runner.processed}, failed {runner.failed}, "
            f"retries {runner.retries}, in {runner.messages} consumed message(s)"
        )
    lines += _task_lines()
    return "\n".join(lines)


def _consumer_lines(app: Any) -> list[str]:
    consumer = app.consumer
    state = consumer_state(consumer)
    lines = [
        f"consumer: flow active {app.flow_control.is_active()}, "
        f"paused {state.paused}, buffered {state.buffered}, unacked messages {state.unacked}, "
        f"stale fetched records dropped {getattr(consumer, 'stale_records', 0)}"
    ]
    try:
        assignment = sorted(consumer.assignment())
    except Exception as exc:  # not started or mid-rebalance
        return [*lines, f"consumer assignment unavailable: {exc!r}"]
    for tp in assignment:
        offsets = partition_offsets(consumer, tp)
        acked = offsets.acked
        lines.append(
            f"  {tp.topic}[{tp.partition}]: read {offsets.read}, "
            f"committed {offsets.committed}, "
            f"acked waiting {len(acked)}" + (f" ({acked[0]}..{acked[-1]})" if acked else "")
        )
    return lines


def _task_lines(frames: int = 4) -> list[str]:
    lines = []
    for task in asyncio.all_tasks():
        stack = task.get_stack(limit=frames)
        where = " <- ".join(
            f"{f.f_code.co_name}({f.f_code.co_filename.rsplit('/', 2)[-1]}:{f.f_lineno})"
            for f in reversed(stack)
        )
        lines.append(f"task {task.get_name()}: {where or 'not started'}")
    return lines
