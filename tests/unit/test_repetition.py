"""The loops profile's signals, with lists: normalised results, repeated outcomes per
agent, repeated messages per speaker, the ladder's words, and the reference rules."""

from __future__ import annotations

import itertools

import pytest

from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.spin.normalise import names, normalised, similarity, sketch, targets
from loopwarden.agents.spin.reference import _chunk_loop
from loopwarden.schemas.events import ActionEvent, validate_action
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.warnings import LoopWarning
from loopwarden.settings import DetectionSettings

_ids = itertools.count()


def action(action_type: str = "tool", **payload) -> ActionEvent:
    n = next(_ids)
    envelope = {"event_id": f"r{n}", "loop_id": "L", "occurred_at": 1_700_000_000.0 + n}
    return validate_action({**envelope, "payload": {"action_type": action_type, **payload}})


def say(speaker: str, text: str, kind: str | None = None) -> ActionEvent:
    return action(kind or speaker, turn="message", agent=speaker, result=text)


def shown(events, detectors=None, ladder=False, **settings) -> list[list[dict]]:
    """The warnings shown for each event."""
    if detectors is not None:
        settings["detectors"] = tuple(detectors)
    monitor = LoopMonitor(DetectionSettings(ladder=ladder, **settings))
    state = LoopState("L")
    out = []
    for i, event in enumerate(events):
        findings = monitor.observe(state, event, Origin(0, i))
        for warning in findings.warnings:
            LoopWarning.model_validate(warning)
        out.append(findings.warnings)
    return out


def fired(per_event) -> list[int]:
    return [i for i, warnings in enumerate(per_event) if warnings]


# -- normalisation -------------------------------------------------------------------------

SAME_AFTER_MASKING = [
    ("took 0.42s at 2026-11-25T08:00:01Z", "took 1.7s at 2026-11-26T09:10:11Z"),
    ("pid 4121 listening", "pid 977 listening"),
    ("wrote /tmp/tmpab12cd/out.txt", "wrote /tmp/tmpzz99yy/out.txt"),
    ("object at 0x7f3a2c10", "object at 0x7f3a99e0"),
    ("commit 3f9a1c2d4e applied", "commit 0b1c2d3e4f applied"),
    ("id 123e4567-e89b-12d3-a456-426614174000", "id 00000000-0000-0000-0000-000000000001"),
    ("Error:   File   not found", "error: file not found"),
]
DIFFERENT_AFTER_MASKING = [
    ("FAILED test_parse", "PASSED test_parse"),
    ("No such file: a.py", "No such file: b.py"),
    ("permission denied", "connection refused"),
]


@pytest.mark.parametrize(("a", "b"), SAME_AFTER_MASKING)
def test_volatile_tokens_are_masked(a, b):
    assert normalised(a) == normalised(b)
    assert similarity(sketch(a), sketch(b)) == 1.0


@pytest.mark.parametrize(("a", "b"), DIFFERENT_AFTER_MASKING)
def test_meaningful_differences_stay(a, b):
    assert normalised(a) != normalised(b)
    assert similarity(sketch(a), sketch(b)) < 1.0


def _word(n: int) -> str:
    """A word without digits (digits are masked): n in base 26."""
    letters = ""
    while True:
        n, rest = divmod(n, 26)
        letters += chr(ord("a") + rest)
        if not n:
            return f"w{letters}"


def test_similarity_of_sketches_estimates_jaccard():
    assert similarity([], []) == 1.0 and similarity([], sketch("a b")) == 0.0
    assert similarity(sketch("a b c d"), sketch("a b c e")) == pytest.approx(3 / 5)
    long_a = " ".join(_word(i) for i in range(400))
    long_b = " ".join(_word(i) for i in range(200, 600))
    assert abs(similarity(sketch(long_a), sketch(long_b)) - 200 / 600) < 0.15
    assert len(sketch(long_a)) == 64


def test_targets_are_the_quoted_names_of_the_first_line():
    assert targets("Please check 'Sylvia' on \"Netflix\"\nmore 'x'") == ["netflix", "sylvia"]
    assert targets("no quotes here") == []
    assert targets("the Children's Museum's 'Membership' or 'Annual Passes' page") == [
        "annual passes",
        "membership",
    ]


# -- repeated outcomes ---------------------------------------------------------------------


def read(path: str, result: str, **extra) -> ActionEvent:
    return action("read_file", params={"path": path}, result=result, **extra)


def test_the_same_call_and_result_three_times_warns_even_when_not_adjacent():
    events = [
        read("a.py", "def f(): pass"),
        read("b.py", "x = 1"),
        read("a.py", "def f(): pass"),
        read("c.py", "y = 2"),
        read("a.py", "def f(): pass"),
    ]
    per_event = shown(events, ["repeated_outcome"])
    assert fired(per_event) == [4]
    (warning,) = per_event[4]
    assert warning["event_ids"] == [events[0].event_id, events[2].event_id, events[4].event_id]
    text = warning["timeline_message"]
    assert "3 times" in text and "def f(): pass" in text
    assert warning["timeline_message"].startswith("⚠️ [LOOP] Since action 1 you have")


NOT_A_REPEAT = [
    # another result each time: progress
    [read("a.py", "alpha"), read("a.py", "beta"), read("a.py", "gamma")],
    # another record each time: three payments are three calls
    [
        action("refund", params={"payment_id": p}, success=False, result="declined")
        for p in ("p1", "p2", "p3")
    ],
    # outcomes unknown (success: null, no result): nothing to compare
    [action("search", params={"q": "x"}, success=None) for _ in range(5)],
    # no result published, the call worked: the very same call fewer times than asked
    # (outcome_unknown_repeats, 3)
    [action("search", params={"q": "x"}) for _ in range(2)],
    # no result published: other calls that worked
    [action("search", params={"q": q}) for q in "abcde"],
    # an edit in between: re-running after a real edit is not a loop
    [
        action("pytest", params={"k": "t"}, result="1 failed"),
        action("pytest", params={"k": "t"}, result="1 failed"),
        action("edit", params={"f": "a.py"}, edit={"start_line": 3, "end_line": 4}),
        action("pytest", params={"k": "t"}, result="1 failed"),
    ],
    # repeats further apart than the window
    [
        read("a.py", "same"),
        *[read(f"f{i}.py", str(i)) for i in range(16)],
        read("a.py", "same"),
        read("a.py", "same"),
    ],
]


@pytest.mark.parametrize("events", NOT_A_REPEAT)
def test_what_is_not_a_repeated_outcome(events):
    assert fired(shown(events, ["repeated_outcome"])) == []


def test_near_identical_results_and_request_ids_are_the_same():
    events = [
        action("http", params={"url": "/s", "request_id": f"q{i}"}, result=f"timeout after {i}.5s")
        for i in range(3)
    ]
    assert fired(shown(events, ["repeated_outcome"])) == [2]


def test_a_retried_failure_says_to_change_the_arguments():
    events = [
        action("deploy", params={"env": "prod"}, success=False, error_message="denied", result="x")
        for _ in range(3)
    ]
    (warning,) = shown(events, ["repeated_outcome"])[2]
    assert "change the arguments" in warning["timeline_message"]


def test_outcomes_are_judged_per_agent():
    events = [
        action("search", agent=agent, params={"q": "x"}, result="nothing")
        for agent in ("a", "b", "a", "b")
    ]
    assert fired(shown(events, ["repeated_outcome"])) == []
    events.append(action("search", agent="a", params={"q": "x"}, result="nothing"))
    assert fired(shown(events, ["repeated_outcome"])) == [4]


# -- no result published: the call, its success and its error alone ------------------------


def lookup(name: str, **params) -> ActionEvent:
    """A code-search call that failed, published without any result text."""
    return action(
        "search_method",
        params={"method_name": name, **params},
        success=False,
        error_message="call_ok=false",
    )


def test_the_same_failing_call_with_the_same_error_warns_without_a_result():
    events = [lookup("Session.request"), lookup("other"), lookup("Session.request")]
    events.append(lookup("Session.request"))
    per_event = shown(events, ["repeated_outcome"])
    assert fired(per_event) == [3]
    assert "call_ok=false" in per_event[3][0]["timeline_message"]


def test_a_variant_naming_the_same_target_is_the_same_failing_call():
    """``search(name='X', file='f')`` and ``search(name='X')`` look for the same X: the
    arguments of one contain the other's (sympy-18532 of the dev set, a lookup and its
    narrowing to a file, the pair repeated verbatim)."""
    events = [
        lookup("Basic.atoms", **({"file_name": "sympy/core/basic.py"} if i % 2 == 0 else {}))
        for i in range(4)
    ]
    assert fired(shown(events, ["repeated_outcome"], retry_similarity=0.8)) == [2, 3]
    # held to identical calls: two of each form is not yet three
    assert fired(shown(events, ["repeated_outcome"], retry_similarity=1.0)) == []


def test_the_same_name_looked_up_in_other_files_is_not_one_call():
    """Half the arguments in common (the name, not the file) is another place looked at."""
    files = ("sympy/core/basic.py", "sympy/sets/fancysets.py", "sympy/polys/rings.py")
    events = [lookup("Basic.atoms", file_name=file) for file in files]
    assert fired(shown(events, ["repeated_outcome"])) == []


def test_the_very_same_failing_lookup_again_makes_the_name_elsewhere_the_same_attempt():
    """AutoCodeRover django-12915 of the dev set: one name looked up in a class, then in
    a file, then in the class again, every time failing the same way. Going back to
    the exact call that failed makes the look-up elsewhere part of the same attempt;
    sharing only the file (another name in one file) does not."""
    in_class = lookup("get_response_async", class_name="ASGIStaticFilesHandler")
    in_file = lookup("get_response_async", file_name="django/core/handlers/base.py")
    events = [in_class, in_file, lookup("get_response_async", class_name="ASGIStaticFilesHandler")]
    assert fired(shown(events, ["repeated_outcome"])) == [2]
    assert fired(shown(events[:2], ["repeated_outcome"])) == []  # not before the repeat
    same_file = [
        lookup("set_xlim", file_name="axes/_base.py"),
        action(
            "search_code",
            params={"code_str": "xlim_changed", "file_name": "axes/_base.py"},
            success=False,
            error_message="call_ok=false",
        ),
        lookup("set_xlim", file_name="axes/_base.py"),
    ]
    assert fired(shown(same_file, ["repeated_outcome"])) == []
    from loopwarden.agents.spin.call_words import _PLACE

    assert [bool(_PLACE.search(v)) for v in ("Basic.atoms", "basic.py", "a/b", "Q")] == [
        False,
        True,
        True,
        False,
    ]  # a dotted name is a name, a file or a path a place


def test_another_error_is_another_outcome():
    events = [
        action("search", params={"q": "x"}, success=False, error_message=f"error {kind}")
        for kind in ("timeout", "not found", "denied")
    ]
    assert fired(shown(events, ["repeated_outcome"])) == []


def test_the_very_same_call_that_worked_without_a_result_warns_at_its_own_count():
    events = [action("search", params={"q": "sympify"}) for _ in range(5)]
    assert fired(shown(events, ["repeated_outcome"], outcome_unknown_repeats=4)) == [3, 4]
    assert fired(shown(events, ["repeated_outcome"], outcome_unknown_repeats=5)) == [4]


def test_a_warning_on_unknown_results_does_not_claim_they_were_the_same():
    events = [action("search", params={"q": "sympify"}) for _ in range(3)]
    (warning,) = shown(events, ["repeated_outcome"])[2]
    assert "same result" not in warning["timeline_message"] + warning["reason"]
    assert "very same call to search (`sympify`) 3 times" in warning["timeline_message"]
    assert "no result was published" in warning["reason"]


def test_a_result_when_published_still_tells_progress_from_a_loop():
    """The same call, results published and changing: progress, however often."""
    pages = ("alpha", "beta", "gamma", "delta", "epsilon")
    events = [action("search", params={"q": "x"}, result=f"found {p}") for p in pages]
    assert fired(shown(events, ["repeated_outcome"], outcome_unknown_repeats=2)) == []


# -- repeated messages ---------------------------------------------------------------------


def test_a_request_reworded_again_and_again_warns():
    turns = [
        say("Orchestrator", "Please compose and send an email to the treasury about the sale"),
        say("WebSurfer", "I clicked 'Email the Department'.\nTreasury page text"),
        say("Orchestrator", "Compose and send an email to the treasury about the sale please"),
        say("WebSurfer", "I clicked 'Email the Department'.\nTreasury page text"),
        say("Orchestrator", "Please compose and send the email to the treasury about the sale"),
    ]
    per_event = shown(turns, ["repeated_message"])
    assert fired(per_event) == [4]
    assert "Orchestrator has said the same thing 3 times" in per_event[4][0]["timeline_message"]


NOT_A_REPEATED_MESSAGE = [
    # the same request for another quoted record each time
    [say("O", f"Please check the availability of '{m}' on Netflix (US).") for m in "ABC"],
    # short routine turns
    [say("O", "Next speaker WebSurfer") for _ in range(5)],
    # two speakers, each saying it twice
    [say(s, "I clicked the search button and waited") for s in ("A", "B", "A", "B")],
    # same first line, another page each time
    [
        say("W", f"I scrolled down one page.\n{' '.join(f'{c}{i}' for i in range(30))}")
        for c in "pqr"
    ],
]


@pytest.mark.parametrize("turns", NOT_A_REPEATED_MESSAGE)
def test_what_is_not_a_repeated_message(turns):
    assert fired(shown(turns, ["repeated_message"])) == []


GYMS = ["Equinox Flatiron", "Nimble Fitness", "CompleteBody Street", "Planet Fitness"]


def _schedules(gyms: list[str]) -> ActionEvent:
    request = f"Please continue checking the class schedules for {', '.join(gyms)}"
    return say("Orchestrator", request)


def test_a_request_that_drops_the_items_done_is_progress():
    """Who&When hand-crafted 52: the orchestrator re-asks its worker with the list
    shrinking as the worker gets through it; the same list again is a loop."""
    assert names("Please check Nimble Fitness. Then Planet") == ["Fitness", "Nimble", "Planet"]
    narrowing = [_schedules(GYMS[i:]) for i in range(3)]
    assert fired(shown(narrowing, ["repeated_message"])) == []
    assert fired(shown([_schedules(GYMS[1:]) for _ in range(3)], ["repeated_message"])) == [2]


def test_a_bare_label_is_judged_by_what_follows_it():
    ledger = 'Updated Ledger:\n{{"progress": "{}", "next": "WebSurfer"}}'
    alike = [
        say("O", ledger.format("still looking for the price list"), "O (thought)") for _ in "abc"
    ]
    other = [
        say("O", ledger.format(words), "O (thought)")
        for words in ("found the menu", "reading reviews now", "prices are listed")
    ]
    assert fired(shown(alike, ["repeated_message"])) == [2]
    assert fired(shown(other, ["repeated_message"])) == []


# -- the ladder says its step ---------------------------------------------------------------


def test_the_ladder_says_stop_in_words():
    events = [read("a.py", "same") for _ in range(12)]
    warnings = [w for ws in shown(events, ladder=True) for w in ws]
    steps = [w["step"] for w in warnings]
    assert steps == ["warn", "escalate", "final", "stop"]
    assert "STOP NOW" in warnings[-1]["timeline_message"]
    assert warnings[-1]["next_actions"] == ["stop"]
    assert "FINAL WARNING" in warnings[2]["timeline_message"]
    assert "second warning" in warnings[1]["timeline_message"]
    assert "STOP" not in warnings[0]["timeline_message"]


# -- reference rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("detector", "events", "expected"),
    [
        ("roo_repetition", [read("a", "x") for _ in range(4)], [2]),
        ("gemini_tool_loop", [read("a", "x") for _ in range(6)], [4]),
        ("openhands_stuck", [read("a", "x") for _ in range(4)], [3]),
        (
            "openhands_stuck",
            [action("t", params={"a": 1}, success=False, result=f"e{i}") for i in range(3)],
            [2],
        ),
        ("openhands_stuck", [say("A", "I will now fix it") for _ in range(3)], [2]),
        (
            "openhands_stuck",
            [read("a" if i % 2 else "b", "x" if i % 2 else "y") for i in range(6)],
            [5],
        ),
        ("openhands_stuck", [read("a", f"v{i}") for i in range(6)], []),
    ],
)
def test_reference_rules(detector, events, expected):
    assert fired(shown(events, [detector])) == expected


def test_gemini_content_check_needs_ten_close_repeats_of_a_chunk():
    assert _chunk_loop("the same sentence again and again and again. " * 12)
    assert not _chunk_loop(" ".join(f"word{i}" for i in range(800)))


# -- canonical calls -------------------------------------------------------------------------

SAME_CALL = [
    ({"cmd": 'grep  -n "def f"   a.py'}, {"cmd": "grep -n 'def f' a.py"}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"url": "/x", "request_id": "r1"}, {"url": "/x", "request_id": "r2"}),
]
OTHER_CALL = [
    ({"payment_id": "p1"}, {"payment_id": "p2"}),
    ({"order_date": "2024-01-02"}, {"order_date": "2024-01-03"}),
    ({"path": "a.py", "lines": "1-20"}, {"path": "a.py", "lines": "21-40"}),
]


def _signature(params) -> str:
    from loopwarden.agents.spin.signature import call_signature

    cfg = DetectionSettings()
    event = action("tool", params=params)
    return call_signature(event, cfg.volatile_param_keys, cfg.volatile_value_pattern)


@pytest.mark.parametrize(("a", "b"), SAME_CALL)
def test_calls_are_compared_canonically(a, b):
    assert _signature(a) == _signature(b)


@pytest.mark.parametrize(("a", "b"), OTHER_CALL)
def test_an_argument_naming_a_record_is_part_of_the_call(a, b):
    assert _signature(a) != _signature(b)


def test_a_trivial_variant_of_a_failing_call_is_the_same_call_retried():
    variants = ["grep -rn needs_extensions tests", "grep -rn needs_extensions tests/roots"]
    events = [
        action("grep", params={"cmd": variants[i % 2]}, success=False, result="exit 1")
        for i in range(3)
    ]
    assert fired(shown(events, ["repeated_outcome"])) == [2]
    exact_only = shown(events, ["repeated_outcome"], retry_similarity=1.0)
    assert fired(exact_only) == []


def test_the_same_error_on_other_targets_is_not_a_retry():
    events = [
        action("cat", params={"cmd": f"cat {name}.py"}, success=False, result="permission denied")
        for name in ("alpha", "beta", "gamma")
    ]
    assert fired(shown(events, ["repeated_outcome"])) == []


def test_a_failing_call_on_another_record_is_not_a_variant_however_alike():
    events = [
        action(
            "refund",
            params={"payment_id": f"pay_{n}", "reason": "duplicate charge on the customer card"},
            success=False,
            result="refund declined: outside the refund window",
        )
        for n in (8812, 8813, 8814)
    ]
    assert fired(shown(events, ["repeated_outcome"])) == []


@pytest.mark.parametrize("ladder", [True, False])
def test_decisions_survive_a_snapshot_after_every_event(ladder):
    """The worker restores loop state from its changelog: a restored state decides alike."""
    events = [
        read("a.py", "same"),
        say("O", "Please look up the shipping rates for the parcel to Colombia"),
        action("deploy", params={"env": "x"}, success=False, result="denied"),
        read("a.py", "same"),
        say("O", "Please look up the shipping rates for this parcel to Colombia"),
        action("deploy", params={"env": "x "}, success=False, result="denied"),
        read("a.py", "same"),
        say("O", "Please look up shipping rates for the parcel to Colombia now"),
        action("deploy", params={"env": "x"}, success=False, result="denied"),
        *[read("a.py", "same") for _ in range(6)],
    ]
    monitor = LoopMonitor(DetectionSettings(ladder=ladder))
    straight, state = [], LoopState("L")
    for i, event in enumerate(events):
        straight.append(monitor.observe(state, event, Origin(0, i)).warnings)
    restored, state = [], LoopState("L")
    for i, event in enumerate(events):
        restored.append(monitor.observe(state, event, Origin(0, i)).warnings)
        state = LoopState.restore("L", state.snapshot())
    assert restored == straight
    shown = [(i, w["kind"], w["step"]) for i, ws in enumerate(straight) for w in ws]
    if ladder:  # one warning per step of the episode: the message at 7 is counted only
        steps = zip((6, 8, 10, 12), ["warn", "escalate", "final", "stop"], strict=True)
        assert shown == [(i, "repeated_outcome", s) for i, s in steps]
    else:
        assert (7, "repeated_message", None) in shown and (8, "repeated_outcome", None) in shown


# -- restated messages (same meaning, other words) ----------------------------------------

REFUSALS = [
    "I'm sorry, but the travel insurance is non-refundable once it has been purchased.",
    "I understand your frustration, but unfortunately I cannot refund the travel insurance.",
    "Unfortunately the travel insurance cannot be refunded, and I cannot make an exception.",
]


def talk(text: str) -> ActionEvent:
    """A single agent's talk-only turn: no ``agent`` field."""
    return action("respond", turn="message", result=text)


def test_the_same_refusal_in_other_words_warns_at_the_third_turn():
    per_event = shown(
        [talk(text) for text in REFUSALS], ["restated_message"], restate_similarity=0.65
    )
    assert fired(per_event) == [2]
    (warning,) = per_event[2]
    assert warning["kind"] == "restated_message"
    assert "non-refundable" not in warning["timeline_message"]  # it quotes the turn it saw
    assert "cannot be refunded" in warning["timeline_message"]
    # word overlap alone does not see it
    assert fired(shown([talk(text) for text in REFUSALS], ["repeated_message"])) == []


NOT_RESTATED = [
    # a tool call in between: it acted, what it says next may rest on it
    [
        talk(REFUSALS[0]),
        talk(REFUSALS[1]),
        action("lookup", params={"id": "H8"}, result="ok"),
        talk(REFUSALS[2]),
    ],
    # another speaker in between (a multi-agent chat)
    [
        talk(REFUSALS[0]),
        talk(REFUSALS[1]),
        say("Planner", "Let us look at the refund rules."),
        talk(REFUSALS[2]),
    ],
    # three turns that say different things
    [
        talk("Your flight HAT068 leaves New York at 8 in the morning and lands at noon."),
        talk("The travel insurance is non-refundable once it has been purchased, I'm afraid."),
        talk("I have booked the hotel near the airport for two nights as you asked."),
    ],
    # short courtesies are not compared
    [talk("Thank you!"), talk("Thanks a lot!"), talk("Thank you so much!")],
]


@pytest.mark.parametrize("turns", NOT_RESTATED)
def test_what_is_not_a_restated_message(turns):
    assert fired(shown(turns, ["restated_message"])) == []


def test_a_runs_end_between_answers_keeps_the_streak():
    """A chat agent runs once per person's message; the adapters publish each run's end
    as a terminating turn of no agent between its answers (found with the OpenAI Agents
    adapter, whose answers name their agent: the streak broke there, never warned)."""
    turns = []
    for text in REFUSALS:
        turns += [
            say("support", text),
            action("loop_end", turn="message", terminated=True, result="finalized"),
        ]
    assert fired(shown(turns, ["restated_message"], restate_similarity=0.65)) == [4]


def test_a_restated_message_survives_a_snapshot():
    monitor = LoopMonitor(DetectionSettings(detectors=("restated_message",), ladder=False))
    state, found = LoopState("L"), []
    for i, event in enumerate(talk(text) for text in REFUSALS):
        found.append(bool(monitor.observe(state, event, Origin(0, i)).warnings))
        state = LoopState.restore("L", state.snapshot())
    assert found == [False, False, True]


def test_a_turn_is_encoded_only_once_a_streak_could_reach_the_repeats():
    """The encoder is the monitor's main cost per message turn: a turn keeps its gist
    (text) until enough alike-targeted turns are in the streak to need the meanings; a
    snapshot taken in between holds the gist, and the result is the same."""
    monitor = LoopMonitor(DetectionSettings(detectors=("restated_message",), ladder=False))
    state = LoopState("L")
    kinds = []
    for i, event in enumerate(talk(text) for text in REFUSALS):
        monitor.observe(state, event, Origin(0, i))
        state = LoopState.restore("L", state.snapshot())
        _, turns = state.detectors["restated_message"].snapshot()
        kinds.append([type(turn[3]).__name__ for turn in turns])
    assert kinds == [["str"], ["str", "str"], ["list", "list"]]
    _, turns = state.detectors["restated_message"].snapshot()
    assert all(len(turn[3]) == 512 for turn in turns)
