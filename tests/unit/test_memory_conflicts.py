"""Issue 13: a contradiction changes the answer, and the duplicate/conflict votes do not
degenerate. Real LanceDB directory, hashing embedder.

Deviations from seed 002, each deliberate:
- a dimension votes on a duplicate only when both memories have it (no questions:
  no question vote); with fewer than three dimensions, all that exist must agree;
- identical text is never a contradiction, and the §5 heuristic needs a sign of
  disagreement (opposite polarity or a preference) besides similarity and overlap;
- in an answer, a contradicting newer memory ranks above the one it contradicts
  unless the older one has at least ``conflict_trust_margin`` more trust.
"""

from __future__ import annotations

import itertools

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.retrieval import MemorySearch
from loopwarden.agents.memory.scoring import contradiction_confidence, is_duplicate
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

CFG = MemorySettings(embedder="hashing")
T0 = 1_800_000_000.0
_ids = itertools.count()


def write(content, at=T0, **payload):
    return validate_memory_write(
        {
            "event_id": f"c{next(_ids)}",
            "occurred_at": at,
            "payload": {"content": content, **payload},
        }
    )


def store(tmp_path):
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    embedder = HashingEmbedder(CFG.hashing_dims)
    return MemoryWriter(table, embedder, CFG), MemorySearch(table, embedder, CFG)


def test_identical_text_is_a_duplicate_not_a_contradiction(tmp_path):
    writer, _ = store(tmp_path)
    (first,) = writer.write([write("The user prefers SQLite")], T0)
    (second,) = writer.write([write("The user prefers SQLite", T0 + 60)], T0 + 60)
    assert first["status"] == "stored"
    assert second["status"] == "duplicate" and second["duplicate_of"] == first["memory_id"]
    assert contradiction_confidence("The user prefers SQLite", "The user prefers SQLite", 1.0) == 0


def test_a_dimension_votes_only_when_both_memories_have_it():
    # no questions on either side: content alone may not cast the question vote too
    assert not is_duplicate(0.0, 0.95, 0.95, CFG, has_tags=True, has_questions=False)
    # only content exists on both sides: it decides alone
    assert is_duplicate(0.0, 0.0, 0.95, CFG, has_tags=False, has_questions=False)
    # all three exist: two of three, as the seed says
    assert is_duplicate(0.9, 0.0, 0.95, CFG, has_tags=True, has_questions=True)
    assert not is_duplicate(0.0, 0.0, 0.95, CFG, has_tags=True, has_questions=True)


def test_a_paraphrase_without_disagreement_is_no_contradiction():
    left, right = "The staging cluster has three nodes", "The staging cluster has three nodes now"
    assert contradiction_confidence(left, right, 0.97) < CFG.conflict_threshold
    assert (
        contradiction_confidence(
            "The staging cluster has three nodes",
            "The staging cluster does not have three nodes",
            0.9,
        )
        >= CFG.conflict_threshold
    )


def test_a_newer_contradiction_wins_the_answer_and_says_so(tmp_path):
    writer, search = store(tmp_path)
    (old,) = writer.write(
        [write("The user prefers SQLite", tags=["database"], entity_refs=["sqlite"])], T0
    )
    (new,) = writer.write(
        [
            write(
                "The user prefers PostgreSQL, not SQLite",
                T0 + 86_400,
                tags=["database"],
                entity_refs=["sqlite", "postgresql"],
            )
        ],
        T0 + 86_400,
    )
    assert new["status"] == "stored_with_conflicts"
    assert new["conflicts"][0]["memory_id"] == old["memory_id"]
    found = search.search("which database does the user prefer sqlite", budget_bytes=4096)
    ids = [m["id"] for m in found.memories]
    assert ids.index(new["memory_id"]) < ids.index(old["memory_id"])
    winner, loser = (
        found.memories[ids.index(new["memory_id"])],
        found.memories[ids.index(old["memory_id"])],
    )
    assert winner["conflicts_with"] == [old["memory_id"]]
    assert loser["outranked_by"] == new["memory_id"]
    assert "conflicts with a newer memory" in found.text
