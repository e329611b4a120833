"""Spin detection: Layer 1 (action type), Layer 3 (code edits) and their texts.

Layer 2 (semantic) is a reflection request built by
:mod:`loopwarden.agents.reflection.requests`; the analysis comes later.
"""

from loopwarden.agents.spin.action_type import ActionTypeSpin, ActionTypeStreak
from loopwarden.agents.spin.code_edit import CodeEditSpin, CodeEditSpinDetector, EditSpin
from loopwarden.agents.spin.failure import ActionFailed

__all__ = [
    "ActionFailed",
    "ActionTypeSpin",
    "ActionTypeStreak",
    "CodeEditSpin",
    "CodeEditSpinDetector",
    "EditSpin",
]
