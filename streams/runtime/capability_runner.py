"""The one way a capability becomes a Faust agent.

:func:`run_capability` declares the capability's input topics (bundled when it
says so) and the topics of its named outputs, makes its
:class:`~loopwarden.streams.runtime.runner.AgentRunner` (the error policy, pauses,
retries, dead letters, metrics) and the Faust agent that feeds every record — or
batch — to the capability's handler. The handler decodes and processes through the
capability's pure processor and emits through ``app.outputs``; it never names a
topic nor deals with Faust.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopwarden.streams.runtime.app import LoopwardenApp
from loopwarden.streams.runtime.capability import Batches, Capability
from loopwarden.streams.runtime.runner import BatchHandler, Handler
from loopwarden.streams.runtime.workarounds import take_events_bounded


def declare_topics(app: LoopwardenApp, capability: Capability) -> Any:
    """The capability's input stream; its outputs' topics are declared so Faust creates
    them (they are written through the sink, not Faust; the dead-letter topic is the
    app's, see ``create_app``)."""
    for output in capability.outputs:
        app.raw_topic(app.outputs.topic(output))
    names = capability.inputs(app.loopwarden.topics)
    return app.raw_topic(*names, bundled=capability.bundled) if names else None


def run_capability(
    app: LoopwardenApp,
    capability: Capability,
    handle: Handler | BatchHandler,
    *,
    batches: Batches | None = None,
    on_error: Callable[[], object] | None = None,
    concurrency: int = 1,
) -> Any:
    """Declare ``capability``'s topics and its Faust agent, which runs ``handle`` over
    every record (or, with ``batches``, every list of records) under the error policy."""
    source = declare_topics(app, capability)
    if source is None:
        raise ValueError(f"{capability.agent} reads no topic: it has no stream to run")
    runner = app.runner(capability.agent, on_error=on_error)

    async def agent(stream: Any) -> None:
        if batches is None:
            await runner.run(stream, handle)  # type: ignore[arg-type]
        else:
            taken = take_events_bounded(
                stream,
                batches.max_records,
                batches.max_bytes,
                batches.within_s,
                commit=batches.commit,
            )
            await runner.run_batches(taken, handle)  # type: ignore[arg-type]

    agent.__name__ = agent.__qualname__ = capability.agent
    return app.agent(source, name=capability.agent, concurrency=concurrency)(agent)
