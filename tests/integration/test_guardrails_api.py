"""The guardrails HTTP API, served by real workers on the embedded broker."""

from __future__ import annotations

import uuid

import aiohttp
import pytest
from pydantic import SecretStr

from loopwarden.agents.guardrails.api import SERVED_BY_HEADER
from loopwarden.streams.tools.broker import free_port

from .conftest import http_call as call
from .conftest import isolated_settings

pytestmark = pytest.mark.integration
TOKEN = "s3cret-token"


def api_settings(settings, port):
    return settings.model_copy(
        update={
            "web_port": port,
            "api": settings.api.model_copy(update={"token": SecretStr(TOKEN)}),
        }
    )


@pytest.fixture
def api_worker(broker, worker_factory):
    port = free_port()
    settings = api_settings(isolated_settings(broker, "api", ["guardrails"]), port)
    worker_factory(settings)
    return f"http://127.0.0.1:{port}"


async def test_loop_complete_status_and_override(api_worker):
    base = api_worker
    family = f"api-{uuid.uuid4().hex[:6]}"
    async with aiohttp.ClientSession() as session:
        status, body, _ = await call(
            session,
            "POST",
            f"{base}/orchestrator/loop-complete",
            json={
                "loop_id": family,
                "reflection_status": "done",
                "alignment_score": 0.72,
                "drift_score": 0.28,
                "orchestrator_persona": "SAGE",
                "reflection_persona": "SAGE",
            },
            token=TOKEN,
        )
        assert status == 200, body
        assert body["decision_result"]["new_loop_id"] == f"{family}_r1"
        assert body["decision_result"]["rerun_reason"] == "alignment_threshold_not_met"

        status, body, _ = await call(
            session, "GET", f"{base}/orchestrator/guardrails-status/{family}"
        )
        assert status == 200
        guardrails = body["guardrails_status"]
        assert (guardrails["rerun_count"], guardrails["max_reruns"]) == (1, 3)
        assert guardrails["trace"]["decision"] == "rerun"
        assert guardrails["rerun_trigger"] == ["alignment", "drift"]

        status, body, _ = await call(
            session, "GET", f"{base}/orchestrator/guardrails-status/nope-{family}"
        )
        assert status == 404 and body["status"] == "error"

        override = {
            "override_fatigue": True,
            "override_max_reruns": False,
            "override_by": "operator",
            "override_reason": "keep exploring",
        }
        url = f"{base}/orchestrator/override-guardrails/{family}"
        status, body, _ = await call(session, "POST", url, json=override)
        assert status == 401
        status, body, _ = await call(session, "POST", url, json=override, token="wrong")
        assert status == 401
        status, body, _ = await call(session, "POST", url, json=override, token=TOKEN)
        assert status == 200
        assert body == {
            "status": "success",
            "loop_id": family,
            "override_fatigue": True,
            "override_max_reruns": False,
            "overridden_by": "operator",
            "override_reason": "keep exploring",
        }
        status, body, _ = await call(
            session, "GET", f"{base}/orchestrator/guardrails-status/{family}"
        )
        assert body["guardrails_status"]["overrides"]["override_fatigue"] is True


async def test_bad_bodies_are_refused_with_the_reason(api_worker):
    url = f"{api_worker}/orchestrator/loop-complete"
    async with aiohttp.ClientSession() as session:
        status, body, _ = await call(session, "POST", url, data=b"{not json")
        assert status == 400 and "not valid JSON" in body["message"]
        status, body, _ = await call(session, "POST", url, data=b"[1, 2]")
        assert status == 400 and "JSON object" in body["message"]
        huge = b'{"loop_id": "x", "pad": "' + b"x" * 200_000 + b'"}'
        status, body, _ = await call(session, "POST", url, data=huge, token=TOKEN)
        assert status == 413 and "api.max_body_bytes" in body["message"]
        status, body, _ = await call(
            session,
            "POST",
            url,
            json={"loop_id": "x", "reflection_status": "running", "alignment_score": 2},
        )
        assert status == 422
        paths = {e["path"] for e in body["errors"]}
        assert paths == {"reflection_status", "alignment_score", "drift_score"}
        status, body, _ = await call(
            session,
            "POST",
            url,
            json={
                "loop_id": "x",
                "reflection_status": "done",
                "alignment_score": 0.1,
                "drift_score": 0.9,
                "override_max_reruns": True,
                "override_by": "me",
            },
        )
        assert status == 401  # override flags need the token
        never = {"loop_id": "fam-never_r4", "reflection_status": "done"}
        scores = {"alignment_score": 0.1, "drift_score": 0.9}
        status, body, _ = await call(session, "POST", url, json={**never, **scores}, token=TOKEN)
        assert status == 422  # beyond the default limit of 3: never scheduled
        assert body["message"].startswith("fam-never_r4 was never scheduled")
        status, body, _ = await call(session, "GET", f"{api_worker}/openapi.json")
        assert status == 200 and "/orchestrator/loop-complete" in body["paths"]


async def test_any_worker_answers_for_any_family(broker, worker_factory):
    base_settings = isolated_settings(broker, "api2", ["guardrails"])
    ports = [free_port(), free_port()]
    for port in ports:
        worker_factory(api_settings(base_settings, port))
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    families = [f"route-{i}-{uuid.uuid4().hex[:4]}" for i in range(6)]
    served_elsewhere = 0
    async with aiohttp.ClientSession() as session:
        for i, family in enumerate(families):
            status, body, _ = await call(
                session,
                "POST",
                f"{urls[i % 2]}/orchestrator/loop-complete",
                json={
                    "loop_id": family,
                    "reflection_status": "done",
                    "alignment_score": 0.9,
                    "drift_score": 0.1,
                },
                token=TOKEN,
                retry_s=90,
            )
            assert status == 200, body
            answers = []
            for url in urls:
                status, body, headers = await call(
                    session, "GET", f"{url}/orchestrator/guardrails-status/{family}"
                )
                assert status == 200, body
                answers.append(body)
                assert SERVED_BY_HEADER in headers, (url, dict(headers), body)
                if headers[SERVED_BY_HEADER].rstrip("/") != url:
                    served_elsewhere += 1
            assert answers[0] == answers[1]
            assert answers[0]["guardrails_status"]["trace"]["decision"] == "finalize"
    assert served_elsewhere >= 1  # some requests were answered by the partition's owner


COMPLETION = {"reflection_status": "done", "alignment_score": 0.5, "drift_score": 0.5}


async def test_completions_need_the_token_and_a_retry_counts_once(api_worker):
    """Issue 15.10: a client retry after a 504 is applied once; 15: who may call what."""
    family = f"retry-{uuid.uuid4().hex[:6]}"
    url = f"{api_worker}/orchestrator/loop-complete"
    body = {"loop_id": family, **COMPLETION}
    async with aiohttp.ClientSession() as session:
        status, answer, _ = await call(session, "POST", url, json=body)
        assert status == 401 and "completions need" in answer["message"]
        status, _, _ = await call(session, "POST", f"{url}?token={TOKEN}", json=body)
        assert status == 401  # never from the query string
        answers = [await call(session, "POST", url, json=body, token=TOKEN) for _ in range(3)]
        assert [a[0] for a in answers] == [200, 200, 200]
        assert answers[0][1] == answers[1][1] == answers[2][1]
        status, state, _ = await call(
            session, "GET", f"{api_worker}/orchestrator/guardrails-status/{family}"
        )
        assert state["guardrails_status"]["rerun_count"] == 1  # not 3
        keyed = {"loop_id": f"{family}_r1", **COMPLETION}
        first = await call(session, "POST", url, json=keyed, token=TOKEN)
        headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "attempt-1"}
        async with session.post(url, json=keyed, headers=headers) as response:
            assert response.status == 200
        assert first[0] == 200
        status, state, _ = await call(
            session, "GET", f"{api_worker}/orchestrator/guardrails-status/{family}"
        )
        # the same body under an explicit key is another completion (the client said so)
        assert state["guardrails_status"]["rerun_count"] == 3
        for faust_page in ("/router", "/table/loop-family"):
            async with session.get(f"{api_worker}{faust_page}") as response:
                assert response.status == 404, faust_page
