"""The compiled word scan and its pure-Python twin give the same outputs: on every
code point, on random text of many scripts, and through the sketch and the word count
the detectors use. The compiled module is imported directly, so this runs in the
no-extension pass too (the switch only chooses which one the monitor calls)."""

from __future__ import annotations

import random
import sys

import pytest

from loopwarden.agents.spin import wordscan
from loopwarden.agents.spin._wordscan import scan as compiled_scan
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
        assert compiled_scan(text, EVERYTHING) == wordscan.py_scan(text, EVERYTHING)
    words, hashes = compiled_scan(alone, EVERYTHING)
    assert words > 100_000 and len(hashes) > 100_000  # the alphanumerics of Unicode


@pytest.mark.parametrize("seed", range(4))
def test_random_text_of_many_scripts(seed: int):
    rng = random.Random(seed)
    for _ in range(2_000):
        text, limit = random_text(rng), rng.choice([0, 1, 5, SKETCH_SIZE, EVERYTHING])
        assert compiled_scan(text, limit) == wordscan.py_scan(text, limit), repr(text)


def test_what_a_word_is():
    text = "Hello hello _private x2 2x x2 ²² a_b __ ok"
    words, hashes = wordscan.py_scan(text, EVERYTHING)
    # "_private" and "__" start with an underscore: not words; "x2" twice, one hash
    assert words == 8 and len(hashes) == 7
    assert compiled_scan(text, EVERYTHING) == (words, hashes)
    assert compiled_scan(text, 2) == (words, hashes[:2])


def test_the_monitor_uses_the_compiled_scan_unless_switched_off():
    expected = wordscan.py_scan if extensions_disabled() else compiled_scan
    assert wordscan.scan is expected


def test_sketch_and_word_count_are_the_same_either_way():
    rng = random.Random(7)
    texts = [random_text(rng) for _ in range(500)]
    texts.append("Build took 13.2 s, id 9f86d081884c7d65 in /tmp/x1")
    for text in texts:
        plain = " ".join(text.lower().split())
        assert wordscan.py_scan(plain, SKETCH_SIZE) == compiled_scan(plain, SKETCH_SIZE)
    assert word_count(texts[-1]) == 4  # "build took #, id # in #": "#" is not a word
    assert sketch(texts[-1]) == wordscan.py_scan("build took id in", SKETCH_SIZE)[1]
