"""Run the fault suite: every scenario, a table of goals against measurements, and JSON.

.venv/bin/python benchmarks/reliability.py                 # the full suite
.venv/bin/python benchmarks/reliability.py --reduced       # the form make test runs
.venv/bin/python benchmarks/reliability.py --only crash --seeds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faultsuite.api import api_ok, api_run
from faultsuite.availability import availability_ok, failover_run, outage_run
from faultsuite.bad_input import bad_input_ok, bad_input_run
from faultsuite.brokers import brokers_ok, brokers_run
from faultsuite.crashes import crash_ok, crash_run
from faultsuite.secrets import secrets_ok, secrets_run


@dataclass(frozen=True)
class Scenario:
    """One scenario: how to run a seed (full and reduced), and its goal."""

    name: str
    goal: str
    full: Callable[[int], Awaitable[dict[str, Any]]]
    reduced: Callable[[int], Awaitable[dict[str, Any]]]
    ok: Callable[[dict[str, Any]], bool]
    summary: Callable[[dict[str, Any]], str]


def _crash_summary(r: dict[str, Any]) -> str:
    w, q = r["warnings"], r["requests"]
    return (
        f"{r['kills']} kills ({r['during_startup']} in start-up); warnings "
        f"{w['received']}/{w['expected']} missing {w['missing']} changed {w['changed']} "
        f"dup {w['duplicates']}; requests missing {q['missing']} changed {q['changed']}; "
        f"fleet warnings {r['fleet_warnings']['received']}/{r['fleet_warnings']['expected']} "
        f"missing {r['fleet_warnings']['missing']} changed {r['fleet_warnings']['changed']}, "
        f"loops told {r['fleet_told']['received']}/{r['fleet_told']['expected']} missing "
        f"{r['fleet_told']['missing']} changed {r['fleet_told']['changed']}; "
        f"loops with events not in the topic {r['state_gaps']['loops_not_in_topic']}, "
        f"not all applied in their stored state {r['state_gaps']['loops_not_applied']}; "
        f"memory writes {r['memory_writes']} missing {r['memory_missing']} rejected "
        f"{r['memory_rejected']}; LanceDB dup rows {r['lance_duplicate_rows']}; "
        f"uncommitted at the end {r['uncommitted_at_end']}"
    )


def _bad_summary(r: dict[str, Any]) -> str:
    return (
        f"{r['bad_records']} bad ({r['bad_kinds']} kinds): dead letters "
        f"{r['dead_letters']}/{r['dead_letters_expected']}, unreadable {r['unreadable_reasons']}; "
        f"good warnings missing {r['good_warnings_missing']}; good events/s "
        f"{r['good_events_per_s']} vs {r['baseline_good_events_per_s']} alone "
        f"({r['throughput_ratio']}x); "
        f"{r['worker_log_lines']} log lines"
    )


def _availability_summary(r: dict[str, Any]) -> str:
    w = r["warnings"]
    text = f"warnings {w['received']}/{w['expected']} missing {w['missing']} changed {w['changed']}"
    if "log_lines_per_s" in r:
        lines = r["log_lines_per_s"]
        text += (
            f"; log lines/s refused {lines['refuse']} frozen {lines['freeze']}; "
            f"caught up {r['caught_up_after_s']} s after"
        )
    return text


def _secrets_summary(r: dict[str, Any]) -> str:
    found = sum(r["found_in_clear"].values())
    return (
        f"{r['secrets']} secrets x {r['records_sent']} records: {found} found in clear in "
        f"{len(r['found_in_clear'])} places (control: {r['control_found_in_input']} in the "
        f"input); {r['prompts_captured']} prompts checked"
    )


def _brokers_summary(r: dict[str, Any]) -> str:
    w, after, log = r["warnings"], r["restored_warnings"], r["changelog"]
    return (
        f"{r['events']} events, {r['acked']} acked, {r['acked_lost']} acked lost "
        f"({r['resent']} resent); {r['broker_kills']} broker kills -9 + "
        f"{r['broker_restarts']} restarts from their logs, {r['worker_kills']} worker kills, "
        f"{r['pauses']} broker paused (ISR shrunk: {r['isr_shrunk']}); warnings "
        f"{w['received']}/{w['expected']} missing {w['missing']} changed {w['changed']} "
        f"dup {w['duplicates']}; failover {r['failover_s']} s; changelog compacted "
        f"{log['offsets']} -> {log['records_kept']} records, restored: warnings "
        f"{after['received']}/{after['expected']} missing {after['missing']} changed "
        f"{after['changed']}"
    )


def _api_summary(r: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in r["statuses"].items())


SCENARIOS = [
    Scenario(
        "crash",
        "kill -9 during the stream and in start-up: 0 warnings/requests missing or changed, "
        "every memory write applied, 0 duplicate rows",
        lambda seed: crash_run(seed, kills=20),
        lambda seed: crash_run(seed, kills=3, loops=20, events_per_loop=20, memories=6),
        crash_ok,
        _crash_summary,
    ),
    Scenario(
        "bad_input",
        "100 % of bad input dead-lettered with a readable reason, 0 good events lost",
        lambda seed: bad_input_run(seed, bad=10_000, good=3_000),
        lambda seed: bad_input_run(seed, bad=1_000, good=500),
        bad_input_ok,
        _bad_summary,
    ),
    Scenario(
        "failover",
        "one of two workers killed -9 mid-streak: 0 warnings lost",
        lambda seed: failover_run(seed),
        lambda seed: failover_run(seed, loops=8, length=20),
        availability_ok,
        _availability_summary,
    ),
    Scenario(
        "outage",
        "broker refused, then frozen, under load: the worker resumes, 0 warnings lost",
        lambda seed: outage_run(seed),
        lambda seed: outage_run(seed, outage_s=5.0),
        availability_ok,
        _availability_summary,
    ),
    Scenario(
        "secrets",
        "0 secrets in clear on any output, changelog, LanceDB file, API answer, prompt or log",
        secrets_run,
        secrets_run,
        secrets_ok,
        _secrets_summary,
    ),
    Scenario(
        "brokers",
        "three Apache Kafka nodes (RF 3, min ISR 2, acks=all): a leader and a worker killed "
        "-9 in turn and together, a broker restarted from its log and one cut off: 0 "
        "acknowledged events lost, 0 warnings missing or changed, state restored from a "
        "compacted changelog",
        brokers_run,
        brokers_run,
        brokers_ok,
        _brokers_summary,
    ),
    Scenario(
        "api",
        "overrides without/wrong/query token 401, completion without token 401, 413/400",
        api_run,
        api_run,
        api_ok,
        _api_summary,
    ),
]


async def run(names: list[str], seeds: int, reduced: bool) -> list[dict[str, Any]]:
    """Run the named scenarios; crash and bad input with ``seeds`` seeds each."""
    rows = []
    for scenario in SCENARIOS:
        if scenario.name not in names:
            continue
        for seed in range(1, (seeds if scenario.name in ("crash", "bad_input") else 1) + 1):
            began = time.monotonic()
            result = await (scenario.reduced if reduced else scenario.full)(seed)
            row = {
                "scenario": scenario.name,
                "seed": seed,
                "goal": scenario.goal,
                "ok": scenario.ok(result),
                "measured": scenario.summary(result),
                "seconds": round(time.monotonic() - began, 1),
                "result": result,
            }
            print(
                f"{'PASS' if row['ok'] else 'FAIL'}  {row['scenario']:<10} seed {seed}  "
                f"{row['measured']}  ({row['seconds']} s)",
                flush=True,
            )
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the rows."""
    lines = ["| scenario | seed | goal met | measured |", "|---|---|---|---|"]
    lines += [
        f"| {r['scenario']} | {r['seed']} | {'yes' if r['ok'] else '**no**'} | {r['measured']} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: run, print the table, write JSON; exit 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the short form make test runs")
    parser.add_argument("--seeds", type=int, default=3, help="seeds for crash and bad_input")
    parser.add_argument("--only", nargs="*", default=[s.name for s in SCENARIOS])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)
    rows = asyncio.run(run(args.only, args.seeds, args.reduced))
    print()
    print(table(rows))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"reliability-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(rows, indent=1))
    print(f"\nwrote {path}")
    return 0 if all(r["ok"] for r in rows) else 1
