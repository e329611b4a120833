"""Recorded against reproduced, by id, with an explanation for every difference.

Statuses: ``match`` (same id, same content — the ``produced_by`` stamp aside),
``missing`` (reproduced, never recorded), ``unexpected`` (recorded, not
reproduced) and ``changed`` (same id, other content); dead letters are compared
by the position of the rejected input. A difference is *explained* when the
recorded stamp names other settings or another logic version, when the workers
had not yet committed past its input, or when the state before the range was
not rebuilt; otherwise it is reported as unexplained, which is what an audit
looks for. Outputs recorded twice with the same content are duplicates of an
at-least-once redelivery, not differences.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from loopwarden.agents.audit.recorded import Recorded, RecordedOutput
from loopwarden.agents.audit.replayer import Output, Position, ReplayState, Reproduced
from loopwarden.schemas import codec
from loopwarden.schemas.provenance import differing_settings

NOT_REPLAYED = {"analyst"}
"""Components whose outputs a replay cannot reproduce (an LLM decides them)."""


@dataclass(slots=True)
class Difference:
    """One output (or dead letter) on which recording and replay disagree."""

    status: str
    kind: str
    output_id: str
    loop_id: str
    position: str
    summary: str
    explanation: str
    explained: bool


@dataclass(slots=True)
class LoopRow:
    """Counts for one loop."""

    loop_id: str
    inputs: int = 0
    """Input events replayed: actions, and the reflection requests and loop completions
    the analyst and the guardrails read."""
    reproduced: int = 0
    recorded: int = 0
    matched: int = 0
    missing: int = 0
    unexpected: int = 0
    changed: int = 0
    duplicates: int = 0


@dataclass(slots=True)
class AuditContext:
    """What the comparison knows beyond the outputs themselves."""

    stamps: Mapping[str, Output]
    """The replay's ``produced_by`` stamps, by component."""
    committed: Mapping[tuple[str, int], int] | None = None
    """The workers' committed offsets (None: unknown)."""
    rebuilt: bool = True
    """False when the state before the range was not rebuilt (``--rebuild none``)."""
    unseen: frozenset[str] = frozenset()
    """Ids of reproduced outputs whose place on their topic the retention has deleted:
    the recording cannot show them, so they are counted apart, not as missing."""


@dataclass(slots=True)
class AuditReport:
    """The outcome of one audit."""

    rows: dict[str, LoopRow] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_replayed: int = 0
    dead_letters: int = 0
    unseen: int = 0
    """Reproduced outputs older than what their topic still holds (not compared)."""

    @property
    def agree(self) -> bool:
        """True when nothing differs (and something was compared: see :attr:`empty`)."""
        return not self.differences and not self.empty

    @property
    def empty(self) -> bool:
        """True when the scope held no input event and no recorded output: nothing was
        audited (a loop id with no event, a range before the topic's start)."""
        return not any(row.inputs or row.recorded for row in self.rows.values())

    def totals(self) -> LoopRow:
        """The sum of every loop's row."""
        total = LoopRow("(all)")
        for row in self.rows.values():
            for name in ("inputs", "reproduced", "recorded", "matched", "missing"):
                setattr(total, name, getattr(total, name) + getattr(row, name))
            for name in ("unexpected", "changed", "duplicates"):
                setattr(total, name, getattr(total, name) + getattr(row, name))
        return total

    def to_json_dict(self) -> dict[str, Any]:
        """Everything, for tooling (``--json``)."""
        return {
            "agree": self.agree,
            "empty": self.empty,
            "unseen": self.unseen,
            "totals": asdict(self.totals()),
            "loops": [asdict(row) for row in self.rows.values()],
            "differences": [asdict(d) for d in self.differences],
            "explained": sum(d.explained for d in self.differences),
            "unexplained": sum(not d.explained for d in self.differences),
            "dead_letters": self.dead_letters,
            "not_replayed": self.not_replayed,
            "notes": self.notes,
        }


def _content(output: Output) -> Output:
    """The output as JSON would carry it, without its provenance stamp."""
    plain: Output = codec.loads(codec.dumps(output))
    plain.pop("produced_by", None)
    plain.pop("trace_context", None)  # the run's spans, not the logic's output
    return plain


def _changed_fields(recorded: Output, reproduced: Output) -> str:
    names = sorted(
        k for k in set(recorded) | set(reproduced) if recorded.get(k) != reproduced.get(k)
    )
    shown = [_change(n, recorded.get(n), reproduced.get(n)) for n in names[:3]]
    more = f" (+{len(names) - 3} more)" if len(names) > 3 else ""
    return "; ".join(shown) + more


def _change(name: str, before: Any, after: Any) -> str:
    """One changed field, said so a person sees what changed: for lists the items that
    went and came (ids in full), for objects the keys that differ, else both values."""
    if isinstance(before, list) and isinstance(after, list):
        gone = [item for item in before if item not in after]
        came = [item for item in after if item not in before]
        if not gone and not came:
            return f"{name}: the same items in another order"
        parts = [f"−{_items(gone)}" if gone else "", f"+{_items(came)}" if came else ""]
        return f"{name}: " + " ".join(p for p in parts if p)
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        inner = [f"{name}.{k}: {_short(before.get(k))} → {_short(after.get(k))}" for k in keys]
        return "; ".join(inner[:3]) + (f" (+{len(inner) - 3} more)" if len(inner) > 3 else "")
    return f"{name}: {_short(before)} → {_short(after)}"


def _items(items: list[Any], most: int = 3) -> str:
    shown = ", ".join(_short(item, 60) for item in items[:most])
    more = f", +{len(items) - most} more" if len(items) > most else ""
    return f"[{shown}{more}]"


def _short(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else codec.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _trigger(output: Output) -> Any:
    """The id of the event an output answers (advice: its task start)."""
    return output.get("trigger_event_id", output.get("task_event_id"))


def _component(output: Output, kind: str) -> str:
    stamp = output.get("produced_by")
    if isinstance(stamp, dict) and isinstance(stamp.get("component"), str):
        return str(stamp["component"])
    return {"rerun_decision": "guardrails", "advice": "experience"}.get(kind, "monitor")


def _summary(output: Output, kind: str) -> str:
    decision = output.get("decision_result", {}).get("decision")
    label = output.get("kind") or decision or output.get("strategy") or kind
    return f"{kind} {label} for event {_trigger(output)}"


class Comparison:
    """Builds an :class:`AuditReport` from a replay and a recording."""

    def __init__(self, replay: ReplayState, recorded: Recorded, context: AuditContext) -> None:
        self.replay = replay
        self.recorded = recorded
        self.context = context
        self.report = AuditReport()
        self._stamps_by_loop: dict[tuple[str, str], Output] = {}
        self._stamps: dict[str, Counter[str]] = defaultdict(Counter)
        self._stamp_values: dict[str, Output] = {}
        self._set_aside: Counter[str] = Counter()
        """Recorded outputs not compared: why (a reason, or the analyst) → how many."""

    def run(self) -> AuditReport:
        """Compare everything and return the report."""
        replay, report = self.replay, self.report
        for loop, _ in replay.events.values():
            self._row(loop).inputs += 1
        in_scope = self._recorded_in_scope()
        for output_id in sorted(set(in_scope) | set(replay.outputs)):
            copies = in_scope.get(output_id, [])
            self._compare(output_id, replay.outputs.get(output_id), copies)
        self._compare_dead_letters()
        self._settings_notes()
        report.differences.sort(key=lambda d: (d.loop_id, d.position, d.status))
        return report

    def _row(self, loop_id: str) -> LoopRow:
        row = self.report.rows.get(loop_id)
        if row is None:
            row = self.report.rows[loop_id] = LoopRow(loop_id)
        return row

    def _recorded_in_scope(self) -> dict[str, list[RecordedOutput]]:
        """Recorded outputs caused by events inside the range (the analyst's set aside)."""
        events = self.replay.events
        for output_id, count in self.recorded.exact.items():  # the replay's own bytes
            reproduced = self.replay.outputs[output_id]
            stamp = reproduced.output.get("produced_by")
            if isinstance(stamp, dict):
                key = f"{stamp['fingerprint']}/v{stamp.get('logic_version')}"
                self._stamps[_component(reproduced.output, reproduced.kind)][key] += count
                self._stamp_values[key] = stamp
        scoped: dict[str, list[RecordedOutput]] = {}
        for output_id, copies in self.recorded.outputs.items():
            first = copies[0].output
            if _trigger(first) not in events:
                continue
            component = _component(first, copies[0].kind)
            reason = self.replay.not_replayed.get(output_id)
            if component in NOT_REPLAYED or reason is not None:
                self.report.not_replayed += 1
                self._set_aside[reason or component] += 1
                continue
            scoped[output_id] = copies
            for copy in copies:
                stamp = copy.output.get("produced_by")
                if isinstance(stamp, dict) and "fingerprint" in stamp:
                    self._stamps_by_loop[(str(first.get("loop_id")), component)] = stamp
                    key = f"{stamp['fingerprint']}/v{stamp.get('logic_version')}"
                    self._stamps[component][key] += 1
                    self._stamp_values[key] = stamp
        return scoped

    def _compare(
        self, output_id: str, reproduced: Reproduced | None, copies: list[RecordedOutput]
    ) -> None:
        sample = reproduced.output if reproduced is not None else copies[0].output
        kind = reproduced.kind if reproduced is not None else copies[0].kind
        loop_id = str(sample.get("loop_id"))
        row = self._row(loop_id)
        exact = self.recorded.exact.get(output_id, 0)
        row.reproduced += reproduced is not None
        row.recorded += bool(copies or exact)
        if reproduced is None:
            row.unexpected += 1
            self._differ("unexpected", kind, output_id, sample, copies[0].position, copies[0])
            return
        if not copies and not exact and output_id in self.context.unseen:
            self.report.unseen += 1
            return
        if not copies and not exact:
            row.missing += 1
            self._differ("missing", kind, output_id, sample, reproduced.position, None)
            return
        row.duplicates += exact + len(copies) - 1
        if not copies:
            row.matched += 1
            return
        expected = _content(reproduced.output)
        contents = [_content(copy.output) for copy in copies]
        wrong = [(copy, c) for copy, c in zip(copies, contents, strict=True) if c != expected]
        if not wrong:
            row.matched += 1
            return
        row.changed += 1
        copy, content = wrong[0]
        detail = _changed_fields(content, expected)
        self._differ("changed", kind, output_id, sample, reproduced.position, copy, detail)

    def _differ(
        self,
        status: str,
        kind: str,
        output_id: str,
        output: Output,
        position: Position,
        recorded: RecordedOutput | None,
        detail: str = "",
    ) -> None:
        component = _component(output, kind)
        loop_id = str(output.get("loop_id"))
        trigger = self.replay.events.get(str(_trigger(output)))
        trigger_position = trigger[1] if trigger is not None else position
        stamp = recorded.output.get("produced_by") if recorded is not None else None
        if stamp is None:
            stamp = self._stamps_by_loop.get((loop_id, component)) or self._dominant(component)
        explanation, explained = self._explain(status, component, stamp, trigger_position)
        summary = _summary(output, kind) + (f": {detail}" if detail else "")
        self.report.differences.append(
            Difference(
                status, kind, output_id, loop_id, str(position), summary, explanation, explained
            )
        )

    def _dominant(self, component: str) -> Output | None:
        seen = self._stamps.get(component)
        if not seen:
            return None
        return self._stamp_values[seen.most_common(1)[0][0]]

    def _explain(
        self, status: str, component: str, stamp: Any, trigger: Position
    ) -> tuple[str, bool]:
        committed = self.context.committed
        if status == "missing" and committed is not None:
            done = committed.get((trigger.topic, trigger.partition), 0)
            if trigger.offset >= done:
                return (
                    f"the workers had not processed {trigger} yet (committed offset {done})",
                    True,
                )
        replay_stamp = self.context.stamps.get(component)
        if isinstance(stamp, dict) and replay_stamp is not None:
            recorded_version = stamp.get("logic_version")
            if recorded_version != replay_stamp["logic_version"]:
                return (
                    f"logic changed: recorded by {component} logic v{recorded_version}, "
                    f"replayed with v{replay_stamp['logic_version']}",
                    True,
                )
            if stamp.get("fingerprint") != replay_stamp["fingerprint"]:
                changes = differing_settings(stamp.get("settings", {}), replay_stamp["settings"])
                listed = ", ".join(
                    f"{k} {_short(a)} → {_short(b)}" for k, (a, b) in changes.items()
                )
                return f"settings differ (recorded → replayed): {listed}", True
        if not self.context.rebuilt:
            return "state before the range was not rebuilt (--rebuild none)", True
        if stamp is None:
            return "recorded without a produced_by stamp: the settings used are unknown", False
        return "unexplained: same settings and logic version", False

    def _compare_dead_letters(self) -> None:
        replay, recorded = self.replay, self.recorded
        positions = replay.positions
        keys = replay.dead_letter_keys
        theirs = {
            k: v
            for k, v in recorded.dead_letters.items()
            if k[:3] in positions and (keys is None or v.key in keys)
        }
        ours = replay.dead_letters
        self.report.dead_letters = len(ours)
        for key in sorted(set(ours) | set(theirs)):
            where = f"{key[0]}[{key[1]}]@{key[2]}" + (f"#{key[3]}" if key[3] else "")
            mine, logged = ours.get(key), theirs.get(key)
            if mine is not None and logged is not None:
                self.report.notes.append(
                    f"{where} was dead-lettered ({mine.reason}) live and in the replay: "
                    "no output is expected from it"
                )
                continue
            letter = mine or logged
            assert letter is not None
            status = "missing" if logged is None else "unexpected"
            side = (
                "the replay rejects it, the workers did not"
                if logged is None
                else ("the workers rejected it, the replay does not")
            )
            self.report.differences.append(
                Difference(
                    status,
                    "dead_letter",
                    where,
                    "(input)",
                    where,
                    f"dead letter {letter.reason}: {letter.message}",
                    f"{side} (validation or limits.max_event_bytes differ)",
                    False,
                )
            )

    def _settings_notes(self) -> None:
        if self.report.unseen:
            self.report.notes.append(
                f"{self.report.unseen} reproduced output(s) fall before what their topic "
                "still holds (its retention deleted the older records): not compared"
            )
        duplicates = sum(row.duplicates for row in self.report.rows.values())
        if duplicates:
            self.report.notes.append(
                f"{duplicates} output(s) were recorded more than once with the same content: "
                "an at-least-once redelivery (a worker restart); consumers drop them by id"
            )
        for component, seen in sorted(self._stamps.items()):
            if len(seen) > 1:
                values = [self._stamp_values[key] for key, _ in seen.most_common()]
                changes = differing_settings(values[0]["settings"], values[1]["settings"])
                names = ", ".join(changes) or "logic version"
                self.report.notes.append(
                    f"{component} settings changed during the range ({len(seen)} stamps; "
                    f"{names}): outputs are compared with the replay's settings"
                )
        for reason, count in sorted(self._set_aside.items()):
            if reason in NOT_REPLAYED:
                self.report.notes.append(
                    f"{count} analyst output(s) (logic-spin warnings) are not "
                    "replayed: an LLM or heuristic decides them from reflection requests"
                )
            else:
                self.report.notes.append(f"{count} advice not replayed: {reason}")


def compare(replay: ReplayState, recorded: Recorded, context: AuditContext) -> AuditReport:
    """Compare a replay with what was recorded; see :class:`Comparison`."""
    return Comparison(replay, recorded, context).run()
