"""kill -9 of the worker at random points during a stream with known spins, memory writes
and families of delegated loops spread over partitions.

A share of the kills lands during start-up (group join, table recovery): the
schedule that once lost 274 warnings for good and left a worker stalled with
memory writes pending. After the last kill a worker runs to the end of the
stream; then every expected warning and reflection request must be on its topic
with the content the detectors give offline (same-id redeliveries allowed),
every memory write must have an outcome that is not ``rejected``, every fleet
warning (a delegation cycle per family: warned, then stopped) and each loop's own
fleet warning must be there as the fleet decides them offline, LanceDB must hold
no duplicate row, and each loop's last stored state must have applied every event
of it the topic holds (:mod:`faultsuite.postmortem` says whether a lost output's
event never reached the broker or was skipped by the worker; with
``LOOPWARDEN_FAULTS_LOGS`` set a failed run keeps the topics' records too).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from pathlib import Path
from typing import Any

import lancedb

from faultsuite.families import expected_fleet, family_events
from faultsuite.harness import (
    MONITOR_WARNINGS,
    Cluster,
    cluster,
    compare,
    expected_outputs,
    make_workload,
    read_json,
    read_records,
    wait_committed,
)
from faultsuite.postmortem import (
    applied_by_loop,
    dump_topics,
    events_by_loop,
    state_gaps,
)
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.schemas.fleet import FLEET_KINDS
from loopwarden.streams.client.publisher import AsyncPublisher


async def _publish(c: Cluster, workload: Any, duration_s: float) -> list[str]:
    """Publish the workload spread over ``duration_s``; returns the memory write ids."""
    events = workload.events
    chunks = max(1, int(duration_s / 0.25))
    size = max(1, len(events) // chunks)
    memory_ids: list[str] = []
    async with AsyncPublisher(c.settings) as publisher:
        for start in range(0, len(events), size):
            for event in events[start : start + size]:
                publisher.publish_event(event)
            index = start // size
            if index < len(workload.memories):
                memory_ids.append(await publisher.remember(workload.memories[index]))
            await asyncio.sleep(0.25)
        for text in workload.memories[len(memory_ids) :]:
            memory_ids.append(await publisher.remember(text))
    return memory_ids


async def _kill_repeatedly(
    c: Cluster, rng: random.Random, kills: int, startup_share: float
) -> dict[str, int]:
    worker = c.start_worker()
    during_startup = 0
    for _ in range(kills):
        if rng.random() < startup_share:
            during_startup += 1
            await asyncio.sleep(rng.uniform(0.3, 4.5))  # joining, recovering
        else:
            await asyncio.sleep(rng.uniform(4.5, 9.0))  # processing
        worker.kill()
        worker.wait(10)
        worker = c.start_worker()
    return {"kills": kills, "during_startup": during_startup}


def _lance_rows(uri: str) -> tuple[int, int]:
    """(rows, rows sharing an id with another row) of the memories table."""
    db = lancedb.connect(uri)
    if "memories" not in db.list_tables().tables:
        return 0, 0
    ids = db.open_table("memories").to_arrow().column("id").to_pylist()
    return len(ids), len(ids) - len(set(ids))


async def crash_run(
    seed: int,
    *,
    kills: int = 20,
    loops: int = 60,
    events_per_loop: int = 40,
    memories: int = 30,
    startup_share: float = 0.4,
    catch_up_s: float = 240.0,
    families: int = 4,
) -> dict[str, Any]:
    """One seeded run; returns its measurements (see the module docstring)."""
    rng = random.Random(seed)
    began = time.monotonic()
    workload = make_workload(seed, loops, events_per_loop, memories=memories)
    # families of delegated loops whose loops live on other partitions than their root:
    # each family's events woven into the stream, in order
    tagged = f"{seed}-{rng.getrandbits(24):06x}"
    start = workload.events[0].occurred_at
    for number, family in enumerate(family_events(tagged, families, start)):
        at = (number + 1) * len(workload.events) // (families + 1)
        workload.events[at:at] = family
    with cluster(
        f"crash{seed}", analyst={"enabled": False}, memory={"maintenance_interval_s": 0}
    ) as c:
        expected = expected_outputs(workload, c.settings)
        fleet_expected, fleet_told_expected = expected_fleet(workload.events, c.settings)
        duration = kills * (0.5 * 2.4 + 0.5 * 6.75)
        memory_ids, schedule = await asyncio.gather(
            _publish(c, workload, duration), _kill_repeatedly(c, rng, kills, startup_share)
        )
        names = c.settings.topics
        behind = await wait_committed(
            c.settings,
            [names.actions, names.actions_reroute, names.memory_writes, names.memory_lessons],
            catch_up_s,
        )
        bootstrap = c.settings.kafka.bootstrap_servers
        warnings = [
            w for w in await read_json(bootstrap, names.warnings) if w["kind"] in MONITOR_WARNINGS
        ]
        requests = await read_json(bootstrap, names.reflection_requests)
        every_warning = await read_json(bootstrap, names.warnings)
        fleet_told = [w for w in every_warning if w["kind"] in FLEET_KINDS]
        fleet = await read_json(bootstrap, names.fleet_warnings)
        notices = await read_json(bootstrap, names.tool_outages)
        outcomes = await read_json(bootstrap, names.memory_outcomes)
        rows, duplicate_rows = _lance_rows(c.settings.memory.uri)
        changelog = f"{c.settings.app_id}-{LOOP_STATES.table}-changelog"
        published: dict[str, set[str]] = {}
        seen: dict[str, int] = {}
        steps = {}  # event id → its index in its loop, for the post-mortem
        for event in workload.events:
            published.setdefault(event.loop_id, set()).add(event.event_id)
            steps[event.event_id] = seen[event.loop_id] = seen.get(event.loop_id, -1) + 1
        gaps = state_gaps(
            published,
            events_by_loop(r.value for r in await read_records(bootstrap, names.actions)),
            applied_by_loop((r.key, r.value) for r in await read_records(bootstrap, changelog)),
        )
        writes = expected.lessons | set(memory_ids)
        status = {o["event_id"]: o["status"] for o in outcomes if o.get("type") == "memory_outcome"}
        result = {
            "seed": seed,
            **schedule,
            "events": len(workload.events),
            "warnings": compare(expected.warnings, warnings, "warning_id", steps).__dict__,
            "requests": compare(expected.requests, requests, "request_id", steps).__dict__,
            "fleet_warnings": compare(fleet_expected, fleet, "warning_id").__dict__,
            "fleet_told": compare(fleet_told_expected, fleet_told, "warning_id").__dict__,
            "outage_notices": sorted({(n["tool"], n["error"]) for n in notices}),
            "state_gaps": gaps.__dict__,
            "memory_writes": len(writes),
            "memory_missing": len(writes - status.keys()),
            "memory_rejected": sum(1 for s in status.values() if s == "rejected"),
            "lance_rows": rows,
            "lance_duplicate_rows": duplicate_rows,
            "uncommitted_at_end": behind,
            "seconds": round(time.monotonic() - began, 1),
        }
        keep = os.environ.get("LOOPWARDEN_FAULTS_LOGS")
        if keep and not crash_ok(result):  # every record that says where each event went
            target = Path(keep) / c.name
            target.mkdir(parents=True, exist_ok=True)
            topics = [names.actions, names.actions_reroute, changelog, names.warnings]
            topics.append(names.reflection_requests)
            await dump_topics(bootstrap, topics, target / "topics.jsonl.gz")
    return result


def crash_ok(result: dict[str, Any]) -> bool:
    """Every goal of the crash scenario met."""
    return (
        result["warnings"]["missing"] == 0
        and result["warnings"]["changed"] == 0
        and result["requests"]["missing"] == 0
        and result["requests"]["changed"] == 0
        and result["fleet_warnings"]["expected"] > 0
        and result["fleet_warnings"]["missing"] == result["fleet_warnings"]["changed"] == 0
        and result["fleet_told"]["missing"] == result["fleet_told"]["changed"] == 0
        and result["memory_missing"] == 0
        and result["memory_rejected"] == 0
        and result["lance_duplicate_rows"] == 0
        and not any(result["uncommitted_at_end"].values())
        and result["state_gaps"]["loops_not_in_topic"] == 0
        and result["state_gaps"]["loops_not_applied"] == 0
    )
