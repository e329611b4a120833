"""Benchmark: what one call of the sentence encoder costs, by what it is given.

Memory embeds each batch of writes in two calls (contents, then potential questions),
on the worker's one BLAS thread. A call has a fixed cost whatever its texts' length,
so the lessons' repeated questions ("why did search fail?") are remembered
(``ShortTextCache``). Prints ms of CPU per call (median of ``--calls``) and writes
JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/encoder_calls.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench_measure import write_results

from loopwarden.agents.memory.embedding import ShortTextCache, UniversalSentenceEncoder
from loopwarden.agents.monitor.lessons import lesson
from loopwarden.agents.monitor.state import LoopState
from loopwarden.settings import Settings
from loopwarden.streams.client.publisher import make_action_event
from loopwarden.streams.runtime.blas_threads import limit_blas_threads


def cpu_ms(call: Callable[[], object], calls: int) -> float:
    """Median ms of CPU of ``call``."""
    call()
    times = []
    for _ in range(calls):
        started = time.process_time()
        call()
        times.append(1000 * (time.process_time() - started))
    return statistics.median(times)


def main(args: argparse.Namespace) -> int:
    limit_blas_threads()  # as the worker runs the encoder
    encoder = UniversalSentenceEncoder()
    event = make_action_event(
        "loop-1",
        "run_tests",
        params={"cmd": "pytest -q tests/test_sum.py"},
        success=False,
        error_message="AssertionError: expected 3, got 4 in test_sum",
    )
    write = lesson(LoopState(loop_id="loop-1"), event, Settings().detection)
    content = write["payload"]["content"]
    question = write["payload"]["potential_questions"][0]
    cache = ShortTextCache(encoder)
    cases = {
        "one question": lambda: encoder.embed([question]),
        "eight questions, one call": lambda: encoder.embed([question] * 8),
        f"one lesson ({len(content)} chars)": lambda: encoder.embed([content]),
        "lesson and question, one call": lambda: encoder.embed([content, question]),
        "one question, remembered": lambda: cache.embed([question]),
    }
    report = {name: cpu_ms(call, args.calls) for name, call in cases.items()}
    width = max(map(len, report))
    print(f"{'call':<{width}}  ms CPU")
    for name, ms in report.items():
        print(f"{name:<{width}}  {ms:6.2f}")
    write_results("encoder_calls", {"calls": args.calls, "ms_cpu": report})
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=30)
    raise SystemExit(main(parser.parse_args()))
