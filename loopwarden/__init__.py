"""loopwarden: keeps LLM agents from spinning, over Kafka.

The few names an agent needs::

    from loopwarden import AsyncPublisher, Publisher, Settings, WarningSubscriber

Names are imported on first use, so ``import loopwarden`` (and the command line)
does not pay for the Kafka client or the schemas until they are needed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

_SOURCE_ROOT = Path(__file__).resolve().parent.parent
if (_SOURCE_ROOT / "pyproject.toml").is_file() and (_SOURCE_ROOT / "streams").is_dir():
    # imported from a source checkout (a script run in the clone's root): the fixed
    # top-level folders (agents/, schemas/, storage/, streams/) are this package's
    # subpackages there, as the installed package maps them
    __path__.append(str(_SOURCE_ROOT))

_EXPORTS = {
    "ActionEvent": "loopwarden.schemas",
    "Advice": "loopwarden.schemas.tasks",
    "AdviceSubscriber": "loopwarden.streams.client.tasks",
    "AnalysisSubscriber": "loopwarden.streams.client.json_subscribers",
    "AsyncPublisher": "loopwarden.streams.client.publisher",
    "BrokerUnavailableError": "loopwarden.errors",
    "DeadLetterSubscriber": "loopwarden.streams.client.subscriber",
    "DecisionSubscriber": "loopwarden.streams.client.json_subscribers",
    "EventValidationError": "loopwarden.errors",
    "LoopGuard": "loopwarden.adapters.guard",
    "LoopWarning": "loopwarden.schemas",
    "LoopwardenError": "loopwarden.errors",
    "MemoryOutcomeSubscriber": "loopwarden.streams.client.json_subscribers",
    "PublishError": "loopwarden.errors",
    "Publisher": "loopwarden.streams.client.sync_publisher",
    "ReflectionLevel": "loopwarden.schemas",
    "ReflectionRequest": "loopwarden.schemas",
    "ReflectionRequestSubscriber": "loopwarden.streams.client.subscriber",
    "Settings": "loopwarden.settings",
    "WarningSubscriber": "loopwarden.streams.client.subscriber",
    "end_task": "loopwarden.streams.client.tasks",
    "make_action_event": "loopwarden.streams.client.publisher",
    "search_memories": "loopwarden.streams.client.memory_search",
    "start_task": "loopwarden.streams.client.tasks",
}

__all__ = [
    "ActionEvent",
    "Advice",
    "AdviceSubscriber",
    "AnalysisSubscriber",
    "AsyncPublisher",
    "BrokerUnavailableError",
    "DeadLetterSubscriber",
    "DecisionSubscriber",
    "EventValidationError",
    "LoopGuard",
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
    "end_task",
    "make_action_event",
    "search_memories",
    "start_task",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # from the package's metadata (loopwarden.version)
        name, alias = "VERSION", name
        value = importlib.import_module("loopwarden.version").VERSION
        globals()[alias] = value
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwarden' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs: the names as if imported eagerly
    from loopwarden.adapters.guard import LoopGuard
    from loopwarden.errors import (
        BrokerUnavailableError,
        EventValidationError,
        LoopwardenError,
        PublishError,
    )
    from loopwarden.schemas import ActionEvent, LoopWarning, ReflectionLevel, ReflectionRequest
    from loopwarden.schemas.tasks import Advice
    from loopwarden.settings import Settings
    from loopwarden.streams.client.json_subscribers import (
        AnalysisSubscriber,
        DecisionSubscriber,
        MemoryOutcomeSubscriber,
    )
    from loopwarden.streams.client.memory_search import search_memories
    from loopwarden.streams.client.publisher import AsyncPublisher, make_action_event
    from loopwarden.streams.client.subscriber import (
        DeadLetterSubscriber,
        ReflectionRequestSubscriber,
        WarningSubscriber,
    )
    from loopwarden.streams.client.sync_publisher import Publisher
    from loopwarden.streams.client.tasks import AdviceSubscriber, end_task, start_task
    from loopwarden.version import VERSION as __version__
