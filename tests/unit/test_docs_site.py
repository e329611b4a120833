"""The docs site's home page leads a newcomer somewhere (issue 47, item 12: it had no
link to install or the tour, and its diagram overflowed the page)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 80
"""Characters a code block fits in on the site's content column without scrolling."""


def _generator():
    path = ROOT / "docs" / "scripts" / "gen_getting_started.py"
    spec = importlib.util.spec_from_file_location("gen_getting_started", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_home_page_links_to_getting_started_and_its_diagram_fits():
    home = (ROOT / "docs" / "index.md").read_text()
    assert "](getting-started.md)" in home
    blocks = re.findall(r"^```\w*\n(.*?)^```", home, re.M | re.S)
    assert blocks
    for block in blocks:
        assert max(len(line) for line in block.splitlines()) <= WIDTH, block


def test_getting_started_is_the_readmes_install_demo_and_tour():
    gen = _generator()
    page = gen.getting_started((ROOT / "README.md").read_text())
    headings = re.findall(r"^## (.+)$", page, re.M)
    assert headings == list(gen.SECTIONS)
    assert "](docs/" not in page  # links point at the pages beside it
    assert "pip install '.[worker]'" in page and "tour.py" in page
    assert "getting-started.md" in (ROOT / "mkdocs.yml").read_text()


MAX_LINES_WITHOUT_A_HEADING = 75
"""A page's table of contents is its headings: detection.md, memory.md and
experience.md had none below the title (issue 59)."""


def test_every_page_has_a_heading_at_least_every_75_lines():
    for page in sorted((ROOT / "docs").glob("*.md")):
        last, code, longest = 0, False, 0
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            code ^= line.startswith("```")
            if not code and re.match(r"#{1,3} ", line):
                longest, last = max(longest, number - last), number
        longest = max(longest, len(lines) - last)
        assert longest <= MAX_LINES_WITHOUT_A_HEADING, f"{page.name}: {longest} lines"
