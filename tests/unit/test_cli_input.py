"""What `detect` and `publish` make of a user's own files (issue 47, item 9): a typo'd
field named with the closest known one, a JSON document instead of JSON lines, a
byte-order mark, standard input from a terminal."""

from __future__ import annotations

import io

import orjson
from click.testing import CliRunner

from loopwarden.cli import json_input, main

SEED = {"LOOPWARDEN_DETECTION__PROFILE": "seed"}  # the seed warns on every failure


def detect(data: bytes, tmp_path, name: str = "run.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    return CliRunner().invoke(main, ["detect", str(path)], env=SEED)


def test_a_typo_in_a_field_is_named_with_the_closest_known_one(tmp_path):
    line = {"loop_id": "L", "action_type": "deploy", "succes": False, "error_message": "x"}
    result = detect(orjson.dumps(line) + b"\n", tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "line 1: ignored payload.succes: unknown field, did you mean 'success'?" in (
        result.stderr
    )
    full = {"event_id": "e", "loop_id": "L", "ocurred_at": 1, "payload": {"action_type": "a"}}
    result = detect(orjson.dumps(full) + b"\n", tmp_path)
    assert "ignored ocurred_at: unknown field, did you mean 'occurred_at'?" in result.stderr


def test_a_pretty_printed_array_is_read_as_its_events(tmp_path):
    events = [{"loop_id": "L", "action_type": "a", "success": False}] * 3
    result = detect(orjson.dumps(events, option=orjson.OPT_INDENT_2), tmp_path, "run.json")
    assert result.exit_code == 0, result.stderr
    assert "this is one JSON document, not JSON lines" in result.stderr
    # three failures (action_failed each) of one action three times (action_type_spin)
    assert "3 event(s), 1 loop(s), 4 warning(s), 0 bad line(s)" in result.stderr


def test_a_pretty_printed_object_is_one_event(tmp_path):
    event = {"loop_id": "L", "action_type": "a", "success": False}
    result = detect(orjson.dumps(event, option=orjson.OPT_INDENT_2), tmp_path, "one.json")
    assert "1 event(s), 1 loop(s), 1 warning(s), 0 bad line(s)" in result.stderr


def test_a_byte_order_mark_does_not_lose_the_first_event(tmp_path):
    lines = b"".join(
        orjson.dumps({"loop_id": "L", "action_type": "a", "success": False}) + b"\n"
        for _ in range(2)
    )
    result = detect(b"\xef\xbb\xbf" + lines, tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "2 event(s), 1 loop(s), 2 warning(s), 0 bad line(s)" in result.stderr


def test_standard_input_from_a_terminal_says_it_is_read(monkeypatch, capsys):
    class Terminal(io.BytesIO):
        name = "<stdin>"

    monkeypatch.setattr(json_input.sys.stdin, "isatty", lambda: True, raising=False)
    lines = list(json_input.input_lines(Terminal(b'{"loop_id": "L", "action_type": "a"}\n')))
    assert [n for n, _ in lines] == [1]
    assert "reading JSON lines from standard input (Ctrl-D ends it" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`loopwarden detect runs.jsonl | head -1` (and `tail | head`): no BrokenPipeError,
    exit 0 (issue 47, item 7)."""
    import os
    import subprocess
    import sys

    path = tmp_path / "many.jsonl"
    path.write_bytes(
        b"".join(
            orjson.dumps({"loop_id": f"L{n % 50}", "action_type": "a", "success": False}) + b"\n"
            for n in range(3000)
        )
    )
    command = f"{sys.executable} -m loopwarden detect {path} | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        env={**os.environ, **SEED},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.startswith("{")
