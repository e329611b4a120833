"""The maintenance cycle on a real LanceDB directory (hashing embedder)."""

from click.testing import CliRunner

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.maintenance import Maintenance
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.cli import main
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

CFG = MemorySettings(embedder="hashing")
DAY = 86_400.0
T0 = 1_800_000_000.0


def write(event_id, content, at, **payload):
    return validate_memory_write(
        {"event_id": event_id, "occurred_at": at, "payload": {"content": content, **payload}}
    )


def same_fact_twice():
    """One fact written twice a day apart, with other tags and questions (not a duplicate:
    1 vote of 3), about one entity: what consolidation merges."""
    return [
        write(
            "a1",
            "deploy.sh needs execute permission",
            T0,
            entity_refs=["deploy.sh"],
            tags=["deploy"],
            potential_questions=["why does deploy fail?"],
        ),
        write(
            "a2",
            "deploy.sh needs execute permission",
            T0 - DAY,
            entity_refs=["deploy.sh"],
            tags=["permissions"],
            potential_questions=["what must be set before deploying?"],
        ),
    ]


def test_promote_demote_soft_delete_and_consolidate(tmp_path):
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG)
    writer.write(
        [
            write(
                "strong",
                "Core rule: always run the linter before committing",
                T0,
                importance=1.0,
                source_reliability=1.0,
                tags=["rule"],
            ),
            write(
                "weak",
                "The coffee machine was broken on Tuesday",
                T0 - 90 * DAY,
                importance=0.2,
                source_reliability=0.2,
                tags=["office"],
            ),
            write(
                "mid",
                "The staging cluster has three nodes",
                T0 - 20 * DAY,
                importance=0.5,
                source_reliability=0.6,
                layer="long_term",
                tags=["infra"],
            ),
            *same_fact_twice(),
        ],
        T0,
    )
    assert table.count() == 5  # same content, other tags and questions: 1 of 3, not a duplicate
    strong = table.table.search().where("content LIKE 'Core rule%'").limit(1).to_list()[0]
    for _ in range(4):  # retrieved four times: access boost 1 + ln 5
        table.touch([strong["id"]], T0)
    report = Maintenance(table, CFG).run(T0 + DAY)
    assert report.promoted >= 1  # the strong rule
    assert report.decayed == 1  # weak and 91 days old
    assert report.demoted >= 1  # mid drops out of long_term after 21 days
    assert report.consolidated == 1
    live = {
        r["content"]: r for r in table.table.search().where("deleted = false").limit(20).to_list()
    }
    assert "The coffee machine was broken on Tuesday" not in live
    merged = [r for r in live.values() if "consolidated" in r["tags"]]
    assert len(merged) == 1 and set(merged[0]["tags"]) >= {"deploy", "permissions"}
    kinds = {r["type"] for r in table.relations_of([merged[0]["id"]])}
    assert kinds == {"supersedes"}
    assert set(report.to_json_dict()) == {
        "promoted",
        "demoted",
        "decayed",
        "conflicts_found",
        "conflicts_resolved",
        "consolidated",
    }


def test_maintenance_converges_and_hides_what_it_superseded(tmp_path):
    """Issue 13: every cycle re-merged the same pair (``consolidated: 1`` again, a new
    ``created_at``), and superseded memories stayed searchable (the same sentence came
    back three times)."""
    from loopwarden.agents.memory.retrieval import MemorySearch

    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    embedder = HashingEmbedder(CFG.hashing_dims)
    MemoryWriter(table, embedder, CFG).write(
        [
            *same_fact_twice(),
        ],
        T0,
    )
    first = Maintenance(table, CFG).run(T0 + DAY)
    assert first.consolidated == 1
    rows_after_first = sorted(
        table.columns(["id", "deleted", "layer", "created_at", "tags"]).to_pylist(),
        key=lambda r: r["id"],
    )
    (merged,) = [r for r in rows_after_first if "consolidated" in r["tags"]]
    assert merged["created_at"] == T0 - DAY  # the oldest member's, not the cycle's time

    second = Maintenance(table, CFG).run(T0 + 2 * DAY)
    assert second.to_json_dict() == dict.fromkeys(second.to_json_dict(), 0)
    rows_after_second = sorted(
        table.columns(["id", "deleted", "layer", "created_at", "tags"]).to_pylist(),
        key=lambda r: r["id"],
    )
    assert rows_after_second == rows_after_first

    found = MemorySearch(table, embedder, CFG).search(
        "deploy.sh execute permission", scope="default", budget_bytes=4096
    )
    contents = [m["content"] for m in found.memories]
    assert contents == ["deploy.sh needs execute permission"]  # once: the merged memory
    assert "consolidated" in found.memories[0]["tags"]


def test_soft_delete_measures_age_from_the_last_access(tmp_path):
    """Issue 13 (seed 002 §6): a weak memory created 90 days ago but read yesterday is
    in use; soft delete measured the age from its creation."""
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG).write(
        [
            write(
                "used",
                "The VPN needs the legacy cipher",
                T0 - 90 * DAY,
                importance=0.05,
                source_reliability=0.05,
            ),
            write(
                "unused",
                "The old printer is on floor two",
                T0 - 90 * DAY,
                importance=0.05,
                source_reliability=0.05,
            ),
        ],
        T0 - 90 * DAY,
    )
    used = table.table.search().where("content LIKE 'The VPN%'").limit(1).to_list()[0]
    table.touch([used["id"]], T0 - DAY)
    report = Maintenance(table, CFG).run(T0)
    live = [r["content"] for r in table.table.search().where("deleted = false").limit(9).to_list()]
    assert report.decayed == 1
    assert live == ["The VPN needs the legacy cipher"]


def test_cli_write_search_stats_maintain(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPWARDEN_MEMORY__URI", str(tmp_path))
    monkeypatch.setenv("LOOPWARDEN_MEMORY__EMBEDDER", "hashing")
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "memory",
            "write",
            "The user prefers SQLite",
            "--tag",
            "database",
            "--entity",
            "sqlite",
            "--score",
            "r=0.9",
        ],
    )
    assert result.exit_code == 0, result.output
    assert '"status":"stored"' in result.output
    result = runner.invoke(main, ["memory", "search", "which database does the user prefer"])
    assert result.exit_code == 0 and "The user prefers SQLite" in result.output
    assert "intent: factual" in result.output and "semantic" in result.output
    assert '"memories":1' in runner.invoke(main, ["memory", "stats"]).output
    assert '"promoted"' in runner.invoke(main, ["memory", "maintain"]).output
    bad = runner.invoke(main, ["memory", "write", "x", "--score", "r=7"])
    assert bad.exit_code != 0 and "payload.scores.r" in bad.output


def imported(memory_id, content, at, vector, **fields):
    """A row stored without the writer's checks (a bulk import)."""
    row = {
        "id": memory_id,
        "scope": "default",
        "content": content,
        "tags": fields.get("tags", []),
        "potential_questions": [],
        "entity_refs": fields.get("entity_refs", []),
        "memory_type": "fact",
        "layer": "short_term",
        **dict.fromkeys(("r", "c", "t", "a", "p", "o", "e"), 0.5),
        "importance": 0.5,
        "source_reliability": 0.7,
        "trust": 0.5,
        "corroboration_count": 0,
        "contradiction_count": 0,
        "corroborated_by": [],
        "access_count": 0,
        "last_access_at": at,
        "created_at": at,
        "updated_at": at,
        "decay_rate": 0.0,
        "deleted": False,
        "source_loop_id": None,
        "source_event_id": None,
        "vector": vector,
        "question_vector": vector,
    }
    return row


def test_conflict_upkeep_sweeps_the_table_across_cycles_then_converges(tmp_path):
    """Upkeep checked the same first ``conflict_scan_limit`` rows every cycle, so a
    contradiction stored later in the table was never found; now each cycle resumes
    where the last stopped."""
    embedder = HashingEmbedder(CFG.hashing_dims)
    cfg = CFG.model_copy(update={"conflict_scan_limit": 3})
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    fillers = [f"Unrelated note number {i} about the office plants" for i in range(6)]
    texts = [*fillers, "The user prefers SQLite", "The user does not prefer SQLite"]
    vectors = embedder.embed(texts)
    table.upsert(
        [
            imported(f"m{i}", text, T0 + i, vectors[i])  # the contradiction is written last
            for i, text in enumerate(texts)
        ]
    )
    found = [Maintenance(table, cfg).run(T0 + DAY).conflicts_found for _ in range(4)]
    assert found[:2] == [0, 0] and sum(found) == 1  # the third cycle reaches rows 6 and 7
    relations = table.relations_of(["m7"])
    assert [(r["src"], r["type"], r["dst"]) for r in relations] == [("m7", "contradicts", "m6")]
    assert Maintenance(table, cfg).run(T0 + DAY).conflicts_found == 0


def test_consolidation_compares_the_newest_members_of_a_large_entity_group(tmp_path):
    """One matrix product per entity group; beyond ``consolidation_group_limit``
    members only the newest are compared (the old pair is left for a later cycle)."""
    embedder = HashingEmbedder(CFG.hashing_dims)
    cfg = CFG.model_copy(update={"consolidation_group_limit": 4})
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    old, new = embedder.embed(["legacy cron job purges temp files", "the api gateway uses mtls"])
    others = ["quarterly invoices are due on the fifth", "zebra crossings near the depot"]
    distinct = embedder.embed(others)
    api = {"entity_refs": ["api"]}
    table.upsert(
        [
            imported("old-a", "legacy cron job purges temp files", T0 - 10 * DAY, old, **api),
            imported("old-b", "legacy cron job purges temp files", T0 - 10 * DAY, old, **api),
            imported("new-a", "the api gateway uses mtls", T0, new, **api),
            imported("new-b", "the api gateway uses mtls", T0, new, **api),
            imported("d0", others[0], T0, distinct[0], **api),
            imported("d1", others[1], T0, distinct[1], **api),
        ]
    )
    report = Maintenance(table, cfg).run(T0 + DAY)
    assert report.consolidated == 1
    live = {r["id"] for r in table.columns(["id"], where="deleted = false").to_pylist()}
    assert {"new-a", "new-b"}.isdisjoint(live) and {"old-a", "old-b"} <= live
    assert Maintenance(table, CFG).run(T0 + DAY).consolidated == 1  # a larger limit: the old pair


def test_a_cycle_is_logged_in_words_and_an_idle_one_not_at_info():
    """An idle `loopwarden dev` logged `memory maintenance: {'promoted': 0, …}` every
    5 minutes."""
    from loopwarden.agents.memory.maintenance import MaintenanceReport

    idle = MaintenanceReport()
    assert not idle.changed() and idle.line() == "nothing to do"
    busy = MaintenanceReport(promoted=2, conflicts_resolved=1)
    assert busy.changed() and busy.line() == "2 promoted, 1 conflicts resolved"
