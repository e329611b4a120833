"""The fault suite's reduced form (``make reliability`` runs it in full).

Each scenario starts its own broker and workers; the goals are the full suite's.
Failover and broker outage take minutes each and run in the full suite only;
restarts and failover of one loop are also covered by test_restart.py.
"""

from __future__ import annotations

import pytest
from faultsuite.suite import SCENARIOS

pytestmark = pytest.mark.integration

REDUCED = [s for s in SCENARIOS if s.name in ("crash", "bad_input", "secrets", "api")]


@pytest.mark.timeout(400)
@pytest.mark.parametrize("scenario", REDUCED, ids=[s.name for s in REDUCED])
async def test_reduced_fault_suite(scenario):
    result = await scenario.reduced(7)
    assert scenario.ok(result), scenario.summary(result)
