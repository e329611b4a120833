"""What the README and the docs point a reader at exists (issue 47): every
``loopwarden COMMAND`` they name (the README named a ``loopwarden audit`` that never
did), and no section of a document the reader cannot open ("seed 000 §3")."""

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


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_page_cites_a_section_of_an_unpublished_seed(page):
    cited = [line for line in page.read_text().splitlines() if "§" in line]
    assert not cited, f"{page.name}: {cited[:3]}"
