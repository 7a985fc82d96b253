"""The intent model: logistic regression, the cross-validated threshold, its stored form,
and the bundled model for the default embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.intent_model import IntentModel
from ragplate.infra import intent_models
from ragplate.tasks.assistant.intent import choose_threshold, fit_logistic, labelled, train


def unit(rows: list[list[float]]) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float64)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_fit_separates_two_directions() -> None:
    x = unit([[1, 0.1], [1, -0.1], [0.9, 0.2], [0.1, 1], [-0.1, 1], [0.2, 0.9]])
    weights, bias = fit_logistic(x, np.array([1, 1, 1, 0, 0, 0], dtype=bool))

    scores = x * 10 @ weights + bias
    assert (scores[:3] > 0).all() and (scores[3:] < 0).all()


def test_the_threshold_keeps_the_target_share_of_benign_allowed() -> None:
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 2.0, 3.0])
    attack = np.array([False] * 10 + [True, True])

    threshold, blocked, allowed = choose_threshold(scores, attack, target=0.9)

    assert threshold == 0.9 and (blocked, allowed) == (1.0, 0.9)
    assert choose_threshold(scores, attack, target=1.0)[0] == 1.0
    with pytest.raises(ValueError):
        choose_threshold(scores[10:], attack[10:])


def test_train_classifies_and_names_the_class() -> None:
    rng = np.random.default_rng(7)
    centres = {"benign": [0, 0, 1, 0], "exfiltration": [1, 0, 0, 0],
               "chat_markup": [0, 1, 0, 0]}
    rows, attack, classes, ids = [], [], [], []
    for name, centre in centres.items():
        for i in range(20):
            rows.append(np.asarray(centre) + rng.normal(0, 0.15, 4))
            attack.append(name != "benign")
            classes.append(name)
            ids.append(f"{name}-{i}")
    model = train("k", unit([list(r) for r in rows]), attack, classes, ids, dataset={"files": []})

    probe = unit([[1, 0.05, 0, 0], [0, 1, 0.05, 0], [0, 0.05, 1, 0]])
    assert model.attack_score(probe[0]) > model.threshold
    assert model.category(probe[0]) == "exfiltration" and model.category(probe[1]) == "chat_markup"
    assert model.attack_score(probe[2]) <= model.threshold
    assert model.trained_on["cross_validation"]["benign_allowed"] >= 0.97
    assert IntentModel.from_dict(json.loads(json.dumps(model.as_dict()))) == model


def test_labelled_reads_the_public_format() -> None:
    texts, ids, attack, classes = labelled([
        {"id": "a", "query": "q1", "expect_refusal": True, "slices": ["injection", "x"]},
        {"id": "b", "query": "q2", "expect_refusal": False, "slices": ["benign"]}])

    assert (texts, ids, attack, classes) == (["q1", "q2"], ["a", "b"], [True, False],
                                             ["x", "injection"])


def test_a_home_model_wins_and_a_wrong_one_is_named(tmp_path: Path) -> None:
    key = "local:intfloat/multilingual-e5-small"
    bundled = intent_models.load(tmp_path, key)
    assert bundled is not None and len(bundled.weights) == 384
    assert bundled.trained_on["files"] and bundled.trained_on["cases"] >= 250

    mine = IntentModel(key, [0.0] * 384, 0.0, 5.0)
    intent_models.save(tmp_path, mine)
    assert intent_models.load(tmp_path, key) == mine
    assert intent_models.load(tmp_path, "openai_compatible:other") is None

    path = intent_models.home_dir(tmp_path) / intent_models.file_name(key)
    path.write_text(json.dumps({**mine.as_dict(), "model_key": "other"}))
    with pytest.raises(ConfigurationError, match="trained for other"):
        intent_models.load(tmp_path, key)
    path.write_text("{not json")
    with pytest.raises(ConfigurationError, match="cannot be read"):
        intent_models.load(tmp_path, key)
