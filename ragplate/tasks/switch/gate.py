"""The evaluation gate before activation: the target must retrieve the documentation at
least as well as the serving model, within a margin.

The committed dataset ``datasets/switch-gate-docs.json`` holds questions about ragplate's
own ``docs/`` with the source labels that answer them (the case format of the public
laraplate developer-retrieval dataset). Both developer indexes, the serving model's and
the target's, answer every question; the switch may activate when neither hit@5 nor MRR
drops by more than ``switch_gate_margin``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.settings import PROJECT_ROOT
from ragplate.infra import settings_store
from ragplate.infra.runtime import Runtime
from ragplate.tasks.evaluation.metrics import hit_at_k, mean, reciprocal_rank
from ragplate.tasks.retrieval.documentation import retrieve_developer

DATASET = PROJECT_ROOT / "datasets" / "switch-gate-docs.json"
K = 5


@dataclass(frozen=True)
class Case:
    """One question and the labels that answer it."""

    id: str
    query: str
    expected: tuple[str, ...]
    top_k: int = K


@dataclass(frozen=True)
class Scores:
    """hit@5 and MRR of one model over the dataset."""

    model: str
    hit_at_5: float
    mrr: float
    cases: int


@dataclass(frozen=True)
class GateResult:
    """Both models' scores, the drops and the verdict."""

    serving: Scores
    target: Scores
    margin: float

    @property
    def hit_drop(self) -> float:
        """How much hit@5 falls from serving to target (negative: it rises)."""
        return self.serving.hit_at_5 - self.target.hit_at_5

    @property
    def mrr_drop(self) -> float:
        """How much MRR falls from serving to target."""
        return self.serving.mrr - self.target.mrr

    @property
    def passed(self) -> bool:
        """Neither metric drops by more than the margin (a hair of float noise allowed)."""
        return self.hit_drop <= self.margin + 1e-9 and self.mrr_drop <= self.margin + 1e-9

    @property
    def measured(self) -> bool:
        """Whether either model found any expected source. When neither does, the indexes
        do not hold the documentation the questions are about (ragplate's own ``docs/``)
        and the gate passes without having compared anything."""
        return self.serving.hit_at_5 > 0 or self.target.hit_at_5 > 0

    def reason(self) -> str:
        """The verdict in words."""
        return (f"evaluation gate: hit@5 {self.serving.hit_at_5:.3f} -> {self.target.hit_at_5:.3f}"
                f", MRR {self.serving.mrr:.3f} -> {self.target.mrr:.3f} ({self.target.model} "
                f"against {self.serving.model} on {self.target.cases} questions, margin "
                f"{self.margin:g})")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the state and the reports."""
        return {"serving": asdict(self.serving), "target": asdict(self.target),
                "margin": self.margin, "hit_drop": round(self.hit_drop, 6),
                "mrr_drop": round(self.mrr_drop, 6), "passed": self.passed,
                "measured": self.measured}


def load_cases(path: Path | None = None) -> list[Case]:
    """The dataset's cases (``id``, ``query``, ``expected_source_labels``, ``top_k``);
    default: :data:`DATASET`."""
    data = json.loads((path or DATASET).read_text(encoding="utf-8"))
    return [Case(c["id"], c["query"], tuple(c["expected_source_labels"]),
                 int(c.get("top_k", K))) for c in data["cases"]]


def score(runtime: Runtime, profile: EmbeddingProfile, cases: list[Case]) -> Scores:
    """hit@5 and MRR of the developer index of ``profile``."""
    store = runtime.store("developer", profile)
    embedder = runtime.embedder(profile)
    hits, ranks = [], []
    for case in cases:
        found = retrieve_developer(case.query, store=store, embedder=embedder, top_k=K)
        labels = [h.source_label for h in found]
        hits.append(hit_at_k(labels, case.expected, K))
        ranks.append(reciprocal_rank(labels, case.expected, K))
    return Scores(profile.key, round(mean(hits), 6), round(mean(ranks), 6), len(cases))


def evaluate(runtime: Runtime, target_key: str, path: Path | None = None) -> GateResult:
    """Score the serving model and the target on the same questions."""
    cases = load_cases(path)
    serving = get_profile(settings_store.active_profile_key(runtime.engine))
    return GateResult(score(runtime, serving, cases), score(runtime, get_profile(target_key),
                                                            cases),
                      runtime.settings.switch_gate_margin)
