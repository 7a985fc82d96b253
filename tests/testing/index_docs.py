"""``ragplate index-docs`` as an operator runs it: a process of its own, on the session's
home and Prefect server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def index_docs_process(home: Path, api_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``ragplate index-docs ARGS`` with ``home`` and the server at ``api_url``."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k not in ("PREFECT_API_URL", "COLUMNS")}
    port = api_url.rstrip("/").removesuffix("/api").rsplit(":", 1)[1]
    environ.update(RAGPLATE_HOME=str(home), RAGPLATE_PREFECT_PORT=port)
    return subprocess.run([sys.executable, "-m", "ragplate", "index-docs", *args], env=environ,
                          capture_output=True, text=True, timeout=600, check=False)
