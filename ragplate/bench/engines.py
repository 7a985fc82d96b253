"""Which search engine a benchmark pass runs on: PostgreSQL with pgvector as configured, or
Elasticsearch: the cluster of ``RAGPLATE_ELASTICSEARCH_URL`` when one is set, else the
noida-db emulator started for the pass (and said to be one in every figure)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragplate.bench.scratch import restore_environment

STORES = ("pgvector", "elasticsearch")
_VARIABLES = ("RAGPLATE_ELASTICSEARCH_URL", "RAGPLATE_ELASTICSEARCH_INDEX_PREFIX",
              "RAGPLATE_VECTOR_STORE")


@contextmanager
def search_engine(store: str, scratch: Path) -> Iterator[str]:
    """Point this process (``RAGPLATE_*`` and the cached settings) at ``store`` for the
    block; yields the engine's label for the figures."""
    from ragplate.infra.elasticsearch.client import forget_clients
    from ragplate.infra.environment import get_settings
    from ragplate.infra.ports import free_port

    saved = {key: os.environ.get(key) for key in _VARIABLES}
    emulator = None
    try:
        if store == "pgvector":
            os.environ.pop("RAGPLATE_ELASTICSEARCH_URL", None)
            os.environ["RAGPLATE_VECTOR_STORE"] = "pgvector"
            label = "pgvector"
        else:
            os.environ.pop("RAGPLATE_VECTOR_STORE", None)
            if saved["RAGPLATE_ELASTICSEARCH_URL"]:
                label = "elasticsearch (cluster)"
            else:
                from ragplate.bench.es_emulator import start_emulator

                emulator = start_emulator(free_port(), parent=scratch)
                os.environ["RAGPLATE_ELASTICSEARCH_URL"] = emulator.url
                label = "elasticsearch (noida-db emulator)"
            os.environ.setdefault("RAGPLATE_ELASTICSEARCH_INDEX_PREFIX", "ragplatebench")
        get_settings.cache_clear()
        yield label
    finally:
        restore_environment(saved)
        get_settings.cache_clear()
        forget_clients()
        if emulator is not None:
            emulator.stop()
