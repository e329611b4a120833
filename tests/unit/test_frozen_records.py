"""Records of every schema version we shipped, frozen, read by today's code.

``tests/fixtures/records/v<N>/<role>.jsonl`` holds, per topic, the records a release of
schema version ``N`` wrote (``tests/support/freeze_records.py`` froze them; they are never
rewritten). The memory topics are kept for ever and rebuilt from, the audit replays a
week of every topic: each frozen record must still parse as its topic's model, lose no
field when written back, and pass the path that reads it in the worker. The TypeScript
client reads the same files (``clients/typescript/test/frozen.test.ts``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter

from loopwarden.schemas import codec
from loopwarden.schemas.completions import validate_guardrail_event
from loopwarden.schemas.contract import TOPIC_RECORDS
from loopwarden.schemas.events import SCHEMA_VERSION, TASK_EVENT_TYPES, validate_action
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.schemas.tasks import validate_task_event

FROZEN = Path(__file__).resolve().parents[1] / "fixtures" / "records"
VERSIONS = sorted(FROZEN.glob("v*"), key=lambda folder: int(folder.name[1:]))
FILES = [path for folder in VERSIONS for path in sorted(folder.glob("*.jsonl"))]


def records(path: Path) -> list[dict]:
    return [codec.loads(line) for line in path.read_text().splitlines() if line]


def test_every_version_up_to_the_current_one_is_frozen_with_every_topic():
    assert [folder.name for folder in VERSIONS] == [f"v{n}" for n in range(1, SCHEMA_VERSION + 1)]
    for folder in VERSIONS:
        assert {path.stem for path in folder.glob("*.jsonl")} == set(TOPIC_RECORDS), folder


def test_every_record_kind_of_the_current_version_is_frozen():
    """A new output kind (or event type) of this version gets a frozen record when the
    version ships: the files hold every ``type`` the contract test produces."""
    kinds = {record.get("type", "action") for path in FILES for record in records(path)}
    assert kinds >= {
        *("action", "task_start", "task_end", "loop_complete", "guardrail_override"),
        *("warning", "fleet_warning", "tool_outage", "reflection_request", "reflection"),
        *("reflection_cached", "rerun_decision", "memory_write", "memory_outcome"),
        *("maintenance_report", "advice", "verdict"),
    }


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_a_frozen_record_parses_as_its_topics_model_and_keeps_every_field(path):
    model = TypeAdapter(TOPIC_RECORDS[path.stem][0])
    for record in records(path):
        parsed = model.validate_python(record)
        dumped = codec.loads(codec.dumps(_dump(parsed)))
        for field, value in record.items():
            assert field in dumped, (path.name, field)
            if isinstance(value, dict):  # a payload's fields are kept too
                assert set(value) <= set(dumped[field]), (path.name, field, set(value))


def _dump(parsed: object) -> object:
    if isinstance(parsed, list):
        return [_dump(item) for item in parsed]
    return parsed.model_dump(mode="json")  # type: ignore[attr-defined]


def test_the_worker_reads_the_frozen_inputs_as_it_reads_a_live_one():
    """What producers sent under an older version still passes the worker's own readers:
    actions and task events (the monitor, experience), completions and overrides (the
    guardrails), memory writes and lessons (the memory role, ``memory rebuild``)."""
    for folder in VERSIONS:
        for record in records(folder / "actions.jsonl"):
            if record.get("type") in TASK_EVENT_TYPES:
                assert validate_task_event(record).event_id == record["event_id"]
            else:
                assert validate_action(record).event_id == record["event_id"]
        for record in records(folder / "loop_completions.jsonl"):
            assert validate_guardrail_event(record).event_id == record["event_id"]
        for role in ("memory_writes", "memory_lessons"):  # both stored, both rebuilt from
            for record in records(folder / f"{role}.jsonl"):
                assert validate_memory_write(record).event_id == record["event_id"]
