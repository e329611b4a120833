"""Memory writes as Arrow columns: the same acceptance, errors, defaults and redaction
as the JSON writes the pydantic models validate."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest
from secrets_corpus import SECRETS

from loopwarden.errors import EventDecodeError, EventValidationError
from loopwarden.schemas.memory import MemoryWrite, validate_memory_write
from loopwarden.schemas.memory_columns import (
    ARROW_STREAM_PREFIX,
    check_columns,
    is_arrow,
    read_ipc,
    redact,
    to_ipc,
)
from loopwarden.schemas.positions import default_partition, default_partitions
from loopwarden.schemas.redaction import redact_text
from loopwarden.schemas.redaction_columns import screen
from loopwarden.streams.client.memory_writes import make_memory_write, memory_columns, writes_table

VECTOR = pa.list_(pa.float32())
GOOD = {"event_id": "e-good", "occurred_at": 1_700_000_000.0, "content": "a plain memory"}
# each row: the row's columns, as a producer would send them (None: the column's null)
ROWS = [
    GOOD,
    {**GOOD, "event_id": ""},
    {**GOOD, "event_id": "tab\there"},
    {**GOOD, "event_id": "x" * 201},
    {**GOOD, "occurred_at": -1.0},
    {**GOOD, "occurred_at": float("nan")},
    {**GOOD, "occurred_at": 1e12},
    {**GOOD, "content": ""},
    {**GOOD, "content": "x" * 100_001},
    {**GOOD, "content": "长" * 100_000},  # characters, not bytes
    {**GOOD, "scope": ""},
    {**GOOD, "scope": "s" * 201},
    {**GOOD, "memory_id": "m" * 201},
    {**GOOD, "memory_id": ""},
    {**GOOD, "layer": "mid_term"},
    {**GOOD, "layer": "long_term"},
    {**GOOD, "scores": {"c": 1.5}},
    {**GOOD, "scores": {"o": float("nan")}},
    {**GOOD, "scores": {"t": 0.0, "p": 1.0}},
    {**GOOD, "importance": 1.01},
    {**GOOD, "importance": 0.0},
    {**GOOD, "source_reliability": -0.1},
    {**GOOD, "tags": ["ok", None]},
    {**GOOD, "entity_refs": ["PostgreSQL", "API"]},
    {**GOOD, "embedding": []},
    {**GOOD, "embedding": [0.5, float("inf")]},
    {**GOOD, "embedding": [0.5, None]},
    {**GOOD, "embedding": [0.1] * 8193},
    {**GOOD, "embedding": [0.3, 0.4]},
    {**GOOD, "schema_version": 2},
    {**GOOD, "type": "action"},
]
TYPES = {
    "event_id": pa.string(),
    "occurred_at": pa.float64(),
    "content": pa.string(),
    "scope": pa.string(),
    "memory_id": pa.string(),
    "layer": pa.string(),
    "scores": pa.struct([(d, pa.float64()) for d in "corepat"]),
    "importance": pa.float64(),
    "source_reliability": pa.float64(),
    "tags": pa.list_(pa.string()),
    "entity_refs": pa.list_(pa.string()),
    "embedding": VECTOR,
    "schema_version": pa.int32(),
    "type": pa.string(),
}


def as_json(row: dict) -> dict:
    """The JSON write of a row (nulls left out)."""
    envelope = ("event_id", "occurred_at", "schema_version", "type")
    obj = {k: v for k, v in row.items() if k in envelope and v is not None}
    obj["payload"] = {k: v for k, v in row.items() if k not in envelope and v is not None}
    return obj


def table_of(rows: list[dict]) -> pa.Table:
    names = list(dict.fromkeys(k for row in rows for k in row))
    return pa.table({n: pa.array([row.get(n) for row in rows], TYPES[n]) for n in names})


def model_verdict(row: dict) -> str | None:
    try:
        validate_memory_write(as_json(row))
    except EventValidationError as exc:
        return str(exc)
    return None


def test_each_row_is_accepted_or_refused_as_the_model_does_with_its_field_errors():
    rows = [{**row, "event_id": row["event_id"] or ""} for row in ROWS]
    checked = check_columns(table_of(rows))
    refused = {index: str(error) for index, _, error in checked.errors}
    kept = {index for index, _ in checked.writes}
    accepted = set(range(len(rows))) - set(refused)
    assert len(checked.columns) + len(kept) == len(accepted)
    for index, row in enumerate(rows):
        assert refused.get(index) == model_verdict(row), row
    assert len(refused) >= 18  # the table really holds bad rows


def test_a_checked_row_is_the_write_the_model_builds_defaults_included():
    rows = [
        GOOD,
        {**GOOD, "event_id": "e2", "scores": {"c": 0.9}, "tags": ["a", "b"], "embedding": [1, 0]},
        {**GOOD, "event_id": "e3", "layer": "long_term", "importance": 0.2, "scope": "team"},
    ]
    checked = check_columns(table_of(rows))
    assert not checked.errors and not checked.writes
    for write, row in zip(checked.columns.to_writes(), rows, strict=True):
        expected = validate_memory_write(as_json(row))
        assert write.model_dump(exclude={"payload": {"embedding"}}) == expected.model_dump(
            exclude={"payload": {"embedding"}}
        )
    assert checked.columns.memory_ids() == [w.memory_id for w in checked.columns.to_writes()]


def test_an_unreadable_column_sends_every_row_to_the_model():
    table = pa.table({"event_id": ["a", "b"], "occurred_at": [1.0, 2.0], "content": [1, 2]})
    checked = check_columns(table)
    assert len(checked.columns) == 0
    assert [str(e) for _, _, e in checked.errors] == [
        "payload.content: Input should be a valid string"
    ] * 2


def test_a_form_the_columns_do_not_take_is_kept_when_the_model_takes_it():
    when = datetime(2026, 1, 1, tzinfo=UTC)
    table = pa.table({"event_id": ["a"], "occurred_at": [when], "content": ["timestamped"]})
    checked = check_columns(table)
    assert not checked.errors and len(checked.columns) == 0
    ((_, write),) = checked.writes
    assert write.occurred_at == when.timestamp()


def test_redaction_of_columns_is_the_models_redaction():
    texts = [text for _, text, _ in SECRETS] + ["nothing secret here", "[REDACTED] already"]
    rows = [
        {
            **GOOD,
            "event_id": f"e{i}",
            "content": text,
            "tags": ["plain", text],
            "entity_refs": [text[:30]],
        }
        for i, text in enumerate(texts)
    ]
    columns = check_columns(table_of(rows)).columns
    for i, write in enumerate(columns.to_writes()):
        expected = validate_memory_write(as_json(rows[i]))
        assert write.payload.content == expected.payload.content
        assert write.payload.tags == expected.payload.tags
        assert write.payload.entity_refs == expected.payload.entity_refs
        assert bool(columns.had_secrets[i]) == expected.had_secrets, rows[i]["content"]
    for _, _, secret in SECRETS:
        assert secret not in str(columns.table.to_pylist())


UNICODE_SECRETS = [
    "card ４１１１ １１１１ １１１１ １１１１ charged",  # fullwidth digits: Python's \d
    "ssn ١٢٣-٤٥-٦٧٨٩ on file",  # Arabic-Indic digits
    "password\u00a0=\u00a0hunter2xyz",  # no-break spaces
    "AUTHORİZATİON: Bearer abcdefghijkl",
    "éclair token=abcdefgh12345678 ünd mehr",
    "密码：hunter2xyz",
    "id 11010519491231002X后面",
    "日本語mysql -u root -pMyDbPass42",
]


@pytest.mark.parametrize("text", [t for _, t, _ in SECRETS] + UNICODE_SECRETS)
def test_the_column_screen_flags_every_text_the_redactor_changes(text):
    variants = [text, f"前缀{text}", f"{text}\nnext line", text.upper(), f"x{text}y"]
    flags = screen(pa.array(variants))
    for variant, flagged in zip(variants, flags, strict=True):
        if redact_text(variant) != variant:
            assert flagged, variant


def test_the_column_screen_passes_ordinary_text_over():
    texts = ["the build failed on step 3", "ls -la /tmp", "用户偏好 SQLite", "chmod +x deploy.sh"]
    assert not screen(pa.array(texts)).any()
    assert not screen(pa.array([None, ""], pa.string())).any()


def test_checked_but_unredacted_batches_are_redacted_together():
    rows = [{**GOOD, "event_id": f"e{i}", "content": f"password={i}secret{i}"} for i in range(3)]
    batches = [check_columns(table_of(rows[:1]), redacted=False).columns]
    batches.append(check_columns(table_of(rows[1:]), redacted=False).columns)
    assert not any(b.redacted for b in batches)
    done = redact(batches)
    assert all(b.redacted for b in done) and [len(b) for b in done] == [1, 2]
    assert [c for b in done for c in b.table.column("content").to_pylist()] == [
        "password=[REDACTED]"
    ] * 3
    assert all(b.had_secrets.all() for b in done)


def test_arrow_records_are_told_from_json_and_broken_ones_refused():
    value = to_ipc(table_of([GOOD]))
    assert is_arrow(value) and value.startswith(ARROW_STREAM_PREFIX)
    assert not is_arrow(b'{"event_id": "x"}') and not is_arrow(b"") and not is_arrow(None)
    assert read_ipc(value).num_rows == 1
    with pytest.raises(EventDecodeError, match="not a readable Arrow IPC stream"):
        read_ipc(value[: len(value) // 2])
    with pytest.raises(EventDecodeError):
        read_ipc(ARROW_STREAM_PREFIX + b"garbage")


def test_publisher_columns_raise_the_json_writes_error_and_keep_the_order():
    items = [
        {"content": f"memory {i}", "event_id": f"e{i}", "embedding": np.ones(4)} for i in range(5)
    ]
    columns, ids = memory_columns(items)
    assert ids == [f"e{i}" for i in range(5)] and len(columns) == 5
    bad = [*items, {"content": "x", "scores": {"c": 2.0}}]
    with pytest.raises(EventValidationError) as raised:
        memory_columns(bad)
    with pytest.raises(EventValidationError) as expected:
        make_memory_write(**bad[-1])
    assert str(raised.value) == str(expected.value)
    with pytest.raises(EventValidationError, match="did you mean 'tags'"):
        memory_columns([{"content": "x", "tag": ["typo"]}])
    mixed = [{"content": "a", "embedding": "AACAPw=="}, {"content": "b", "embedding": [1.0]}]
    columns, _ = memory_columns(mixed)  # a base64 vector goes through the model
    assert columns.table.column("embedding").to_pylist() == [[1.0], [1.0]]


def test_writes_table_round_trips_through_the_columns():
    writes = [
        make_memory_write("one", event_id="a", tags=["x"], embedding=[0.1, 0.2]),
        make_memory_write("two", event_id="b", scores={"c": 0.9}, layer="long_term"),
    ]
    back = check_columns(read_ipc(to_ipc(writes_table(writes)))).columns.to_writes()
    for got, want in zip(back, writes, strict=True):
        assert isinstance(got, MemoryWrite)
        assert got.model_dump(exclude={"payload": {"embedding"}}) == want.model_dump(
            exclude={"payload": {"embedding"}}
        )


def test_partitions_of_many_keys_are_kafkas_murmur2():
    rng = random.Random(5)
    keys = [os.urandom(rng.randint(0, 40)) for _ in range(2000)] + [b"", b"a", b"ab", b"abc"]
    for count in (1, 3, 8, 13):
        assert default_partitions(keys, count).tolist() == [
            default_partition(key, count) for key in keys
        ]


def test_an_outcome_array_is_read_outcome_by_outcome():
    from aiokafka import ConsumerRecord

    from loopwarden.schemas import codec
    from loopwarden.settings import Settings
    from loopwarden.streams.client.json_subscribers import MemoryOutcomeSubscriber

    def consumed(value: bytes) -> ConsumerRecord:
        return ConsumerRecord("outcomes", 0, 7, 0, 0, b"s", value, None, 1, len(value), ())

    subscriber = MemoryOutcomeSubscriber(Settings())
    outcomes = [{"event_id": "a", "status": "stored"}, {"event_id": "b", "status": "stored"}]
    assert subscriber._items_of(consumed(codec.dumps(outcomes))) == outcomes
    assert subscriber._items_of(consumed(codec.dumps(outcomes[0]))) == outcomes[:1]
    assert subscriber._items_of(consumed(b"[1, 2]")) == []  # unreadable: skipped, logged
    assert subscriber._items_of(consumed(b"[not json")) == []
