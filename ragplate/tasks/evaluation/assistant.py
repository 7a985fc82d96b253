"""Level-1 assistant evaluation: every case through the real answer path, scored.

Each case is one message of a person with the case's locale (no tenant, no permission)
in the case's module, answered by :func:`ragplate.tasks.assistant.respond.answer_turn` —
respond() without its final insert — with the profile ``in_app``, the fixture corpus
(:class:`~ragplate.tasks.evaluation.assistant_fixtures.FixtureSources`) and the case's
scripted model. Nothing is stored: an evaluation leaves no conversation in the database,
and needs none. The guardrails read the intent model of the default embedding model
(:data:`~ragplate.catalog.settings.DEFAULT_PROFILE`), which also embeds the fixture,
whatever profile serves; latency is not measured, so the same code gives the same report.

The report holds aggregates, denominators and case ids only (no query, no answer text).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragplate.catalog.assistant import compile_policy
from ragplate.catalog.assistant_datasets import AssistantCase, AssistantDataset
from ragplate.catalog.people import Person
from ragplate.catalog.profiles import get_profile
from ragplate.catalog.settings import DEFAULT_PROFILE, PROJECT_ROOT, Settings
from ragplate.infra import intent_models
from ragplate.tasks.assistant.guard import RememberingEmbedder
from ragplate.tasks.assistant.output_policy import check_output
from ragplate.tasks.assistant.respond import answer_turn
from ragplate.tasks.evaluation.assistant_fixtures import (
    FIXTURE_MIN_SIMILARITY,
    FixtureSources,
    ScriptedCompletion,
)
from ragplate.tasks.evaluation.assistant_metrics import (
    DENOMINATORS,
    AssistantOutcome,
    assistant_metrics,
    measured,
)
from ragplate.tasks.evaluation.dataset_files import LoadedDataset
from ragplate.tasks.evaluation.pages import html_table, render_html

if TYPE_CHECKING:
    from ragplate.infra.runtime import Runtime

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
PROFILE = "in_app"
#: The committed corpus the cases are answered from (invented user pages).
ASSISTANT_CORPUS = PROJECT_ROOT / "datasets" / "fixtures" / "assistant"
_MARKER = re.compile(r"\[(\d+)\]")


#: The settings the answer path reads, held at their shipped defaults during an evaluation:
#: an operator's configuration never moves a baseline.
FIXED_SETTINGS = ("assistant_max_documents", "assistant_min_similarity",
                  "assistant_min_coverage", "assistant_min_weighted_coverage",
                  "assistant_fallback_locales", "format_citations", "guardrails_input_max_chars",
                  "guardrails_output_max_chars", "guardrails_policy_version",
                  "policy_classification_version")
#: A home that does not exist: the guardrails then read the intent model bundled for the
#: default embedding model, not one an operator trained (nothing in the answer path writes
#: to the home, and nothing here opens the database).
NO_HOME = Path("/nonexistent/ragplate-assistant-evaluation")


def evaluation_runtime(settings: Settings) -> Runtime:
    """A runtime for the evaluation: ``settings`` with :data:`FIXED_SETTINGS` at their
    defaults and :data:`NO_HOME`."""
    from ragplate.infra.runtime import Runtime

    fixed: dict[str, Any] = {name: Settings.model_fields[name].get_default(
        call_default_factory=True) for name in FIXED_SETTINGS}
    return Runtime(settings.model_copy(update={**fixed, "home": NO_HOME}))


def intent_model_digest() -> str:
    """SHA-256 of the bundled intent model of the default embedding model."""
    path = intent_models.BUNDLED / intent_models.file_name(DEFAULT_PROFILE)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixture_sources(runtime: Runtime, corpus: Path | None = None) -> FixtureSources:
    """The fixture corpus (default :data:`ASSISTANT_CORPUS`), with the default model's
    embedder for the guardrails."""
    embedder = RememberingEmbedder(runtime.embedder(get_profile(DEFAULT_PROFILE)))
    return FixtureSources(embedder, corpus or ASSISTANT_CORPUS, runtime.policy)


def _context(case: AssistantCase) -> dict[str, Any] | None:
    context: dict[str, Any] = {}
    if case.module_key:
        context["module"] = case.module_key
    if case.page is not None:
        context["page"] = case.page
    return context or None


def _valid(text: str, status: str, citations: int, max_chars: int) -> bool:
    """The stored text passes the output policy, and an answer's markers name citations."""
    if not check_output(text, end_user=True, max_chars=max_chars).allowed:
        return False
    numbers = [int(n) for n in _MARKER.findall(text)]
    return status != "answered" or all(1 <= n <= citations for n in numbers)


def run_case(runtime: Runtime, case: AssistantCase, sources: FixtureSources
             ) -> AssistantOutcome:
    """One case through the answer path; a failure is the outcome ``unavailable``."""
    failed = AssistantOutcome(
        case_id=case.id, locale=case.locale, slices=tuple(case.slices),
        expected_surface=case.expected_surface,
        expected_citations=tuple(case.expected_citations),
        expected_proposals=case.expected_proposals, status=None)
    person = Person(id=0, name="evaluation", locale=case.locale)
    try:
        turn = answer_turn(runtime, person=person, text_in=case.query, context=_context(case),
                           profile=PROFILE, chat=ScriptedCompletion(case), sources=sources)
    except Exception as exc:  # fail closed: a failure is a measured outcome
        log.warning("case %s: respond() failed (%s)", case.id, type(exc).__name__)
        return failed
    policy = compile_policy(PROFILE, runtime.settings)
    return replace(
        failed, status=turn.status,
        cited=tuple(c["source_label"] for c in turn.citations),
        output_valid=_valid(turn.text, turn.status, len(turn.citations),
                            policy.max_output_chars),
        proposals=len(turn.metadata.get("proposals", [])))


def run_cases(runtime: Runtime, dataset: AssistantDataset, sources: FixtureSources
              ) -> list[AssistantOutcome]:
    """Every case of ``dataset``, in order."""
    return [run_case(runtime, case, sources) for case in dataset.cases]


def _groups(outcomes: Sequence[AssistantOutcome], dataset: AssistantDataset
            ) -> dict[str, dict[str, list[AssistantOutcome]]]:
    modules = {c.id: c.module_key or "generic" for c in dataset.cases}
    groups: dict[str, dict[str, list[AssistantOutcome]]] = {"module": {}, "locale": {},
                                                            "category": {}}
    for o in outcomes:
        groups["module"].setdefault(modules[o.case_id], []).append(o)
        groups["locale"].setdefault(o.locale, []).append(o)
        for tag in o.slices:
            groups["category"].setdefault(tag, []).append(o)
    return groups


def corpus_digest(corpus: Path) -> str:
    """SHA-256 over the corpus's Markdown files (their relative paths and bytes, in path
    order; hidden files left out): what is indexed, not an editor's backup beside it."""
    digest = hashlib.sha256()
    files = (p for p in corpus.rglob("*.md") if p.is_file()
             and not any(part.startswith(".") for part in p.relative_to(corpus).parts))
    for path in sorted(files):
        digest.update(path.relative_to(corpus).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _corpus_name(corpus: Path) -> str:
    real = corpus.resolve()
    for root in (PROJECT_ROOT, PROJECT_ROOT.parent):
        if real.is_relative_to(root.resolve()):
            return real.relative_to(root.resolve()).as_posix()
    return real.name


def build_report(loaded: LoadedDataset[AssistantDataset], outcomes: list[AssistantOutcome],
                 sources: FixtureSources, corpus: Path, policy_version: str) -> dict[str, Any]:
    """The report: metrics, their denominators, the slices (module, locale, case tag, keys
    sorted), then the context it was measured in."""
    dataset = loaded.data
    groups = _groups(outcomes, dataset)
    return {
        "schema_version": SCHEMA_VERSION,
        "module": dataset.module,
        "level": 1,
        "dataset_version": dataset.version,
        "corpus_revision": dataset.corpus_revision,
        "data_classification": dataset.data_classification,
        "case_count": len(outcomes),
        "metrics": assistant_metrics(outcomes),
        "measured": measured(outcomes),
        "slices": {name: {key: assistant_metrics(group[key]) for key in sorted(group)}
                   for name, group in groups.items()},
        "completion": {"model": "scripted", "profile": PROFILE},
        "retrieval": {"corpus": _corpus_name(corpus), "corpus_sha256": corpus_digest(corpus),
                      "embedding": DEFAULT_PROFILE,
                      "min_similarity": FIXTURE_MIN_SIMILARITY,
                      "chunks": sources.store.count()},
        "guardrails": {"policy_version": policy_version,
                       "intent_model_sha256": intent_model_digest()},
        "dataset": {"sha256": loaded.sha256},
    }


def report_title(report: dict[str, Any]) -> str:
    """The title of a report's page and artifacts."""
    return f"evaluate-assistant: {report['module']} (Level 1, scripted model)"


def failing_rows(outcomes: Sequence[AssistantOutcome]) -> list[list[str]]:
    """A row per case whose surface or citations are wrong, or whose message is invalid."""
    rows = []
    for o in outcomes:
        missing = sorted(set(o.expected_citations) - set(o.cited))
        if o.surface == o.expected_surface and not missing and o.output_valid:
            continue
        rows.append([o.case_id, o.expected_surface, o.surface or "unavailable",
                     o.status or "-", ", ".join(missing) or "-",
                     "yes" if o.output_valid else "no"])
    return rows


def report_page(report: dict[str, Any], outcomes: Sequence[AssistantOutcome]) -> str:
    """The HTML page: the figures, and the failing cases by id."""
    rows = failing_rows(outcomes)
    section = "<h2>Failing cases</h2>" + (html_table(
        ["case", "expected surface", "surface", "status", "missing citations",
         "valid output"], rows) if rows else "<p>None.</p>")
    legend = "<h2>Denominators</h2>" + html_table(
        ["metric", "measured on", "cases"],
        [[k, v, report["measured"][k]] for k, v in DENOMINATORS.items()])
    return render_html(report, title=report_title(report), sections=[section, legend])

