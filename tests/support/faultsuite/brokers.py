"""Brokers lost under load: a three-node Apache Kafka cluster, replication factor 3,
``min.insync.replicas`` 2, every producer ``acks=all``.

While a workload with known spins is published (each event resent with its own id
until acknowledged, as an agent riding out a broker's loss would), in turn:

1. the leader of the actions partitions is killed -9, then restarted from its own log
   directory;
2. a worker is killed -9 (another is started): how long until every partition answers
   again is the consumer group's failover time;
3. both at once: a broker and a worker killed -9 together;
4. a broker is cut off (SIGSTOP) longer than ``replica.lag.time.max.ms``: the ISR
   shrinks, writes go on with two replicas, then it is resumed and catches up.

Then every acknowledged event must be in the actions topic, and every warning the
detectors give offline on the warnings topic, unchanged. The delivery promised is
at-least-once with ids: no warning missing or changed; a duplicate is a redelivery of
the same ``warning_id`` (the subscribers drop it), counted and reported.

Last, the workers stop, the log cleaner compacts the loop-state changelog (segments of
two seconds), and a fresh worker restores its state from the compacted changelog: each
loop's streak continues after it, and the warnings it owes must be exactly the offline
ones (a state lost or stale in the restore would miss or change them).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from apache_kafka import KafkaCluster

from faultsuite.harness import (
    MONITOR_WARNINGS,
    Cluster,
    Workload,
    cluster,
    compare,
    end_offsets,
    expected_outputs,
    make_workload,
    read_json,
    read_records,
    wait_committed,
    wait_ready,
)
from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.errors import PublishError
from loopwarden.schemas import codec
from loopwarden.schemas.events import ActionEvent
from loopwarden.schemas.positions import default_partition
from loopwarden.streams.client.publisher import AsyncPublisher, make_action_event
from loopwarden.streams.client.subscriber import WarningSubscriber

NODES = 3


def say(text: str) -> None:
    """A progress line on stderr (the scenario takes minutes)."""
    print(f"  brokers: {text}", file=sys.stderr, flush=True)


BROKER_CONFIG = {
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    # a cut-off follower leaves the ISR after 10 s (Kafka's default: 30 s)
    "replica.lag.time.max.ms": "10000",
}
TOPICS = {"replication_factor": 3, "changelog_segment_ms": 2000}


async def _topic_layout(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (leader, ISR size)}``."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
        return {p["partition"]: (p["leader"], len(p["isr"])) for p in described["partitions"]}
    finally:
        await admin.close()


class AckedPublisher:
    """Publishes events one chunk at a time, each chunk sent again (same ids) until the
    broker acknowledged it; remembers which event ids were acknowledged."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.acked: set[str] = set()
        self.resent = 0

    async def publish(self, events: list[ActionEvent], seconds: float, chunk: int = 8) -> None:
        pause = seconds * chunk / max(1, len(events))
        async with AsyncPublisher(self.settings) as publisher:
            for start in range(0, len(events), chunk):
                part = events[start : start + chunk]
                while True:
                    for event in part:
                        publisher.publish_event(event)
                    try:
                        await publisher.flush()
                        break
                    except PublishError:  # a leader lost, ISR below 2: again, same ids
                        self.resent += len(part)
                        await asyncio.sleep(0.5)
                self.acked.update(event.event_id for event in part)
                await asyncio.sleep(pause)


def _probe_loops(tag: str, partitions: int) -> list[str]:
    """One loop id per partition of the actions topic."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < partitions:
        loop_id = f"probe-{tag}-{n}"
        found.setdefault(default_partition(loop_id.encode(), partitions), loop_id)
        n += 1
    return [found[p] for p in sorted(found)]


async def _failover_seconds(c: Cluster, tag: str, timeout_s: float = 120.0) -> float:
    """From now until a failed action on every partition has been warned about."""
    began = time.monotonic()
    loops = _probe_loops(tag, c.partitions)
    async with WarningSubscriber(c.settings) as warnings:
        async with AsyncPublisher(c.settings) as publisher:
            for loop_id in loops:
                await publisher.publish(loop_id, "probe", success=False, error_message="up?")
        waiting = set(loops)
        deadline = time.monotonic() + timeout_s
        while waiting and time.monotonic() < deadline:
            for warning in await warnings.collect(
                len(waiting), max(deadline - time.monotonic(), 0)
            ):
                waiting.discard(warning.loop_id)
    if waiting:
        raise TimeoutError(f"partitions of {sorted(waiting)} never answered")
    return round(time.monotonic() - began, 1)


async def _faults(c: Cluster, kafka: KafkaCluster, log: dict[str, Any]) -> None:
    """The kills and the pause, in turn, while the workload is published."""
    actions = c.settings.topics.actions
    bootstrap = c.settings.kafka.bootstrap_servers

    async def leader() -> int:
        return (await _topic_layout(bootstrap, actions))[0][0]

    await asyncio.sleep(4)
    victim = await leader()
    kafka.kill(victim)  # 1. the actions' leader, kill -9
    log["broker_kills"] += 1
    await asyncio.sleep(6)
    await asyncio.to_thread(kafka.restart, victim)  # from its own log directory
    log["broker_restarts"] += 1

    await asyncio.sleep(2)
    c.workers[0].kill()  # 2. a worker, kill -9
    c.workers[0].wait(10)
    log["worker_kills"] += 1
    c.start_worker()
    log["failover_s"].append(await _failover_seconds(c, "worker"))

    victim = await leader()  # 3. both in turn: a broker and a worker
    kafka.kill(victim)
    c.workers[1].kill()
    c.workers[1].wait(10)
    log["broker_kills"] += 1
    log["worker_kills"] += 1
    c.start_worker()
    log["failover_s"].append(await _failover_seconds(c, "both"))
    await asyncio.to_thread(kafka.restart, victim)
    log["broker_restarts"] += 1

    current = await leader()
    paused = next(n.node_id for n in kafka.nodes if n.node_id != current)
    kafka.pause(paused)  # 4. cut off, longer than replica.lag.time.max.ms
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        layout = await _topic_layout(bootstrap, actions)
        if any(isr < NODES for _, isr in layout.values()):
            log["isr_shrunk"] = True
            break
        await asyncio.sleep(1)
    kafka.resume(paused)
    log["pauses"] += 1


async def _changelog_compaction(c: Cluster, timeout_s: float = 90.0) -> dict[str, int]:
    """Wait until the cleaner removed records from the loop-state changelog."""
    topic = f"{c.settings.app_id}-{LOOP_STATES.table}-changelog"
    bootstrap = c.settings.kafka.bootstrap_servers
    deadline = time.monotonic() + timeout_s
    while True:
        offsets = sum((await end_offsets(bootstrap, [topic])).values())
        kept = len(await read_records(bootstrap, topic))
        if kept < offsets or time.monotonic() > deadline:
            return {"offsets": offsets, "records_kept": kept, "removed": offsets - kept}
        await asyncio.sleep(2)


async def _event_ids(bootstrap: str, topic: str) -> set[str]:
    """The event ids in ``topic`` (a record holds one event or a JSON array of them)."""
    found: set[str] = set()
    for record in await read_records(bootstrap, topic):
        value = codec.loads(record.value) if record.value else []
        found.update(event["event_id"] for event in (value if isinstance(value, list) else [value]))
    return found


def _continuations(workload: Workload, per_loop: int) -> list[ActionEvent]:
    """Each loop's last action again ``per_loop`` times: streaks across the restore."""
    last: dict[str, ActionEvent] = {}
    for event in workload.events:
        last[event.loop_id] = event
    start = time.time()
    return [
        make_action_event(
            loop_id,
            event.payload.action_type,
            occurred_at=start + n,
            params={"step": f"after-{n}"},
        )
        for n in range(per_loop)
        for loop_id, event in sorted(last.items())
    ]


async def _warnings(c: Cluster, workload: Workload) -> dict[str, Any]:
    names = c.settings.topics
    behind = await wait_committed(c.settings, [names.actions, names.actions_reroute], 180)
    got = [
        w
        for w in await read_json(c.settings.kafka.bootstrap_servers, names.warnings)
        if w["kind"] in MONITOR_WARNINGS and not w["loop_id"].startswith(("ready-", "probe-"))
    ]
    expected = expected_outputs(workload, c.settings)
    return {"comparison": compare(expected.warnings, got, "warning_id"), "behind": behind}


async def brokers_run(seed: int, *, loops: int = 24, events_per_loop: int = 40) -> dict[str, Any]:
    """The four broker and worker faults under load, then a compacted restore."""
    began = time.monotonic()
    log: dict[str, Any] = {
        "broker_kills": 0,
        "broker_restarts": 0,
        "worker_kills": 0,
        "pauses": 0,
        "isr_shrunk": False,
        "failover_s": [],
    }

    def three_nodes(folder: Path) -> KafkaCluster:
        return KafkaCluster(
            NODES, workdir=folder / "kafka", log_path=folder / "broker.log",
            broker_config=BROKER_CONFIG,
        )  # fmt: skip

    with cluster(
        f"brokers{seed}", broker=three_nodes, analyst={"enabled": False}, topics=TOPICS
    ) as c:
        kafka: KafkaCluster = c.broker
        c.start_worker(), c.start_worker()
        await wait_ready(c.settings)
        workload = make_workload(seed, loops, events_per_loop, fail_p=0.0)
        publisher = AckedPublisher(c.settings)
        await asyncio.gather(
            publisher.publish(workload.events, seconds=60.0), _faults(c, kafka, log)
        )
        say(f"published {len(publisher.acked)} events through the faults: {log}")
        streamed = await _warnings(c, workload)
        say(f"warnings: {streamed['comparison']}")
        for process in c.workers:  # the state is in the changelog alone now
            process.kill()
            process.wait(10)
        compaction = await _changelog_compaction(c)
        say(f"changelog: {compaction}")
        c.start_worker()  # restores from the compacted changelog
        await wait_ready(c.settings)
        more = _continuations(workload, per_loop=4)
        await publisher.publish(more, seconds=5.0)
        whole = Workload([*workload.events, *more])
        restored = await _warnings(c, whole)
        in_topic = await _event_ids(c.settings.kafka.bootstrap_servers, c.settings.topics.actions)
    return {
        "seed": seed,
        "events": len(whole.events),
        "acked": len(publisher.acked),
        "resent": publisher.resent,
        "acked_lost": len(publisher.acked - in_topic),
        **log,
        "warnings": streamed["comparison"].__dict__,
        "restored_warnings": restored["comparison"].__dict__,
        "changelog": compaction,
        "uncommitted_at_end": restored["behind"],
        "seconds": round(time.monotonic() - began, 1),
    }


def brokers_ok(r: dict[str, Any]) -> bool:
    """Nothing acknowledged lost, no warning missing or changed, a real compaction."""
    w, after = r["warnings"], r["restored_warnings"]
    return (
        r["acked_lost"] == 0
        and r["acked"] == r["events"]  # every event was acknowledged in the end
        and w["missing"] == 0
        and w["changed"] == 0
        and after["missing"] == 0
        and after["changed"] == 0
        and r["changelog"]["removed"] > 0
        and r["isr_shrunk"]
        and not any(r["uncommitted_at_end"].values())
    )
