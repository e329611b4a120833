"""Check: the monitor's outputs and loop states on the real runs are the same, byte for
byte, with the compiled paths (the redaction prefilter, the word scan) and without them
(``LOOPWARDEN_NO_EXTENSIONS=1``).

Each side runs in its own process over every run of the trajectories dataset (the
``real`` workload's events, as ``loopwarden detect`` would see them) and writes every
warning and reflection request as JSON lines, and a digest of every loop state it
wrote (the sketches and meanings the detectors keep); the two are compared and the
time each side took is printed beside it. Writes JSON to ``benchmarks/results/``.

    .venv/bin/python benchmarks/extensions_identical.py
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

from bench_measure import write_results


def run_side() -> None:
    """One side (a subprocess): every output of the monitor as JSON lines on stdout."""
    from workloads import real

    from loopwarden.agents.monitor.declaration import LOOP_STATES
    from loopwarden.agents.monitor.records import RecordProcessor
    from loopwarden.agents.spin import textscan
    from loopwarden.schemas import codec
    from loopwarden.schemas.dead_letter import SourcePosition
    from loopwarden.schemas.redaction import default_redactor
    from loopwarden.settings import Settings
    from loopwarden.streams.runtime.blas_threads import limit_blas_threads
    from loopwarden.streams.runtime.state.offline import OfflineStates

    limit_blas_threads()  # as the worker runs the sentence encoder
    default_redactor().use_prefilter(background=False)
    compiled = default_redactor().prefilter is not None, textscan.scan is not textscan.py_scan
    mode = {(True, True): "compiled", (False, False): "pure-python"}.get(compiled, "mixed")
    events = real(int(sys.argv[2]), 500, seed=0, tag="same")
    processor = RecordProcessor.for_settings(Settings())
    states = OfflineStates.for_settings(LOOP_STATES, Settings())
    state_digest = hashlib.sha256()
    out = sys.stdout.buffer
    started = time.perf_counter()
    for offset, item in enumerate(events):
        source = SourcePosition("same", 0, offset)
        outcome = states.apply(processor, item.data, item.loop_id.encode(), source)
        for key, state in sorted(outcome.states.items()):
            snapshot = state.snapshot() if state is not None else b""
            state_digest.update(key.encode() + b"\0" + snapshot + b"\0")
        for output in (*outcome.warnings, *outcome.requests):
            out.write(codec.dumps(output) + b"\n")
    seconds = time.perf_counter() - started
    info = {"mode": mode, "seconds": seconds, "states": state_digest.hexdigest()}
    print(json.dumps(info), file=sys.stderr)


def side(no_extensions: bool, events: int) -> tuple[bytes, dict[str, object]]:
    env = {**os.environ, "LOOPWARDEN_NO_EXTENSIONS": "1" if no_extensions else "0"}
    done = subprocess.run(
        [sys.executable, __file__, "--side", str(events)], env=env, capture_output=True
    )
    if done.returncode:
        raise SystemExit(done.stderr.decode())
    return done.stdout, json.loads(done.stderr.decode().strip().splitlines()[-1])


def main() -> int:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 30_000
    compiled, compiled_info = side(False, events)
    pure, pure_info = side(True, events)
    same = compiled == pure and compiled_info["states"] == pure_info["states"]
    report = {
        "events": events,
        "outputs": compiled.count(b"\n"),
        "identical": same,
        "sha256": {
            "outputs": {
                compiled_info["mode"]: hashlib.sha256(compiled).hexdigest(),
                pure_info["mode"]: hashlib.sha256(pure).hexdigest(),
            },
            "states": {
                compiled_info["mode"]: compiled_info["states"],
                pure_info["mode"]: pure_info["states"],
            },
        },
        "seconds": {
            compiled_info["mode"]: compiled_info["seconds"],
            pure_info["mode"]: pure_info["seconds"],
        },
    }
    print(f"{'side':<12}{'seconds':>9}{'µs / event':>12}")
    for mode, seconds in report["seconds"].items():
        print(f"{mode:<12}{seconds:>9.1f}{1e6 * seconds / events:>12.1f}")
    print(
        f"{report['outputs']} outputs and every loop state, identical byte for byte: "
        f"{'yes' if same else 'NO'}"
    )
    write_results("extensions_identical", report)
    return 0 if same and compiled_info["mode"] == "compiled" else 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--side":
        run_side()
    else:
        sys.exit(main())
