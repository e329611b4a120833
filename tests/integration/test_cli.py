"""The CLI against a real broker and worker: publish JSON lines, tail warnings."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import orjson
import pytest

from loopwarden.settings import settings_env

pytestmark = pytest.mark.integration


def cli(settings, *args: str, stdin: bytes | None = None, timeout: float = 60):
    env = {**os.environ, **settings_env(settings)}
    return subprocess.run(
        [sys.executable, "-m", "loopwarden", *args],
        input=stdin,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def test_publish_then_tail_a_loop(shared_settings, shared_worker):
    loop_id = f"cli-{uuid.uuid4().hex[:6]}"
    lines = (
        b"".join(
            orjson.dumps({"loop_id": loop_id, "action_type": "grep", "params": {"n": i}}) + b"\n"
            for i in range(3)
        )
        + b'{"loop_id": "'
        + loop_id.encode()
        + b'"}\n'
    )
    published = cli(shared_settings, "publish", "-", stdin=lines)
    assert published.returncode == 4  # one bad line: bad input (the others were published)
    assert b"line 4: validation: payload.action_type: Field required" in published.stderr
    assert b"published 3 event(s), 1 bad line(s)" in published.stderr

    tailed = cli(
        shared_settings,
        "tail",
        "--loop",
        loop_id,
        "--from-beginning",
        "--format",
        "json",
        "--limit",
        "1",
        "--timeout",
        "60",
    )
    assert tailed.returncode == 0, tailed.stderr
    (warning,) = [orjson.loads(line) for line in tailed.stdout.splitlines()]
    assert warning["loop_id"] == loop_id
    assert warning["kind"] == "action_type_spin"
    assert len(warning["event_ids"]) == 3

    text = cli(
        shared_settings,
        "tail",
        "--loop",
        loop_id,
        "--from-beginning",
        "--limit",
        "1",
        "--timeout",
        "60",
    )
    assert f"[{loop_id}] action_type_spin".encode() in text.stdout
    assert "⚠️ [SPIN DETECTED]".encode() in text.stdout


def test_tail_with_nothing_before_the_timeout_exits_5(shared_settings, shared_worker):
    quiet = f"quiet-{uuid.uuid4().hex[:6]}"
    tailed = cli(shared_settings, "tail", "--loop", quiet, "--timeout", "1")
    assert tailed.returncode == 5, tailed.stderr
    said = tailed.stderr.decode().strip().splitlines()
    # it says what it waits for, once it does (it printed nothing while it waited)
    assert said[0].startswith(f"tail: following warnings of loop {quiet} at ")
    assert said[0].endswith("from now on; Ctrl-C to stop")
    assert said[1:] == ["Error: no warnings within 1 s"]


def test_a_second_publish_to_the_same_loop_is_not_dropped(shared_settings, shared_worker):
    """Two files without event ids, one loop: the second file's events are applied too
    (they were skipped as already seen when every file's line 1 was ``line-1``)."""
    loop_id = f"cli-again-{uuid.uuid4().hex[:6]}"
    lines = b"".join(
        orjson.dumps({"loop_id": loop_id, "action_type": "grep", "params": {"n": i}}) + b"\n"
        for i in range(3)
    )
    for _ in range(2):
        published = cli(shared_settings, "publish", "-", stdin=lines)
        assert published.returncode == 0, published.stderr
    tailed = cli(
        shared_settings,
        *("tail", "--loop", loop_id, "--from-beginning", "--format", "json"),
        *("--limit", "4", "--timeout", "60"),
    )
    assert tailed.returncode == 0, tailed.stderr
    warnings = [orjson.loads(line) for line in tailed.stdout.splitlines()]
    # the seed's Layer 1 warns on the 3rd to the 6th grep in a row: 4 warnings
    assert len({w["trigger_event_id"] for w in warnings}) == 4
    assert [w["kind"] for w in warnings] == ["action_type_spin"] * 4


def test_detect_and_publish_refuse_the_same_lines_with_the_same_words(
    shared_settings, shared_worker
):
    """One way of reading a line for both (issue 47, item 2): an array of non-objects, a
    line over limits.max_event_bytes, a wrong type, not JSON; a long result is cut,
    not refused."""
    loop = f"same-{uuid.uuid4().hex[:6]}"
    # over the result's 2,000 characters, within these tests' 4 KB max_event_bytes
    good = {"loop_id": loop, "action_type": "pytest", "result": "PASSED\n" * 450}
    lines = [
        b"[1,2,3]",
        orjson.dumps({"loop_id": loop, "action_type": "a", "result": "x" * 300_000}),
        orjson.dumps({"loop_id": loop, "action_type": "a", "success": "maybe"}),
        b"not json",
        orjson.dumps(good),
        orjson.dumps({"loop_id": loop, "action_type": "a", "succes": False}),  # a typo
    ]
    data = b"\n".join(lines) + b"\n"
    published = cli(shared_settings, "publish", "-", stdin=data)
    detected = cli(shared_settings, "detect", "-", stdin=data)
    assert published.returncode == detected.returncode == 4

    def refusals(stderr: bytes) -> list[str]:
        return [line for line in stderr.decode().splitlines() if line.startswith("line ")]

    assert refusals(published.stderr) == refusals(detected.stderr)
    said = refusals(detected.stderr)
    assert [line.split(":")[0] for line in said] == [
        "line 1[0]",
        "line 1[1]",
        "line 1[2]",
        "line 2",
        "line 3",
        "line 4",
        "line 6",
    ]
    assert "too_large" in said[3] and "success" in said[4] and "decode" in said[5]
    assert said[6] == "line 6: ignored payload.succes: unknown field, did you mean 'success'?"
    assert b"published 2 event(s), 6 bad line(s)" in published.stderr
    # the embedded broker refuses idempotence: nothing the user can act on (item 6)
    assert b"WARNING" not in published.stderr, published.stderr
