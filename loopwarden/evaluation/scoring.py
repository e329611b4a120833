"""The figures of a detector against annotated loops (``LOOPS.md`` of the dataset).

A warning *hits* when its triggering action lies in ``[start, end + 2]`` of a loop
segment. Per set of runs:

- ``recall``: share of looping runs warned inside a segment;
- ``timely``: share of looping runs warned inside a segment by ``evident + 2``;
- ``false_alarms``: share of loop-free runs warned at all;
- ``precision``: share of all warnings that hit;
- ``per_100``: warnings per 100 actions on loop-free runs;
- ``median_delay``: median, over warned looping runs, of first hit − ``evident``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from loopwarden.evaluation.dataset import Run

SLACK = 2


@dataclass(frozen=True, slots=True)
class Figures:
    """Detection figures over a set of runs (see the module docstring)."""

    looping_runs: int
    loop_free_runs: int
    recall: float
    timely: float
    false_alarms: float
    precision: float | None
    per_100: float
    median_delay: float | None
    warnings: int

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def first_hit(run: Run, positions: Sequence[int]) -> tuple[int, int] | None:
    """(position, evident of its segment) of the run's first warning inside a segment."""
    for position in sorted(positions):
        for segment in run.segments:
            if segment.hit(position, SLACK):
                return position, segment.evident
    return None


def timely(run: Run, positions: Sequence[int]) -> bool:
    """A warning inside a segment by its ``evident + 2``."""
    return any(
        segment.start <= p <= segment.evident + SLACK for segment in run.segments for p in positions
    )


def score(runs: Iterable[Run], positions: Mapping[str, Sequence[int]]) -> Figures:
    """The figures for ``positions`` (warning positions per loop id) over ``runs``."""
    looping = free = recalled = in_time = warned_free = 0
    hits = total = free_warnings = free_actions = 0
    delays: list[int] = []
    for run in runs:
        mine = list(positions.get(run.loop_id, ()))
        total += len(mine)
        hits += sum(1 for p in mine if any(s.hit(p, SLACK) for s in run.segments))
        if run.looping:
            looping += 1
            hit = first_hit(run, mine)
            if hit is not None:
                recalled += 1
                delays.append(hit[0] - hit[1])
            in_time += timely(run, mine)
        else:
            free += 1
            warned_free += bool(mine)
            free_warnings += len(mine)
            free_actions += run.actions
    return Figures(
        looping_runs=looping,
        loop_free_runs=free,
        recall=recalled / looping if looping else 0.0,
        timely=in_time / looping if looping else 0.0,
        false_alarms=warned_free / free if free else 0.0,
        precision=hits / total if total else None,
        per_100=100 * free_warnings / free_actions if free_actions else 0.0,
        median_delay=statistics.median(delays) if delays else None,
        warnings=total,
    )
