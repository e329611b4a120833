"""The action monitor: per-loop state, the pure loop monitor, record processing, Faust agent."""

from loopwarden.agents.monitor.loop_monitor import Findings, LoopMonitor
from loopwarden.agents.monitor.records import RecordOutcome, RecordProcessor, decode_record
from loopwarden.agents.monitor.state import LoopState

__all__ = [
    "Findings",
    "LoopMonitor",
    "LoopState",
    "RecordOutcome",
    "RecordProcessor",
    "decode_record",
]
