"""Event contracts: action events in, warnings / reflection requests / dead letters out."""

from loopwarden.schemas.dead_letter import DeadLetter, SourcePosition
from loopwarden.schemas.events import (
    SCHEMA_VERSION,
    ActionEvent,
    ActionPayload,
    EditRange,
    ReadRange,
    validate_action,
)
from loopwarden.schemas.levels import ReflectionLevel
from loopwarden.schemas.reflection import (
    ActionRecord,
    ActionReflection,
    EnvironmentalImpact,
    ReflectionRequest,
    ReflectionRequestKind,
)
from loopwarden.schemas.warnings import LoopWarning, WarningKind

__all__ = [
    "SCHEMA_VERSION",
    "ActionEvent",
    "ActionPayload",
    "ActionRecord",
    "ActionReflection",
    "DeadLetter",
    "EditRange",
    "EnvironmentalImpact",
    "LoopWarning",
    "ReadRange",
    "ReflectionLevel",
    "ReflectionRequest",
    "ReflectionRequestKind",
    "SourcePosition",
    "WarningKind",
    "validate_action",
]
