"""Memories an agent can search (issue 59, item 3): written through the stream, read
back from the light client through a worker's API, ranked as the analyst reads them."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from loopwarden.errors import LoopwardenError
from loopwarden.settings import Settings
from loopwarden.streams.client.json_subscribers import MemoryOutcomeSubscriber
from loopwarden.streams.client.memory_search import search_memories
from loopwarden.streams.client.publisher import AsyncPublisher
from loopwarden.streams.tools.broker import free_port

from .conftest import isolated_settings

pytestmark = pytest.mark.integration

MEMORIES = [
    "The deploy to prod fails with 'permission denied' unless it runs as the deploy user.",
    "Flaky test test_billing passes when run alone: it shares a fixture with test_refund.",
    "The staging database is reset every night at 02:00 UTC.",
]


@dataclass
class Stored:
    settings: Settings
    url: str
    scope: str


@pytest.fixture(scope="module")
def stored(broker, tmp_path_factory):
    """One worker (memory role, web port, an API token) with MEMORIES stored in a scope of
    their own, shared by this module's tests (a worker start costs seconds of CPU)."""
    from .conftest import WorkerProcess, create_topics

    port = free_port()
    settings = isolated_settings(broker, "memory-api", ["memory"])
    token = SecretStr(f"t-{uuid.uuid4().hex}")
    api = settings.api.model_copy(update={"token": token, "overrides_enabled": False})
    settings = settings.model_copy(update={"web_port": port, "api": api})
    create_topics(settings)
    worker = WorkerProcess(settings, tmp_path_factory.mktemp("memory-api") / "worker.log").start()
    scope = f"ops-{uuid.uuid4().hex[:6]}"

    async def store() -> int:
        async with MemoryOutcomeSubscriber(settings, scope=scope) as outcomes:
            async with AsyncPublisher(settings) as publisher:
                for n, content in enumerate(MEMORIES):
                    await publisher.remember(content, event_id=f"{scope}-{n}", scope=scope)
            return len(await outcomes.collect(len(MEMORIES), 60))

    try:
        # the worker's API answers once it has applied the writes
        assert asyncio.run(store()) == len(MEMORIES), worker.log()[-3000:]
        yield Stored(settings, f"http://127.0.0.1:{port}", scope)
    finally:
        worker.stop()


async def test_write_then_search_from_the_light_client(stored):
    settings, url, scope = stored.settings, stored.url, stored.scope
    found = await asyncio.to_thread(
        search_memories, "why does the deploy fail?", scope=scope, url=url, settings=settings
    )

    assert found.scope == scope and found.memories
    assert found.memories[0]["content"] == MEMORIES[0]  # the best first
    assert MEMORIES[0] in found.text  # ready for the model's context
    elsewhere = await asyncio.to_thread(
        search_memories, "why does the deploy fail?", scope="nobody", url=url, settings=settings
    )
    assert elsewhere.memories == []  # a scope is a wall

    # memories are what agents learned: with a token set, the API wants it
    anonymous = settings.model_copy(update={"api": settings.api.model_copy(update={"token": None})})
    with pytest.raises(LoopwardenError, match="memory searches need 'Authorization: Bearer"):
        await asyncio.to_thread(search_memories, "deploy", scope=scope, url=url, settings=anonymous)
    with pytest.raises(LoopwardenError, match=r"give the question as \?q="):
        await asyncio.to_thread(search_memories, " ", scope=scope, url=url, settings=settings)


async def test_an_adapter_puts_what_earlier_runs_learned_in_front_of_the_model(stored):
    """With adapters.memory_scope, a run's first model call reads the memories that fit
    its request, in the system note (not a turn kept in the conversation)."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, SystemMessage

    from loopwarden.adapters.guard import LoopGuard
    from loopwarden.adapters.langchain import LoopwardenMiddleware
    from loopwarden.adapters.notes import MEMORY_HEADER

    settings, scope = stored.settings, stored.scope
    adapters = settings.adapters.model_copy(
        update={"memory_scope": scope, "worker_url": stored.url}
    )
    requests: list = []

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            requests.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    guard = LoopGuard(settings.model_copy(update={"adapters": adapters}))
    try:
        agent = create_agent(
            Model(messages=iter([AIMessage("Run it as the deploy user.")])),
            [],
            middleware=[LoopwardenMiddleware(guard)],
        )
        ask = {"messages": [{"role": "user", "content": "Why does the deploy to prod fail?"}]}
        result = await agent.ainvoke(ask, {"configurable": {"thread_id": f"recall-{scope}"}})
    finally:
        await asyncio.to_thread(guard.close)
    (first,) = requests
    notes = [m for m in first if isinstance(m, SystemMessage) and MEMORY_HEADER in m.content]
    assert len(notes) == 1 and f"- {MEMORIES[0]}" in notes[0].content
    assert not any(MEMORY_HEADER in str(m.content) for m in result["messages"])
