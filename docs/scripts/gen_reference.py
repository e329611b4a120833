"""Reference pages generated at build time (mkdocs-gen-files): every setting from the
settings model, and the HTTP API from the OpenAPI document the workers serve."""

from __future__ import annotations

import json
from typing import Any

import mkdocs_gen_files
from pydantic import BaseModel

from loopwarden.agents.guardrails.openapi import openapi_document
from loopwarden.settings import Settings


def _default(value: Any) -> str:
    if isinstance(value, frozenset | set | tuple | list):
        value = sorted(value) if isinstance(value, frozenset | set) else list(value)
    if isinstance(value, BaseModel):
        return "(section)"
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return f"`{text}`" if text != "" else '`""`'


def _rows(model: type[BaseModel], prefix: str, env: str) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += _rows(annotation, f"{prefix}{name}.", f"{env}{name.upper()}__")
            continue
        description = (field.description or "").replace("|", "\\|").replace("\n", " ")
        default = "secret" if "SecretStr" in str(annotation) else _default(field.default)
        rows.append(f"| `{prefix}{name}` | `{env}{name.upper()}` | {default} | {description} |")
    return rows


def settings_page() -> str:
    lines = [
        "# Settings reference",
        "",
        "Every setting of `loopwarden.settings.Settings`, generated from the model: its",
        "dotted name (for `--set` and config files), its environment variable and its",
        "default. Every threshold of the seeds has the seed's value as default.",
        "",
        "| setting | variable | default | |",
        "|---|---|---|---|",
        *_rows(Settings, "", "LOOPWARDEN_"),
    ]
    return "\n".join(lines) + "\n"


def api_page() -> str:
    document = openapi_document()
    lines = [
        "# HTTP API reference",
        "",
        f"{document['info']['description']} Generated from the OpenAPI document every",
        f"worker serves at `/openapi.json` (version {document['info']['version']}).",
        "",
    ]
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            lines += [f"## `{method.upper()} {path}`", "", operation.get("summary", ""), ""]
            if operation.get("description"):
                lines += [operation["description"], ""]
            lines += ["| status | meaning |", "|---|---|"]
            for status, response in operation.get("responses", {}).items():
                lines.append(f"| {status} | {response.get('description', '')} |")
            lines.append("")
    lines += [
        "## Schemas",
        "",
        "```json",
        json.dumps(document["components"]["schemas"], indent=2),
        "```",
        "",
    ]
    return "\n".join(lines)


with mkdocs_gen_files.open("reference/settings.md", "w") as page:
    page.write(settings_page())
with mkdocs_gen_files.open("reference/http-api.md", "w") as page:
    page.write(api_page())
