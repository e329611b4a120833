"""A tool call that reads a file → the event's ``read: {file, start_line, end_line}``.

Shared by the adapters and the hooks. Recognised by the arguments' shape, for the
file-reading tools agents commonly have:

- Claude Code's ``Read``: ``file_path``, ``offset`` (the first line, 1-based) and
  ``limit`` (lines);
- OpenHands' and Anthropic's ``str_replace_editor`` with ``command: view``: ``path``
  and ``view_range: [start, end]`` (``-1``: to the end);
- SWE-agent's ``open``: ``path`` and ``line_number`` (a window around it);
- any tool named like a read (``read``, ``read_file``, ``view``, ``view_file``,
  ``open``, ``open_file``, ``cat``) with a ``path``, ``file_path`` or ``file`` and
  optionally ``start_line``/``end_line``.

A call is not a read when its tool or arguments say nothing of the kind: a wrong guess
would keep results an edit made stale, so an unknown shape is left alone.
"""

from __future__ import annotations

from typing import Any

READ_TOOLS = frozenset({"read", "read_file", "view", "view_file", "open", "open_file", "cat"})
PATH_KEYS = ("file_path", "path", "file")
SWE_AGENT_WINDOW = 100
"""Lines SWE-agent's ``open`` shows (its default window)."""


def read_fields(tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """The ``read`` field of a call of ``tool`` with ``args``, or None (module docstring)."""
    name = tool.strip().lower()
    path = next((args[key] for key in PATH_KEYS if isinstance(args.get(key), str)), None)
    if not path or not path.strip():
        return None
    if name == "str_replace_editor" or "view_range" in args:
        if args.get("command", "view") != "view":
            return None
        return _region(path, *_pair(args.get("view_range")))
    if name not in READ_TOOLS:
        return None
    if "offset" in args or "limit" in args:
        start = _line(args.get("offset")) or 1
        limit = _line(args.get("limit"))
        return _region(path, start, None if limit is None else start + limit - 1)
    if "line_number" in args:
        centre = _line(args.get("line_number"))
        if centre is None:
            return _region(path, None, None)
        start = max(1, centre - SWE_AGENT_WINDOW // 2)
        return _region(path, start, start + SWE_AGENT_WINDOW - 1)
    return _region(path, _line(args.get("start_line")), _line(args.get("end_line")))


def _pair(value: Any) -> tuple[int | None, int | None]:
    if isinstance(value, list | tuple) and len(value) == 2:
        return _line(value[0]), _line(value[1])
    return None, None


def _line(value: Any) -> int | None:
    """A 1-based line number, or None (absent, negative, not a whole number)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return None
    return int(value) if value >= 1 else None


def _region(path: str, start: int | None, end: int | None) -> dict[str, Any]:
    read: dict[str, Any] = {"file": path.strip()[:1000]}
    if start is not None:
        read["start_line"] = start
        if end is not None and end >= start:
            read["end_line"] = end
    return read
