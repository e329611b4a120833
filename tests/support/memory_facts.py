"""Five memory writes whose outcomes are known: a fact, its near-duplicate, its
contradiction, one holding a password, one unrelated (the memory tests, in memory and
on a broker)."""

from __future__ import annotations

WRITES: list[tuple[str, str, dict]] = [
    (
        "m1",
        "The user prefers SQLite for local storage",
        {
            "tags": ["database", "preference"],
            "potential_questions": ["Which database does the user prefer?"],
        },
    ),
    (
        "m2",
        "The user prefers SQLite for local storage.",
        {
            "tags": ["database", "preference"],
            "potential_questions": ["Which database does the user prefer?"],
        },
    ),
    (
        "m3",
        "The user does not prefer SQLite for local storage",
        {"tags": ["database"], "potential_questions": ["Does the user avoid SQLite?"]},
    ),
    ("m4", "Deploy with password: hunter2 on host db1", {"tags": ["deploy"]}),
    (
        "m5",
        "deploy.sh fails with permission denied until chmod +x deploy.sh is run",
        {"tags": ["deploy", "permissions"], "potential_questions": ["Why does deploy fail?"]},
    ),
]
"""(event id, content, payload fields)"""
