"""The root of ``index-docs --path`` and the label prefix its sources get."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.indexing.targets import explicit_root


@pytest.mark.parametrize("prefix", ["../x", "a/../b", "./a", "a//b", "a\\b", "a\nb", ".."])
def test_a_prefix_that_reads_as_another_place_is_refused(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(InvalidInputError, match=r"^--prefix .*: a label prefix is names"):
        explicit_root(str(tmp_path), prefix)


@pytest.mark.parametrize(("prefix", "label"), [
    ("", ""), ("handbook", "handbook"), ("team/handbook", "team/handbook"),
    ("/handbook/", "handbook"), ("v1.2", "v1.2"), (None, "docs")])
def test_a_prefix_of_names_is_kept(tmp_path: Path, prefix: str | None, label: str) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    assert explicit_root(str(root), prefix) == {label: root}
