"""Freeze the records of the current schema version: one file per topic, read for ever.

``python tests/support/freeze_records.py`` writes ``tests/fixtures/records/v<N>/<role>.jsonl``
for the schema version ``N`` of this tree — every topic of ``TOPIC_RECORDS``, every record
kind, as the worker's code and the clients' builders make them — and refuses when that
version is frozen already: a frozen version is never written again. Both clients' tests
read every frozen version with today's code (``tests/unit/test_frozen_records.py``,
``clients/typescript/test/frozen.test.ts``): a record written by a release we shipped
(the memory topics are kept for ever) must stay readable. Run it once when a schema
version is shipped; commit what it wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

from produced_records import input_records, output_records

from loopwarden.schemas import codec
from loopwarden.schemas.contract import TOPIC_RECORDS
from loopwarden.schemas.events import SCHEMA_VERSION

FROZEN = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def freeze(root: Path = FROZEN) -> Path:
    """Write this version's records under ``root``; the folder written."""
    folder = root / f"v{SCHEMA_VERSION}"
    if folder.exists():
        raise SystemExit(f"{folder} is frozen already: a shipped version is never rewritten")
    records = {**output_records()}
    for role, more in input_records().items():
        records.setdefault(role, []).extend(more)
    missing = set(TOPIC_RECORDS) - set(records)
    if missing:
        raise SystemExit(f"no record made for {sorted(missing)}: add them to produced_records.py")
    folder.mkdir(parents=True)
    for role in TOPIC_RECORDS:
        lines = [codec.dumps(record).decode() for record in records[role]]
        (folder / f"{role}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


if __name__ == "__main__":
    print(f"froze {freeze()}", file=sys.stderr)
