"""A scripted model server of the tests' own: a real HTTP server on loopback that answers
OpenAI Chat Completions, the Responses API and Anthropic Messages in their own shapes,
streamed or not, and always asks for the same failing command again — an agent that
loops. It keeps every request it got (what the gateway forwarded) so a test can check
what reached the model, and that a stop answered in its place never reached it.

    with ScriptedModel() as model:      # model.url: http://127.0.0.1:PORT
        ...
    python tests/support/scripted_model.py --port 4200   # for an agent CLI, by hand
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from loopwarden.streams.tools.broker import free_port

COMMAND = "pytest -q tests/test_login.py"
USAGE_IN, USAGE_OUT = 100, 20


@dataclass
class Seen:
    """One request the model got."""

    api: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def instructions(self) -> str:
        """Its system prompt / instructions, as text."""
        if self.api == "chat":
            first = (self.body.get("messages") or [{}])[0]
            content = first.get("content") if first.get("role") in ("system", "developer") else ""
            return content if isinstance(content, str) else orjson.dumps(content).decode()
        raw = self.body.get("instructions" if self.api == "responses" else "system") or ""
        return raw if isinstance(raw, str) else orjson.dumps(raw).decode()


def _tool(body: dict[str, Any], api: str) -> tuple[str, dict[str, Any]]:
    """The tool to call again and its arguments: Codex CLI's exec_command (shell before
    0.17), Claude Code's Bash, or the request's first tool."""
    names = []
    for tool in body.get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            names.append(name)
    if "exec_command" in names:  # Codex CLI 0.17x
        return "exec_command", {"cmd": COMMAND}
    if "shell" in names:
        return "shell", {"command": ["bash", "-lc", COMMAND]}
    if "Bash" in names:
        return "Bash", {"command": COMMAND, "description": "Run the login tests"}
    return (names[0] if names else "run_command"), {"command": COMMAND}


def _sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else orjson.dumps(data).decode()
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


class ScriptedModel:
    """The server (a thread running uvicorn), and what it got."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.seen: list[Seen] = []
        self._started = threading.Event()
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, name="scripted-model", daemon=True)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._started.set()
        yield

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the scripted model server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(30)

    async def _seen(self, api: str, request: Request) -> dict[str, Any]:
        body = orjson.loads(await request.body())
        self.seen.append(Seen(api, body, dict(request.headers)))
        return body

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def chat(self, request: Request) -> Response:
        body = await self._seen("chat", request)
        name, args = _tool(body, "chat")
        call = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                "function": {"name": name, "arguments": orjson.dumps(args).decode()}}  # fmt: skip
        head = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()),
                "model": body.get("model", "scripted")}  # fmt: skip
        usage = {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT,
                 "total_tokens": USAGE_IN + USAGE_OUT}  # fmt: skip
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            return JSONResponse({**head, "object": "chat.completion", "usage": usage,
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls"}]})  # fmt: skip
        chunk = {**head, "object": "chat.completion.chunk"}
        delta = {"role": "assistant", "tool_calls": [{"index": 0, **call}]}
        frames = [
            _sse({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            _sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            _sse({**chunk, "choices": [], "usage": usage}),
            _sse("[DONE]"),
        ]
        return self._stream(frames)

    async def responses(self, request: Request) -> Response:
        body = await self._seen("responses", request)
        name, args = _tool(body, "responses")
        item = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:12]}",
                "call_id": f"call_{uuid.uuid4().hex[:12]}", "name": name,
                "arguments": orjson.dumps(args).decode(), "status": "completed"}  # fmt: skip
        usage = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT,
                 "total_tokens": USAGE_IN + USAGE_OUT,
                 "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
        whole = {"id": f"resp_{uuid.uuid4().hex[:12]}", "object": "response",
                 "created_at": int(time.time()), "status": "completed", "error": None,
                 "incomplete_details": None, "model": body.get("model", "scripted"),
                 "output": [item], "parallel_tool_calls": False, "tool_choice": "auto",
                 "tools": [], "usage": usage}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(whole)
        events = [
            ("response.created", {"response": {**whole, "status": "in_progress", "output": []}}),
            ("response.output_item.added", {"output_index": 0, "item": item}),
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": whole}),
        ]
        frames = [
            _sse({"type": e, "sequence_number": n, **d}, e) for n, (e, d) in enumerate(events)
        ]
        return self._stream(frames)

    async def messages(self, request: Request) -> Response:
        body = await self._seen("messages", request)
        name, args = _tool(body, "messages")
        block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": name,
                 "input": args}  # fmt: skip
        whole = {"id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant",
                 "model": body.get("model", "scripted"), "content": [block],
                 "stop_reason": "tool_use", "stop_sequence": None,
                 "usage": {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(whole)
        started = {**whole, "content": [], "stop_reason": None,
                   "usage": {"input_tokens": USAGE_IN, "output_tokens": 1}}  # fmt: skip
        partial = orjson.dumps(args).decode()
        events = [
            ("message_start", {"message": started}),
            ("content_block_start", {"index": 0, "content_block": {**block, "input": {}}}),
            ("content_block_delta", {"index": 0, "delta": {"type": "input_json_delta",
                                                           "partial_json": partial}}),
            ("content_block_stop", {"index": 0}),
            ("message_delta", {"delta": {"stop_reason": "tool_use", "stop_sequence": None},
                               "usage": {"output_tokens": USAGE_OUT}}),
            ("message_stop", {}),
        ]  # fmt: skip
        return self._stream([_sse({"type": e, **d}, e) for e, d in events])

    @staticmethod
    def _stream(frames: list[bytes]) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            for frame in frames:
                yield frame

        return StreamingResponse(chunks(), media_type="text/event-stream")


@contextlib.contextmanager
def scripted_model() -> Iterator[ScriptedModel]:
    """A :class:`ScriptedModel` for the length of a ``with``."""
    with ScriptedModel() as model:
        yield model


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4200)
    port = parser.parse_args().port
    with ScriptedModel(port) as model:
        print(f"scripted model on {model.url}", flush=True)
        model._thread.join()
