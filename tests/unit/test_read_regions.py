"""File reads: the region a call read (the event's ``read``, a plain shell read, a
file-reading tool's arguments), and what repeated_outcome makes of it across edits."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from loopwarden.agents.monitor.loop_monitor import LoopMonitor
from loopwarden.agents.monitor.state import LoopState
from loopwarden.agents.spin.read_region import read_region, same_file, same_region, shell_read
from loopwarden.schemas.events import ActionEvent, ReadRange, validate_action
from loopwarden.schemas.positions import Origin
from loopwarden.schemas.tool_calls import tool_call_fields
from loopwarden.schemas.tool_reads import read_fields
from loopwarden.settings import DetectionSettings

_ids = itertools.count()


def action(action_type: str = "bash", **payload) -> ActionEvent:
    n = next(_ids)
    envelope = {"event_id": f"e{n}", "loop_id": "L", "occurred_at": 1_700_000_000.0 + n}
    return validate_action({**envelope, "payload": {"action_type": action_type, **payload}})


def shell(command: str, result: str | None = None, **extra) -> ActionEvent:
    fields = {} if result is None else {"result": result}
    return action(command.split()[0], params={"command": command}, **fields, **extra)


def write(file: str) -> ActionEvent:
    """A new file written from a heredoc: an edit of ``file``."""
    edit = {"start_line": 1, "end_line": 20, "file": file}
    return shell(f"cat <<'EOF' > {file}\nprint(1)\nEOF", "", edit=edit)


def fired(events) -> list[int]:
    monitor = LoopMonitor(DetectionSettings(detectors=("repeated_outcome",), ladder=False))
    state = LoopState("L")
    return [
        i for i, event in enumerate(events) if monitor.observe(state, event, Origin(0, i)).warnings
    ]


SHELL_READS = {
    "sed -n '71,130p' sphinx/domains/python.py": ("sphinx/domains/python.py", "71-130"),
    "# read it again\nsed -n '71,130p' ./sphinx/domains/python.py": (
        "sphinx/domains/python.py",
        "71-130",
    ),
    "nl -ba a.py | sed -n '5,9p'": ("a.py", "5-9"),
    "cat -n a.py | sed -n '5,9p'": ("a.py", "5-9"),
    "cat src/app.py": ("src/app.py", ""),
    "head -n 50 f.py": ("f.py", "1-50"),
    "head -20 f.py": ("f.py", "1-20"),
    "head f.py": ("f.py", "1-10"),
    "tail -n 30 build.log": ("build.log", "tail:30"),
    "sed -n 5p f.py": ("f.py", "5-5"),
}
NOT_READS = [
    "cat a.py b.py",  # two files
    "cat <<'EOF' > x.py\nprint(1)\nEOF",  # a write
    "sed -i 's/a/b/' f.py",  # an edit
    "cat f.py | grep x",  # a search
    "grep -n foo f.py",
    "cd src && cat f.py",  # two commands
    "cat f.py; rm f.py",
    "cat $(ls | head -1)",
    "head -c 100 f.py",  # an option we do not read
    "python3 -c 'print(1)'",
    "cat 'unbalanced",
    "sed -n '/def f/,/^$/p' f.py",  # a pattern range: which lines is unknown
]


@pytest.mark.parametrize(("command", "region"), SHELL_READS.items())
def test_a_plain_shell_read_names_its_file_and_lines(command, region):
    assert shell_read(command) == region


@pytest.mark.parametrize("command", NOT_READS)
def test_anything_else_is_not_a_read(command):
    assert shell_read(command) is None


def test_the_events_read_field_comes_first_and_paths_compare_relative():
    event = action(
        "Read",
        params={"command": "cat other.py"},
        read={"file": "./src/a.py", "start_line": 10, "end_line": 40},
    )
    assert read_region(event.payload) == ("src/a.py", "10-40")
    assert same_file("/repo/src/a.py", "src/a.py") and not same_file("src/a.py", "a.py.bak")


def test_a_read_range_is_validated():
    assert ReadRange(file="a.py").start_line is None
    with pytest.raises(ValidationError):
        ReadRange(file="a.py", start_line=9, end_line=3)
    with pytest.raises(ValidationError):
        ReadRange(file="a.py", end_line=3)
    with pytest.raises(ValidationError):
        ReadRange(file="")


TOOL_READS = [
    (
        "Read",
        {"file_path": "/r/a.py", "offset": 100, "limit": 50},
        {"file": "/r/a.py", "start_line": 100, "end_line": 149},
    ),
    ("Read", {"file_path": "/r/a.py"}, {"file": "/r/a.py"}),
    (
        "str_replace_editor",
        {"command": "view", "path": "/r/a.py", "view_range": [5, 9]},
        {"file": "/r/a.py", "start_line": 5, "end_line": 9},
    ),
    (
        "str_replace_editor",
        {"command": "view", "path": "/r/a.py", "view_range": [5, -1]},
        {"file": "/r/a.py", "start_line": 5},
    ),
    (
        "open",
        {"path": "a.py", "line_number": 300},
        {"file": "a.py", "start_line": 250, "end_line": 349},
    ),
    (
        "read_file",
        {"path": "a.py", "start_line": 3, "end_line": 8},
        {"file": "a.py", "start_line": 3, "end_line": 8},
    ),
]
NOT_TOOL_READS = [
    ("str_replace_editor", {"command": "str_replace", "path": "a.py", "old_str": "x"}),
    ("Write", {"file_path": "a.py", "content": "x"}),
    ("Bash", {"command": "cat a.py"}),  # the shell's own command: detection reads it
    ("read_file", {"query": "a.py"}),
    ("Read", {"file_path": "  "}),
]


@pytest.mark.parametrize(("tool", "args", "read"), TOOL_READS)
def test_file_reading_tools_fill_read(tool, args, read):
    assert read_fields(tool, args) == read
    fields = tool_call_fields(args, result="...", tool=tool)
    assert fields["read"] == read
    assert action(tool, **fields).payload.read == ReadRange(**read)


@pytest.mark.parametrize(("tool", "args"), NOT_TOOL_READS)
def test_other_tools_do_not(tool, args):
    assert read_fields(tool, args) is None
    assert "read" not in tool_call_fields(args, tool=tool)


def test_the_claude_code_hook_publishes_a_reads_region():
    from loopwarden.agents.hooks.claude_code import HookInput, action_fields

    hook = HookInput(
        session_id="s1",
        hook_event_name="PostToolUse",
        tool_name="Read",
        tool_input={"file_path": "/repo/a.py", "offset": 10, "limit": 20},
        tool_response={"file": {"content": "x = 1"}},
    )
    _, fields = action_fields(hook)
    assert fields["read"] == {"file": "/repo/a.py", "start_line": 10, "end_line": 29}


def test_a_reread_across_a_write_of_another_file_warns():
    """sphinx-7454 of the dev set: one region re-read with only a helper script written
    in between (an edit of another file), the last time with a comment first."""
    region = "sed -n '71,130p' sphinx/domains/python.py"
    events = [
        shell(region, "def _parse_annotation(annotation):"),
        shell("python3 --version", "Python 3.9.20"),
        shell(region, "def _parse_annotation(annotation):"),
        write("test_ast.py"),
        shell("# look again\n" + region, "def _parse_annotation(annotation):"),
    ]
    assert fired(events) == [4]


NOT_A_REREAD = {
    "an edit of the file read": [
        shell("cat a.py", "x = 1"),
        shell("cat a.py", "x = 1"),
        write("a.py"),
        shell("cat a.py", "x = 1"),
    ],
    "a near-identical result across an edit (a script may have rewritten the file)": [
        shell("cat conf.py", "HOME = '~/.pylint.d'  # 1"),
        shell("cat conf.py", "HOME = '~/.pylint.d'  # 1"),
        write("update_conf.py"),
        shell("cat conf.py", "HOME = '~/.pylint.d'  # 2"),
    ],
    "an edit that names no file": [
        shell("cat a.py", "x = 1"),
        shell("cat a.py", "x = 1"),
        shell("sed -i 's/a/b/' b.py", "", edit={"start_line": 1, "end_line": 1}),
        shell("cat a.py", "x = 1"),
    ],
    "a test re-run after an edit of another file": [
        shell("pytest -q", "1 failed"),
        shell("pytest -q", "1 failed"),
        write("fix.py"),
        shell("pytest -q", "1 failed"),
    ],
    "other regions of one file": [
        shell("sed -n '1,50p' a.py", "same"),
        shell("sed -n '51,100p' a.py", "same"),
        shell("sed -n '101,150p' a.py", "same"),
    ],
    "a file scrolled through, pages overlapping by a line or two, no result published": [
        shell("sed -n '1,50p' a.py", success=True),
        shell("sed -n '49,100p' a.py", success=True),
        shell("sed -n '99,150p' a.py", success=True),
        shell("sed -n '149,200p' a.py", success=True),
    ],
    "one spot of two files, no result published": [
        shell("sed -n '575,585p' a.py", success=True),
        shell("sed -n '575,585p' b.py", success=True),
        shell("sed -n '575,585p' c.py", success=True),
    ],
}


@pytest.mark.parametrize("events", NOT_A_REREAD.values(), ids=NOT_A_REREAD.keys())
def test_what_is_not_a_reread(events):
    assert fired(events) == []


def test_the_same_region_read_by_other_commands_is_the_same_call():
    events = [
        shell("sed -n '5,9p' a.py", "def f():"),
        shell("nl -ba a.py | sed -n '5,9p'", "def f():"),
        action(
            "Read",
            params={"file_path": "a.py"},
            read={"file": "a.py", "start_line": 5, "end_line": 9},
            result="def f():",
        ),
    ]
    assert fired(events) == [2]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (("a.py", "575-585"), ("a.py", "575-585"), True),
        (("a.py", "575-585"), ("./a.py", "580-590"), True),  # 6 of 11 lines shared
        (("a.py", "575-585"), ("a.py", "575-600"), True),  # the shorter inside the longer
        (("a.py", "1-50"), ("a.py", "49-100"), False),  # the next page
        (("a.py", "575-585"), ("b.py", "575-585"), False),
        (("a.py", ""), ("a.py", "1-10"), False),  # the whole file is not a window
        (("log", "tail:30"), ("log", "tail:30"), True),
    ],
)
def test_overlapping_windows_of_one_file_are_one_region(a, b, same):
    assert same_region(a, b) is same
    assert same_region(b, a) is same


def test_one_spot_peered_at_through_shifting_windows_warns_with_no_result_published():
    """django-15563 of the dev set (mini-swe-agent, which publishes no output): lines
    575-600 of one file read through shifting windows with only greps between. A call
    that worked and published no result repeats as the same region read, as it does as
    the very same command."""
    events = [
        shell("sed -n '580,590p' compiler.py", success=True),
        shell("grep -n 'class SQLAggregateCompiler' compiler.py", success=True),
        shell("sed -n '575,585p' compiler.py", success=True),
        shell("tail -n 20 compiler.py", success=True),
        shell("nl -ba compiler.py | sed -n '575,600p'", success=True),
    ]
    assert fired(events) == [4]
