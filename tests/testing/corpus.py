"""Tiny Markdown corpora written to temp dirs, and indexing through the plain steps.

The indexing helper runs the same steps the flow sequences (read, select, plan, split,
batch, embed, write) without Prefect, so tests of retrieval and of the API stay fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ragplate.catalog.documents import Document
from ragplate.catalog.settings import Settings
from ragplate.infra.models.base import Embedder
from ragplate.infra.runtime import Runtime
from ragplate.infra.stores.base import DocumentStore
from ragplate.tasks.indexing import index
from ragplate.tasks.indexing.read import read_sources, user_corpus
from ragplate.tasks.indexing.split import MarkdownAwareSplitter, split_documents

#: Explicit sizes, so tests do not depend on the splitter settings' defaults.
SPLITTER = MarkdownAwareSplitter(max_words=120, overlap_words=20, prepend_heading_breadcrumb=True)


def write_corpus(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (created) and return ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def index_documents(
    store: DocumentStore, embedder: Embedder, documents: list[Document], *, batch_chunks: int = 50
) -> int:
    """Embed and write ``documents`` (already corpus-selected) into ``store``; returns chunks."""
    plan = index.plan_index(store.index, documents, store.sources(), embedder.profile.key,
                            full=True)
    chunks = split_documents(plan.changed, SPLITTER)
    written = 0
    for batch in index.make_batches(plan.changed, chunks, embedder.profile.key,
                                    batch_chunks=batch_chunks):
        written += index.write_batch(store, batch, index.embed_batch(embedder, batch))
    index.delete_sources(store, plan.deleted)
    return written


#: Twelve one-paragraph developer pages (more than the top-k ceiling of 10).
DEVELOPER_FILES: dict[str, str] = {
    "guide/indexing.md": "---\nmodule: core\n---\n# Indexing\n\n## Incremental runs\n\n"
    "Unchanged sources are skipped by comparing their content hash.\n",
    "guide/retrieval.md": "# Retrieval\n\n## Developer search\n\n"
    "Developer retrieval returns the best chunk of each source with a score.\n",
    "guide/profiles.md": "# Embedding profiles\n\nA profile key is provider:service_model.\n",
    "ops/backup.md": "# Backups\n\nDump the PostgreSQL database every night.\n",
    "ops/upgrade.md": "# Upgrades\n\nRun the database migrations before starting the API.\n",
    "ops/logs.md": "# Logs\n\nThe embedded services write their logs under the home directory.\n",
    "api/health.md": "# Health endpoint\n\nGET /health reports the database and index counts.\n",
    "api/search.md": "# Search endpoint\n\nPOST /v1/docs/search answers a documentation query.\n",
    "cli/probe.md": "# Probe\n\nThe probe embeds a fixed text and measures its dimensions.\n",
    "cli/status.md": "# Status\n\nThe status command shows the services without starting them.\n",
    "faq/tenants.md": "# Tenants\n\nUser documents can be scoped to a list of tenants.\n",
    "faq/locales.md": "# Locales\n\nEach user document declares its locale, such as en or it.\n",
}


#: ragplate's own documentation, the corpus the assistant's HTTP tests answer from.
DOCS = Path(__file__).resolve().parents[2] / "docs"


def index_user_docs(settings: Settings, embedder: Embedder) -> Runtime:
    """Reset the user index of the serving profile and index :data:`DOCS` into it (the
    documents the audience policy admits); the runtime that reads it."""
    runtime = Runtime(settings)
    store = runtime.store("user", runtime.active_profile())
    store.reset()
    index_documents(store, embedder, user_corpus(read_sources({"": DOCS}), runtime.policy))
    return runtime
