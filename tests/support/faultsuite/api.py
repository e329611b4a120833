"""The HTTP API under hostile requests: overrides without, with a wrong and with a
query-string token, completions without the token, huge and malformed bodies."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from pydantic import SecretStr

from faultsuite.harness import cluster, wait_ready
from loopwarden.streams.tools.broker import free_port

TOKEN = "fault-suite-api-token"


async def _status(session: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> int:
    for _ in range(120):  # 503 until the partitions are assigned
        async with session.request(method, url, **kw) as response:
            if response.status != 503:
                return response.status
        await asyncio.sleep(0.5)
    return 503


async def api_run(seed: int = 0) -> dict[str, Any]:
    """Each hostile request and the status it got (expected in ``API_EXPECTED``)."""
    port = free_port()
    with cluster(f"api{seed}", api={"token": SecretStr(TOKEN)}, web_port=port) as c:
        c.start_worker()
        await wait_ready(c.settings)
        base = f"http://127.0.0.1:{port}/orchestrator"
        override = {"override_fatigue": True, "override_by": "x"}
        completion = {
            "loop_id": "api-loop",
            "reflection_status": "done",
            "alignment_score": 0.5,
            "drift_score": 0.5,
        }
        good = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession() as s:
            got = {
                "completion, token": await _status(
                    s, "POST", f"{base}/loop-complete", json=completion, headers=good
                ),
                "override, no token": await _status(
                    s, "POST", f"{base}/override-guardrails/api-loop", json=override
                ),
                "override, wrong token": await _status(
                    s,
                    "POST",
                    f"{base}/override-guardrails/api-loop",
                    json=override,
                    headers={"Authorization": "Bearer wrong"},
                ),
                "override, token in query": await _status(
                    s, "POST", f"{base}/override-guardrails/api-loop?token={TOKEN}", json=override
                ),
                "completion, no token": await _status(
                    s, "POST", f"{base}/loop-complete", json=completion
                ),
                "huge body": await _status(
                    s, "POST", f"{base}/loop-complete", data=b"x" * 2_000_000, headers=good
                ),
                "malformed body": await _status(
                    s, "POST", f"{base}/loop-complete", data=b"{nope", headers=good
                ),
                "faust /router page": await _status(s, "GET", f"http://127.0.0.1:{port}/router"),
            }
    return {"seed": seed, "statuses": got}


API_EXPECTED = {
    "completion, token": 200,
    "override, no token": 401,
    "override, wrong token": 401,
    "override, token in query": 401,
    "completion, no token": 401,
    "huge body": 413,
    "malformed body": 400,
    "faust /router page": 404,
}


def api_ok(result: dict[str, Any]) -> bool:
    """Every request answered as expected."""
    return result["statuses"] == API_EXPECTED
