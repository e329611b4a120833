"""The site's "Getting started" page, generated at build time from the README's own
sections (install, the two commands, the tour, the frameworks), so the site and the
README cannot drift apart: one text, two places to read it."""

from __future__ import annotations

import re
from pathlib import Path

SECTIONS = (
    "Two commands",
    "Installing in your own project",
    "A five-minute tour",
    "Agent frameworks, in one line",
)
"""The README sections the page is made of, in this order."""

README = Path(__file__).resolve().parents[2] / "README.md"
_HEADING = re.compile(r"^## (.+)$", re.M)


def sections(readme: str) -> dict[str, str]:
    """The README's ``##`` sections by title, each with its heading."""
    starts = [(m.start(), m.group(1).strip()) for m in _HEADING.finditer(readme)]
    ends = [start for start, _ in starts[1:]] + [len(readme)]
    spans = zip(starts, ends[: len(starts)], strict=True)
    return {title: readme[start:end].rstrip() + "\n" for (start, title), end in spans}


def getting_started(readme: str) -> str:
    """The page: a heading, then :data:`SECTIONS` of ``readme``, its links to
    ``docs/x.md`` made links to ``x.md`` (the pages beside this one)."""
    found = sections(readme)
    missing = [title for title in SECTIONS if title not in found]
    if missing:
        raise SystemExit(f"README.md has no section {missing[0]!r} for the getting-started page")
    body = "\n".join(found[title] for title in SECTIONS)
    body = re.sub(r"\]\(docs/([^)]+)\)", r"](\1)", body)
    return (
        "# Getting started\n\n"
        "Install loopwarden, run it, and watch an agent that repeats itself get warned. "
        "(This page is the README's own text.)\n\n" + body
    )


if __name__ == "<run_path>":  # run by mkdocs-gen-files (runpy.run_path), not imported
    import mkdocs_gen_files

    with mkdocs_gen_files.open("getting-started.md", "w") as page:
        page.write(getting_started(README.read_text(encoding="utf-8")))
