"""Warnings say what repeated (issue 59, item 1): the call (tool and the argument that
identifies it), the line that repeats (a failure's reason, not a banner or a header),
who, how often, since when; the same facts in the warning's ``repeated`` field."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest
from click.testing import CliRunner

from loopwarden.agents.spin.what_repeated import call_label, telling_line
from loopwarden.cli import main
from loopwarden.schemas.warnings import LoopWarning

PYTEST_RUN = (
    "============================= test session starts ==============================\n"
    "platform linux -- Python 3.11\ncollected 12 items\n\n"
    + "    x = compute(x)\n"
    * 300  # a 5,000-character traceback
    + "E   CardDeclined: insufficient_funds\n\n"
    "FAILED tests/test_billing.py::test_charge_declined - CardDeclined: insufficient_funds\n"
    "============================== 1 failed in 0.42s ==============================="
)
COMMAND = "pytest tests/test_billing.py -x -q"


def warned(events: list[dict], env: dict | None = None) -> list[dict]:
    lines = "".join(orjson.dumps(e).decode() + "\n" for e in events)
    result = CliRunner().invoke(main, ["detect", "--format", "json", "-"], input=lines, env=env)
    assert result.exit_code == 0, result.stderr
    return [orjson.loads(line) for line in result.stdout.splitlines() if line]


@pytest.mark.parametrize("error_message", [None, "exit code 1"])
def test_a_failing_test_run_names_its_command_and_quotes_why(error_message):
    """It was quoted as “exit code 1” or as its first line, the session banner."""
    run = {"loop_id": "coder", "action_type": "shell", "params": {"command": COMMAND}}
    run |= {"result": PYTEST_RUN, "success": False, "error_message": error_message}
    first = warned([run] * 3)[0]
    text = first["timeline_message"]
    assert f"called shell (`{COMMAND}`) 3 times and it failed the same way" in text
    assert "“FAILED tests/test_billing.py::test_charge_declined - CardDeclined" in text
    assert "test session starts" not in text and "exit code 1" not in text
    assert first["repeated"] == {
        "how": "same_failure",
        "tool": "shell",
        "call": COMMAND,
        "line": "FAILED tests/test_billing.py::test_charge_declined - CardDeclined: "
        "insufficient_funds",
        "count": 3,
        "since": 1,
        "agent": None,
    }
    assert LoopWarning.model_validate(first).repeated.how == "same_failure"


def test_a_table_or_a_column_is_quoted_whole_not_by_its_header():
    table = "NAME      READY   UP-TO-DATE   AVAILABLE   AGE\nweb       0/3     3    0    5m"
    get = {"loop_id": "ops", "action_type": "kubectl", "result": table}
    get["params"] = {"command": "kubectl get deploy web"}
    count = {"loop_id": "sql", "action_type": "query", "result": "count\n42"}
    count["params"] = {"sql": "select count(*) from orders"}
    (ops,) = warned([get] * 3)
    (sql,) = warned([count] * 3)
    assert "(`kubectl get deploy web`)" in ops["timeline_message"]
    assert "“NAME READY UP-TO-DATE AVAILABLE AGE · web 0/3 3 0 5m”" in ops["timeline_message"]
    assert "“count · 42”" in sql["timeline_message"]


def test_a_speaker_is_named_by_its_agent():
    asks = [
        "Could you please give me your order number so I can look up the order?",
        "I need your order number to look up the order. Could you provide it?",
        "Without the order number I cannot look up the order. Please give me the number.",
    ]
    turns = [
        {
            "loop_id": "bot",
            "action_type": "respond",
            "turn": "message",
            "agent": "support",
            "result": text,
        }
        for text in asks
    ]
    (said,) = warned(turns)
    assert said["timeline_message"].startswith(
        "⚠️ [LOOP] Since action 1, support has said the same thing 3 times: “Without the"
    )
    assert "respond" not in said["timeline_message"]
    assert said["repeated"]["agent"] == "support" and said["repeated"]["how"] == "said"


def test_a_refusal_names_the_call_and_its_reason():
    calls = [
        {
            "loop_id": "book",
            "action_type": "book_reservation",
            "success": False,
            "rejected": True,
            "params": {"user_id": "u1", "amount": 950 + n},
            "result": f"Error: total price is 1002, but paid {950 + n}",
        }
        for n in range(2)
    ]
    (refused,) = warned(calls, env={"LOOPWARDEN_DETECTION__PROFILE": "loops"})  # the rule alone
    assert (
        "book_reservation has refused your call (`user_id='u1', amount=951`) 2 times"
        in (refused["timeline_message"])
    )
    assert refused["repeated"]["line"] == "Error: total price is 1002, but paid 951"


def test_chinese_texts_carry_the_same_facts():
    run = {"loop_id": "coder", "action_type": "shell", "params": {"command": COMMAND}}
    run |= {"result": PYTEST_RUN, "success": False}
    first = warned([run] * 3, env={"LOOPWARDEN_DETECTION__LANGUAGE": "zh"})[0]
    assert first["timeline_message"].startswith(
        f"⚠️ [循环] 自第 1 步起，你已 3 次调用 shell（`{COMMAND}`）"
    )
    assert "每次以相同的方式失败：「FAILED tests/test_billing.py" in first["timeline_message"]


def test_call_labels_and_telling_lines():
    payload = SimpleNamespace(params={"path": "src/app.py", "lines": 40}, action_name="read")
    assert call_label(payload) == "src/app.py"
    payload = SimpleNamespace(params={"user_id": "u1", "n": 3}, action_name="x")
    assert call_label(payload) == "user_id='u1', n=3"
    assert call_label(SimpleNamespace(params={}, action_name="search(q='x')")) == "search(q='x')"
    assert telling_line(PYTEST_RUN) == "1 failed in 0.42s"  # the summary a run ends with
    long = "=" * 40 + "\nSTATUS   NAME\n" + "line of output\n" * 10
    assert telling_line(long) == "line of output"  # not the banner, not the header
    assert telling_line("") == ""
