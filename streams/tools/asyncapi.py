"""The AsyncAPI 3 document of every topic loopwarden reads or writes.

Generated from the same models as the topics' JSON Schemas (:mod:`loopwarden.schemas.contract`),
the record keys from the output routes (:data:`~loopwarden.streams.runtime.outputs.ROUTES`) and
the topic names from the settings' defaults; the message payloads refer to the schema files
beside it (``loopwarden schema --out DIR`` writes both). Written from the worker's side:
it receives what producers send, it sends what consumers read.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from loopwarden.schemas.contract import TOPIC_RECORDS
from loopwarden.settings.topics import TopicSettings
from loopwarden.streams.runtime.outputs import ROUTES, Keying

ASYNCAPI_FILE = "asyncapi.json"

KEY_DESCRIPTIONS: dict[Keying, str] = {
    "loop": "The loop id: a loop's records in order on one partition.",
    "family": "The loop's family: its id without a rerun suffix (loop-7_r2 → loop-7).",
    "root": "The root loop id of the family of delegated loops.",
    "event_root": "The family's root loop: payload.root_loop_id, else payload.parent_loop_id, "
    "else loop_id (a loop nobody delegated to: its own id). Kafka's default partitioner "
    "(murmur2) of this key; librdkafka clients set partitioner=murmur2_random.",
    "tool": "The tool's name.",
    "scope": "The memory scope (* for a maintenance report).",
    "memory": "The memory id (publisher.memory_key=memory, the default) or the scope (scope).",
}

TOPIC_NOTES = {
    "actions": "Agents' actions and task starts and ends. A record may also hold a JSON array "
    "of such events (the clients batch a loop's events). event_id and occurred_at are "
    "required; occurred_at is epoch seconds or ISO-8601 with a zone, never milliseconds. "
    "A record that cannot be read goes to the dead-letter topic with its reason in headers.",
    "warnings": "Loop warnings; step (warn, escalate, final, stop) is the ladder's.",
}


def _package_version() -> str:
    try:
        return version("loopwarden")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0.0.0"


def asyncapi_document(schema_files: dict[str, str]) -> dict[str, Any]:
    """The AsyncAPI 3.1 document; ``schema_files`` maps each topic role to the file of
    its JSON Schema (relative to the document)."""
    topics = TopicSettings()
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for role, (_model, direction) in TOPIC_RECORDS.items():
        keyed_by = ROUTES[role].keyed_by
        messages[role] = {
            "name": role,
            "title": f"A record of the {role} topic",
            "contentType": "application/json",
            "payload": {
                "schemaFormat": "application/schema+json;version=draft-07",
                "schema": {"$ref": f"./{schema_files[role]}"},
            },
            "bindings": {
                "kafka": {
                    "key": {"type": "string", "description": KEY_DESCRIPTIONS[keyed_by]},
                    "bindingVersion": "0.5.0",
                }
            },
        }
        channels[role] = {
            "address": getattr(topics, role),
            "title": role,
            "description": TOPIC_NOTES.get(
                role, f"Settable with LOOPWARDEN_TOPICS__{role.upper()}; keyed by {keyed_by}."
            ),
            "messages": {"record": {"$ref": f"#/components/messages/{role}"}},
        }
        action = "receive" if direction == "in" else "send"
        operations[f"{action}_{role}"] = {
            "action": action,
            "channel": {"$ref": f"#/channels/{role}"},
            "messages": [{"$ref": f"#/channels/{role}/messages/record"}],
        }
    return {
        "asyncapi": "3.1.0",
        "info": {
            "title": "loopwarden",
            "version": _package_version(),
            "description": "The topics a loopwarden worker reads (receive: what agents "
            "publish) and writes (send: what agents and operators consume). Payloads: the "
            "JSON Schemas beside this file, exported from the worker's models.",
        },
        "defaultContentType": "application/json",
        "servers": {
            "kafka": {
                "host": "127.0.0.1:9092",
                "protocol": "kafka",
                "description": "Any Kafka cluster: LOOPWARDEN_KAFKA__BOOTSTRAP_SERVERS "
                "(loopwarden dev prints the embedded broker's).",
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }
