"""Every output kind: what its constructor writes matches its record type and its model,
the schema version is the current one, and the JSON Schemas shipped in ``docs/schemas/``
are the ones the models export (``loopwarden schema --out docs/schemas`` renews them)."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from click.testing import CliRunner
from produced_records import output_records

from loopwarden.cli import main
from loopwarden.cli.schema import schema_text
from loopwarden.schemas import codec, outputs
from loopwarden.schemas.contract import TOPIC_RECORDS, topic_schemas
from loopwarden.schemas.events import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "docs" / "schemas"


RECORD_TYPES = {
    "warning": outputs.WarningRecord,
    "fleet_warning": outputs.FleetWarningRecord,
    "tool_outage": outputs.ToolOutageRecord,
    "reflection_request": outputs.ReflectionRequestRecord,
    "memory_write": outputs.LessonRecord,
    "rerun_decision": outputs.RerunDecisionRecord,
    "reflection": outputs.ReflectionRecord,
    "reflection_cached": outputs.ReflectionCachedRecord,
    "advice": outputs.AdviceRecord,
    "memory_outcome": outputs.MemoryOutcomeRecord,
    "verdict": outputs.VerdictRecord,
}
"""Record ``type`` → its TypedDict (a maintenance report has its model only)."""


@pytest.fixture(scope="module")
def produced() -> dict[str, list]:
    return output_records()


def test_every_output_kind_is_produced_here(produced):
    kinds = {record["type"] for records in produced.values() for record in records}
    assert kinds == set(RECORD_TYPES) | {"maintenance_report"}
    assert {name for name, (_, way) in TOPIC_RECORDS.items() if way == "out"} <= set(produced)


def test_each_record_has_its_types_keys_and_the_current_schema_version(produced):
    for records in produced.values():
        for record in records:
            assert record["schema_version"] == SCHEMA_VERSION
            kind = RECORD_TYPES.get(record["type"])
            if kind is None:
                continue
            hints = typing.get_type_hints(kind)
            assert set(record) <= set(hints), (record["type"], set(record) - set(hints))
            assert kind.__required_keys__ <= set(record), kind.__required_keys__ - set(record)


def test_each_record_parses_as_its_topics_model_key_for_key(produced):
    from pydantic import TypeAdapter

    for role, records in produced.items():
        model = TypeAdapter(TOPIC_RECORDS[role][0])
        for record in records:
            parsed = model.validate_python(codec.loads(codec.dumps(record)))
            dumped = parsed.model_dump(mode="json")
            assert set(record) <= set(dumped), (role, set(record) - set(dumped))


def test_each_typed_dict_names_the_fields_of_its_model():
    """The record types and the models are two views of one shape: no field in one only."""
    from loopwarden.schemas.contract import TOPIC_RECORDS as TOPICS

    by_type = {}
    for model, _ in TOPICS.values():
        if typing.get_origin(model) is typing.Annotated:
            model = typing.get_args(model)[0]
        for each in typing.get_args(model) or (model,):
            fields = getattr(each, "model_fields", None)
            if fields and "type" in fields:
                by_type[fields["type"].default] = set(fields)
    for record_type, kind in RECORD_TYPES.items():
        assert set(typing.get_type_hints(kind)) == by_type[record_type], record_type


def test_the_schema_version_is_written_in_one_place():
    product = [ROOT / p for p in ("agents", "schemas", "storage", "streams", "loopwarden")]
    writes = [
        path.relative_to(ROOT)
        for folder in product
        for path in folder.rglob("*.py")
        if '"schema_version": SCHEMA_VERSION' in path.read_text()
    ]
    assert writes == [Path("schemas/outputs.py")]


def test_the_shipped_schemas_are_the_models_own(tmp_path):
    result = CliRunner().invoke(main, ["schema", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    stale = [
        path.name
        for path in sorted(tmp_path.iterdir())
        if not (SHIPPED / path.name).exists()
        or (SHIPPED / path.name).read_text() != path.read_text()
    ]
    assert stale == [], f"run `loopwarden schema --out docs/schemas` ({stale} differ)"
    warnings = topic_schemas()["warnings"]
    assert warnings["x-loopwarden-direction"] == "out"
    assert "timeline_message" in warnings["required"]
    assert schema_text(warnings) == (SHIPPED / "warnings.json").read_text()


def test_the_schema_command_prints_one_topic_and_refuses_nonsense():
    runner = CliRunner()
    one = runner.invoke(main, ["schema", "tool_outages"])
    assert one.exit_code == 0 and '"error_digest"' in one.output
    neither = runner.invoke(main, ["schema"])
    assert neither.exit_code == 2 and "name a topic role" in neither.output
    unknown = runner.invoke(main, ["schema", "warning"])
    assert unknown.exit_code == 2 and "'warnings'" in unknown.output


def test_the_asyncapi_document_names_every_topic_its_key_and_schema_file():
    from loopwarden.settings import Settings
    from loopwarden.streams.tools.asyncapi import asyncapi_document

    document = asyncapi_document({role: f"{role}.json" for role in TOPIC_RECORDS})
    assert document["asyncapi"].startswith("3.")
    assert set(document["channels"]) == set(TOPIC_RECORDS)
    assert document["channels"]["warnings"]["address"] == Settings().topics.warnings
    actions = document["components"]["messages"]["actions"]
    assert actions["payload"]["schema"] == {"$ref": "./actions.json"}
    assert "root_loop_id" in actions["bindings"]["kafka"]["key"]["description"]
    verbs = {name.split("_", 1)[0] for name in document["operations"]}
    assert verbs == {"receive", "send"}
    assert "send_warnings" in document["operations"] and "receive_actions" in document["operations"]
