"""Issue 13: memory written by one process is seen by another, and retrieval for the
analyst counts as access. Real LanceDB directories, a real second process."""

from __future__ import annotations

import subprocess
import sys
import time

from loopwarden.agents.memory.service import LanceMemoryContext, MemoryService
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

WRITER = """
import sys, time
from loopwarden.agents.memory.service import MemoryService
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
service = MemoryService(MemorySettings(uri=sys.argv[1], embedder="hashing"))
write = validate_memory_write({"event_id": "from-another-process", "occurred_at": time.time(),
    "payload": {"content": "deploy.sh needs chmod +x before it runs", "tags": ["deploy"]}})
print(service.writer.write([write], time.time())[0]["status"])
"""


def _write_in_another_process(uri: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WRITER, uri], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stored"


def _within(seconds: float, condition) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_reader_in_another_process_sees_a_write_within_the_interval(tmp_path):
    settings = MemorySettings(uri=str(tmp_path), embedder="hashing", read_consistency_s=0.2)
    reader = MemoryService(settings)
    assert reader.table.count() == 0  # opened before the write
    _write_in_another_process(str(tmp_path))
    assert _within(2.0, lambda: reader.table.count() == 1)
    # the full-text index follows the table too
    found = reader.search.search("chmod deploy", scope="default", budget_bytes=4096)
    assert [m["content"] for m in found.memories] == ["deploy.sh needs chmod +x before it runs"]


def test_without_an_interval_a_reader_keeps_its_snapshot(tmp_path):
    """What LanceDB does with no interval (the old behaviour, still available)."""
    table = MemoryTable(str(tmp_path), 256, read_consistency_s=None)
    assert table.count() == 0
    _write_in_another_process(str(tmp_path))
    assert table.count() == 0
    assert MemoryTable(str(tmp_path), 256).count() == 1  # a fresh handle sees it


async def test_memories_given_to_the_analyst_count_as_accessed(tmp_path):
    settings = MemorySettings(uri=str(tmp_path), embedder="hashing")
    _write_in_another_process(str(tmp_path))
    service = MemoryService(settings)

    def access() -> tuple[int, float]:
        (row,) = service.table.columns(["access_count", "last_access_at"]).to_pylist()
        return row["access_count"], row["last_access_at"] or 0.0

    assert access() == (0, 0.0)
    text = await LanceMemoryContext(service).context("loop-1", "chmod deploy.sh", 4096)
    assert "chmod +x" in text
    count, at = access()
    assert count == 1 and at > time.time() - 60


def test_the_writer_redacts_entity_refs_too(tmp_path):
    """Issue 13: the store's own redaction (the second line after the validator's)
    skipped ``entity_refs``."""
    from loopwarden.schemas.memory import MemoryWrite

    service = MemoryService(MemorySettings(uri=str(tmp_path), embedder="hashing"))
    unredacted = MemoryWrite.model_validate(  # as if a caller skipped the validator
        {
            "event_id": "e1",
            "occurred_at": time.time(),
            "payload": {
                "content": "the staging database",
                "entity_refs": ["postgres://admin:S3cretPw@db/prod"],
            },
        }
    )
    service.writer.write([unredacted], time.time())
    (row,) = service.table.columns(["entity_refs"]).to_pylist()
    assert "S3cretPw".lower() not in " ".join(row["entity_refs"]).lower()


def test_a_write_with_its_own_vector_and_no_questions_embeds_nothing(tmp_path):
    """Issue 13: the write path embedded every content (and a question text made of
    the content) even when the write carried its vector."""
    import numpy as np

    from loopwarden.agents.memory.embedding import HashingEmbedder
    from loopwarden.agents.memory.writer import MemoryWriter
    from loopwarden.schemas.memory import validate_memory_write

    class CountingEmbedder(HashingEmbedder):
        texts = 0

        def embed(self, texts):
            CountingEmbedder.texts += len(texts)
            return super().embed(texts)

    settings = MemorySettings(uri=str(tmp_path), embedder="hashing")
    embedder = CountingEmbedder(settings.hashing_dims)
    writer = MemoryWriter(MemoryTable(str(tmp_path), embedder.dims), embedder, settings)
    vector = np.random.default_rng(7).normal(size=embedder.dims).tolist()
    supplied = validate_memory_write(
        {"event_id": "v1", "occurred_at": 1.0, "payload": {"content": "a", "embedding": vector}}
    )
    asked = validate_memory_write(
        {
            "event_id": "v2",
            "occurred_at": 1.0,
            "payload": {"content": "b", "embedding": vector, "potential_questions": ["why?"]},
        }
    )
    plain = validate_memory_write(
        {"event_id": "v3", "occurred_at": 1.0, "payload": {"content": "c"}}
    )
    writer.write([supplied, asked, plain], 1.0)
    assert CountingEmbedder.texts == 2  # v2's questions and v3's content, nothing else
