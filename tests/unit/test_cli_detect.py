"""`loopwarden detect`: the worker's detectors over a JSON-lines file, no broker."""

import time

import orjson
from click.testing import CliRunner

from loopwarden.cli import main

SEED_ENV = {"LOOPWARDEN_DETECTION__PROFILE": "seed"}  # the seed fires on these lines


def lines(*objs):
    return "".join(orjson.dumps(o).decode() + "\n" for o in objs)


def test_detect_prints_warnings_as_json_lines(tmp_path):
    path = tmp_path / "trajectory.jsonl"
    path.write_text(
        lines(
            {"loop_id": "L", "action_type": "search"},
            {"loop_id": "L", "action_type": "search"},
            {"loop_id": "L", "action_type": "search"},
            {"loop_id": "M", "action_type": "shell", "success": False, "error_message": "boom"},
        )
    )
    result = CliRunner().invoke(main, ["detect", str(path)], env=SEED_ENV)
    assert result.exit_code == 0, result.output
    warnings = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [(w["loop_id"], w["kind"]) for w in warnings] == [
        ("L", "action_type_spin"),
        ("M", "action_failed"),
    ]
    assert warnings[0]["event_ids"] == ["line-1", "line-2", "line-3"]
    assert "4 event(s), 2 loop(s), 2 warning(s), 0 bad line(s)" in result.stderr
    # lines without a time are stamped from the run's start, one second a line (the
    # warnings said occurred_at 3.0 and 4.0: 1970)
    started = time.time()
    assert started - 60 < warnings[0]["occurred_at"] < warnings[1]["occurred_at"] < started + 60
    assert warnings[1]["occurred_at"] - warnings[0]["occurred_at"] == 1.0


def test_detect_reports_bad_lines_and_goes_on():
    data = (
        lines({"loop_id": "L"}) + "not json\n" + lines(*[{"loop_id": "L", "action_type": "a"}] * 3)
    )
    result = CliRunner().invoke(main, ["detect", "-"], env=SEED_ENV, input=data)
    assert result.exit_code == 4  # bad input, as `publish` (the good lines were processed)
    assert "line 1: validation: payload.action_type: Field required" in result.stderr
    assert "line 2: decode" in result.stderr
    assert len(result.stdout.splitlines()) == 1


def test_detect_with_requests_includes_reflection_requests():
    data = lines({"loop_id": "L", "action_type": "a", "success": False})
    result = CliRunner().invoke(main, ["detect", "--requests", "-"], env=SEED_ENV, input=data)
    types = [orjson.loads(x)["type"] for x in result.stdout.splitlines()]
    assert types == ["warning", "reflection_request"]


def test_every_command_has_help():
    runner = CliRunner()
    for command in ["broker", "worker", "dev", "topics", "demo", "publish", "tail", "detect"]:
        result = runner.invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output


def test_detect_speaks_text_to_people_and_keeps_the_settings_stamp_once(tmp_path):
    """Issue 47, item 8: text on request (the default on a terminal), and JSON warnings
    without a 2 KB settings dump each: the fingerprint names the settings, which
    --settings-stamp prints in full."""
    path = tmp_path / "run.jsonl"
    path.write_text(lines(*[{"loop_id": "L", "action_type": "search"}] * 3))
    text = CliRunner().invoke(main, ["detect", "--format", "text", str(path)], env=SEED_ENV)
    assert text.exit_code == 0, text.stderr
    assert text.stdout.startswith("[L] action_type_spin (level ")
    assert "\n    " in text.stdout and "{" not in text.stdout.splitlines()[0]
    short = CliRunner().invoke(main, ["detect", str(path)], env=SEED_ENV)
    full = CliRunner().invoke(main, ["detect", "--settings-stamp", str(path)], env=SEED_ENV)
    (lean,) = [orjson.loads(x) for x in short.stdout.splitlines()]
    (stamped,) = [orjson.loads(x) for x in full.stdout.splitlines()]
    assert lean["produced_by"]["settings"] == {}
    assert stamped["produced_by"]["settings"]["detection.profile"] == "seed"
    assert lean["produced_by"]["fingerprint"] == stamped["produced_by"]["fingerprint"]
    assert len(short.stdout) < len(full.stdout) / 2
    assert f"settings {lean['produced_by']['fingerprint']} (monitor logic v" in short.stderr
