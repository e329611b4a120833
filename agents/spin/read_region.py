"""Which file region a call read, pure: the event's ``read``, else a plain shell read.

A read of one file cannot be made stale by an edit of another, and the same region
read with another command (``sed -n '71,130p' f``, ``nl -ba f | sed -n '71,130p'``)
is the same read. Integrations whose tools read files say so in ``read: {file,
start_line, end_line}`` (Claude Code's Read, OpenHands' view, SWE-agent's open/goto,
filled by the adapters and hooks); for an agent that reads through a shell, the
command is recognised when it is one plain read and nothing else:

- ``cat [-n|-A|…] FILE``: the whole file;
- ``head [-n N|-N] FILE``: lines 1–N (10 by default);
- ``tail [-n N|-N] FILE``: the last N lines;
- ``sed -n 'A,Bp' FILE`` and ``nl -ba FILE | sed -n 'A,Bp'`` (or ``cat -n``): lines A–B.

Comment lines before the command are skipped. Anything else — a second command
(``;``, ``&&``, a pipe into another program), a redirection, a substitution, several
files — is not a read: it may write, run or search.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any

Region = tuple[str, str]
"""(file, lines): lines ``"A-B"``, ``"tail:N"`` or ``""`` (the whole file)."""

COMMAND_KEYS = ("command", "cmd")
MAX_COMMAND_CHARS = 500
_UNSAFE = re.compile(r"[;&<>`]|\$\(|\|\|")
_SED_RANGE = re.compile(r"^(\d+)(?:,(\d+))?p$")
_COUNT = re.compile(r"^-(\d+)$")


def read_region(payload: Any) -> Region | None:
    """The region a call read: its ``read`` field, else its shell command's; None."""
    read = getattr(payload, "read", None)
    if read is not None:
        lines = "" if read.start_line is None else f"{read.start_line}-{read.end_line or ''}"
        return (_path(read.file), lines)
    params = payload.params
    for key in COMMAND_KEYS:
        command = params.get(key)
        if isinstance(command, str):
            return shell_read(command)
    return None


def shell_read(command: str) -> Region | None:
    """The region a shell command reads when it is one plain read (module docstring)."""
    lines = [line for line in command.strip().splitlines() if not line.lstrip().startswith("#")]
    if len(lines) != 1 or len(lines[0]) > MAX_COMMAND_CHARS or _UNSAFE.search(lines[0]):
        return None
    stages = lines[0].split("|")
    try:
        words = [shlex.split(stage) for stage in stages]
    except ValueError:
        return None
    if len(words) == 1:
        return _single(words[0])
    if len(words) == 2 and words[0][:1] in (["nl"], ["cat"]):
        source = _single(words[0])
        sed = words[1]
        if source and len(sed) == 3 and sed[:2] == ["sed", "-n"]:
            return _sed_lines(source[0], sed[2])
    return None


def same_region(a: Region | list[str], b: Region | list[str]) -> bool:
    """Two reads of the same region: the same file and lines, or line ranges of one
    file that overlap by at least half the shorter (``575-585`` and ``580-590``: an
    agent peering at one spot through slightly different windows; a scroll to the
    next page overlaps by a line or two and is not the same read)."""
    if tuple(a) == tuple(b):
        return True
    if not same_file(a[0], b[0]):
        return False
    first, second = _lines(a[1]), _lines(b[1])
    if first is None or second is None:
        return False
    shared = min(first[1], second[1]) - max(first[0], second[0]) + 1
    shorter = min(first[1] - first[0], second[1] - second[0]) + 1
    return shared * 2 >= shorter


def narrows(earlier: Region | list[str], now: Region | list[str]) -> bool:
    """``now`` zooms into ``earlier``: a shorter window inside it, in one file (``1,300``
    then ``150,210`` then ``203,208``: finding the spot, not looking at it again)."""
    if not same_file(earlier[0], now[0]):
        return False
    outer, inner = _lines(earlier[1]), _lines(now[1])
    if outer is None or inner is None:
        return earlier[1] == "" and now[1] != ""  # a region of a file read whole
    inside = outer[0] <= inner[0] and inner[1] <= outer[1]
    return inside and inner[1] - inner[0] < outer[1] - outer[0]


def _lines(lines: str) -> tuple[int, int] | None:
    start, dash, end = lines.partition("-")
    if not dash or not start.isdigit() or not end.isdigit():
        return None
    return int(start), int(end)


def same_file(a: str, b: str) -> bool:
    """The same file, one path perhaps relative to the other's directory."""
    a, b = _path(a), _path(b)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _path(path: str) -> str:
    return posixpath.normpath(path.strip()).removeprefix("./")


def _single(words: list[str]) -> Region | None:
    if not words:
        return None
    program, args = words[0], words[1:]
    files = [arg for arg in args if not arg.startswith("-")]
    if program in ("cat", "nl"):
        return (_path(files[0]), "") if len(files) == 1 else None
    if program in ("head", "tail"):
        count, rest = _count(args)
        if count is None or len(rest) != 1 or rest[0].startswith("-"):
            return None
        return (_path(rest[0]), f"1-{count}" if program == "head" else f"tail:{count}")
    if program == "sed" and len(args) == 3 and args[0] == "-n":
        return _sed_lines(args[2], args[1])
    return None


def _count(args: list[str]) -> tuple[int | None, list[str]]:
    """(line count, the other arguments) of ``head``/``tail``; None for other options."""
    count, rest = 10, []
    items = iter(args)
    for arg in items:
        numeric = _COUNT.match(arg)
        if arg == "-n":
            value = next(items, "")
            if not value.isdigit():
                return None, []
            count = int(value)
        elif numeric:
            count = int(numeric.group(1))
        elif arg.startswith("-n") and arg[2:].isdigit():
            count = int(arg[2:])
        else:
            rest.append(arg)
    return count, rest


def _sed_lines(file: str, script: str) -> Region | None:
    found = _SED_RANGE.match(script.strip())
    if found is None or file.startswith("-"):
        return None
    start, end = found.group(1), found.group(2) or found.group(1)
    return (_path(file), f"{int(start)}-{int(end)}")
