"""Every ``loopwarden COMMAND`` the README and the docs name exists (issue 47: the
README named a ``loopwarden audit`` that never did)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from loopwarden.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a command in code: `loopwarden tail …`, `loopwarden replay`/`audit` (the second too)
_NAMED = re.compile(r"`loopwarden ([a-z][a-z-]*)(?:[^`]*)`(?:/`([a-z][a-z-]*)`)?")


def named_commands(text: str) -> set[str]:
    return {name for match in _NAMED.finditer(text) for name in match.groups() if name}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_a_page_names_exists(page):
    unknown = named_commands(page.read_text()) - set(main.list_commands(click.Context(main)))
    assert not unknown, f"{page.name} names {sorted(unknown)}"


def test_the_check_sees_a_second_name_after_a_slash():
    assert named_commands("`loopwarden replay`/`audit` and `loopwarden tail --loop x`") == {
        "replay",
        "audit",
        "tail",
    }
