"""The worker runs numpy's BLAS on one thread (idle OpenBLAS threads spin after each
encode), unless the usual variables say otherwise; the sentence encoder follows it.
Each case runs in its own process: the limit is process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from loopwarden.streams.runtime.blas_threads import limit_blas_threads
assert "numpy" not in sys.modules  # as in a worker: the limit comes before numpy
limited = limit_blas_threads()
import numpy
from threadpoolctl import threadpool_info
after = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
from loopwarden.agents.memory.embedding import shared_use
print(json.dumps([limited, after, shared_use()._model.threads]))
"""


def probe(**variables: str) -> list[object]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: list[object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_worker_limits_blas_to_one_thread_and_the_encoder_follows():
    limited, after, encoder = probe()
    assert limited is True and after == 1 and encoder == 1


@pytest.mark.parametrize("variable", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_users_thread_variable_wins(variable: str):
    limited, after, encoder = probe(**{variable: "2"})
    assert limited is False and after == encoder == min(2, os.cpu_count() or 1)
