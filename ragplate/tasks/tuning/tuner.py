"""``tune-retrieval``: choose fusion parameters by replaying recorded rankings. Pure
functions over :class:`~ragplate.tasks.evaluation.strategies.RecordedCase` (no database, no model).

Every candidate re-fuses each case's recorded keyword/vector/hybrid rankings
(:func:`ragplate.tasks.retrieval.fusion.fuse`, the candidate over the planner's values for that
query), cut at the case's limit, and is scored overall and per query class. The committed
profile (:data:`ragplate.catalog.search_tuning.PROFILE`) is scored the same way. Guards,
exactly as the spec:

- **hold-out**: a share of the cases (ordered by the SHA-256 of their id) is kept out of
  the selection; the winner must not score below the committed profile on them, otherwise
  there is no winner (``validation.status`` ``rejected``, ``rejected_params``). A split
  that leaves either side empty is ``skipped``; share 0 is ``disabled``.
- **noise margin**: the winner must beat the committed profile on the selection by more
  than the margin (``auto``: one case, ``1 / selection cases``, at least 0.01; 0 turns the
  check off), otherwise ``noise.status`` is ``within_noise`` and there is no winner.
- **class overrides**: a class's best candidate is withheld with fewer than
  ``min_class_cases`` selection cases (``too_few_cases``), a gain over the overall
  reference (the winner, else the committed profile) of at most ``class_margin``
  (``margin``), or at most the noise margin sized on the class's own cases
  (``within_noise``).

Ties go to the first candidate (the default grid starts with the L0 constants).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragplate.catalog.errors import InvalidInputError
from ragplate.catalog.search_tuning import QUERY_CLASSES, ParamSet, TuningProfile
from ragplate.tasks.evaluation.dataset_files import held_out
from ragplate.tasks.evaluation.metrics import rounded
from ragplate.tasks.evaluation.strategies import (
    IR_KEYS,
    RecordedCase,
    cut,
    ir_metrics,
    reranker_block,
)
from ragplate.tasks.retrieval.fusion import fuse, planner_params
from ragplate.tasks.retrieval.query_class import class_counts

NOISE_FLOOR = 0.01
REPORT_VERSION = 1


@dataclass(frozen=True)
class Safeguards:
    """The command's guards (defaults of the command)."""

    metric: str = "ndcg_at_5"
    holdout: float = 0.3
    min_class_cases: int = 8
    class_margin: float = 0.01
    noise_margin: float | None = None  # None: auto

    def __post_init__(self) -> None:
        if self.metric not in IR_KEYS:
            raise InvalidInputError(f"--metric {self.metric}: one of {', '.join(IR_KEYS)}")
        if not 0.0 <= self.holdout < 1.0:
            raise InvalidInputError("--holdout: a share from 0 (disabled) to below 1")
        if self.min_class_cases < 1:
            raise InvalidInputError("--min-class-cases: at least 1")
        if not 0.0 <= self.class_margin <= 1.0:
            raise InvalidInputError("--class-margin: a number from 0 to 1")
        if self.noise_margin is not None and not 0.0 <= self.noise_margin <= 1.0:
            raise InvalidInputError("--noise-margin: auto, or a number from 0 to 1")

    def margin(self, cases: int) -> float:
        """The noise margin for a sample of ``cases`` (0.0: the check is off)."""
        if self.noise_margin is not None:
            return self.noise_margin
        return max(1.0 / cases, NOISE_FLOOR) if cases else 1.0

    def as_dict(self) -> dict[str, Any]:
        """The ``safeguards`` block of the report."""
        return {"holdout": self.holdout, "min_class_cases": self.min_class_cases,
                "class_margin": self.class_margin,
                "noise_margin": "auto" if self.noise_margin is None else self.noise_margin}


def parse_noise_margin(value: str) -> float | None:
    """``auto`` → ``None``; a number from 0 to 1 → that number."""
    if value.strip().lower() == "auto":
        return None
    try:
        margin = float(value)
    except ValueError:
        raise InvalidInputError(f"--noise-margin {value!r}: auto, or a number from 0 to 1") \
            from None
    if not 0.0 <= margin <= 1.0 or math.isnan(margin):
        raise InvalidInputError(f"--noise-margin {value!r}: auto, or a number from 0 to 1")
    return margin


def split(recorded: Sequence[RecordedCase], share: float,
          ) -> tuple[list[RecordedCase], list[RecordedCase], str]:
    """``(selection, hold-out, status)``: ``floor(share × cases)`` cases, the first by the
    SHA-256 of their id, are held out. ``disabled`` for share 0, ``skipped`` when either
    side would be empty (everything is then selection), else ``pending``."""
    if share == 0:
        return list(recorded), [], "disabled"
    held = held_out([r.case.id for r in recorded], share)
    if not held or len(held) >= len(recorded):
        return list(recorded), [], "skipped"
    return ([r for r in recorded if r.case.id not in held],
            [r for r in recorded if r.case.id in held], "pending")


Overrides = Callable[[RecordedCase], ParamSet]


@dataclass(frozen=True)
class Score:
    """One parameter set scored: IR metrics on the selection and the hold-out, and the
    chosen metric per class on the selection."""

    selection: dict[str, float]
    holdout: dict[str, float] | None
    per_class: dict[str, float]


def refuse(recorded: RecordedCase, overrides: ParamSet) -> tuple[str, ...]:
    """The case's fused ordering under ``overrides`` (over the planner's values)."""
    params = planner_params(recorded.case.query).with_overrides(overrides)
    return tuple(i for i, _ in fuse(recorded.rankings, params))


def score(selection: Sequence[RecordedCase], holdout: Sequence[RecordedCase],
          overrides: Overrides, metric: str) -> Score:
    """Score the parameter sets ``overrides`` gives each case."""
    def outcomes(cases: Sequence[RecordedCase]) -> list[Any]:
        return [cut(r, refuse(r, overrides(r))) for r in cases]

    chosen = outcomes(selection)
    per_class: dict[str, float] = {}
    for name in QUERY_CLASSES:
        in_class = [o for o, r in zip(chosen, selection, strict=True) if r.query_class == name]
        if in_class:
            per_class[name] = ir_metrics(in_class)[metric]
    return Score(ir_metrics(chosen), ir_metrics(outcomes(holdout)) if holdout else None,
                 per_class)


def _at(block: dict[str, float] | None, metric: str) -> float | None:
    return None if block is None else block[metric]


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else rounded(a - b)


def _class_winners(candidates: list[dict[str, Any]], reference: dict[str, float],
                   train_counts: dict[str, int], guards: Safeguards,
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    winners: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for name in QUERY_CLASSES:
        cases = train_counts[name]
        scored = [c for c in candidates if name in c["per_class_metrics"]]
        if not scored:
            skipped.append({"class": name, "reason": "too_few_cases", "selection_cases": 0,
                            "gain": None})
            continue
        best = max(scored, key=lambda c: (c["per_class_metrics"][name], -c["index"]))
        gain = rounded(best["per_class_metrics"][name] - reference.get(name, 0.0))
        entry: dict[str, Any] = {"class": name, "selection_cases": cases, "gain": gain}
        margin = guards.margin(cases)
        if cases < guards.min_class_cases:
            skipped.append({**entry, "reason": "too_few_cases"})
        elif gain <= guards.class_margin:
            skipped.append({**entry, "reason": "margin"})
        elif margin > 0 and gain <= margin:
            skipped.append({**entry, "reason": "within_noise", "noise_margin": rounded(margin)})
        else:
            winners.append({**entry, "index": best["index"], "params": best["params"],
                            "metric": best["per_class_metrics"][name],
                            "reference": reference.get(name, 0.0)})
    return winners, skipped


def tune(recorded: Sequence[RecordedCase], grid: Sequence[ParamSet], committed: TuningProfile,
         guards: Safeguards) -> dict[str, Any]:
    """Score the grid and the committed profile and apply the guards; returns the
    report's tuning keys (``case_count`` … ``class_winners_skipped``)."""
    metric = guards.metric
    selection, holdout, status = split(recorded, guards.holdout)
    base = score(selection, holdout, lambda r: committed.overrides(r.query_class), metric)
    candidates: list[dict[str, Any]] = []
    for index, params in enumerate(grid):
        got = score(selection, holdout, lambda _r, p=params: p, metric)  # type: ignore[misc]
        candidates.append({
            "index": index, "params": dict(params), "metrics": got.selection,
            "holdout_metrics": got.holdout, "per_class_metrics": got.per_class,
            "delta_vs_committed": {
                "selection": rounded(got.selection[metric] - base.selection[metric]),
                "holdout": _delta(_at(got.holdout, metric), _at(base.holdout, metric))}})
    candidates.sort(key=lambda c: (-c["metrics"][metric], c["index"]))
    best = candidates[0]
    gain = best["delta_vs_committed"]["selection"]
    margin = guards.margin(len(selection))
    noise_ok = gain > margin if margin > 0 else gain > 0
    noise = {"status": "disabled" if margin == 0 else "passed" if noise_ok else "within_noise",
             "margin": rounded(margin), "gain": gain, "selection_cases": len(selection)}
    validation: dict[str, Any] = {"status": status, "holdout_share": guards.holdout,
                                  "holdout_cases": len(holdout), "metric": metric,
                                  "candidate": None, "committed": None,
                                  "rejected_params": None}
    if status == "pending":
        validation["candidate"] = best["holdout_metrics"][metric]
        validation["committed"] = base.holdout[metric] if base.holdout else None
        passed = validation["candidate"] >= validation["committed"]
        validation["status"] = "passed" if passed else "rejected"
        if not passed:
            validation["rejected_params"] = best["params"]
    accepted = noise_ok and validation["status"] != "rejected"
    winner = None
    if accepted:
        winner = {"index": best["index"], "params": best["params"], "metric": metric,
                  "selection": best["metrics"][metric],
                  "holdout": best["holdout_metrics"][metric] if best["holdout_metrics"]
                  else None, "gain": gain}
    reason = ("accepted" if accepted else "holdout_rejected"
              if validation["status"] == "rejected" and noise_ok
              else "no_gain" if gain <= 0 else "within_noise")
    reference = best["per_class_metrics"] if winner else base.per_class
    train_counts = class_counts(r.query_class for r in selection)
    class_winners, skipped = _class_winners(candidates, reference, train_counts, guards)
    return {
        "metric": metric,
        "case_count": len(recorded),
        "class_counts": class_counts(r.query_class for r in recorded),
        "train_case_count": len(selection),
        "holdout_case_count": len(holdout),
        "train_class_counts": train_counts,
        "safeguards": guards.as_dict(),
        "committed": {"version": committed.version, "default": dict(committed.default),
                      "classes": {k: dict(v) for k, v in committed.classes.items()},
                      "report": committed.report, "metrics": base.selection,
                      "holdout_metrics": base.holdout, "per_class_metrics": base.per_class},
        "reranked": {"reranker": reranker_block(recorded),
                     "metrics": ir_metrics([cut(r, r.reranked) for r in selection]),
                     "holdout_metrics": ir_metrics([cut(r, r.reranked) for r in holdout])
                     if holdout else None},
        "candidates": candidates,
        "winner": winner,
        "outcome": reason,
        "validation": validation,
        "noise": noise,
        "class_winners": class_winners,
        "class_winners_skipped": skipped,
    }
