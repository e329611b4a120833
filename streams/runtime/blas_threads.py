"""The worker's numerical libraries on one thread.

The sentence encoder (message meanings, memory embeddings) multiplies small matrices
with numpy, whose OpenBLAS starts a thread per core; after each call those threads
spin, waiting for more work. In a worker that encodes a message turn now and then,
they burned a third of a core: at 10 events/s of real runs the worker took 47 % of a
core, 15.7 % with one BLAS thread (``benchmarks/idle_cost.py``). One text encodes in
2.6 ms on one thread against 1.9 ms on two, for 2.6 vs 3.8 ms of CPU. The stream is
one event loop on a machine it shares with Kafka: one thread is the worker's default.

The usual variables win: with ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or
``MKL_NUM_THREADS`` set, nothing is changed. ``threadpoolctl`` (scikit-learn's) does the
limiting, for whichever BLAS numpy was built with.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def limit_blas_threads(threads: int = 1) -> bool:
    """Limit BLAS to ``threads`` thread(s) unless a variable above says otherwise;
    True when it did."""
    if any(os.environ.get(name) for name in THREAD_VARIABLES):
        return False
    import numpy  # noqa: F401 - BLAS loads with numpy: a limit set before would not hold
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
    log.debug("BLAS limited to %d thread(s); set OPENBLAS_NUM_THREADS to change", threads)
    return True
