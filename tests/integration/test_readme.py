"""The README and the docs run as written: every code block, top to bottom, against a
real worker.

A reader follows the README, then the docs in the site's order, so the blocks run in
that order, in one test,
with the environment a reader would have exported (``LOOPWARDEN_*`` of a worker
running on the test broker). ``python`` blocks run as files, ``bash`` blocks with
``bash -e`` and loopwarden on the PATH, ``json`` blocks must be events the
validator accepts. A block followed by ``<!-- not run: why -->`` is skipped (a
long-running server, the Makefile itself); blocks without a language are
sample output. ``ts`` blocks (the TypeScript agents page) need Node: the TypeScript
client's suite runs them the same way (clients/typescript/test/docs.test.ts).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from loopwarden.schemas import codec
from loopwarden.schemas.events import validate_action
from loopwarden.settings import DetectionSettings, settings_env

from .conftest import isolated_settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def documents() -> list[Path]:
    """The README, then every docs page in the order of the site's navigation."""
    nav = re.findall(r":\s*([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    pages = [ROOT / "docs" / page for page in nav if (ROOT / "docs" / page).exists()]
    return [README, *pages]


FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (.+) -->\s*$")
OUTPUT = re.compile(r"^<!-- output of the block above -->\s*$")
"""Put right before a plain block: it shows what the bash block before it prints
(stdout, then stderr; ``…`` stands for any text), and the test compares."""


@dataclass
class Block:
    """One fenced code block of the README."""

    language: str
    code: str
    line: int
    not_run: str | None
    shows_output: bool = False


def readme_blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text``, with the skip reason that follows a block."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        following = lines[i + 1] if i + 1 < len(lines) else ""
        reason = NOT_RUN.match(following)
        shows = start > 0 and OUTPUT.match(lines[start - 1]) is not None
        code = "\n".join(body) + "\n"
        blocks.append(Block(opening.group(1), code, start + 1, reason and reason.group(1), shows))
        i += 1
    return blocks


def test_readme_blocks_are_found():
    blocks = [b for doc in documents() for b in readme_blocks(doc.read_text())]
    languages = [b.language for b in blocks]
    assert len(documents()) >= 12  # the README and the docs pages the site lists
    assert languages.count("python") >= 5 and languages.count("bash") >= 3
    assert all(b.language in ("python", "bash", "json", "ts", "") for b in blocks), languages


@pytest.mark.timeout(600)
def test_every_readme_block_runs_as_written(broker, worker_factory, tmp_path):
    # a worker of its own with the default detection profile: the pages show what a
    # reader's worker says (the shared worker runs the seed's triggers for other tests)
    settings = isolated_settings(broker, "readme", max_event_bytes=4096)
    settings = settings.model_copy(update={"detection": DetectionSettings()})
    worker_factory(settings)
    env = {
        **os.environ,
        **settings_env(settings),
        # the CLI's memory commands get their own store (the worker writes to the other)
        "LOOPWARDEN_MEMORY__URI": str(tmp_path / "cli-memory"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    # what a reader runs: the default detection profile (the shared worker's tests
    # count on the seed's triggers; the pages are written for the default)
    env.pop("LOOPWARDEN_DETECTION__PROFILE", None)
    ran = compared = 0
    printed: str | None = None
    blocks = [(doc, b) for doc in documents() for b in readme_blocks(doc.read_text())]
    after_ts = False
    for doc, block in blocks:
        if block.shows_output and after_ts:
            continue  # what a ts block prints: compared by the TypeScript suite
        after_ts = block.language == "ts"
        if block.shows_output:
            where = f"{doc.relative_to(ROOT)} line {block.line}"
            assert printed is not None, f"{where}: no bash block ran before this output"
            assert_shown(block.code, printed, where)
            compared += 1
            continue
        printed = None
        if block.not_run or block.language in ("", "ts"):
            continue
        where = f"{doc.relative_to(ROOT)} line {block.line} ({block.language})"
        if block.language == "json":
            validate_action(codec.loads(block.code.encode()))
            continue
        if block.language == "python":
            script = tmp_path / f"block_{block.line}.py"
            script.write_text(block.code)
            command = [sys.executable, str(script)]
        else:
            command = ["bash", "-e", "-o", "pipefail", "-c", block.code]
        done = subprocess.run(
            command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, f"{where} failed:\n{done.stdout}\n{done.stderr}"
        printed = done.stdout + done.stderr
        ran += 1
    assert ran >= 7 and compared >= 6  # every shown output: README tour, publishing, audit, cli


def assert_shown(shown: str, printed: str, where: str) -> None:
    """Every non-empty line the page shows is printed, in that order (``…``: any text);
    log lines (``WARNING``) are not compared."""
    actual = [
        line.rstrip()
        for line in printed.splitlines()
        if line.strip() and " WARNING " not in line and " INFO " not in line
    ]
    expected = [line.rstrip() for line in shown.splitlines() if line.strip()]
    patterns = [re.compile(".*".join(map(re.escape, line.split("…"))) + "$") for line in expected]
    assert len(actual) == len(expected) and all(
        p.match(line) for p, line in zip(patterns, actual, strict=True)
    ), f"{where}: the page shows\n{shown}\nbut the block printed\n{printed}"
