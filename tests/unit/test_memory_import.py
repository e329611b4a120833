"""``loopwarden memory import``: bulk load on a real LanceDB directory; the checks the
write path makes per memory happen in the next maintenance cycle."""

import orjson
from click.testing import CliRunner

from loopwarden.agents.memory.maintenance import Maintenance
from loopwarden.cli import main
from loopwarden.settings import MemorySettings
from loopwarden.storage.memory_table import MemoryTable

T0 = 1_800_000_000.0
SECRET = "hunter2xyz"


def line(event_id, content, **payload):
    event = {"event_id": event_id, "occurred_at": T0, "payload": {"content": content, **payload}}
    return orjson.dumps(event)


def test_import_redacts_is_idempotent_and_maintenance_merges_what_it_did_not_check(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LOOPWARDEN_MEMORY__URI", str(tmp_path / "store"))
    monkeypatch.setenv("LOOPWARDEN_MEMORY__EMBEDDER", "hashing")
    source = tmp_path / "memories.jsonl"
    source.write_bytes(
        b"\n".join(
            [
                line("a", "deploy.sh needs execute permission", entity_refs=["deploy.sh"]),
                line("b", "deploy.sh needs execute permission", entity_refs=["deploy.sh"]),
                line("c", f"the staging login password={SECRET} works", tags=["staging"]),
                b'{"event_id": "d", "payload": {}}',
            ]
        )
    )
    runner = CliRunner()
    first = runner.invoke(main, ["memory", "import", str(source)])
    assert first.exit_code == 4, first.output  # one bad line
    assert '{"imported":3,"already_stored":0,"rejected":1}' in first.output
    assert "line 4:" in first.output
    again = runner.invoke(main, ["memory", "import", str(source)])
    assert '{"imported":0,"already_stored":3,"rejected":1}' in again.output

    cfg = MemorySettings(uri=str(tmp_path / "store"), embedder="hashing")
    table = MemoryTable(cfg.uri, cfg.hashing_dims)
    contents = table.columns(["content"]).column("content").to_pylist()
    assert len(contents) == 3 and not any(SECRET in c for c in contents)
    # the duplicate pair was stored as two memories; maintenance merges them
    report = Maintenance(table, cfg).run(T0 + 60)
    assert report.consolidated == 1
    live = table.columns(["content"], where="deleted = false").column("content").to_pylist()
    assert sorted(live).count("deploy.sh needs execute permission") == 1
