"""Shared CLI output helpers."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

console = Console()


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
