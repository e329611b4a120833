"""The compiled text passes and their pure-Python twins give the same outputs: the word
scan on every code point, on random text of many scripts, and through the sketch and
the word count the detectors use; the volatile-token mask and the figures of a result
on every pair of tricky tokens with what may join them, and on random text. The
compiled module is imported directly, so this runs in the no-extension pass too (the
switch only chooses which one the monitor calls)."""

from __future__ import annotations

import random
import sys

import pytest

from loopwarden.agents.spin import textscan
from loopwarden.agents.spin._textscan import scan as compiled_scan
from loopwarden.agents.spin.normalise import SKETCH_SIZE, sketch, word_count
from loopwarden.schemas.extensions import extensions_disabled

EVERYTHING = sys.maxsize
"""A limit no text reaches: every hash is compared."""

POOLS = [
    "abcxyzABCXYZ0189_ -./:#'\"\n\t",  # ASCII words, punctuation, underscores
    "éèçñßøåÆŒ ",  # Latin
    "東京都渋谷区ひらがなカタカナ한국어 ",  # CJK, kana, Hangul
    "²³¹½⅓Ⅻ٣४۵ ",  # digits that are not decimal, and decimal digits of other scripts
    "\u0301\u0308\u200d\u00a0\u2028\u3000 ",  # combining marks, joiners, other spaces
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢😀🚀 ",  # astral letters and symbols
    "\ud800\udfff",  # lone surrogates: never part of a word
]


def random_text(rng: random.Random) -> str:
    chars = "".join(rng.sample(POOLS, k=rng.randint(1, len(POOLS))))
    return "".join(rng.choice(chars) for _ in range(rng.randint(0, 300)))


def test_every_code_point_is_read_as_the_regex_reads_it():
    """Alone (between spaces) and in runs with its neighbours, every code point."""
    alone = " ".join(chr(c) for c in range(sys.maxunicode + 1))
    runs = "".join(chr(c) for c in range(sys.maxunicode + 1))
    for text in (alone, runs, "_" + alone, alone.replace(" ", "_ ")):
        assert compiled_scan(text, EVERYTHING) == textscan.py_scan(text, EVERYTHING)
    words, hashes = compiled_scan(alone, EVERYTHING)
    assert words > 100_000 and len(hashes) > 100_000  # the alphanumerics of Unicode


@pytest.mark.parametrize("seed", range(4))
def test_random_text_of_many_scripts(seed: int):
    rng = random.Random(seed)
    for _ in range(2_000):
        text, limit = random_text(rng), rng.choice([0, 1, 5, SKETCH_SIZE, EVERYTHING])
        assert compiled_scan(text, limit) == textscan.py_scan(text, limit), repr(text)


def test_what_a_word_is():
    text = "Hello hello _private x2 2x x2 ²² a_b __ ok"
    words, hashes = textscan.py_scan(text, EVERYTHING)
    # "_private" and "__" start with an underscore: not words; "x2" twice, one hash
    assert words == 8 and len(hashes) == 7
    assert compiled_scan(text, EVERYTHING) == (words, hashes)
    assert compiled_scan(text, 2) == (words, hashes[:2])


def test_the_monitor_uses_the_compiled_passes_unless_switched_off():
    from loopwarden.agents.spin import _textscan

    if extensions_disabled():
        assert (textscan.mask_volatile, textscan.figures, textscan.scan) == (
            textscan.py_mask_volatile,
            textscan.py_figures,
            textscan.py_scan,
        )
    else:
        assert (textscan.mask_volatile, textscan.figures, textscan.scan) == (
            _textscan.mask_volatile,
            _textscan.figures,
            compiled_scan,
        )


def test_sketch_and_word_count_are_the_same_either_way():
    rng = random.Random(7)
    texts = [random_text(rng) for _ in range(500)]
    texts.append("Build took 13.2 s, id 9f86d081884c7d65 in /tmp/x1")
    for text in texts:
        plain = " ".join(text.lower().split())
        assert textscan.py_scan(plain, SKETCH_SIZE) == compiled_scan(plain, SKETCH_SIZE)
    assert word_count(texts[-1]) == 4  # "build took #, id # in #": "#" is not a word
    assert sketch(texts[-1]) == textscan.py_scan("build took id in", SKETCH_SIZE)[1]


# -- the volatile-token mask ----------------------------------------------------------------

TOKENS = [
    "2026-11-28T09:01:02Z",
    "2026-11-28 09:01:02.123+01:00",
    "2026-11-28t09:01",
    "٢٠٢٦-١١-٢٨ ٠٩:٠١",
    "9:05",
    "12:30:45",
    "123:45",
    "12:345",
    "12:30:4",
    "12:30:45.5",
    "12:30:45.5x",
    "12:30:45.",
    "2026-11-28",
    "2026-11-28 9:01",
    "2026-11-2",
    "0x1f",
    "0xZ",
    "0x",
    "0X1F",
    "9f86d081884c7d65",
    "deadbeef",
    "abcdef1",
    "abcdef12g",
    "12ab34cd56",
    "550e8400-e29b-41d4-a716-446655440000",
    "/tmp/pytest-1/x",
    "/tmp/",
    "/tmp",
    "/tmpx/y",
    "/var/folders/ab/T/x",
    "/private/var/x",
    "/private/vars",
    "13.2 s",
    "13.2s",
    "5 secs",
    "5 seconds",
    "5 minutes",
    "10ms",
    "10 msx",
    "3h",
    "3 h.",
    "7 min",
    "5us",
    "5 µs",
    "3ns",
    "1m30s",
    "1.5h2",
    "2h",
    "3 ago",
    "4.5left",
    "5 lefts",
    "10 agox",
    "1.5.s",
    "1.",
    ".5",
    "42",
    "4.2",
    "٣",
    "²",
    "x2",
    "2x",
    "_1",
    "a_1",
    "v1.2.3",
    "-",
    ":",
    ".",
    "/",
    " ",
    "\t",
    "\x1c",
    "\u2028",
    "\x00",
    "é1",
    "東京1",
    "1東京",
]


def token_text(rng: random.Random) -> str:
    parts = [rng.choice(TOKENS) for _ in range(rng.randint(1, 12))]
    glue = [rng.choice(["", " ", "  ", "\n", ",", "(", "=", "_", "a", "1", ":", "/", "-"])]
    return "".join(part + rng.choice(glue) for part in parts)


def test_the_mask_matches_the_regex_on_every_token_and_its_neighbours():
    from loopwarden.agents.spin._textscan import mask_volatile
    from loopwarden.agents.spin.textscan import py_mask_volatile

    for left in TOKENS:
        for right in TOKENS:
            for glue in ("", " ", "_", "a", "1", ":", "/", ".", "-"):
                text = left + glue + right
                assert mask_volatile(text) == py_mask_volatile(text), repr(text)


@pytest.mark.parametrize("seed", range(4))
def test_the_mask_matches_the_regex_on_random_text(seed: int):
    from loopwarden.agents.spin._textscan import mask_volatile
    from loopwarden.agents.spin.textscan import py_mask_volatile

    rng = random.Random(seed)
    for _ in range(3_000):
        text = token_text(rng) if rng.random() < 0.7 else random_text(rng)
        assert mask_volatile(text) == py_mask_volatile(text), repr(text)


# -- the figures of a result ------------------------------------------------------------------


def test_the_figures_match_the_regexes_on_every_token_and_its_neighbours():
    from loopwarden.agents.spin._textscan import figures

    for left in TOKENS:
        for right in TOKENS:
            for glue in ("", " ", "_", "a", "1", ":", "/", ".", "-"):
                text = left + glue + right
                assert figures(text) == textscan.py_figures(text), repr(text)


@pytest.mark.parametrize("seed", range(4))
def test_the_figures_match_the_regexes_on_random_text(seed: int):
    from loopwarden.agents.spin._textscan import figures

    rng = random.Random(seed)
    for _ in range(3_000):
        text = token_text(rng) if rng.random() < 0.7 else random_text(rng)
        assert figures(text) == textscan.py_figures(text), repr(text)


def test_what_a_figure_is():
    """What a call reports stays; what changes on its own goes."""
    text = (
        "draining 1200 of 3000 (45.5%) at 2026-11-28T09:01:02Z, 12:30:45.5 in 1m3, "
        "took 13.2 s and 40µs, job 9f86d081884c7d65 at 0x1f in /tmp/run-7/out 5 min ago, "
        "2 left, page 3"
    )
    assert textscan.py_figures(text) == "1200 3000 45.5 3"
