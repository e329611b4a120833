"""Layer 3: code-edit spin (seed 000 section 2.3), as the seed's code counts it.

For each edit the seed compares the current edit with the most recent earlier
edit among the last ``lookback`` actions:

- same region: start lines and end lines each differ by at most ``region_lines`` (5);
- small edit: ``end - start + 1 <= small_max_lines`` (3).

Same region and small increments the count; anything else resets it to 0. The
edit is a spin when the count reaches ``spin_count`` (3). The first edit of a
region only starts the comparison, so the count reaches 3 on the fourth edit
(the seed's code; its prose says "three"). Actions that are not edits neither
count nor reset, but an edit older than the look-back no longer matches. An edit
to another file (``edit.file``, when the producer sends it) is another region.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopwarden.agents.spin import texts
from loopwarden.agents.spin.detector import Detector, Finding, Observation, register
from loopwarden.schemas.warnings import WarningKind


def is_same_region(prev_start: int, prev_end: int, start: int, end: int, region_lines: int) -> bool:
    """The seed's ``isInSameRegion``: both line distances within ``region_lines``."""
    return abs(start - prev_start) <= region_lines and abs(end - prev_end) <= region_lines


def is_small_edit(start: int, end: int, small_max_lines: int) -> bool:
    """The seed's ``isSmallEdit``: spans at most ``small_max_lines`` lines."""
    return end - start + 1 <= small_max_lines


@dataclass(frozen=True, slots=True)
class EditSpin:
    """A detected code-edit spin."""

    start_line: int
    end_line: int
    count: int
    event_ids: tuple[str, ...]


@dataclass(slots=True)
class CodeEditSpinDetector:
    """Per-loop Layer 3 state: spin count, last edit, and the streak's event ids."""

    count: int = 0
    last_start: int = 0
    last_end: int = 0
    last_seq: int = -1
    streak_ids: list[str] = field(default_factory=list)
    last_file: str | None = None

    def observe(
        self,
        *,
        seq: int,
        event_id: str,
        start_line: int,
        end_line: int,
        region_lines: int = 5,
        small_max_lines: int = 3,
        spin_count: int = 3,
        lookback: int = 10,
        file: str | None = None,
    ) -> EditSpin | None:
        """Record the edit made by action number ``seq``; return a spin if there is one."""
        has_previous = (
            self.last_seq >= 0 and seq - self.last_seq <= lookback and file == self.last_file
        )
        same_region = has_previous and is_same_region(
            self.last_start, self.last_end, start_line, end_line, region_lines
        )
        if same_region and is_small_edit(start_line, end_line, small_max_lines):
            self.count += 1
            self.streak_ids.append(event_id)
            del self.streak_ids[: -(spin_count + lookback)]
        else:
            self.count = 0
            self.streak_ids = [event_id]
        self.last_start, self.last_end, self.last_seq = start_line, end_line, seq
        self.last_file = file
        if self.count >= spin_count:
            return EditSpin(start_line, end_line, self.count, tuple(self.streak_ids))
        return None

    def snapshot(self) -> list[object]:
        """State as plain JSON values."""
        state = [self.count, self.last_start, self.last_end, self.last_seq, self.streak_ids]
        return state if self.last_file is None else [*state, self.last_file]

    @classmethod
    def restore(cls, data: list[object]) -> CodeEditSpinDetector:
        """Inverse of :meth:`snapshot`."""
        count, start, end, seq, ids = data[:5]
        last_file = data[5] if len(data) > 5 else None
        return cls(int(count), int(start), int(end), int(seq), list(ids), last_file)  # type: ignore[arg-type, call-overload]


@register
@dataclass(slots=True)
class CodeEditSpin(Detector):
    """Layer 3 as a detector, with the ``detection.edit_*`` settings."""

    name = "code_edit"
    kind = WarningKind.CODE_EDIT_SPIN.value
    edits: CodeEditSpinDetector = field(default_factory=CodeEditSpinDetector)

    def observe(self, seen: Observation) -> Finding | None:
        edit = seen.event.payload.edit
        if edit is None:
            return None
        cfg = seen.settings
        spin = self.edits.observe(
            seq=seen.seq,
            event_id=seen.event.event_id,
            start_line=edit.start_line,
            end_line=edit.end_line,
            region_lines=cfg.edit_region_lines,
            small_max_lines=cfg.edit_small_max_lines,
            spin_count=cfg.edit_spin_count,
            lookback=cfg.edit_lookback_actions,
            file=edit.file,
        )
        if spin is None:
            return None
        lang = cfg.language
        reason = texts.edit_spin_reason(lang, spin.start_line, spin.end_line, spin.count)
        return Finding(
            kind=self.kind,
            reason=reason,
            suggestions=texts.EDIT_SPIN_SUGGESTIONS[lang],
            event_ids=spin.event_ids,
            timeline_message=texts.edit_spin_prompt(lang, spin.start_line, spin.end_line, reason),
            consecutive_count=spin.count,
            edit=edit_record(edit),
        )

    def snapshot(self) -> Any:
        return self.edits.snapshot()

    @classmethod
    def restore(cls, data: Any) -> CodeEditSpin:
        return cls(CodeEditSpinDetector.restore(data))


def edit_record(edit: Any) -> dict[str, Any]:
    """An :class:`EditRange` as warnings and the loop's window carry it."""
    return {
        "start_line": edit.start_line,
        "end_line": edit.end_line,
        "content": edit.content,
        "file": edit.file,
    }
