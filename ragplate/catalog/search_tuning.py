"""The retrieval tuning profile: fusion parameters for application search, overall and per
query class, applied when ``RAGPLATE_SEARCH_ADAPTIVE_TUNING`` is on.

It is not learning: nothing reads user behaviour and two identical requests get identical
rankings. The class set (``classes[<query class>]``) overrides ``default``; a parameter
left out keeps the planner's value for that query (the L0 constants of
:mod:`ragplate.tasks.retrieval.fusion`). Parameters: ``keyword_weight``, ``vector_weight``,
``hybrid_weight``, ``rrf_weight`` and ``agreement_boost`` (numbers in ``[0, 1]``) and
``rrf_k`` (an integer >= 1); a set naming all three weights keeps one positive.

The shipped profile restates the L0 constants. Values come from ``ragplate
tune-retrieval``, never from intuition: a profile with measured values must cite, in
``report``, a tuning report under ``docs/evaluations/retrieval-tuning/`` that passed the
held-out validation and the noise check and holds the same ``default`` and ``classes``
(:func:`committed_profile_problems`, enforced by a test). The runtime ignores ``report``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

QueryClass = Literal["identifier", "short_keyword", "multi_term", "natural_language"]
QUERY_CLASSES: tuple[QueryClass, ...] = ("identifier", "short_keyword", "multi_term",
                                         "natural_language")
#: The fusion parameters a profile (or a tuning candidate) may set.
PARAM_NAMES: tuple[str, ...] = ("keyword_weight", "vector_weight", "hybrid_weight", "rrf_k",
                                "rrf_weight", "agreement_boost")
WEIGHT_NAMES: tuple[str, ...] = PARAM_NAMES[:3]
#: Ranking parameters of the spec's profile that a tuning run cannot measure: the rerank
#: blend is applied to reranker scores, which a replay of recorded rankings does not have.
RANKING_PARAMS: tuple[str, ...] = ("rerank_top_k", "rerank_blend")
#: The L0 values the shipped profile restates (the weights stay the planner's).
L0_DEFAULT: dict[str, float | int] = {"rrf_k": 60, "rrf_weight": 0.25, "agreement_boost": 0.15}
REPORTS_DIR = "docs/evaluations/retrieval-tuning"

ParamSet = dict[str, float | int]


def check_params(params: Any, where: str) -> ParamSet:
    """``params`` as a validated partial parameter set; ``ValueError`` naming ``where``
    and the parameter otherwise."""
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: a parameter set is a JSON object")
    checked: ParamSet = {}
    for name, value in params.items():
        if name in RANKING_PARAMS:
            raise ValueError(f"{where}: {name} is a ranking parameter and cannot be tuned "
                             "from replayed rankings (the reranked ordering is reported "
                             "separately)")
        if name not in PARAM_NAMES:
            raise ValueError(f"{where}: unknown parameter {name!r} (allowed: "
                             f"{', '.join(PARAM_NAMES)})")
        if name == "rrf_k":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{where}: rrf_k must be an integer >= 1")
            checked[name] = value
            continue
        if (not isinstance(value, int | float) or isinstance(value, bool)
                or not math.isfinite(value) or not 0.0 <= value <= 1.0):
            raise ValueError(f"{where}: {name} must be a number in [0, 1]")
        checked[name] = float(value)
    if all(w in checked for w in WEIGHT_NAMES) and not any(checked[w] > 0 for w in WEIGHT_NAMES):
        raise ValueError(f"{where}: the three weights are all zero (keep one positive)")
    return checked


class TuningProfile(BaseModel):
    """A retrieval tuning profile (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(ge=1, description="Bumped with every change of the values.")
    default: ParamSet = Field(default_factory=dict)
    classes: dict[QueryClass, ParamSet] = Field(default_factory=dict)
    report: str | None = Field(default=None, description="The tuning report the values come "
                               f"from, relative to the project ({REPORTS_DIR}/…).")

    # "before": pydantic would otherwise turn true into 1 before the check sees it.
    @field_validator("default", mode="before")
    @classmethod
    def _default(cls, value: Any) -> ParamSet:
        return check_params(value, "default")

    @field_validator("classes", mode="before")
    @classmethod
    def _classes(cls, value: Any) -> dict[str, ParamSet]:
        if not isinstance(value, Mapping):
            raise ValueError("classes: a JSON object of parameter sets by query class")
        return {name: check_params(params, f"classes.{name}") for name, params in value.items()}

    def overrides(self, query_class: str) -> ParamSet:
        """What this profile sets for a query of ``query_class``: ``default``, then the
        class set over it."""
        return {**self.default, **self.classes.get(query_class, {})}  # type: ignore[call-overload]

    @property
    def restates_l0(self) -> bool:
        """True when the profile holds nothing but the L0 constants (no measured value)."""
        return not self.classes and all(
            name in L0_DEFAULT and float(value) == float(L0_DEFAULT[name])
            for name, value in self.default.items())


#: The committed profile. Paste the block ``ragplate tune-retrieval`` prints here, bump
#: ``version`` and cite the report (copied under docs/evaluations/retrieval-tuning/).
PROFILE = TuningProfile(
    version=1,
    default={"rrf_k": 60, "rrf_weight": 0.25, "agreement_boost": 0.15},
    classes={},
    report=None,
)


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return set(a) == set(b) and all(float(a[k]) == float(b[k]) for k in a)


def committed_profile_problems(profile: TuningProfile, project: Path) -> list[str]:
    """Why ``profile`` may not be committed (empty: it may). A profile restating the L0
    constants is exempt; any other must cite a report under :data:`REPORTS_DIR` that
    passed the held-out validation and the noise check and holds the same values."""
    if profile.restates_l0:
        return []
    if not profile.report:
        return ["the profile holds measured values but cites no tuning report"]
    if not profile.report.startswith(REPORTS_DIR + "/") or ".." in Path(profile.report).parts:
        return [f"report {profile.report!r} is not under {REPORTS_DIR}/"]
    path = project / profile.report
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"report {profile.report!r} cannot be read ({exc.__class__.__name__})"]
    problems = []
    validation = (report.get("validation") or {}).get("status")
    noise = (report.get("noise") or {}).get("status")
    if validation != "passed":
        problems.append(f"report {profile.report!r}: held-out validation is {validation!r}, "
                        "not 'passed'")
    if noise != "passed":
        problems.append(f"report {profile.report!r}: noise check is {noise!r}, not 'passed'")
    winner = report.get("winner") or {}
    if not _same(profile.default, winner.get("params") or {}):
        problems.append(f"report {profile.report!r}: default differs from the report's winner")
    classes = {c["class"]: c["params"] for c in report.get("class_winners") or []}
    if set(profile.classes) != set(classes) or not all(
            _same(profile.classes[name], classes[name]) for name in profile.classes):
        problems.append(f"report {profile.report!r}: classes differ from the report's "
                        "class_winners")
    return problems
