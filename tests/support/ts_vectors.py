"""The Python side of the TypeScript client's cross-language tests (clients/typescript).

``python tests/support/ts_vectors.py cases`` prints, as JSON, the cases both languages
encode and what Python makes of them: action events built by the Python client, result
digests and cuts, partitions of loop ids (aiokafka's murmur2), the texts an agent reads,
and one record of every output kind the worker writes (test_output_contract's).

``python tests/support/ts_vectors.py read`` reads ``{"python": [records…], "typescript":
[records…]}`` (record values as JSON text) on stdin and runs each sequence through the
monitor's own record processor, as the worker would on one partition; it prints the
events each sequence decoded to and the outputs each produced.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from one_record import process_one

from loopwarden.agents.monitor.declaration import LOOP_STATES

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "unit")]

from aiokafka.partitioner import DefaultPartitioner  # noqa: E402

from loopwarden.agents.monitor.records import RecordProcessor  # noqa: E402
from loopwarden.schemas import codec  # noqa: E402
from loopwarden.schemas.dead_letter import SourcePosition  # noqa: E402
from loopwarden.schemas.text_limits import cut_long_text, result_digest  # noqa: E402
from loopwarden.schemas.tool_calls import context_text, stop_text, tool_call_fields  # noqa: E402
from loopwarden.schemas.warnings import LoopWarning  # noqa: E402
from loopwarden.settings import DetectionSettings  # noqa: E402
from loopwarden.streams.client.event_builder import encode_event, make_action_event  # noqa: E402
from loopwarden.streams.runtime.outputs import by_event_root  # noqa: E402

LOOP = "vectors-loop"
LONG = "line of output\n" * 300 + "E   CardDeclined: insufficient_funds"
TEXTS = ["a  b\tc\n", " \u00a0x\u2003y\u3000", "\ufeffbom", "x\x1cy\x1fz\x85w", "", "naïve — ✓ 🚀"]

ACTIONS: list[dict[str, Any]] = [
    {
        "action_type": "read_file",
        "params": {"path": "src/app.py"},
        "read": {"file": "src/app.py"},
        "result": "def main(): ...",
    },
    *[
        {
            "action_type": "deploy",
            "params": {"env": "prod", "flags": ["-v", 2]},
            "success": False,
            "error_message": "permission denied: ./deploy.sh",
            "tool_call_id": f"call-{n}",
        }
        for n in range(6)
    ],
    {"action_type": "shell", "params": {"cmd": "pytest -q"}, "result": LONG, "duration_ms": 812.5},
    {"action_type": "shell", "params": {"cmd": "pytest -q"}, "result": LONG, "duration_ms": 790},
    {"action_type": "edit", "edit": {"start_line": 40, "end_line": 42, "file": "src/app.py"}},
    {
        "action_type": "search",
        "params": {"q": "naïve ✓ 🚀"},
        "rejected": True,
        "error_message": "400: bad query",
    },
    {
        "action_type": "message",
        "turn": "message",
        "result": "I could not deploy: permission denied.",
    },
    {"action_type": "user", "turn": "counterpart", "result": "Please try again."},
    {"action_type": "check", "success": None, "agent": "reviewer", "response_id": "resp-1"},
]


def other_warning_kinds(records: dict[str, list[Any]]) -> list[Any]:
    """Warnings of the kinds the output-contract records leave out, each made by the
    component that makes it: a code-edit spin (the monitor, seed profile), a logic spin
    (the analyst's confirmation), reflection fatigue and a bias echo (the guardrails)."""
    from test_guardrails import completion, never_improving, run

    from loopwarden.agents.analyst.agent import logic_spin_warning

    processor = RecordProcessor(DetectionSettings(profile="seed"))
    states: dict[Any, Any] = {}
    found: list[Any] = []
    for n in range(6):
        edit = {"start_line": 40, "end_line": 41, "file": "app.py"}
        event = make_action_event(
            "edits", "edit", edit=edit, event_id=f"ed-{n}", occurred_at=5.0 + n
        )
        outcome = process_one(
            processor, LOOP_STATES, encode_event(event), None, SourcePosition("a", 0, n), states.get
        )
        states.update(outcome.states)
        found.extend(record for role, record in outcome.outputs() if role == "warnings")
    found.append(logic_spin_warning(records["reflections"][0], ["e1"], iteration=3))
    tag = [{"tag": "confirmation_bias", "detail": "ignores counter-evidence"}]
    bias = [completion(loop, 0.5, 0.5, bias_tags=tag) for loop in ("B", "B_r1", "B_r2")]
    fatigue = never_improving("F", 5, max_reruns=5)
    for events in (bias, fatigue):
        found.extend(run(*events)[2][-1].warnings)
    return found


def cases() -> dict[str, Any]:
    from produced_records import (  # the worker's own output constructors
        analyst_records,
        fleet_records,
        guardrail_records,
        monitor_records,
        other_records,
    )

    events = []
    for n, fields in enumerate(ACTIONS):
        fields = dict(fields)
        action_type = fields.pop("action_type")
        event = make_action_event(
            LOOP, action_type, event_id=f"v-{n}", occurred_at=1_767_225_600.0 + n, **fields
        )
        events.append(
            {
                "fields": {"action_type": action_type, **fields},
                "event_id": f"v-{n}",
                "occurred_at": 1_767_225_600.0 + n,
                "record": encode_event(event, published_at=1_767_225_600.5 + n).decode(),
            }
        )
    records: dict[str, list[Any]] = {}
    for part in (monitor_records, guardrail_records, analyst_records, fleet_records, other_records):
        for role, found in part().items():
            records.setdefault(role, []).extend(codec.loads(codec.dumps(r)) for r in found)
    records["warnings"].extend(codec.loads(codec.dumps(w)) for w in other_warning_kinds(records))
    warnings = [LoopWarning.model_validate(w) for w in records["warnings"]]
    partitioner = DefaultPartitioner()
    keys = ["loop-42", "vectors-loop", "ü-loop ✓", "a" * 256, "run-7/sub-3"]
    return {
        "loop_id": LOOP,
        "events": events,
        "digests": [{"text": t, "digest": result_digest(t)} for t in [*TEXTS, LONG]],
        "cuts": [
            {"payload": p, "cut": cut_long_text(p)}
            for p in (
                {"action_type": "x", "result": LONG},
                {"action_type": "y" * 250, "task": "t" * 2500, "agent": "é" * 201},
                {"action_type": "z", "result": "🚀" * 2100, "result_digest": "given"},
            )
        ],
        "partitions": [
            {
                "key": key,
                "partitions": n,
                "partition": partitioner(key.encode(), list(range(n)), list(range(n))),
            }
            for key in keys
            for n in (1, 3, 8, 12)
        ],
        "texts": {
            "context": context_text(warnings),
            "stop": stop_text(warnings[-1]),
            "warnings": records["warnings"],
        },
        "tool_calls": [
            {
                "tool": "search",
                "args": args,
                "result": result,
                "error": error,
                "fields": tool_call_fields(args, result=result, error=error),
            }
            for args, result, error in (
                ({"q": "x", "n": 3}, "found", None),
                ('{"q": "json string"}', {"b": 1, "a": [2, 1]}, None),
                ("not json", None, "timeout after 30 s"),
                (None, "", None),
                ([1, 2], 42, None),
            )
        ],
        "records": records,
        "keys": [
            {
                "event": codec.loads(e["record"]),
                "key": by_event_root(codec.loads(e["record"]), None).decode(),
            }
            for e in events
        ]
        + [
            {"event": event_json, "key": by_event_root(event_json, None).decode()}
            for event_json in (
                {"loop_id": "sub-1", "payload": {"action_type": "x", "parent_loop_id": "top"}},
                {
                    "loop_id": "sub-2",
                    "payload": {"action_type": "x", "parent_loop_id": "mid", "root_loop_id": "top"},
                },
            )
        ],
    }


def read(sequences: dict[str, list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, values in sequences.items():
        processor = RecordProcessor(DetectionSettings())
        states: dict[Any, Any] = {}
        outputs: list[Any] = []
        dead: list[str] = []
        for offset, value in enumerate(values):
            outcome = process_one(
                processor,
                LOOP_STATES,
                value.encode(),
                LOOP.encode(),
                SourcePosition("actions", 0, offset),
                states.get,
            )
            states.update(outcome.states)
            outputs.extend([role, record] for role, record in outcome.outputs())
            dead.extend(str(d) for d in getattr(outcome, "dead_letters", []))
        out[name] = {"outputs": codec.loads(codec.dumps(outputs)), "dead_letters": dead}
    return out


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "cases"
    result = cases() if mode == "cases" else read(json.load(sys.stdin))
    sys.stdout.write(json.dumps(result, ensure_ascii=False))
