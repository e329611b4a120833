"""benchmarks/detection_quality.py names a profile it does not know in one line."""

import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "detection_quality.py"


def test_an_unknown_profile_is_one_line_not_a_traceback():
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--profile", "nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "unknown profile 'nope': choose from gated, loops, seed, patterns, openhands, "
        "gemini-cli, roo-code"
    ]
