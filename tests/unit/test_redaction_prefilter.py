"""The Hyperscan prefilter never hides a match from the redactor, and the redactor's
output is the same with it and without it."""

import random

import pytest
from secrets_corpus import KEYS_THAT_NAME_A_SECRET, NAMES_A_SECRET

from loopwarden.schemas.events import ActionPayload
from loopwarden.schemas.extensions import extensions_disabled
from loopwarden.schemas.redaction import REDACTED, Redactor, default_redactor, redact_fields
from loopwarden.schemas.redaction_prefilter import CACHE_DIR, Prefilter


@pytest.fixture(scope="module")
def with_prefilter() -> Redactor:
    redactor = Redactor()
    redactor.prefilter = Prefilter(redactor.patterns())
    return redactor


def fuzzed(seed: int, count: int) -> list[str]:
    """Texts built from secrets, their keys and ordinary words, joined by the separators
    where Python and Hyperscan might disagree (Unicode and Python-only whitespace, line
    breaks, case changes)."""
    rng = random.Random(seed)
    pieces = [
        *NAMES_A_SECRET,
        *(f"{key}: Xq9-27fhsQ0rLm" for key in KEYS_THAT_NAME_A_SECRET),
        "FAILED tests/test_io.py::test_read - KeyError: 'token'",
        "astropy__astropy-13236 /tmp/pytest-of-root/pytest-0/test_x0",
        "passwort ist falsch", "ΚΩΔΙΚΌΣ=δοκιμή", "密码：abc123!", "4111 1111 1111 1111",
        "password\x1cis\x1chunter2", "api_key\u00a0=\u00a0'abcdefgh12345678'",
    ]  # fmt: skip
    separators = [" ", "\n", "\t", "\x1c", "\x85", "\u2028", "\u00a0", "", ", ", "\r\n"]
    texts = []
    for _ in range(count):
        parts = rng.sample(pieces, rng.randint(1, 4))
        if rng.random() < 0.3:
            parts = [p.upper() if rng.random() < 0.5 else p.lower() for p in parts]
        texts.append("".join(p + rng.choice(separators) for p in parts))
    return texts


CORPUS = [*NAMES_A_SECRET, *fuzzed(seed=7, count=1500)]


def test_the_prefilter_reports_every_pattern_python_finds(with_prefilter):
    prefilter = with_prefilter.prefilter
    missed = []
    for text in CORPUS:
        reported = prefilter.candidates(text)
        assert reported is not None
        for index, pattern in enumerate(with_prefilter.patterns()):
            if pattern.search(text) and index not in reported:
                missed.append((pattern.pattern[:60], text[:80]))
    assert missed == []


def test_the_prefilter_stays_quiet_on_ordinary_text(with_prefilter):
    ordinary = "collected 12 items\n\ntests/test_table.py ........ [100%]\n\n12 passed in 0.4s"
    assert with_prefilter.prefilter.candidates(ordinary) == set()


@pytest.mark.parametrize("text", CORPUS[:400])
def test_the_output_is_the_same_with_and_without(with_prefilter, text):
    assert with_prefilter.text(text) == Redactor().text(text)


def test_a_text_it_cannot_scan_is_redacted_the_slow_way(with_prefilter):
    text = "password=hunter2 \ud800"  # a lone surrogate is not UTF-8
    assert with_prefilter.prefilter.candidates(text) is None
    assert with_prefilter.text(text) == f"password={REDACTED} \ud800"


def test_a_replacement_is_scanned_again_for_the_later_patterns(with_prefilter):
    text = "Authorization: Bearer abcdefghijklmnop and card 4111 1111 1111 1111"
    assert with_prefilter.text(text) == f"Authorization: Bearer {REDACTED} and card {REDACTED}"


def test_fields_are_screened_in_one_scan():
    payload = ActionPayload(
        action_type="shell",
        params={"command": "curl -H 'Authorization: Bearer abcdefghijklmnop' api"},
        result="ok",
    )
    clean = ActionPayload(action_type="shell", params={"command": "ls -la"}, result="ok")
    assert "abcdefghijklmnop" not in str(redact_fields(payload, ["params", "result"]).params)
    assert redact_fields(clean, ["params", "result"]) is clean


def test_the_process_redactor_runs_as_the_environment_says():
    """With the worker's dependencies the prefilter is on; LOOPWARDEN_NO_EXTENSIONS=1
    (make test's second unit run) keeps the pure-Python gates."""
    assert (default_redactor().prefilter is None) == extensions_disabled()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR, str(tmp_path))
    return tmp_path


def test_a_second_process_loads_the_compiled_prefilter_from_the_cache(cache_dir):
    patterns = Redactor().patterns()
    first = Prefilter(patterns)
    files = list(cache_dir.rglob("*.hsdb"))
    second = Prefilter(patterns)
    assert (first.from_cache, second.from_cache, len(files)) == (False, True, 1)
    for text in CORPUS[:300]:
        assert second.candidates(text) == first.candidates(text)


def test_a_damaged_cache_file_is_compiled_again_and_replaced(cache_dir):
    patterns = Redactor().patterns()
    Prefilter(patterns)
    (cached,) = cache_dir.rglob("*.hsdb")
    cached.write_bytes(b"not a database")
    again = Prefilter(patterns)
    assert not again.from_cache
    assert Prefilter(patterns).from_cache
    assert list(cache_dir.rglob("*.part")) == []


def test_other_patterns_get_their_own_cache_file_and_off_keeps_none(cache_dir, monkeypatch):
    import re

    Prefilter([re.compile(r"sk-[a-z]{8}")])
    Prefilter([re.compile(r"sk-[a-z]{9}")])
    assert len(list(cache_dir.rglob("*.hsdb"))) == 2
    monkeypatch.setenv(CACHE_DIR, "off")
    assert not Prefilter([re.compile(r"sk-[a-z]{8}")]).from_cache
