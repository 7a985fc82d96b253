"""Switch benchmark: a full embedding-model switch over N records of about 40 words (and
ragplate's docs/) against the raw embedding time of the same texts, plus the rework a
SIGKILL costs (chunks rewritten, texts embedded twice) once the switch is resumed.

It runs in a scratch RAGPLATE_HOME with its own PostgreSQL and Prefect server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ragplate.bench.scratch import scratch_home, write_figures

console = Console()


def _texts(runtime: Any, records: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The texts a switch embeds: one per record, and every documentation chunk."""
    from ragplate.tasks.indexing.read import developer_corpus, read_sources, user_corpus
    from ragplate.tasks.indexing.split import make_splitter, split_documents
    from ragplate.tasks.records.texts import compose_text

    documents = read_sources(runtime.settings.all_roots(),
                             max_bytes=runtime.settings.docs_max_file_bytes)
    splitter = make_splitter(runtime.settings)
    chunks = split_documents(developer_corpus(documents), splitter)
    chunks += split_documents(user_corpus(documents, runtime.policy), splitter)
    return [compose_text(r) for r in records], [c.text_for_embedding for c in chunks]


def _raw(runtime: Any, key: str, records: list[str], docs: list[str]) -> float:
    """Seconds the target's embedder alone takes for the same texts, in the same batches."""
    from ragplate.catalog.profiles import get_profile

    embedder = runtime.embedder(get_profile(key))
    started = time.perf_counter()
    size = runtime.settings.index_chunk_size
    for i in range(0, len(records), size):
        embedder.embed_passages(records[i:i + size])
    size = runtime.settings.index_batch_chunks
    for i in range(0, len(docs), size):
        embedder.embed_passages(docs[i:i + size])
    return time.perf_counter() - started


def _load(runtime: Any, pairs: list[tuple[str, str]], key: str, batch: int = 64) -> None:
    """Published ``cms.contents`` records (one English translation each) and their
    vectors of ``key``; the HNSW index is built once at the end."""
    from ragplate.catalog.profiles import get_profile
    from ragplate.tasks.records.content import load_published

    profile = get_profile(key)
    load_published(runtime.engine, pairs, profile=profile, embedder=runtime.embedder(profile),
                   batch=batch)


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragplate", *args], env={**os.environ, **env},
                          capture_output=True, text=True, check=False)


def _killed_and_resumed(runtime: Any, target: str, phase: str, point: int) -> dict[str, Any]:
    """Switch to ``target`` in a subprocess killed at the ``point``-th checkpoint of
    ``phase``, resume it, and measure what was done twice."""
    from ragplate.infra.switch_state import read_state

    started = time.perf_counter()
    killed = _cli("embeddings", "switch", target, "--yes",
                  RAGPLATE_SWITCH_FAULTS=f"kill:{phase}:{point}")
    at_kill = read_state(runtime.engine)
    if at_kill.status != "idle" or at_kill.prune_pending:
        resumed = _cli("embeddings", "switch", "--resume")
        if resumed.returncode != 0:
            raise RuntimeError(f"resume failed: {resumed.stderr[-2000:]}")
    last = read_state(runtime.engine).last or {}
    return {
        "phase": phase, "checkpoint": point,
        "killed": killed.returncode == -signal.SIGKILL, "stopped_in_phase": at_kill.phase,
        "chunks_rewritten": last.get("chunks_rewritten"),
        "texts_embedded_before_kill": at_kill.records_embedded,
        "texts_embedded_after_resume": last.get("records_embedded"),
        "texts_total": at_kill.texts_total,
        "seconds_with_resume": round(time.perf_counter() - started, 2),
    }


def _timed_switch(profile: str) -> dict[str, Any]:
    """One switch to ``profile`` through the flow: its wall time and phase times."""
    from ragplate.flows.embeddings_switch import embeddings_switch

    started = time.perf_counter()
    summary = embeddings_switch(action="start", profile=profile)
    return {"outcome": summary["outcome"], "switch_seconds":
            round(time.perf_counter() - started, 2),
            "phase_seconds": summary.get("phase_seconds")}


def _elasticsearch_pass(scratch: Path, profile: str) -> dict[str, Any]:
    """On Elasticsearch, in the same installation: index the documentation of the serving
    model, then switch to ``profile``."""
    from ragplate.bench.engines import search_engine
    from ragplate.flows.index_docs import index_rag_docs

    with search_engine("elasticsearch", scratch) as label:
        started = time.perf_counter()
        index_rag_docs(profile="all")
        indexed = time.perf_counter() - started
        return {"engine": label, "index_docs_seconds": round(indexed, 2),
                "target": profile, **_timed_switch(profile)}


def run(*, records: int, output: Path, source: str, target: str, store: str = "pgvector",
        rework: bool = True) -> dict[str, Any]:
    """Run the benchmark and write the figures to ``output``. With
    ``store="elasticsearch"`` a switch back to ``source`` is timed on Elasticsearch in the
    same run, beside pgvector's; ``rework=False`` leaves out the killed-and-resumed
    switches."""
    from ragplate.flows.embeddings_switch import embeddings_switch
    from ragplate.infra import prefect_server, settings_store
    from ragplate.infra.runtime import Runtime
    from ragplate.infra.switch_state import read_state
    from ragplate.tasks.records.demo import demo_paragraphs, demo_records
    from ragplate.tasks.switch.indexes import entity_chunks, rag_chunks

    with scratch_home("ragplate-bench-switch-") as (scratch, settings):
        runtime = Runtime(settings)
        with runtime.engine.begin() as conn:
            settings_store.set_active_profile(conn, source)
        pairs = demo_records(records, demo_paragraphs(min_words=30, max_words=50))
        _load(runtime, pairs, source)
        with prefect_server.prefect_api(settings) as url:
            os.environ["PREFECT_API_URL"] = url
            from ragplate.flows.index_docs import index_rag_docs

            index_rag_docs(profile="all")
            record_texts, doc_texts = _texts(runtime, pairs)
            started = time.perf_counter()
            summary = embeddings_switch(action="start", profile=target)
            wall = time.perf_counter() - started
            last = read_state(runtime.engine).last or {}
            raw = _raw(runtime, target, record_texts, doc_texts)
            # Back to the source model, killed halfway through a phase, then resumed. In
            # the indexes phase the kill lands after a chunk's writes and before they are
            # recorded (the worst point: that chunk is written again).
            batches = -(-len(record_texts) // settings.index_chunk_size)
            chunks = len(entity_chunks(runtime)) + len(rag_chunks(runtime))
            kills = [_killed_and_resumed(runtime, source, "indexes", 2 + 3 * (chunks // 2) + 2),
                     _killed_and_resumed(runtime, target, "embeddings", 1 + batches)
                     ] if rework else []
            elastic = (_elasticsearch_pass(scratch, source) if store == "elasticsearch"
                       else None)
        words = sum(len(t.split()) for t in record_texts) / max(1, len(record_texts))
        figures = {
            "records": records, "words_per_record": round(words, 1),
            "documentation_chunks": len(doc_texts), "source": source, "target": target,
            "outcome": summary["outcome"], "gate": last.get("gate"),
            "switch_seconds": round(wall, 2), "phase_seconds": summary.get("phase_seconds"),
            "raw_embedding_seconds": round(raw, 2),
            "switch_to_raw_ratio": round(wall / raw, 3), "ratio_goal": 1.2,
            "rework_after_kill": kills, "rework_goal_chunks": 1,
        }
        if elastic is not None:
            figures["stores"] = {
                "pgvector": {"engine": "pgvector", "target": target, "outcome":
                             summary["outcome"], "switch_seconds": round(wall, 2),
                             "phase_seconds": summary.get("phase_seconds")},
                "elasticsearch": elastic}
    write_figures(output, figures)
    _print(figures)
    return figures


def _print(f: dict[str, Any]) -> None:
    table = Table(title=f"switch benchmark ({f['records']} records, {f['source']} -> "
                  f"{f['target']})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [("switch wall s", f["switch_seconds"]), ("raw embedding s",
                                                      f["raw_embedding_seconds"]),
            ("switch / raw (goal <= 1.2)", f["switch_to_raw_ratio"]),
            ("documentation chunks", f["documentation_chunks"])]
    for kill in f["rework_after_kill"]:
        rows.append((f"kill in {kill['phase']}: chunks rewritten (goal <= 1)",
                     kill["chunks_rewritten"]))
        rows.append((f"kill in {kill['phase']}: texts embedded before / after",
                     f"{kill['texts_embedded_before_kill']} / "
                     f"{kill['texts_embedded_after_resume']}"))
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    if "stores" in f:
        _print_stores(f["stores"])


def _print_stores(stores: dict[str, Any]) -> None:
    """One switch per store, side by side."""
    table = Table(title="a switch per store (same records and docs, same run)")
    table.add_column("figure")
    for figures in stores.values():
        table.add_column(figures["engine"], justify="right")
    table.add_row("switched to", *(f["target"] for f in stores.values()))
    table.add_row("switch wall s", *(str(f["switch_seconds"]) for f in stores.values()))
    phases = next(iter(stores.values()))["phase_seconds"] or {}
    for phase in phases:
        table.add_row(f"  {phase} s", *(str((f["phase_seconds"] or {}).get(phase))
                                         for f in stores.values()))
    console.print(table)
