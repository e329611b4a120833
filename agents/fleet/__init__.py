"""The fleet role: families of delegated loops across agents, watched as one.

A family is a root loop and the loops it delegated to (``parent_loop_id``,
``root_loop_id``); its state lives on the root's partition. Fleet detectors
(delegation cycle, ping-pong, family budget) see every loop of the family and put
their findings on one family ladder: warn every live loop, then stop them all.
"""

from loopwarden.agents.fleet.family_monitor import FamilyFindings, FamilyMonitor
from loopwarden.agents.fleet.records import FleetProcessor, FleetRecordOutcome
from loopwarden.agents.fleet.state import FamilyState, LoopNode

__all__ = [
    "FamilyFindings",
    "FamilyMonitor",
    "FamilyState",
    "FleetProcessor",
    "FleetRecordOutcome",
    "LoopNode",
]
