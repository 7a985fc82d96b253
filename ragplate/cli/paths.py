"""Where the checkout keeps what commands default to (``docs/``, ``datasets/``).

The same paths as :data:`ragplate.catalog.settings.PROJECT_ROOT` and ``BUNDLED_DOCS``
(a test checks that they agree), known without importing the settings module: option
defaults are evaluated when the CLI loads, and pydantic-settings would then be paid by
every command, ``--help`` included.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_DOCS = PROJECT_ROOT / "docs"
