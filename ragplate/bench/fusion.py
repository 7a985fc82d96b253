"""Fusion-ceiling benchmark: on a corpus indexed in a scratch home, the MRR of the vector,
keyword and hybrid documentation rankings per dataset, beside what any fusion of the
vector and keyword rankings could reach at best (:mod:`ragplate.tasks.tuning.ceiling`)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ragplate.bench.scratch import scratch_home, write_figures

console = Console()

#: Chunks read from each ranking for the ceiling: deep enough to hold every source of a
#: documentation corpus of a few thousand chunks.
CEILING_DEPTH = 1000

COLUMNS = ("vector", "keyword", "hybrid", "best_single", "fusion_ceiling")

#: The weighted-RRF grid searched on the cases themselves (an optimistic figure: tuned
#: on what it is measured on).
RRF_KS = (1, 10, 30, 60, 100, 200, 1000)
VECTOR_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(1, 10))


def _labels(hits: Sequence[Any]) -> list[str]:
    return list(dict.fromkeys(hit.source for hit in hits))


def case_rankings(case: Any, *, store: Any, embedder: Any) -> tuple[list[str], list[str]]:
    """The vector and keyword rankings of source labels for one case, deep."""
    from ragplate.tasks.retrieval.documentation import keyword_store

    vector = _labels(store.search(embedder.embed_query(case.query), top_k=CEILING_DEPTH))
    keyword = _labels(keyword_store(store).keyword_search(case.query, top_k=CEILING_DEPTH,
                                                          filters=None, label_key=None))
    return vector, keyword


def case_ranks(case: Any, vector: list[str], keyword: list[str], *, store: Any,
               embedder: Any) -> dict[str, int | None]:
    """The rank of the first expected label per column for one dataset case."""
    from ragplate.tasks.retrieval.documentation import retrieve_developer
    from ragplate.tasks.tuning.ceiling import best_single_rank, ceiling_rank, first_relevant_rank

    relevant = set(case.expected_source_labels)
    hybrid = [h.source_label for h in retrieve_developer(
        case.query, store=store, embedder=embedder, top_k=case.top_k, strategy="hybrid")]
    return {
        "vector": first_relevant_rank(vector, relevant),
        "keyword": first_relevant_rank(keyword, relevant),
        "hybrid": first_relevant_rank(hybrid, relevant),
        "best_single": best_single_rank([vector, keyword], relevant),
        "fusion_ceiling": ceiling_rank([vector, keyword], relevant),
    }


def summarize(ranks: Sequence[tuple[int, dict[str, int | None]]]) -> dict[str, float]:
    """MRR@k per column over ``(k, ranks)`` of the cases with expected labels."""
    from ragplate.tasks.evaluation.metrics import mean
    from ragplate.tasks.tuning.ceiling import reciprocal_at

    return {column: round(mean([reciprocal_at(r[column], k) for k, r in ranks]), 4)
            for column in COLUMNS}


def best_rrf(cases: Sequence[tuple[Any, list[str], list[str]]]) -> dict[str, float]:
    """The weighted RRF of the grid with the best MRR@k on ``cases`` (case, vector,
    keyword): its ``k``, vector weight and MRR."""
    from ragplate.tasks.evaluation.metrics import mean
    from ragplate.tasks.tuning.ceiling import first_relevant_rank, reciprocal_at, weighted_rrf

    best = {"mrr": -1.0, "k": 0.0, "vector_weight": 0.0}
    for k in RRF_KS:
        for weight in VECTOR_WEIGHTS:
            score = mean([reciprocal_at(first_relevant_rank(
                weighted_rrf([vector, keyword], [weight, 1 - weight], k),
                case.expected_source_labels), case.top_k) for case, vector, keyword in cases])
            if score > best["mrr"] + 1e-12:
                best = {"mrr": round(score, 4), "k": k, "vector_weight": weight}
    return best


def run(*, corpus: Path, datasets: Sequence[Path], output: Path) -> dict[str, Any]:
    """Index ``corpus`` (prefix '') in a scratch home, measure every dataset, write the
    figures to ``output`` and print them."""
    from ragplate.catalog.datasets import DocumentationDataset
    from ragplate.flows.index_docs import index_rag_docs
    from ragplate.infra import prefect_server
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.evaluation.dataset_files import read_dataset

    loaded = [read_dataset(path, DocumentationDataset) for path in datasets]
    with scratch_home("ragplate-bench-fusion-") as (scratch, settings):
        work = scratch / "corpus"
        shutil.copytree(corpus, work)
        runtime = Runtime(settings)
        with prefect_server.prefect_api(settings):
            index_rag_docs(profile="developer", path=str(work), prefix="", full=True)
        profile = runtime.active_profile()
        store, embedder = runtime.store("developer", profile), runtime.embedder(profile)
        figures: dict[str, Any] = {"corpus": str(corpus), "model": profile.key,
                                   "depth_chunks": CEILING_DEPTH, "datasets": {}}
        for item in loaded:
            cases = [(case, *case_rankings(case, store=store, embedder=embedder))
                     for case in item.data.cases if case.expected_source_labels]
            ranks = {case.id: case_ranks(case, vector, keyword, store=store, embedder=embedder)
                     for case, vector, keyword in cases}
            figures["datasets"][item.path.name] = {
                "cases_scored": len(cases),
                "mrr": summarize([(case.top_k, ranks[case.id]) for case, _, _ in cases]),
                "rrf_tuned_on_cases": best_rrf(cases),
                "ranks": ranks,
            }
    write_figures(output, figures)
    _print(figures)
    return figures


ROWS = (
    ("vector", "vector"),
    ("keyword", "keyword"),
    ("hybrid (RRF, as served)", "hybrid"),
    ("weighted RRF tuned on the cases", None),
    ("better of the two, per case", "best_single"),
    ("fusion ceiling", "fusion_ceiling"),
)


def _print(figures: dict[str, Any]) -> None:
    table = Table(title=f"MRR@k, {figures['model']}")
    table.add_column("ranking")
    results = figures["datasets"]
    for name, result in results.items():
        table.add_column(f"{name.removesuffix('.json')} ({result['cases_scored']} cases)",
                         justify="right", overflow="fold")
    for title, key in ROWS:
        table.add_row(title, *(
            f"{r['mrr'][key]:.3f}" if key else f"{r['rrf_tuned_on_cases']['mrr']:.3f}"
            for r in results.values()))
    console.print(table)
    console.print("Tuned RRF: the best weighted RRF of the grid on these very cases. Better "
                  "of the two: vector or keyword, chosen per case knowing the answer. Fusion "
                  "ceiling: the best any fusion monotone in both rankings can do, even tuned "
                  "per case.")
