"""How ``ragplate sources list`` shows a source's root."""

from __future__ import annotations

import pytest

from ragplate.cli.sources import _prefix


@pytest.mark.parametrize(("root", "shown"), [
    ("docs", "docs"),
    ("", "''"),  # indexed with --prefix '': a root, not a missing one
    (None, ""),  # indexed before roots were recorded
    ("[b]x", "\\[b]x"),  # not read as Rich markup
])
def test_the_root_column_shows_the_label_prefix(root: str | None, shown: str) -> None:
    assert _prefix(root) == shown
