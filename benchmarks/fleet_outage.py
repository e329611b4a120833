"""Benchmark: a tool that fails for everyone, while many real runs go on (issue 35).

Replays the dataset's real runs (``workloads.real``: ``--concurrent`` loops at a time,
each at its own pace) into a ``loopwarden worker`` (roles monitor and fleet) on the
embedded broker, at ``--rate`` events/s. For one minute of event time, starting at
``--outage-at`` of the stream, a share (``--share``) of the calls of the busiest tool
fail with one error (a 503 with a changing request id). The same stream runs twice,
each on fresh topics:

- ``fleet off``: ``fleet.outage_enabled=false`` — what the agents got before;
- ``fleet on``: the default.

Printed per run: wall time from the first failed call's publish to the fleet warning,
event time from the outage's start to it, the loops told about the outage, and the
per-loop warnings triggered by the injected failures (what an agent reads as "you
are spinning, try something else"); then how many the fleet saved. JSON goes to
``benchmarks/results/``.

    .venv/bin/python benchmarks/fleet_outage.py
    .venv/bin/python benchmarks/fleet_outage.py --events 40000 --concurrent 3000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from bench_engines import bench_settings, start_engine
from bench_measure import LOGS, embedded_broker, publish, wait_caught_up, write_results
from workloads import Prepared, real, warmup

from loopwarden.agents.capabilities import CAPABILITIES
from loopwarden.schemas import codec
from loopwarden.settings import Settings
from loopwarden.streams.tools.broker import EmbeddedBroker
from loopwarden.streams.tools.topics import ensure_topics

ERROR = "503 Service Unavailable: upstream gateway timed out (request {rid})"


@dataclass(frozen=True, slots=True)
class Outcome:
    mode: str
    tool: str
    injected: int
    affected_loops: int
    fleet_warning_after_s: float | None
    """Wall time from the first injected failure's publish to the fleet warning."""
    fleet_warning_event_s: float | None
    """Event time from the outage's start to the failure that made it one."""
    loops_told: int
    warnings_on_injected: int
    """Per-loop spin/failure warnings (not tool_outage) triggered by injected failures."""
    warnings_other: int
    """Every other per-loop warning (the rest of the stream: should not move)."""
    other_outages: list[list[Any]]
    """Outages of other tools: [tool, error, loops] (the real runs' own failures)."""
    other_loops_told: int


def inject(
    events: list[Prepared], at: float, share: float, retries: int, seed: int
) -> tuple[list[Prepared], str, float, set[str]]:
    """The stream with the outage injected: (events, tool, outage start, injected ids).
    Each failed call is retried ``retries`` times, half a second apart, failing alike
    (what agents do when a tool fails)."""
    rng = random.Random(seed)
    decoded = [codec.loads(e.data) for e in events]
    start = decoded[int(len(decoded) * at)]["occurred_at"]
    window = [d for d in decoded if start <= d["occurred_at"] < start + 60.0]
    calls = (d for d in window if d["payload"].get("turn") != "message")
    tool = Counter(d["payload"]["action_type"] for d in calls).most_common(1)[0][0]
    out, injected = [], set()
    for event, data in zip(events, decoded, strict=True):
        payload = data["payload"]
        in_outage = start <= data["occurred_at"] < start + 60.0
        call = payload.get("turn") != "message"
        if not (in_outage and call and payload["action_type"] == tool and rng.random() < share):
            out.append(event)
            continue
        for attempt in range(retries + 1):
            failed = dict(data, payload=dict(payload))
            error = ERROR.format(rid=f"{rng.getrandbits(48):012x}")
            # as an adapter publishes a failed call: the error, and the tool's output (it)
            failed["payload"].update(success=False, error_message=error, result=error)
            failed["payload"].pop("result_digest", None)
            if attempt:
                failed["event_id"] = f"{data['event_id']}-retry{attempt}"
                failed["occurred_at"] = data["occurred_at"] + 0.5 * attempt
            injected.add(failed["event_id"])
            out.append(replace(event, event_id=failed["event_id"], data=codec.dumps(failed)))
    return out, tool, start, injected


class Outputs:
    """Every warning and fleet warning of a run, with its arrival time."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.items: list[tuple[float, str, dict]] = []
        self.consumer: AIOKafkaConsumer | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        t = self.settings.topics
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka.bootstrap_servers,
            enable_auto_commit=False,
            fetch_max_wait_ms=5,
            auto_offset_reset="earliest",
        )
        await self.consumer.start()
        tps = [
            TopicPartition(topic, p)
            for topic in (t.warnings, t.fleet_warnings)
            for p in range(t.partitions)
        ]
        self.consumer.assign(tps)
        await self.consumer.seek_to_beginning(*tps)
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self.consumer is not None
        while True:
            batches = await self.consumer.getmany(timeout_ms=100, max_records=10_000)
            now = time.time()
            for tp, records in batches.items():
                self.items += [(now, tp.topic, orjson.loads(r.value)) for r in records]

    async def quiet(self, seconds: float, timeout_s: float) -> None:
        """Wait until nothing arrived for ``seconds``."""
        deadline = time.monotonic() + timeout_s
        seen, since = len(self.items), time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            if len(self.items) != seen:
                seen, since = len(self.items), time.monotonic()
            elif time.monotonic() - since >= seconds:
                return

    async def stop(self) -> None:
        if self.task:
            self.task.cancel()
        if self.consumer:
            await self.consumer.stop()


async def run_mode(mode: str, broker: EmbeddedBroker, args: argparse.Namespace) -> Outcome:
    tag = f"outage-{mode.replace(' ', '-')}"
    settings = bench_settings(tag, broker, args.partitions, LOGS, "real")
    fleet = settings.fleet.model_copy(update={"outage_enabled": mode == "fleet on"})
    settings = settings.model_copy(
        update={"roles": frozenset({"monitor", "fleet"}), "fleet": fleet}
    )
    await ensure_topics(settings, CAPABILITIES)
    outputs = Outputs(settings)
    await outputs.start()
    process = start_engine("loopwarden", settings, LOGS / f"{tag}.log")
    try:
        await publish(settings, warmup(f"{tag}-warmup"), None, "single")
        while not any(topic == settings.topics.warnings for _, topic, _ in outputs.items):
            await asyncio.sleep(0.1)
        stream = real(args.events, args.concurrent, seed=3, tag=tag)
        stream, tool, start, injected = inject(
            stream, args.outage_at, args.share, args.retries, seed=4
        )
        sent: dict[str, float] = {}
        await publish(settings, stream, args.rate, "single", sent)
        # the worker may be slower than the publishing rate: wait until it has read
        # everything (actions and the fleet's re-routes), then for its last outputs
        topics = [settings.topics.actions, settings.topics.fleet_reroute]
        behind = await wait_caught_up(settings, topics, 600.0)
        if behind:
            raise RuntimeError(f"{mode}: the worker is {behind} records behind after 600 s")
        await outputs.quiet(5.0, 300.0)
    finally:
        await outputs.stop()
        process.terminate()
        process.wait(20)
    first_failure = min(sent[i] for i in injected)
    fleet = [
        (at, w)
        for at, topic, w in outputs.items
        if topic == settings.topics.fleet_warnings and w["kind"] == "tool_outage"
    ]
    warnings = [
        w
        for _, topic, w in outputs.items
        if topic == settings.topics.warnings and not w["loop_id"].endswith("-warmup")
    ]
    ours = [(at, w) for at, w in fleet if w["tool"] == tool]
    told = {
        w["loop_id"] for w in warnings if w["kind"] == "tool_outage" and w["action_type"] == tool
    }
    spin = [w for w in warnings if w["kind"] != "tool_outage"]
    first = ours[0] if ours else None
    return Outcome(
        mode=mode,
        tool=tool,
        injected=len(injected),
        affected_loops=len({event_id.split("#")[0] for event_id in injected}),
        fleet_warning_after_s=None if first is None else round(first[0] - first_failure, 2),
        fleet_warning_event_s=None if first is None else round(first[1]["occurred_at"] - start, 1),
        loops_told=len(told),
        warnings_on_injected=sum(w["trigger_event_id"] in injected for w in spin),
        warnings_other=sum(w["trigger_event_id"] not in injected for w in spin),
        other_outages=[[w["tool"], w["error"], w["count"]] for _, w in fleet if w["tool"] != tool],
        other_loops_told=len(
            {
                w["loop_id"]
                for w in warnings
                if w["kind"] == "tool_outage" and w["action_type"] != tool
            }
        ),
    )


async def main(args: argparse.Namespace) -> None:
    outcomes = []
    with embedded_broker() as broker:
        for mode in ("fleet off", "fleet on"):
            outcomes.append(await run_mode(mode, broker, args))
            print(f"  {outcomes[-1]}", flush=True)
    off, on = outcomes
    print(
        f"\n{args.events} real events, {args.concurrent} loops at a time, {args.rate:g}/s; "
        f"{off.injected} calls of {off.tool!r} failed in one minute ({off.affected_loops} loops)"
    )
    head = ("fleet warning", "(event time)", "loops told", "warnings on", "other")
    print(f"{'':<10} {head[0]:>14} {head[1]:>13} {head[2]:>11} {head[3]:>12} {head[4]:>8}")
    print(f"{'':<10} {'after (s)':>14} {'':>13} {'':>11} {'injected':>12} {'warnings':>8}")
    for o in outcomes:
        wall = "-" if o.fleet_warning_after_s is None else f"{o.fleet_warning_after_s:.2f}"
        event = "-" if o.fleet_warning_event_s is None else f"+{o.fleet_warning_event_s:.1f} s"
        counts = f"{o.loops_told:>11} {o.warnings_on_injected:>12} {o.warnings_other:>8}"
        print(f"{o.mode:<10} {wall:>14} {event:>13} {counts}")
    saved = off.warnings_on_injected - on.warnings_on_injected
    print(f"\nper-loop warnings on the injected failures saved by the fleet: {saved} of", end=" ")
    print(off.warnings_on_injected)
    print(f"outages of other tools (the runs' own failures): {len(on.other_outages)}", end="")
    print(f", {on.other_loops_told} loops told")
    for tool, error, loops in on.other_outages:
        print(f"  {tool!r}: {error!r} ({loops} loops)")
    write_results(
        "fleet_outage",
        {"args": vars(args), "outcomes": [asdict(o) for o in outcomes], "saved": saved},
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument(
        "--concurrent",
        type=int,
        default=150,
        help="loops at a time (above the dataset's 198 runs, copies of one run fail alike)",
    )
    parser.add_argument("--rate", type=float, default=1_000.0, help="events/s published")
    parser.add_argument(
        "--share", type=float, default=0.8, help="share of the tool's calls failing"
    )
    parser.add_argument(
        "--retries", type=int, default=2, help="each failed call retried this many times"
    )
    parser.add_argument(
        "--outage-at", type=float, default=0.3, help="where in the stream it starts"
    )
    parser.add_argument("--partitions", type=int, default=8)
    asyncio.run(main(parser.parse_args()))
