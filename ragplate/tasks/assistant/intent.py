"""The guardrails' second stage: a linear model of intent on the question's embedding.

Pattern rules refuse what they name, and little else: on screening messages nobody wrote
them for they miss most reworded attacks. The embedding the documentation retrieval computes
anyway places a message among the attacks and benign questions of a labelled screening
dataset; a logistic regression on it (one weight per dimension) says how attack-like it is,
and a one-vs-rest regression per class which class it reads as. The threshold is chosen by
cross-validation on the training cases (folds by the SHA-256 of the case id) as the lowest
that keeps at least :data:`BENIGN_TARGET` of the benign look-alikes allowed.

Plain numpy, no I/O: :mod:`ragplate.infra.intent_models` reads and writes the models
(:class:`~ragplate.catalog.intent_model.IntentModel`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragplate.catalog.intent_model import SCALE, IntentModel

#: Attack classes of the text's shape (the rules' to name), left out of the class models.
CHARACTER_CLASSES = frozenset({"hidden_characters", "encoded_payload"})
#: Share of benign look-alikes the threshold keeps allowed in cross-validation.
BENIGN_TARGET = 0.97
FOLDS = 5
L2 = 0.1
ITERATIONS = 2000
STEP = 0.5


def fit_logistic(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by gradient descent: (weights, bias)."""
    x = np.asarray(x, dtype=np.float64) * SCALE
    target = np.asarray(y, dtype=np.float64)
    weights, bias = np.zeros(x.shape[1]), 0.0
    for _ in range(ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-(x @ weights + bias)))
        gradient = p - target
        weights -= STEP * (x.T @ gradient / len(target) + L2 * weights / len(target))
        bias -= STEP * float(gradient.mean())
    return weights, bias


def fold_of(case_id: str) -> int:
    """The cross-validation fold of a case, by the SHA-256 of its id."""
    return int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % FOLDS


def choose_threshold(scores: np.ndarray, attack: np.ndarray,
                     target: float = BENIGN_TARGET) -> tuple[float, float, float]:
    """The lowest threshold keeping ``target`` of the benign cases below it: (threshold,
    attacks above it, benign below it)."""
    benign_scores = np.sort(scores[~attack])
    if benign_scores.size == 0:
        raise ValueError("no benign case to choose a threshold on")
    allowed = int(np.ceil(target * benign_scores.size))
    threshold = float(benign_scores[allowed - 1])
    refused = scores > threshold
    return (threshold, float((refused & attack).sum() / max(attack.sum(), 1)),
            float((~refused & ~attack).sum() / benign_scores.size))


def train(model_key: str, vectors: np.ndarray, attack: Sequence[bool],
          classes: Sequence[str], ids: Sequence[str], *, dataset: dict[str, Any]
          ) -> IntentModel:
    """An intent model from labelled vectors: the threshold from cross-validated scores,
    the weights from every case."""
    x = np.asarray(vectors, dtype=np.float64)
    y = np.asarray(attack, dtype=bool)
    folds = np.array([fold_of(i) for i in ids])
    scores = np.zeros(len(y))
    for fold in range(FOLDS):
        held = folds == fold
        if held.any() and (~held).any():
            w, b = fit_logistic(x[~held], y[~held])
            scores[held] = x[held] * SCALE @ w + b
    threshold, recall, benign = choose_threshold(scores, y)
    weights, bias = fit_logistic(x, y)
    # Hidden characters and encoded payloads are shapes of text the rules see, not meanings
    # an embedding carries: the class the model names is one of the others.
    semantic = np.array([a and c not in CHARACTER_CLASSES
                         for c, a in zip(classes, y, strict=True)])
    names = sorted({c for c, s in zip(classes, semantic, strict=True) if s})
    class_weights, class_biases = [], []
    attacks = x[semantic]
    attack_classes = np.array([c for c, s in zip(classes, semantic, strict=True) if s])
    for name in names:
        w, b = fit_logistic(attacks, attack_classes == name)
        class_weights.append([round(float(v), 6) for v in w])
        class_biases.append(round(b, 6))
    return IntentModel(
        model_key=model_key, weights=[round(float(v), 6) for v in weights],
        bias=round(bias, 6), threshold=round(threshold, 6), classes=names,
        class_weights=class_weights, class_biases=class_biases,
        trained_on={**dataset, "cases": len(y), "attacks": int(y.sum()),
                    "cross_validation": {"folds": FOLDS, "attacks_blocked": round(recall, 4),
                                         "benign_allowed": round(benign, 4),
                                         "benign_target": BENIGN_TARGET}})


def screening_problem(cases: Any) -> str | None:
    """What keeps ``cases`` from being screening cases to train on, or ``None``: each needs
    an ``id``, a ``query`` and an ``expect_refusal`` true or false. A documentation
    dataset's cases (they expect source labels) are refused by name: its no-answer cases
    also read ``expect_refusal``, but are questions, not attacks."""
    if not isinstance(cases, list) or not cases:
        return "no cases"
    for position, case in enumerate(cases, 1):
        name = case.get("id", f"#{position}") if isinstance(case, dict) else f"#{position}"
        if not isinstance(case, dict):
            return f"case {name} is not an object"
        if "expected_source_labels" in case:
            return (f"case {name!r} expects source labels: a documentation dataset, whose "
                    "no-answer cases are questions, not attacks")
        for key, kind in (("id", str), ("query", str), ("expect_refusal", bool)):
            if not isinstance(case.get(key), kind):
                return f"case {name!r}, field {key!r}: missing or not a {kind.__name__}"
    return None


def labelled(cases: Sequence[dict[str, Any]]) -> tuple[list[str], list[str], list[bool],
                                                        list[str]]:
    """Texts, ids, attack labels and classes of screening cases (public assistant format:
    ``expect_refusal``; the class is the second slice)."""
    texts, ids, attack, classes = [], [], [], []
    for case in cases:
        slices = case.get("slices") or []
        texts.append(str(case["query"]))
        ids.append(str(case["id"]))
        attack.append(bool(case["expect_refusal"]))
        classes.append(str(slices[1]) if len(slices) > 1 else "injection")
    return texts, ids, attack, classes
