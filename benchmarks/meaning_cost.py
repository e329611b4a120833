"""Benchmark: what comparing message turns by meaning costs (issue 45, item 2).

``restated_message`` compares a speaker's message turns by a sentence encoder. Every
run of the trajectories dataset goes once through the monitor (the default profile,
the worker's one BLAS thread), and this prints:

- how many message turns there are, how many are long enough to compare, and how many
  the encoder was asked for: *eager* (every compared turn, as before) and *lazy* (a turn
  is encoded only once a streak could reach ``restate_repeats`` with it), distinct
  gists each (the process remembers the last 2,048);
- the encoder's CPU per turn (p50, p90, max) over the compared turns' gists, and its
  cost spread over every event of the dataset, eager and lazy.

    .venv/bin/python benchmarks/meaning_cost.py
"""

from __future__ import annotations

import statistics
import time

from bench_measure import write_results
from workloads import _runs, trajectories_dir

from loopwarden.agents.monitor.declaration import LOOP_STATES
from loopwarden.agents.monitor.records import RecordProcessor
from loopwarden.agents.spin import meaning
from loopwarden.agents.spin.normalise import word_count
from loopwarden.schemas.dead_letter import SourcePosition
from loopwarden.settings import Settings
from loopwarden.streams.client.event_builder import encode_event
from loopwarden.streams.runtime.blas_threads import limit_blas_threads
from loopwarden.streams.runtime.state.offline import OfflineStates


def main() -> int:
    limit_blas_threads()  # as the worker runs the encoder
    settings = Settings()
    runs = _runs(trajectories_dir())
    events = [event for run in runs for _, event in run]
    turns = [e for e in events if e.payload.turn == "message"]
    min_words = settings.detection.message_min_words
    compared = [e.payload.result or e.payload.action_name or "" for e in turns]
    compared = [text for text in compared if word_count(text) >= min_words]
    eager = {meaning.gist(text) for text in compared}

    meaning._meaning.cache_clear()
    processor = RecordProcessor.for_settings(settings)
    states = OfflineStates.for_settings(LOOP_STATES, settings)
    for offset, event in enumerate(events):
        data = encode_event(event, published_at=0.0)
        source = SourcePosition("meaning", 0, offset)
        states.apply(processor, data, event.loop_id.encode(), source)
    lazy = meaning._meaning.cache_info().misses

    encoder = meaning._encoder()
    encoder.embed(["warm the encoder up"])
    cpu_ms = []
    for gist in sorted(eager):
        started = time.process_time()
        encoder.embed([gist])
        cpu_ms.append(1000 * (time.process_time() - started))
    cpu_ms.sort()
    per_turn = statistics.fmean(cpu_ms)
    report = {
        "runs": len(runs),
        "events": len(events),
        "message_turns": len(turns),
        "compared_turns": len(compared),
        "encoded": {"eager": len(eager), "lazy": lazy},
        "encoder_cpu_ms_per_turn": {
            "mean": per_turn,
            "p50": cpu_ms[len(cpu_ms) // 2],
            "p90": cpu_ms[int(len(cpu_ms) * 0.9)],
            "max": cpu_ms[-1],
        },
        "encoder_us_per_event": {
            "eager": 1000 * per_turn * len(eager) / len(events),
            "lazy": 1000 * per_turn * lazy / len(events),
        },
        "gist_chars": meaning.MEANING_CHARS,
    }
    print(f"{len(runs)} runs, {len(events)} events, {len(turns)} message turns")
    print(f"{len(compared)} long enough to compare ({min_words}+ words)")
    print(f"{'':<8}{'encoded':>9}{'µs CPU / event':>16}")
    for mode in ("eager", "lazy"):
        spread = report["encoder_us_per_event"][mode]
        print(f"{mode:<8}{report['encoded'][mode]:>9}{spread:>16.1f}")
    ms = report["encoder_cpu_ms_per_turn"]
    print(
        f"encoder CPU per turn: mean {ms['mean']:.2f} ms, p50 {ms['p50']:.2f}, "
        f"p90 {ms['p90']:.2f}, max {ms['max']:.2f} (gists of up to {meaning.MEANING_CHARS} chars)"
    )
    write_results("meaning_cost", report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
