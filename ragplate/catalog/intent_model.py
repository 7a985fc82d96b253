"""An intent model of the input guardrails: logistic-regression weights over one embedding
model's vectors (trained by :mod:`ragplate.tasks.assistant.intent`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Embeddings are unit vectors; scaled so the regression converges in few steps.
SCALE = 10.0


@dataclass(frozen=True)
class IntentModel:
    """Weights over one embedding model's vectors."""

    model_key: str
    weights: list[float]
    bias: float
    threshold: float
    classes: list[str] = field(default_factory=list)
    class_weights: list[list[float]] = field(default_factory=list)
    class_biases: list[float] = field(default_factory=list)
    trained_on: dict[str, Any] = field(default_factory=dict)

    def attack_score(self, vector: np.ndarray) -> float:
        """How attack-like a message's vector is (the logit; above ``threshold`` refuses)."""
        return float(np.asarray(vector, dtype=np.float64) * SCALE @ np.asarray(self.weights)
                     + self.bias)

    def category(self, vector: np.ndarray) -> str:
        """The attack class the vector reads as most."""
        if not self.classes:
            return "injection"
        x = np.asarray(vector, dtype=np.float64) * SCALE
        logits = np.asarray(self.class_weights) @ x + np.asarray(self.class_biases)
        return self.classes[int(np.argmax(logits))]

    def as_dict(self) -> dict[str, Any]:
        """The stored form (JSON)."""
        return {"model_key": self.model_key, "weights": self.weights, "bias": self.bias,
                "threshold": self.threshold, "classes": self.classes,
                "class_weights": self.class_weights, "class_biases": self.class_biases,
                "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IntentModel:
        """Read the stored form."""
        return cls(model_key=str(data["model_key"]), weights=[float(w) for w in data["weights"]],
                   bias=float(data["bias"]), threshold=float(data["threshold"]),
                   classes=[str(c) for c in data.get("classes", [])],
                   class_weights=[[float(w) for w in row] for row in data.get("class_weights",
                                                                                  [])],
                   class_biases=[float(b) for b in data.get("class_biases", [])],
                   trained_on=dict(data.get("trained_on", {})))
