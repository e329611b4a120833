"""Misspelt LOOPWARDEN_* variables are named once, with the closest known name (issue 72.8)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from loopwarden.settings import Settings
from loopwarden.settings.environment import (
    TOOL_VARIABLES,
    setting_variables,
    unknown_variables,
)

ROOT = Path(__file__).resolve().parents[2]
KNOWN = setting_variables(Settings)
VARIABLE = re.compile(r"(?<![A-Z_])LOOPWARDEN_[A-Z0-9_]*[A-Z0-9]")  # not _LOOPWARDEN_COMPLETE


def test_every_setting_and_nested_section_field_is_a_known_variable():
    assert {"LOOPWARDEN_ROLES", "LOOPWARDEN_DETECTION__PROFILE"} <= KNOWN
    assert "LOOPWARDEN_KAFKA__SECURITY__SASL_PASSWORD" in KNOWN  # two levels down
    assert "LOOPWARDEN_KAFKA" in KNOWN  # a whole section as JSON


def test_a_misspelt_variable_is_named_with_the_closest_setting():
    environ = {
        "LOOPWARDEN_DETECTON__PROFILE": "seed",
        "LOOPWARDEN_ROLES": '["monitor"]',
        "LOOPWARDEN_TRAJECTORIES": "/data",
        "PATH": "/bin",
        "LOOPWARDEN_ZZZ": "1",
    }
    lines = unknown_variables(environ, KNOWN)
    assert lines == [
        "LOOPWARDEN_DETECTON__PROFILE is not a loopwarden setting and is ignored: "
        "did you mean LOOPWARDEN_DETECTION__PROFILE?",
        "LOOPWARDEN_ZZZ is not a loopwarden setting and is ignored: "
        "no setting has a name close to it",
    ]


def test_lower_case_names_are_settings_too():
    # pydantic-settings reads environment names case-insensitively
    assert unknown_variables({"loopwarden_app_id": "x"}, KNOWN) == []


def test_every_variable_the_project_mentions_is_a_setting_or_a_tool_variable():
    """The list of tooling variables stays true: a variable the docs, the Makefile or
    the code name is read by someone (else it is a typo the users would copy)."""
    mentioned: set[str] = set()
    for folder in ("docs", "loopwarden", "streams", "agents", "schemas", "storage", "infra"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".md", ".env", ".yml", ".toml"} and path.is_file():
                mentioned |= set(VARIABLE.findall(path.read_text()))
    for path in (ROOT / "Makefile", ROOT / "README.md", ROOT / "docker-compose.yml"):
        mentioned |= set(VARIABLE.findall(path.read_text()))
    assert unknown_variables(dict.fromkeys(mentioned, ""), KNOWN) == []
    assert TOOL_VARIABLES.isdisjoint(KNOWN)


def test_a_process_names_its_misspelt_variable_once_at_start():
    code = "from loopwarden.settings import Settings; Settings(); Settings(); print('built')"
    env = {"LOOPWARDEN_WEB_PROT": "8080", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "built"
    assert done.stderr.count("LOOPWARDEN_WEB_PROT is not a loopwarden setting") == 1
    assert "did you mean LOOPWARDEN_WEB_PORT?" in done.stderr
