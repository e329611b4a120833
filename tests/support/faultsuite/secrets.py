"""Secrets in every field an event, a completion or a memory can carry, sent as a foreign
producer would (raw JSON, nothing redacted client-side); then every place loopwarden
writes is searched for them: output topics, re-route topics, changelogs, dead
letters (with ``limits.redact_dead_letters``), LanceDB files and rows, the API's
answers, the prompts sent to the model endpoint and the workers' logs."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import lancedb
from aiohttp import web
from aiokafka import AIOKafkaProducer
from loopback_http import serving_post
from pydantic import SecretStr
from secrets_corpus import SECRET_PARAMS, SECRETS, all_secrets

from faultsuite.harness import cluster, read_topic, wait_committed, wait_ready
from loopwarden.agents.capabilities import STATE_TABLES
from loopwarden.schemas import codec
from loopwarden.streams.tools.broker import free_port
from loopwarden.streams.tools.topics import changelog_topics

TOKEN = "fault-suite-token"


class CapturingModel:
    """An OpenAI-compatible endpoint on loopback that keeps every prompt it is sent."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.prompts.extend(m["content"] for m in body["messages"])
        verdict = {"is_spinning": False, "reason": "fine", "suggestions": [], "next_actions": []}
        message = {"role": "assistant", "content": codec.dumps(verdict).decode()}
        return web.json_response({"choices": [{"index": 0, "message": message}]})


@contextlib.asynccontextmanager
async def capturing_model() -> AsyncIterator[tuple[CapturingModel, str]]:
    """A running :class:`CapturingModel` and its base URL."""
    model = CapturingModel()
    async with serving_post("/v1/chat/completions", model.handle) as base:
        yield model, f"{base}/v1"


def _found(blob: bytes | str) -> list[str]:
    """The corpus's secrets in ``blob`` (JSON escapes undone). Searched as UTF-8 bytes: a
    LanceDB directory holds tens of MB of vectors, which decoding to text made slow."""
    data = blob.encode() if isinstance(blob, str) else blob
    data = data.replace(b"\\n", b"\n").replace(b'\\"', b'"').replace(b"\\/", b"/")
    return [secret for secret, encoded in _encoded_secrets() if encoded in data]


@functools.cache
def _encoded_secrets() -> tuple[tuple[str, bytes], ...]:
    return tuple((secret, secret.encode()) for secret in all_secrets())


def _inputs(i: int, text: str) -> dict[str, list[bytes]]:
    """Raw records carrying ``text`` (and the key-named secrets) in every field."""
    loop = f"secret-loop-{i}"
    action = {
        "event_id": f"sa-{i}-{{n}}",
        "loop_id": loop,
        "occurred_at": 1_767_225_600 + i,
        "payload": {
            "action_type": "db_login",
            "action_name": text,
            "params": {"note": text, "nested": [{"cmd": text}], **SECRET_PARAMS},
            "success": False,
            "error_message": text,
            "terminated": False,
            "resource_usage": {"log": text},
            "side_effects": [text],
            "edit": {"start_line": 3, "end_line": 4, "content": text},
        },
    }
    actions = [codec.dumps(action).replace(b"{n}", str(n).encode()) for n in range(4)]
    invalid = {**action, "event_id": f"bad-{i}", "payload": {**action["payload"], "success": [1]}}
    completion = {
        "event_id": f"sc-{i}",
        "type": "loop_complete",
        "loop_id": loop,
        "occurred_at": 1_767_225_700 + i,
        "payload": {
            "reflection_status": "done",
            "alignment_score": 0.2,
            "drift_score": 0.8,
            "bias_tags": [{"tag": "anchoring", "detail": text}],
            "orchestrator_persona": text,
            "reflection_persona": text,
        },
    }
    memory = {
        "event_id": f"sm-{i}",
        "occurred_at": 1_767_225_800 + i,
        "payload": {
            "content": f"remember {i}: {text}",
            "tags": [text],
            "potential_questions": [text],
            "entity_refs": [text],
        },
    }
    return {
        "actions": [*actions, codec.dumps(invalid)],
        "completions": [codec.dumps(completion)],
        "memories": [codec.dumps(memory)],
    }


async def secrets_run(seed: int = 0) -> dict[str, Any]:
    """Send the corpus, wait until everything is processed, count secrets found per place."""
    web_port = free_port()
    async with capturing_model() as (model, base_url):
        with cluster(
            f"secrets{seed}",
            analyst={"base_url": base_url, "timeout_s": 5.0},
            limits={"redact_dead_letters": True},
            api={"token": SecretStr(TOKEN)},
            web_port=web_port,
            memory={"maintenance_interval_s": 0},
        ) as c:
            c.start_worker()
            settings = c.settings
            names = settings.topics
            await wait_ready(settings)
            sent_ids: set[str] = set()
            producer = AIOKafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
            await producer.start()
            try:
                for i, (_, text, _) in enumerate(SECRETS):
                    records = _inputs(i, text)
                    for topic, name in (
                        (names.actions, "actions"),
                        (names.loop_completions, "completions"),
                        (names.memory_writes, "memories"),
                    ):
                        for value in records[name]:
                            sent_ids.add(codec.loads(value)["event_id"])
                            await producer.send_and_wait(topic, value=value, key=None)
            finally:
                await producer.stop()
            api_answers = await _call_api(f"http://127.0.0.1:{web_port}", len(SECRETS))
            behind = await wait_committed(
                settings,
                [
                    names.actions,
                    names.actions_reroute,
                    names.loop_completions,
                    names.completions_reroute,
                    names.memory_writes,
                    names.memory_lessons,
                    names.reflection_requests,
                ],
                180,
            )
            found = await _scan_topics(settings, sent_ids)
            control = sum(
                len(_found(value or b""))
                for _, value, _ in await read_topic(settings.kafka.bootstrap_servers, names.actions)
            )
            found["lancedb files"] = _scan_files(Path(settings.memory.uri))
            found["lancedb rows"] = _scan_rows(settings.memory.uri)
            found["api answers"] = len(_found(api_answers))
            found["model prompts"] = len(_found("\n".join(model.prompts)))
            found["worker logs"] = len(_found(c.worker_logs()))
            prompts = len(model.prompts)
    return {
        "seed": seed,
        "secrets": len(all_secrets()),
        "records_sent": len(sent_ids),
        "prompts_captured": prompts,
        "control_found_in_input": control,
        "found_in_clear": found,
        "uncommitted_at_end": behind,
    }


async def _call_api(base: str, loops: int) -> str:
    """Completions and overrides with secrets through the API, and every status; the
    answers as text."""
    texts = [text for _, text, _ in SECRETS]
    answers = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession() as session:
        for i, text in enumerate(texts):
            loop = f"api-secret-{i}"
            body = {
                "loop_id": loop,
                "reflection_status": "done",
                "alignment_score": 0.3,
                "drift_score": 0.7,
                "bias_tags": [{"tag": "anchoring", "detail": text}],
            }
            for method, url, payload in (
                ("POST", f"{base}/orchestrator/loop-complete", body),
                (
                    "POST",
                    f"{base}/orchestrator/override-guardrails/{loop}",
                    {"override_fatigue": True, "override_by": "op", "override_reason": text},
                ),
                ("GET", f"{base}/orchestrator/guardrails-status/{loop}", None),
                ("GET", f"{base}/orchestrator/guardrails-status/secret-loop-{i % loops}", None),
            ):
                for _ in range(60):  # 503 until partitions are assigned
                    async with session.request(method, url, json=payload, headers=headers) as r:
                        text_answer = await r.text()
                        if r.status != 503:
                            break
                    await asyncio.sleep(0.5)
                answers.append(text_answer)
    return "\n".join(answers)


async def _scan_topics(settings: Any, sent_ids: set[str]) -> dict[str, int]:
    names = settings.topics
    bootstrap = settings.kafka.bootstrap_servers
    found: dict[str, int] = {}
    outputs = [
        names.warnings,
        names.reflection_requests,
        names.reflections,
        names.decisions,
        names.memory_lessons,
        names.memory_outcomes,
        names.dead_letter,
        names.actions_reroute,
        names.completions_reroute,
        *changelog_topics(settings, STATE_TABLES),
    ]
    changelogs = set(changelog_topics(settings, STATE_TABLES))
    for topic in [*outputs, names.loop_completions, names.memory_writes]:
        count = 0
        for key, value, headers in await read_topic(bootstrap, topic):
            if topic in changelogs and value:
                value = codec.dumps(codec.loads_state(value))  # compressed state, read in clear
            ours = topic in (names.loop_completions, names.memory_writes) and value
            if ours and codec.loads(value).get("event_id") in sent_ids:
                continue  # our own raw input, not something loopwarden wrote
            blob = b"\n".join([key or b"", value or b"", *(v for _, v in headers)])
            count += len(_found(blob))
        found[topic.split(".", 1)[-1]] = count
    return found


def _scan_files(root: Path) -> int:
    return sum(len(_found(path.read_bytes())) for path in root.rglob("*") if path.is_file())


def _scan_rows(uri: str) -> int:
    db = lancedb.connect(uri)
    count = 0
    for name in db.list_tables().tables:
        table = (
            db.open_table(name)
            .to_arrow()
            .drop_columns(
                [c for c in ("vector", "question_vector") if c in db.open_table(name).schema.names]
            )
        )
        count += len(_found(codec.dumps(table.to_pylist(), default=_text_of)))
    return count


def _text_of(value: Any) -> str:
    """Binary columns (a memory's card: JSON) are scanned as the text they hold."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(type(value).__name__)


def secrets_ok(result: dict[str, Any]) -> bool:
    """No secret found anywhere."""
    return (
        not any(result["found_in_clear"].values())
        and result["prompts_captured"] > 0
        and result["control_found_in_input"] > 0  # the search does find them where they are
    )
