"""The LLM conflict judge against a loopback chat-completions server; heuristic fallback."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import SecretStr

from loopwarden.agents.memory.embedding import HashingEmbedder
from loopwarden.agents.memory.judge import ConflictJudge
from loopwarden.agents.memory.writer import MemoryWriter
from loopwarden.schemas.memory import validate_memory_write
from loopwarden.settings import AnalystSettings, MemorySettings
from loopwarden.storage.memory_table import MemoryTable

CFG = MemorySettings(embedder="hashing")


@pytest.fixture
def model():
    answers = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answers.append((body, self.headers.get("Authorization")))
            content = answers_to_give[0] if answers_to_give else "not json"
            data = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    answers_to_give: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", answers, answers_to_give
    server.shutdown()


def write(event_id, content, **payload):
    return validate_memory_write(
        {
            "event_id": event_id,
            "occurred_at": 1_800_000_000.0,
            "payload": {"content": content, **payload},
        }
    )


def test_the_judge_labels_supersedes_and_falls_back_when_malformed(model, tmp_path):
    url, seen, answers = model
    judge = ConflictJudge(AnalystSettings(base_url=url, api_key=SecretStr("k"), timeout_s=2))
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG, judge)
    writer.write([write("a", "The staging cluster has three nodes", tags=["infra"])], 1.0)
    answers.append(
        json.dumps({"label": "supersedes", "confidence": 0.9, "reason": "newer node count"})
    )
    (outcome,) = writer.write(
        [write("b", "The staging cluster has five nodes now", tags=["capacity"])], 2.0
    )
    assert outcome["conflicts"][0]["relation"] == "supersedes"
    assert outcome["conflicts"][0]["reason"] == "model: newer node count"
    body, auth = seen[-1]
    assert auth == "Bearer k"
    assert body["response_format"]["json_schema"]["schema"]["required"] == [
        "label",
        "confidence",
        "reason",
    ]
    answers.clear()  # the server now answers "not json"
    (fallback,) = writer.write(
        [write("c", "The staging cluster does not have three nodes", tags=["ops"])], 3.0
    )
    reasons = [c["reason"] for c in fallback["conflicts"]]
    assert reasons and all("judge failed" in r for r in reasons)


def test_no_endpoint_means_no_judge():
    assert ConflictJudge(AnalystSettings()).judge("a", "b") is None


def test_asked_beforehand_the_judge_is_not_called_while_applying(model, tmp_path):
    url, seen, answers = model
    judge = ConflictJudge(AnalystSettings(base_url=url, timeout_s=2))
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG, judge)
    writer.write([write("a", "The staging cluster has three nodes", tags=["infra"])], 1.0)
    answers.append(json.dumps({"label": "contradicts", "confidence": 0.8, "reason": "count"}))
    prepared = writer.prepare(
        [write("b", "The staging cluster has five nodes now", tags=["capacity"])]
    )
    questions = writer.questions(prepared, 2.0)
    assert questions == [
        ("The staging cluster has three nodes", "The staging cluster has five nodes now")
    ]
    assert table.count() == 1 and not seen  # asking what to ask reads only
    verdicts = judge.answer_all(questions)
    asked = len(seen)
    (outcome,) = writer.apply(prepared, 2.0, verdicts)
    assert len(seen) == asked == 1  # applying asked nothing more
    assert outcome["conflicts"][0]["reason"] == "model: count"
    assert table.count() == 2


def test_a_question_the_answers_lack_falls_back_and_says_why(model, tmp_path):
    url, seen, _ = model
    judge = ConflictJudge(AnalystSettings(base_url=url, timeout_s=2))
    table = MemoryTable(str(tmp_path), CFG.hashing_dims)
    writer = MemoryWriter(table, HashingEmbedder(CFG.hashing_dims), CFG, judge)
    writer.write([write("a", "The staging cluster has three nodes", tags=["infra"])], 1.0)
    prepared = writer.prepare(
        [write("b", "The staging cluster does not have three nodes", tags=["ops"])]
    )
    assert writer.questions(prepared, 2.0)  # the judge would have been asked
    (outcome,) = writer.apply(prepared, 2.0, verdicts={})
    assert not seen
    reasons = [c["reason"] for c in outcome["conflicts"]]
    assert reasons and all("judge failed: the neighbour changed" in r for r in reasons)
