"""The action monitor: per-loop state, the pure loop monitor, record processing, Faust agent."""

from loopwarden.agents.monitor.loop_monitor import Findings, LoopMonitor
from loopwarden.agents.monitor.records import RecordOutcome, RecordProcessor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.schemas.records import decode_record

__all__ = [
    "Findings",
    "LoopMonitor",
    "LoopState",
    "RecordOutcome",
    "RecordProcessor",
    "decode_record",
]
