"""Rules propose, a calibrated gate decides, pure.

The rules of :mod:`loopwarden.agents.spin` propose findings (and write their texts);
the gate scores the step they fire on from generic features (:mod:`.step_features`
and which rules proposed) with small gradient-boosted trees trained on the annotated runs of
ten agent kinds (``loopwarden/evaluation/gate_training.py``), and a finding is
shown only when the score reaches ``detection.gate_threshold``. The score is a
calibrated probability that the step lies in a loop, with every kind weighted
alike in training, so one threshold means the same across kinds.

The model is a small versioned JSON artifact (``gate_model.json`` beside this
module, or ``detection.gate_model``) read with plain Python: no training
dependency at run time, the same score on every machine, replayable.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from loopwarden.agents.spin.step_features import FEATURES
from loopwarden.errors import ConfigurationError
from loopwarden.schemas import codec

MODEL_VERSION = 1
SHIPPED = Path(__file__).with_name("gate_model.json")
PROPOSED = "proposed:"
"""Prefix of the features that say which rule proposed (``proposed:repeated_outcome``)."""
EXPLAINED = 3
"""Features named in a warning's ``gate`` record: those that moved the score most."""


@dataclass(frozen=True, slots=True)
class Tree:
    """One regression tree, as flat node arrays (scikit-learn's layout): a node splits
    on ``x[feature] <= threshold`` (left) or not (right); a leaf has ``left == -1``.
    ``value`` is every node's value (a leaf's is its output)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]

    def path(self, x: Sequence[float]) -> list[int]:
        """The nodes from the root to ``x``'s leaf."""
        node, nodes = 0, [0]
        left, right, feature, threshold = self.left, self.right, self.feature, self.threshold
        while left[node] != -1:
            node = left[node] if x[feature[node]] <= threshold[node] else right[node]
            nodes.append(node)
        return nodes

    def leaf(self, x: Sequence[float]) -> float:
        node = 0
        left, right, feature, threshold = self.left, self.right, self.feature, self.threshold
        while left[node] != -1:
            node = left[node] if x[feature[node]] <= threshold[node] else right[node]
        return self.value[node]

    def to_json(self) -> list[list[Any]]:
        return [
            list(self.feature),
            list(self.threshold),
            list(self.left),
            list(self.right),
            list(self.value),
        ]

    @classmethod
    def from_json(cls, data: list[list[Any]]) -> Tree:
        feature, threshold, left, right, value = data
        return cls(
            tuple(map(int, feature)),
            tuple(map(float, threshold)),
            tuple(map(int, left)),
            tuple(map(int, right)),
            tuple(map(float, value)),
        )


@dataclass(frozen=True, slots=True)
class GateModel:
    """Gradient-boosted trees over named features: log-odds = ``base`` + ``rate`` x the
    sum of the trees' leaves; the score is its logistic."""

    features: tuple[str, ...]
    trees: tuple[Tree, ...]
    base: float
    rate: float
    threshold: float
    """The threshold chosen on the training kinds (``detection.gate_threshold``'s default)."""
    trained_on: dict[str, Any]
    trusted: tuple[str, ...] = ()
    """Rule kinds whose findings are shown whatever the score (their precision is high
    on every kind); the trees are trained on the steps only the others proposed."""
    proposers: tuple[str, ...] = field(init=False, compare=False, repr=False)
    """The rule kinds the model knows, in its feature order."""
    _trusted_at: tuple[int, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        known = tuple(f[len(PROPOSED) :] for f in self.features if f.startswith(PROPOSED))
        object.__setattr__(self, "proposers", known)
        at = tuple(self.features.index(PROPOSED + kind) for kind in self.trusted)
        object.__setattr__(self, "_trusted_at", at)

    def passes(self, x: Sequence[float], threshold: float) -> bool:
        """A trusted rule proposed, or the score reaches ``threshold``."""
        return self.trusted_proposed(x) or self.score(x) >= threshold

    def trusted_proposed(self, x: Sequence[float]) -> bool:
        """A trusted rule is among the step's proposers."""
        return any(x[i] for i in self._trusted_at)

    def vector(self, step: Sequence[float], proposed: Sequence[str]) -> list[float]:
        """The model's input: the step's features, one flag per known rule, their count."""
        kinds = set(proposed)
        return [*step, *(float(kind in kinds) for kind in self.proposers), float(len(kinds))]

    def score(self, x: Sequence[float]) -> float:
        """The probability that the step lies in a loop."""
        z = self.base + self.rate * sum(tree.leaf(x) for tree in self.trees)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def contributions(self, x: Sequence[float]) -> dict[str, float]:
        """Per feature, what its splits on ``x``'s paths added to the log-odds."""
        out: dict[str, float] = {}
        for tree in self.trees:
            nodes = tree.path(x)
            for parent, child in itertools.pairwise(nodes):
                name = self.features[tree.feature[parent]]
                delta = self.rate * (tree.value[child] - tree.value[parent])
                out[name] = out.get(name, 0.0) + delta
        return out

    def explain(self, x: Sequence[float], score: float, threshold: float) -> dict[str, Any]:
        """The ``gate`` record of a warning: score, threshold and the features that moved
        the score most (signed contributions to the log-odds)."""
        parts = sorted(self.contributions(x).items(), key=lambda item: -abs(item[1]))
        return {
            "score": round(score, 4),
            "threshold": threshold,
            "model": str(self.trained_on.get("id", "custom")),
            "trusted": self.trusted_proposed(x),
            "features": {name: round(value, 3) for name, value in parts[:EXPLAINED]},
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "version": MODEL_VERSION,
            "kind": "boosted_trees",
            "features": list(self.features),
            "base": self.base,
            "rate": self.rate,
            "threshold": self.threshold,
            "trusted": list(self.trusted),
            "trained_on": self.trained_on,
            "trees": [tree.to_json() for tree in self.trees],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "gate model") -> GateModel:
        if data.get("version") != MODEL_VERSION or data.get("kind") != "boosted_trees":
            raise ConfigurationError(
                f"{where}: not a gate model of version {MODEL_VERSION} "
                f"(version {data.get('version')!r}, kind {data.get('kind')!r})"
            )
        names = tuple(data["features"])
        step = names[: len(FEATURES)]
        if step != FEATURES:
            raise ConfigurationError(
                f"{where}: its step features {list(step)} are not this version's {list(FEATURES)}"
            )
        trees = tuple(Tree.from_json(tree) for tree in data["trees"])
        trusted = tuple(data.get("trusted") or ())
        unknown = [kind for kind in trusted if PROPOSED + kind not in names]
        if unknown:
            raise ConfigurationError(f"{where}: trusted rules it has no feature for: {unknown}")
        if any(f >= len(names) for tree in trees for f in tree.feature):
            raise ConfigurationError(f"{where}: a tree splits on a feature it does not name")
        return cls(
            names,
            trees,
            float(data["base"]),
            float(data["rate"]),
            float(data["threshold"]),
            dict(data.get("trained_on") or {}),
            trusted,
        )


@lru_cache(maxsize=8)
def load(path: str | None = None) -> GateModel:
    """The model at ``path`` (default: the shipped one)."""
    where = Path(path) if path else SHIPPED
    try:
        data = codec.loads(where.read_bytes())
    except OSError as exc:
        raise ConfigurationError(f"detection.gate_model: cannot read {where}: {exc}") from exc
    return GateModel.from_json(data, str(where))
