"""The OpenAPI 3.1 description of the guardrails API, built from the request models."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from loopwarden.schemas.completions import CompletionPayload, OverridePayload
from loopwarden.version import VERSION


class LoopCompleteRequest(CompletionPayload):
    """``POST /orchestrator/loop-complete``: the seed's request plus the reflection's scores."""

    loop_id: str = Field(min_length=1, max_length=256)


_ERROR = {"$ref": "#/components/schemas/Error"}
_LOOP_ID = {"name": "loop_id", "in": "path", "required": True, "schema": {"type": "string"}}

_COMPLETE_EXAMPLE = {
    "status": "success",
    "loop_id": "loop_001",
    "reflection_result": {
        "alignment_score": 0.72,
        "drift_score": 0.28,
        "summary_valid": True,
        "reflection_persona": "SAGE",
        "bias_echo": False,
        "reflection_fatigue": 0.0,
    },
    "decision_result": {
        "decision": "rerun",
        "original_loop_id": "loop_001",
        "new_loop_id": "loop_001_r1",
        "rerun_reason": "alignment_threshold_not_met",
        "rerun_number": 1,
        "rerun_count": 1,
        "max_reruns": 3,
    },
    "orchestrator_persona": "SAGE",
    "timestamp": "2025-04-21T19:45:00Z",
}


def _json(schema: dict[str, Any], example: Any = None) -> dict[str, Any]:
    content: dict[str, Any] = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"content": {"application/json": content}}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: "Body is not a JSON object",
        401: "Missing or wrong bearer token",
        403: "Overrides are disabled",
        404: "Unknown loop",
        422: "Body breaks the contract (field paths in `errors`)",
        503: "Partition assignment not known yet",
        504: "The stream did not answer in time",
    }
    return {str(code): {"description": reasons[code], **_json(_ERROR)} for code in codes}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document served at ``/openapi.json``."""
    override = OverridePayload.model_json_schema(ref_template="#/components/schemas/{model}")
    complete = LoopCompleteRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = {**complete.pop("$defs", {}), **override.pop("$defs", {})}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "loopwarden guardrails API",
            "version": VERSION,
            "description": "Reflection guardrails (seed 003), served by every worker.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                **defs,
                "LoopCompleteRequest": complete,
                "OverrideRequest": override,
                "Error": {
                    "type": "object",
                    "required": ["status", "message"],
                    "properties": {
                        "status": {"const": "error"},
                        "message": {"type": "string"},
                        "errors": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "path": {"type": "string"},
                                    "message": {"type": "string"},
                                },
                            },
                        },
                    },
                },
            },
        },
        "paths": {
            "/orchestrator/loop-complete": {
                "post": {
                    "summary": "Process a loop completion with all reflection guardrails",
                    "description": "Override flags in the body need the bearer token.",
                    "requestBody": {
                        "required": True,
                        **_json({"$ref": "#/components/schemas/LoopCompleteRequest"}),
                    },
                    "responses": {
                        "200": {
                            "description": "Reflection result and rerun decision",
                            **_json({"type": "object"}, _COMPLETE_EXAMPLE),
                        },
                        **_errors(400, 401, 403, 422, 503, 504),
                    },
                }
            },
            "/orchestrator/guardrails-status/{loop_id}": {
                "get": {
                    "summary": "Current status of all reflection guardrails for a loop",
                    "parameters": [_LOOP_ID],
                    "responses": {
                        "200": {
                            "description": "Guardrails status, trace and reasoning",
                            **_json({"type": "object"}),
                        },
                        **_errors(404, 503),
                    },
                }
            },
            "/orchestrator/override-guardrails/{loop_id}": {
                "post": {
                    "summary": "Override reflection guardrails for a loop's family",
                    "security": [{"bearer": []}],
                    "parameters": [_LOOP_ID],
                    "requestBody": {
                        "required": True,
                        **_json({"$ref": "#/components/schemas/OverrideRequest"}),
                    },
                    "responses": {
                        "200": {
                            "description": "The override as applied",
                            **_json({"type": "object"}),
                        },
                        **_errors(400, 401, 403, 404, 422, 503, 504),
                    },
                }
            },
        },
    }
