"""Runs in loopwarden's dataset format, with their loop annotations.

A dataset directory holds ``events/<source>/<run>.jsonl`` (one flat event per line,
as ``loopwarden detect`` reads them), ``loops.jsonl`` (where each run is stuck in a
loop) and, optionally, ``labels.csv`` (task outcomes). :func:`as_event` passes each
line's signals the way an adapter would:

- a multi-agent chat turn (``params.agent`` set, no call arguments besides its text,
  no observation) is a message turn of that agent: its text (``params.command``) is
  the message, ``params.command_sha1`` its digest;
- any other line is a tool call: its arguments are the ``params`` that are not the
  dataset's own bookkeeping, ``params.observation`` its result (as published, cut to
  the event's limit) and ``params.observation_sha1`` the digest of the whole result;
- ``params.edit_file`` names the edited file of an ``edit``;
- ``success_basis: none`` (the source does not say) is an unknown outcome.
Fields an event already carries (``turn``, ``result``, ``agent``, …) are kept.

Two signals an integration may or may not publish are passed only when asked
(``signals``), so every figure can be given with and without them:

- ``rejected``: a call the harness refused before it had any effect, where the source
  records it (:data:`REJECTIONS`: mini-swe-agent's reply-format errors, tau-bench's tool
  errors, which its tools raise before changing anything);
- ``counterpart``: the person's turns, read from ``person-turns/<source>/`` in place of
  ``events/<source>/`` where that folder has the run.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopwarden.schemas import codec
from loopwarden.schemas.events import RESULT_MAX_CHARS

BOOKKEEPING = frozenset(
    {
        "source",
        "step",
        "agent",
        "observation",
        "observation_sha1",
        "observation_chars",
        "command_chars",
        "command_sha1",
        "success_basis",
        "exit_code",
        "n_blocks",
        "question_removed",
        "edit_kind",
        "edit_file",
    }
)
"""``params`` keys that describe the dataset's conversion, not the call."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Where a run is stuck: 0-based positions in its file."""

    start: int
    evident: int
    end: int
    kind: str
    note: str = ""

    def hit(self, position: int, slack: int = 2) -> bool:
        """``position`` lies in ``[start, end + slack]``."""
        return self.start <= position <= self.end + slack


@dataclass(slots=True)
class Run:
    """One agent run: its events (as published), its source and its loops."""

    loop_id: str
    source: str
    events: list[dict[str, Any]]
    segments: list[Segment] = field(default_factory=list)
    confidence: str = ""
    outcome: str = ""

    @property
    def looping(self) -> bool:
        return bool(self.segments)

    @property
    def positions(self) -> list[int]:
        """Per event, its position as ``loops.jsonl`` counts them: the agent's actions
        only; a counterpart's turn (a line without ``iteration``) is at the agent's action
        before it."""
        out, position = [], -1
        for event in self.events:
            if not heard(event):
                position += 1
            out.append(max(position, 0))
        return out

    @property
    def actions(self) -> int:
        """The agent's actions (the counterpart's turns are not)."""
        return sum(1 for event in self.events if not heard(event))


def heard(event: dict[str, Any]) -> bool:
    """A counterpart's turn (the person, the calling agent), not one of the agent's actions."""
    return event.get("turn") == "counterpart" or (
        event.get("turn") == "message" and "iteration" not in event
    )


def as_event(line: dict[str, Any]) -> dict[str, Any]:
    """One dataset line as the flat event an adapter would publish (module docstring)."""
    params = dict(line.get("params") or {})
    event = {k: v for k, v in line.items() if k != "params"}
    arguments = {k: v for k, v in params.items() if k not in BOOKKEEPING}
    if params.get("agent"):
        event.setdefault("agent", str(params["agent"]))
    # a turn answered by a result (a tool's output, the next speaker's reply) is a call
    answered = "observation" in params or "observation_sha1" in params
    chat_turn = params.get("agent") and set(arguments) <= {"command"} and not answered
    if chat_turn and event.get("turn", "message") == "message":
        text = str(params.get("command") or "")
        event.update(turn="message", params={})
        event.setdefault("result", text[:RESULT_MAX_CHARS])
        if params.get("command_sha1"):
            event.setdefault("result_digest", params["command_sha1"])
    else:
        event["params"] = arguments
        if "observation" in params and "result" not in event:
            event["result"] = str(params["observation"])[:RESULT_MAX_CHARS]
        if params.get("observation_sha1") and "result_digest" not in event:
            event["result_digest"] = params["observation_sha1"]
    if event.get("edit") and params.get("edit_file"):
        event["edit"] = {**event["edit"], "file": params["edit_file"]}
    if params.get("success_basis") == "none":
        event["success"] = None
    return event


SIGNALS = ("rejected", "counterpart")
"""The optional signals :func:`load` can pass (module docstring)."""

REJECTIONS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "mini-swe-agent": lambda line: line.get("action_type") == "(format_error)",
    "tau-bench": lambda line: line.get("success") is False,
}
"""Per source: the lines that record a call the harness refused, as its adapter would
mark them ``rejected``."""


def source_of(line: dict[str, Any], path: Path) -> str:
    """The run's source: ``params.source`` up to its first ``/``, else its folder."""
    source = str((line.get("params") or {}).get("source") or path.parent.name)
    return source.split("/", 1)[0]


def load(root: Path, signals: Iterable[str] = ()) -> list[Run]:
    """Every run under ``root/events`` with its annotation (runs without one are left
    out: they cannot be scored) and outcome label when ``labels.csv`` has one, with the
    optional ``signals`` passed (module docstring)."""
    wanted = set(signals)
    unknown = wanted - set(SIGNALS)
    if unknown:
        raise ValueError(f"unknown signal(s) {sorted(unknown)}: choose from {SIGNALS}")
    annotations = {}
    for raw in (root / "loops.jsonl").read_bytes().splitlines():
        if raw.strip():
            note = codec.loads(raw)
            annotations[note["loop_id"]] = note
    outcomes = {}
    if (root / "labels.csv").exists():
        with (root / "labels.csv").open() as handle:
            outcomes = {row["loop_id"]: row.get("outcome", "") for row in csv.DictReader(handle)}
    runs = []
    for path in sorted((root / "events").glob("*/*.jsonl")):
        heard = root / "person-turns" / path.parent.name / path.name
        if "counterpart" in wanted and heard.exists():
            path = heard
        lines = [codec.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
        if not lines or lines[0]["loop_id"] not in annotations:
            continue
        source = source_of(lines[0], path)
        refused = REJECTIONS.get(source) if "rejected" in wanted else None
        if refused is not None:
            lines = [{**line, "rejected": True} if refused(line) else line for line in lines]
        note = annotations[lines[0]["loop_id"]]
        segments = [
            Segment(s["start"], s["evident"], s["end"], s.get("kind", ""), s.get("note", ""))
            for s in note.get("segments") or []
        ]
        runs.append(
            Run(
                loop_id=lines[0]["loop_id"],
                source=source,
                events=[as_event(line) for line in lines],
                segments=segments,
                confidence=note.get("confidence", ""),
                outcome=outcomes.get(lines[0]["loop_id"], ""),
            )
        )
    return runs
