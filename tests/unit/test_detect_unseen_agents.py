"""Cases tried as a new user would, on agents of their own, through `loopwarden detect`:
healthy polling stays quiet, the person's replies do not hide a restating support bot,
shifted read windows are re-reads with their results published, and refused calls are a
signal of their own (issue 58)."""

import orjson
from click.testing import CliRunner

from loopwarden.cli import main


def detect(*events: dict, env: dict | None = None) -> list[dict]:
    data = "".join(orjson.dumps({"loop_id": "L", **e}).decode() + "\n" for e in events)
    result = CliRunner().invoke(main, ["detect", "-"], input=data, env=env or {})
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def triggers(warnings: list[dict]) -> list[str]:
    return [w["trigger_event_id"] for w in warnings]


def shell(command: str, result: str, n: int, **extra) -> dict:
    return {
        "event_id": f"e{n}",
        "action_type": "shell",
        "params": {"command": command},
        "result": result,
        **extra,
    }


RULES_ALONE = {"LOOPWARDEN_DETECTION__PROFILE": "loops"}
"""The loops profile: the rules alone, each shown when it fires (no gate)."""
THINK = {"action_type": "think", "params": {"thought": "recompute"}}

KUBECTL = "kubectl get deploy web"
TABLE = "NAME   READY   UP-TO-DATE   AVAILABLE   AGE\nweb    {}/3     3            {}           {}s"


def test_a_rollout_polled_to_the_end_is_not_warned():
    ready = [0, 1, 2, 3]
    events = [shell(KUBECTL, TABLE.format(r, r, 10 + 5 * i), i) for i, r in enumerate(ready)]
    assert detect(*events) == []


def test_a_rollout_that_stopped_moving_is_warned():
    events = [shell(KUBECTL, TABLE.format(1, 1, 10 + 5 * i), i) for i in range(3)]
    assert triggers(detect(*events)) == ["e2"]  # the same figures: the same result


def test_a_draining_queue_is_not_warned():
    counts = [1200, 800, 350, 40]
    events = [
        shell("queue depth jobs", f"pending: {c}\nworkers: 4", i) for i, c in enumerate(counts)
    ]
    assert detect(*events) == []


def test_a_ci_poller_that_sleeps_is_not_warned_until_it_waits_far_too_long():
    poll = "sleep 30 && gh run view 4711 --json status"
    waiting = [shell(poll, '{"status": "in_progress"}', i) for i in range(5)]
    assert detect(*waiting) == []
    stuck = [shell(poll, '{"status": "in_progress"}', i) for i in range(8)]
    assert triggers(detect(*stuck)) == ["e7"]  # detection.poll_repeats


def test_a_tool_can_be_exempted_or_have_its_numbers_ignored():
    ticking = [
        {
            "event_id": f"e{i}",
            "action_type": "get_status",
            "params": {"job": "nightly"},
            "result": f"state: waiting, checked {i + 1} times",
        }
        for i in range(3)
    ]
    assert detect(*ticking) == []  # its numbers move
    masked = {"LOOPWARDEN_DETECTION__TOOLS": '{"get_status": "masked"}'}
    assert triggers(detect(*ticking, env=masked)) == ["e2"]
    same = [{**e, "result": "state: waiting"} for e in ticking]
    assert triggers(detect(*same)) == ["e2"]
    exempt = {"LOOPWARDEN_DETECTION__TOOLS": '{"get_*": "exempt"}'}
    assert detect(*same, env=exempt) == []


ASKS = [
    "Could you please share your order number so that I can look into the refund for you?",
    "To help with the refund I need your order number, could you provide it please?",
    "I still need the order number of your purchase to process the refund, please share it.",
    "Please provide your order number so I can check the refund status for you.",
]
REPLIES = [
    "It's 48213, I already gave it on the phone.",
    "I told you, the order number is 48213.",
    "48213! That is the order number, as I said twice.",
]


def support_bot(replies_as: dict | None) -> list[dict]:
    events = []
    for i, ask in enumerate(ASKS):
        events.append(
            {"event_id": f"a{i}", "action_type": "respond", "turn": "message", "result": ask}
        )
        if replies_as is not None and i < len(REPLIES):
            events.append(
                {"event_id": f"p{i}", "action_type": "message", "result": REPLIES[i], **replies_as}
            )
    return events


def test_the_persons_replies_do_not_hide_a_bot_asking_again():
    alone = triggers(detect(*support_bot(None)))
    assert alone and alone[0] == "a2"
    for replies in ({"turn": "counterpart"}, {"turn": "message", "agent": "user"}):
        warned = triggers(detect(*support_bot(replies)))
        assert warned == alone  # the same warnings, on the bot's own turns


def test_re_reads_through_shifted_windows_are_warned_with_their_results():
    windows = ["575,585p", "580,590p", "575,600p"]
    events = [
        shell(
            f"sed -n {w} src/app/billing.py",
            f"{w}: " + " ".join(f"line{j}" for j in range(i, i + 12)),
            i,
        )
        for i, w in enumerate(windows)
    ]
    assert triggers(detect(*events)) == ["e2"]
    # zooming into a window is finding the spot, not reading it again
    zoom = ["1,300p", "150,210p", "203,208p"]
    events = [shell(f"sed -n {w} src/app/billing.py", f"text {i}", i) for i, w in enumerate(zoom)]
    assert detect(*events) == []


def booking(n: int, amount: int, user: str = "noah_muller_9847", **extra) -> dict:
    return {
        "event_id": f"b{n}",
        "action_type": "book_reservation",
        "params": {"user_id": user, "flight": "HAT082", "amount": amount},
        "result": f"Error: payment amount does not add up, total price is 1002, but paid {amount}",
        **extra,
    }


def test_the_same_booking_refused_twice_for_one_reason_is_warned_when_marked_rejected():
    think = {"event_id": "t", "action_type": "think", "params": {"thought": "recompute"}}
    plain = [booking(1, 957, success=False), think, booking(2, 972, success=False)]
    assert detect(*plain) == []  # two failures of a varied call: not yet a loop
    refused = [booking(1, 957, rejected=True), think, booking(2, 972, rejected=True)]
    assert detect(*refused) == []  # the gate (default): two refusals are often recovered from
    warned = detect(*refused, env=RULES_ALONE)
    assert [(w["kind"], w["trigger_event_id"]) for w in warned] == [("repeated_rejection", "b2")]
    assert "total price is 1002" in warned[0]["timeline_message"]
    other = {**booking(2, 972, "bo", rejected=True)}
    other["params"] = {**other["params"], "flight": "HAT101"}
    others = [booking(1, 957, "ana", rejected=True), think, other]
    assert detect(*others, env=RULES_ALONE) == []  # two customers' bookings: two attempts


def test_a_booking_refused_a_third_time_is_warned_marked_or_not():
    for mark in ({"rejected": True}, {"success": False}):
        events = []
        for n in range(1, 4):
            events += [booking(n, 950 + 7 * n, **mark), {"event_id": f"t{n}", **THINK}]
        warned = detect(*events)
        assert triggers(warned) == ["t3"], mark  # the third refusal, then the same thought
        assert warned[0]["gate"]["score"] >= 0.0


def test_a_reply_format_refused_three_times_running_is_warned():
    def refused(n: int, blocks: int) -> dict:
        return {
            "event_id": f"f{n}",
            "action_type": "(format_error)",
            "params": {"reply": f"reply {n}"},
            "rejected": True,
            "result": f"Please always provide EXACTLY ONE action, found {blocks} actions.",
        }

    three = [refused(1, 3), refused(2, 2), refused(3, 5)]
    assert triggers(detect(*three, env=RULES_ALONE)) == ["f3"]
    assert detect(*three) == []  # the gate waits for a fourth
    assert triggers(detect(*three, refused(4, 2))) == ["f4"]
    spread = [refused(1, 3), shell("ls", "a b", 1), shell("ls src", "c", 2), refused(2, 2)]
    spread += [shell("cat a", "x", 3), refused(3, 5)]
    assert detect(*spread) == []  # one now and then is recovered from


def test_an_edit_refused_for_the_same_syntax_error_is_warned():
    def edit(n: int, text: str) -> dict:
        return {
            "event_id": f"x{n}",
            "action_type": "edit",
            "params": {"file": "src/app.py", "text": text},
            "edit": {"start_line": 40, "end_line": 44, "file": "src/app.py"},
            "success": False,
            "result": "Your edit was not applied.\n"
            f"E999 SyntaxError: invalid syntax at line {41 + n}",
        }

    attempts = [
        "if x:\nreturn 1",
        "if x :\n  return  1)",
        "if (x:\n    return 1",
        "if x\n  return 2",
    ]
    warned = detect(*[edit(n, t) for n, t in enumerate(attempts)])
    assert triggers(warned)[:1] == ["x2"]
    assert "SyntaxError: invalid syntax" in warned[0]["timeline_message"]
    # applied edits of those lines are work on them, not attempts refused
    applied = [{**edit(n, t), "success": True, "result": "ok"} for n, t in enumerate(attempts)]
    assert [w for w in detect(*applied) if w["kind"] == "repeated_outcome"] == []


# issue 69: the cases a new user tried, on the default (gated) profile, without `rejected`


def test_an_edit_refused_five_times_for_one_syntax_error_is_warned_unmarked():
    edits = [
        {
            "event_id": f"x{i}",
            "action_type": "edit",
            "params": {"file": "a.py", "start": 5, "end": 7, "text": f"    return x+{i}"},
            "success": False,
            "result": "Your proposed edit has introduced new syntax error(s).\n"
            f"- E999 SyntaxError: invalid syntax\n{5 + i}: return x+{i}",
        }
        for i in range(5)
    ]
    warned = detect(*edits)
    assert triggers(warned) == ["x4"]
    assert warned[0]["gate"]["score"] >= warned[0]["gate"]["threshold"]


def test_a_booking_retried_with_a_flight_swapped_is_warned_unmarked():
    events = []
    for i, flight in enumerate(["HAT030", "HAT031", "HAT030", "HAT032"]):
        events.append(
            {
                "event_id": f"b{i}",
                "action_type": "update_reservation_flights",
                "params": {"reservation_id": "ZFA04Y", "flights": [{"flight_number": flight}]},
                "success": False,
                "result": f"Error: flight {flight} not available on date 2024-05-13",
            }
        )
        events.append(
            {
                "event_id": f"m{i}",
                "action_type": "respond",
                "turn": "message",
                "result": f"Let me try another flight for you, attempt {i}.",
            }
        )
    warned = detect(*events)
    assert triggers(warned)[:1] == ["m2"]  # by the third refusal of the same kind
    assert warned[0]["gate"]["score"] >= 0.0


def test_a_rollout_stuck_at_zero_is_warned_once_not_told_to_change_course():
    events = [shell(KUBECTL, TABLE.format(0, 0, 10 + 5 * i), i) for i in range(4)]
    warned = detect(*events)
    assert triggers(warned) == ["e2"]
    assert [w["step"] for w in warned] == ["warn"]
    assert "change course" not in warned[0]["timeline_message"].lower()
