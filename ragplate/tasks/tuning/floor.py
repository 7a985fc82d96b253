"""``tune-floor``: the similarity floor (``RAGPLATE_MIN_SIMILARITY``) measured on a
documentation dataset, not guessed.

Each case is answered once without a floor and its hits' similarities are recorded; a
floor then keeps the hits whose similarity reaches it (exactly what retrieval does with
``min_score``, which filters the ranked hits), so every candidate is scored by replay.

- **Objective**: refusal accuracy on the no-answer cases (``expect_refusal``: nothing must
  come back), subject to hit@5 on the answered cases (those with expected labels) losing at
  most ``max_lost`` cases against no floor (default 0: it keeps hit@5).
- **Candidates**: midpoints between consecutive distinct recorded similarities (top hits
  and relevant hits), so a floor never sits on a measured value. Among equally good ones
  the middle of the longest run is chosen: the widest margin on both sides.
- **Hold-out**: a share of the cases (by the SHA-256 of their id, as ``tune-retrieval``)
  is kept out of the choice; on it, the floor must not lose more than ``max_lost``
  answered cases either, or it is ``rejected`` and no floor is recommended (``validation``
  is ``none`` when no floor was chosen, ``disabled`` at share 0, ``skipped`` when the
  hold-out part is empty). What the floor refuses there is reported beside it.
- **Nothing to keep**: when no answered case has a relevant hit in the top 5 without a
  floor (the index does not hold what the dataset expects), every floor "keeps hit@5" and
  the one refusing everything would win: no floor is measured (``reason`` ``no_hit``) and
  :func:`check_measured` refuses the run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ragplate.catalog.datasets import DocumentationCase, DocumentationDataset
from ragplate.catalog.errors import FloorNotMeasurableError, InvalidInputError
from ragplate.tasks.evaluation.dataset_files import held_out
from ragplate.tasks.evaluation.metrics import first_rank, ratio

HIT_DEPTH = 5


@dataclass(frozen=True)
class FloorCase:
    """One case's unfloored hits, ``(label, similarity)`` in rank order."""

    case_id: str
    relevant: tuple[str, ...]
    expect_refusal: bool
    hits: tuple[tuple[str, float], ...]


def record(dataset: DocumentationDataset,
           answer: Callable[[DocumentationCase], Sequence[tuple[str, float]]]) -> list[FloorCase]:
    """Answer every case once without a floor (``answer`` gives ``(label, similarity)``)."""
    return [FloorCase(case.id, tuple(case.expected_source_labels), case.expect_refusal,
                      tuple((str(label), float(sim)) for label, sim in answer(case)))
            for case in dataset.cases]


def kept(case: FloorCase, floor: float | None) -> list[str]:
    """The labels ``floor`` keeps, in rank order."""
    return [label for label, sim in case.hits if floor is None or sim >= floor]


def figures(cases: Sequence[FloorCase], floor: float | None) -> dict[str, Any]:
    """Refusal accuracy on the no-answer cases and hit@5 on the answered ones."""
    refusals = [c for c in cases if c.expect_refusal]
    answered = [c for c in cases if c.relevant]
    refused = sum(1 for c in refusals if not kept(c, floor))
    hits = 0
    for c in answered:
        rank = first_rank(kept(c, floor), c.relevant)
        hits += 1 if rank is not None and rank <= HIT_DEPTH else 0
    return {"floor": floor, "no_answer_cases": len(refusals), "refused": refused,
            "refusal_accuracy": ratio(refused, len(refusals)),
            "answered_cases": len(answered), "hits_at_5": hits,
            "hit_at_5": ratio(hits, len(answered))}


def candidates(cases: Sequence[FloorCase]) -> list[float]:
    """Midpoints between consecutive distinct similarities of the cases' hits."""
    values = sorted({round(sim, 6) for c in cases for _, sim in c.hits})
    return [round((a + b) / 2, 6) for a, b in itertools.pairwise(values)]


def choose(cases: Sequence[FloorCase], max_lost: int = 0) -> float | None:
    """The floor of best refusal accuracy that loses at most ``max_lost`` answered hits,
    then of most hits kept (the middle of the longest run of candidates equal on both);
    ``None`` when no candidate refuses more than no floor within that budget."""
    base = figures(cases, None)
    floors = candidates(cases)
    scores: list[tuple[int, int] | None] = []
    for floor in floors:
        measured = figures(cases, floor)
        allowed = base["hits_at_5"] - measured["hits_at_5"] <= max_lost
        scores.append((measured["refused"], measured["hits_at_5"]) if allowed else None)
    best = max((s for s in scores if s is not None), default=None)
    if best is None or best[0] <= base["refused"]:
        return None
    runs: list[list[float]] = [[]]
    for floor, score in zip(floors, scores, strict=True):
        if score == best:
            runs[-1].append(floor)
        elif runs[-1]:
            runs.append([])
    longest = max(runs, key=len)  # the first of equally long runs: the lowest floor
    return longest[(len(longest) - 1) // 2]


def check_no_answer_cases(expect_refusal: Iterable[bool], where: str | None = None) -> None:
    """:class:`InvalidInputError` unless some case expects a refusal (of each case, whether
    it does): a floor is measured on questions the corpus does not answer. ``where`` (the
    dataset's path) starts the message when given."""
    if not any(expect_refusal):
        raise InvalidInputError(f"{_where(where)}the dataset has no case with expect_refusal: "
                                "a floor cannot be measured without questions the corpus "
                                "does not answer")


def check_answered_cases(expected_labels: Iterable[Sequence[str]],
                         where: str | None = None) -> None:
    """:class:`InvalidInputError` unless some case expects source labels (of each case,
    its ``expected_source_labels``): a floor must keep the answers, and without answered
    cases every floor would "keep hit@5", so none can be measured. Checked before any
    service starts, rather than after every case was retrieved."""
    if not any(expected_labels):
        raise InvalidInputError(f"{_where(where)}the dataset has no answered case (none with "
                                "expected_source_labels): a floor cannot be measured without "
                                "questions the corpus answers, whose hits it must keep")


def check_dataset(dataset: DocumentationDataset, where: str | None = None) -> None:
    """Both checks above on ``dataset``: without no-answer cases or without answered ones,
    no floor can be measured, so the run is refused before any retrieval."""
    check_no_answer_cases((case.expect_refusal for case in dataset.cases), where)
    check_answered_cases((case.expected_source_labels for case in dataset.cases), where)


def _where(where: str | None) -> str:
    return f"--dataset {where}: " if where else ""


def tune_floor(cases: Sequence[FloorCase], *, holdout: float = 0.3,
               max_lost: int = 0) -> dict[str, Any]:
    """Choose the floor on the selection part, check it on the hold-out part; the result
    (``floor`` ``None`` when none is recommended) with the figures of both parts."""
    if not 0.0 <= holdout < 1.0:
        raise InvalidInputError("--holdout: a share from 0 (disabled) to below 1")
    if max_lost < 0:
        raise InvalidInputError("--max-lost: 0 or more answered cases")
    check_no_answer_cases(c.expect_refusal for c in cases)
    check_answered_cases(c.relevant for c in cases)
    out = held_out([c.case_id for c in cases], holdout) if holdout else set()
    selection = [c for c in cases if c.case_id not in out]
    kept_out = [c for c in cases if c.case_id in out]
    no_hit = figures(cases, None)["hits_at_5"] == 0
    floor = None if no_hit else choose(selection, max_lost)
    validation = ("none" if floor is None else "disabled" if not holdout
                  else "skipped" if not kept_out else "accepted")
    if validation == "accepted":
        before, after = figures(kept_out, None), figures(kept_out, floor)
        if before["hits_at_5"] - after["hits_at_5"] > max_lost:
            validation = "rejected"
    recommended = None if floor is None or validation == "rejected" else floor
    reason = ("no_hit" if no_hit else "no_gain" if floor is None
              else "rejected" if recommended is None else None)
    return {
        "floor": recommended, "chosen_on_selection": floor, "validation": validation,
        "reason": reason, "holdout": holdout, "max_lost": max_lost,
        "selection": {"without": figures(selection, None),
                      "with": figures(selection, floor)},
        "holdout_part": {"without": figures(kept_out, None),
                         "with": figures(kept_out, floor)},
        "all": {"without": figures(cases, None), "with": figures(cases, floor)},
    }


def summary(result: dict[str, Any]) -> str:
    """The figures as Markdown, ending on the line to set (or why there is none)."""
    lines = ["| part | floor | refusal accuracy (no-answer) | hit@5 (answered) |",
             "|---|---|---|---|"]
    # With no floor chosen, "with" is "without": one row each, not the same row twice.
    states = ("without",) if result["chosen_on_selection"] is None else ("without", "with")
    for name, key in (("selection", "selection"), ("hold-out", "holdout_part"),
                      ("all", "all")):
        for state in states:
            f = result[key][state]
            shown = "none" if f["floor"] is None else f["floor"]
            lines.append(f"| {name} | {shown} | {f['refusal_accuracy']} "
                         f"({f['refused']}/{f['no_answer_cases']}) | {f['hit_at_5']} "
                         f"({f['hits_at_5']}/{f['answered_cases']}) |")
    lines.append("")
    if result["floor"] is not None:
        lines.append(f"hold-out validation: {result['validation']}")
        lines.append(f"RAGPLATE_MIN_SIMILARITY={result['floor']}")
    elif result.get("reason") == "no_hit":
        lines.append(f"no floor can be measured: {no_hit_reason(result)}; leave "
                     "RAGPLATE_MIN_SIMILARITY unset")
    elif result["chosen_on_selection"] is not None:
        lines.append(f"no floor recommended: {result['chosen_on_selection']} loses more than "
                     f"{result['max_lost']} answered case(s) on the hold-out part; leave "
                     "RAGPLATE_MIN_SIMILARITY unset")
    else:
        lines.append("no floor recommended: no floor refuses a no-answer case without losing "
                     f"more than {result['max_lost']} answered case(s); leave "
                     "RAGPLATE_MIN_SIMILARITY unset")
    return "\n".join(lines)


def log_line(result: dict[str, Any]) -> str:
    """The flow's one-line outcome: the floor to set and its figures over all cases, or
    no floor, and then whose figures they are (the rejected candidate's, or no floor's)."""
    head = f"tune-floor: floor {result['floor']} (validation {result['validation']}"
    if result["floor"] is not None:
        f = result["all"]["with"]
        return (f"{head}): refusal accuracy {f['refusal_accuracy']}, "
                f"hit@5 {f['hit_at_5']}")
    candidate = result["chosen_on_selection"]
    if candidate is not None:
        f = result["all"]["with"]
        whose = f"rejected candidate {candidate}"
    else:
        f = result["all"]["without"]
        whose = "without a floor"
    return (f"{head}, reason {result['reason']}): {whose}: refusal accuracy "
            f"{f['refusal_accuracy']}, hit@5 {f['hit_at_5']}")


def no_hit_reason(result: dict[str, Any]) -> str:
    """Why a ``no_hit`` result measures nothing, with the expected labels the index lacks
    (``absent_labels``, when the flow counted them)."""
    f = result["all"]["without"]
    reason = (f"without a floor no answered case has an expected source in the top "
              f"{HIT_DEPTH} (hit@5 {f['hits_at_5']}/{f['answered_cases']}), so there is no "
              "answer for a floor to keep")
    absent = result.get("absent_labels")
    if absent:
        reason += f"; {absent} expected source label(s) of the dataset are not in the index"
    return reason


def check_measured(result: dict[str, Any], *, index: str, dataset: str) -> None:
    """Refuse a result that measured no floor because the dataset does not fit the index
    (``reason`` ``no_hit``); the error carries the result, which the CLI still prints."""
    if result.get("reason") == "no_hit":
        raise FloorNotMeasurableError(
            f"tune-floor: dataset {dataset} does not fit the {index} index: "
            f"{no_hit_reason(result)}; index the corpus the dataset was written for "
            "(ragplate index-docs), or give a dataset of this index", result=result)
