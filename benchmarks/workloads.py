"""The benchmarks' workloads: encoded action events, ready to publish, with the
warnings each engine owes for them.

- ``synthetic``: the mix of ``action_monitor.py`` since its first version: L loops,
  six bare action types, an action repeating its predecessor with p=0.6 (43 % of the
  events continue a streak). Run with the ``seed`` profile, whose action-type streak
  it was built for.
- ``real``: the real agent runs of ``../shared/datasets/trajectories/`` (every line as
  an adapter publishes it: arguments, result and its digest, the edited file, message
  turns; see :func:`loopwarden.evaluation.dataset.as_event`), each replayed under a
  fresh loop id, ``concurrent`` copies at a time. Every copy keeps its run's own pace
  (the gaps between its events' times; one second a step where a source has no times),
  copies start staggered over a run's typical length, and the events of all copies are
  merged by event time, so a loop's events are as far apart in the stream as the
  agents made them. A finished copy is followed by a copy of the next run. Run with the
  default profile.

Everything is encoded before the clock starts: what is timed is the engines, not the
benchmark's JSON.
"""

from __future__ import annotations

import heapq
import itertools
import os
import random
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.schemas.events import ActionEvent, validate_action
from loopwarden.schemas.flat_events import envelope_from_json
from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import encode_event, make_action_event
from loopwarden.streams.runtime.state.offline import OfflineStates

ACTION_TYPES = ["search", "read_file", "modify_code", "run_tests", "shell", "write_notes"]
TRAJECTORIES = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "trajectories"
PROFILES = {"synthetic": "seed", "real": None}
"""The detection profile each workload runs with (None: the default)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """One event as it goes on the actions topic."""

    loop_id: str
    event_id: str
    data: bytes


def synthetic_pairs(n: int, loops: int, seed: int, tag: str) -> list[tuple[str, str]]:
    """(loop id, action type) of ``n`` events over ``loops`` loops; each loop repeats its
    last action with p=0.6."""
    rng = random.Random(seed)
    last: dict[int, str] = {}
    out = []
    for _ in range(n):
        loop = rng.randrange(loops)
        prev = last.get(loop)
        action = prev if prev is not None and rng.random() < 0.6 else rng.choice(ACTION_TYPES)
        last[loop] = action
        out.append((f"{tag}-loop-{loop}", action))
    return out


def synthetic(n: int, loops: int, seed: int, tag: str) -> list[Prepared]:
    """The events of :func:`synthetic_pairs`, encoded."""
    out = []
    for i, (loop_id, action) in enumerate(synthetic_pairs(n, loops, seed, tag)):
        event = make_action_event(loop_id, action, event_id=f"{loop_id}-{i}", occurred_at=1.0 + i)
        out.append(Prepared(loop_id, event.event_id, encode_event(event, published_at=0.0)))
    return out


def trajectories_dir() -> Path:
    """``$LOOPWARDEN_TRAJECTORIES``, else ``../shared/datasets/trajectories``."""
    path = Path(os.environ.get("LOOPWARDEN_TRAJECTORIES") or TRAJECTORIES)
    if not (path / "events").is_dir():
        raise SystemExit(f"no events/ under {path}: set LOOPWARDEN_TRAJECTORIES")
    return path


@cache
def _runs(root: Path) -> tuple[tuple[tuple[float, ActionEvent], ...], ...]:
    """Every run of ``root`` as (seconds since its first event, validated event)."""
    from loopwarden.evaluation.dataset import load

    runs = []
    for run in load(root):
        timed = []
        for position, flat in enumerate(run.events):
            event = validate_action(envelope_from_json(dict(flat), position, id_prefix="x"))
            timed.append(event)
        first = timed[0].occurred_at
        runs.append(tuple((event.occurred_at - first, event) for event in timed))
    return tuple(runs)


def real(n: int, concurrent: int, seed: int, tag: str, root: Path | None = None) -> list[Prepared]:
    """``n`` events of the real runs, ``concurrent`` loops at a time (module docstring)."""
    runs = _runs(root or trajectories_dir())
    rng = random.Random(seed)
    order = list(range(len(runs)))
    rng.shuffle(order)
    next_run = itertools.cycle(order)
    lengths = sorted(run[-1][0] for run in runs)
    typical = lengths[len(lengths) // 2] or 60.0
    # (event time, copy number, step): the earliest next event of all live copies
    heap: list[tuple[float, int, int]] = []
    copies: dict[int, tuple[int, float]] = {}  # copy -> (run index, start time)
    counter = itertools.count()

    def start(at: float) -> None:
        copy = next(counter)
        copies[copy] = (next(next_run), at)
        heapq.heappush(heap, (at, copy, 0))

    for _ in range(concurrent):
        start(1.8e9 + rng.uniform(0.0, typical))
    out: list[Prepared] = []
    while len(out) < n:
        at, copy, step = heapq.heappop(heap)
        run_index, began = copies[copy]
        run = runs[run_index]
        loop_id = f"{tag}-{copy}"
        event = run[step][1].model_copy(
            update={"loop_id": loop_id, "event_id": f"{loop_id}#{step}", "occurred_at": at}
        )
        out.append(Prepared(loop_id, event.event_id, encode_event(event, published_at=0.0)))
        if step + 1 < len(run):
            heapq.heappush(heap, (began + run[step + 1][0], copy, step + 1))
        else:
            del copies[copy]
            start(at + rng.uniform(1.0, 30.0))
    return out


def warmup(tag: str) -> list[Prepared]:
    """A loop that both profiles warn on: the same file read four times with the same
    content. Nothing fails, so no lesson is written: the memory's embedder is not loaded
    in the middle of a measurement."""
    out = []
    for i in range(4):
        event = make_action_event(
            f"{tag}-warmup",
            "read_file",
            event_id=f"{tag}-warmup-{i}",
            occurred_at=1.0 + i,
            params={"path": "src/app.py"},
            result="def main():\n    return 1\n",
        )
        out.append(Prepared(event.loop_id, event.event_id, encode_event(event, published_at=0.0)))
    return out


def monitor_warnings(settings: Settings, events: Iterable[Prepared]) -> int:
    """The warnings loopwarden's monitor produces for ``events`` (offline, the same code
    as the worker, the raw processor and the Quix engine run)."""
    processor = RecordProcessor.for_settings(settings)
    states = OfflineStates.for_settings(LOOP_STATES, settings)
    count = 0
    for offset, item in enumerate(events):
        outcome = states.apply(
            processor, item.data, item.loop_id.encode(), SourcePosition("bench", 0, offset)
        )
        count += len(outcome.warnings)
    return count


def streak_warnings(events: Iterable[Prepared]) -> int:
    """The warnings of ``raw-trivial``'s rule (the same action type 3+ times in a row)."""
    import orjson

    streaks: dict[str, tuple[str, int]] = {}
    count = 0
    for item in events:
        action = orjson.loads(item.data)["payload"]["action_type"]
        prev, run = streaks.get(item.loop_id, ("", 0))
        run = run + 1 if prev == action else 1
        streaks[item.loop_id] = (action, run)
        count += run >= 3
    return count


def expected_warnings(engine: str, settings: Settings, events: list[Prepared]) -> int:
    """What ``engine`` owes for ``events`` under ``settings``."""
    if engine == "raw-trivial":
        return streak_warnings(events)
    return monitor_warnings(settings, events)
