"""The short-text cache in front of an embedder: a repeated question is embedded once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from loopwarden.agents.memory.embedding import HashingEmbedder, ShortTextCache, Vectors


class Counting:
    """An embedder that notes every text it was asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.dims, self.name = self.inner.dims, self.inner.name
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.asked.extend(texts)
        return self.inner.embed(texts)


def test_short_texts_are_embedded_once_and_long_ones_every_time():
    counting = Counting()
    cache = ShortTextCache(counting, max_chars=40, size=8)
    long_text = "a long lesson about a failed command " * 3
    texts = ["why did search fail?", long_text, "why did search fail?", "why did edit fail?"]
    first = cache.embed(texts)
    assert counting.asked == ["why did search fail?", long_text, "why did edit fail?"]
    np.testing.assert_array_equal(first, counting.inner.embed(texts))  # the same rows
    second = cache.embed(["why did edit fail?", long_text, "why did search fail?"])
    assert counting.asked[3:] == [long_text]  # only the long text again
    np.testing.assert_array_equal(second, first[[3, 1, 0]])
    assert cache.embed([]).shape == (0, 64)


def test_the_cache_forgets_the_least_recently_used_beyond_its_size():
    counting = Counting()
    cache = ShortTextCache(counting, size=2)
    cache.embed(["a"])
    cache.embed(["b"])
    cache.embed(["a"])  # a is the most recent now
    cache.embed(["c"])  # b goes
    counting.asked.clear()
    cache.embed(["a", "b", "c"])
    assert counting.asked == ["b"]
