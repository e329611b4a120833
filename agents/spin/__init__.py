"""Spin detection: Layer 1 (action type), Layer 3 (code edits) and their texts.

Layer 2 (semantic) is a reflection request built by
:mod:`loopwarden.agents.reflection.requests`; the analysis comes later.
"""

from loopwarden.agents.spin.action_type import ActionTypeSpin, ActionTypeStreak
from loopwarden.agents.spin.code_edit import CodeEditSpin, CodeEditSpinDetector, EditSpin
from loopwarden.agents.spin.cycle import ActionCycle
from loopwarden.agents.spin.failure import ActionFailed
from loopwarden.agents.spin.failure_streak import FailureStreak
from loopwarden.agents.spin.gate_proposals import FailureLineRepeat, OutcomeCycle
from loopwarden.agents.spin.monologue import Monologue
from loopwarden.agents.spin.no_progress import NoProgress
from loopwarden.agents.spin.reference import (
    GeminiContentLoop,
    GeminiToolLoop,
    OpenHandsStuck,
    RooRepetition,
)
from loopwarden.agents.spin.repeated_call import RepeatedCall
from loopwarden.agents.spin.repeated_failure import RepeatedFailure
from loopwarden.agents.spin.repeated_message import RepeatedMessage
from loopwarden.agents.spin.repeated_outcome import RepeatedOutcome
from loopwarden.agents.spin.repeated_rejection import RepeatedRejection
from loopwarden.agents.spin.restated_message import RestatedMessage

__all__ = [
    "ActionCycle",
    "ActionFailed",
    "ActionTypeSpin",
    "ActionTypeStreak",
    "CodeEditSpin",
    "CodeEditSpinDetector",
    "EditSpin",
    "FailureLineRepeat",
    "FailureStreak",
    "GeminiContentLoop",
    "GeminiToolLoop",
    "Monologue",
    "NoProgress",
    "OpenHandsStuck",
    "OutcomeCycle",
    "RepeatedCall",
    "RepeatedFailure",
    "RepeatedMessage",
    "RepeatedOutcome",
    "RepeatedRejection",
    "RestatedMessage",
    "RooRepetition",
]
