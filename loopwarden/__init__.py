"""loopwarden: keeps LLM agents from spinning, over Kafka.

The few names an agent needs::

    from loopwarden import AsyncPublisher, Publisher, Settings, WarningSubscriber
"""

from loopwarden.errors import (
    EventValidationError,
    LoopwardenError,
    PublishError,
)
from loopwarden.schemas import ActionEvent, LoopWarning, ReflectionLevel, ReflectionRequest
from loopwarden.settings import Settings
from loopwarden.streams.publisher import AsyncPublisher, Publisher, make_action_event
from loopwarden.streams.subscriber import (
    AnalysisSubscriber,
    DeadLetterSubscriber,
    DecisionSubscriber,
    MemoryOutcomeSubscriber,
    ReflectionRequestSubscriber,
    WarningSubscriber,
)

__version__ = "0.1.0"

__all__ = [
    "ActionEvent",
    "AnalysisSubscriber",
    "AsyncPublisher",
    "DeadLetterSubscriber",
    "DecisionSubscriber",
    "EventValidationError",
    "LoopWarning",
    "LoopwardenError",
    "MemoryOutcomeSubscriber",
    "PublishError",
    "Publisher",
    "ReflectionLevel",
    "ReflectionRequest",
    "ReflectionRequestSubscriber",
    "Settings",
    "WarningSubscriber",
    "__version__",
    "make_action_event",
]
