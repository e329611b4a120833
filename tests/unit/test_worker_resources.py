"""What a worker's capabilities share is made once, on first use, by its own module."""

from __future__ import annotations

import pytest

from loopwarden.agents.experience.agent import experience_store
from loopwarden.agents.memory.service import MemoryService
from loopwarden.agents.memory.shared import shared_memory
from loopwarden.schemas.shared_decode import SharedActionDecodes
from loopwarden.settings import Settings
from loopwarden.streams.runtime.resources import WorkerResources


def test_one_instance_per_kind_made_on_first_use() -> None:
    resources = WorkerResources(Settings())
    assert resources.made() == []
    first = resources.shared(SharedActionDecodes)
    assert resources.shared(SharedActionDecodes) is first
    assert resources.made() == [SharedActionDecodes]


def test_a_maker_runs_once() -> None:
    resources = WorkerResources(Settings())
    calls: list[int] = []

    def make() -> SharedActionDecodes:
        calls.append(1)
        return SharedActionDecodes()

    assert resources.shared(SharedActionDecodes, make) is resources.shared(
        SharedActionDecodes, make
    )
    assert calls == [1]


def test_a_maker_of_the_wrong_kind_is_refused() -> None:
    resources = WorkerResources(Settings())
    with pytest.raises(TypeError, match="the maker of SharedActionDecodes made a str"):
        resources.shared(SharedActionDecodes, lambda: "not decodes")  # type: ignore[arg-type,return-value]
    assert resources.made() == []


def test_the_experience_store_shares_the_memory_services_embedder(tmp_path) -> None:
    settings = Settings()
    memory = settings.memory.model_copy(update={"uri": str(tmp_path / "memory")})
    resources = WorkerResources(settings.model_copy(update={"memory": memory}))
    store = experience_store(resources)
    assert store is experience_store(resources)
    assert resources.made()[-1] is type(store)
    assert MemoryService not in resources.made()  # opened only when its embedder is needed
    service = shared_memory(resources)
    assert service is shared_memory(resources)
    assert service.settings.uri == str(tmp_path / "memory")
