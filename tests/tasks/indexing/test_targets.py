"""The root of ``index-docs --path`` and the label prefix its sources get."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.indexing.targets import explicit_root


@pytest.mark.parametrize("prefix", ["../x", "a/../b", "./a", "a//b", "a\\b", ".."])
def test_a_prefix_that_reads_as_another_place_is_refused(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(InvalidInputError, match=r"^--prefix .*: a label prefix is names"):
        explicit_root(str(tmp_path), prefix)


@pytest.mark.parametrize(("prefix", "problem"), [
    ("a\nb", "no control character"), ("x\x1b[31my", "no control character"),
    (" ", "neither begins nor ends with a space"), ("a /b", "neither begins nor ends"),
    (" handbook", "neither begins nor ends")])
def test_a_prefix_that_cannot_be_typed_back_is_refused(tmp_path: Path, prefix: str,
                                                       problem: str) -> None:
    # "sources remove ' /g.md'" could never name what " " labelled.
    with pytest.raises(InvalidInputError, match=rf"^--prefix .*: .*{problem}"):
        explicit_root(str(tmp_path), prefix)


@pytest.mark.parametrize("prefix", ["../x", "x\x1b[31my", " ", "x/", "a/./b"])
def test_a_configured_root_obeys_the_same_rule(prefix: str) -> None:
    from ragplate.catalog.settings import Settings

    with pytest.raises(ValueError, match=r"docs_roots[\s\S]*prefix"):
        Settings(docs_roots={prefix: Path("/tmp")})
    # Names with inner spaces, like a directory's, are fine.
    assert Settings(docs_roots={"team docs": Path("/tmp")}).docs_roots


@pytest.mark.parametrize(("prefix", "label"), [
    ("", ""), ("handbook", "handbook"), ("team/handbook", "team/handbook"),
    ("/handbook/", "handbook"), ("v1.2", "v1.2"), (None, "docs")])
def test_a_prefix_of_names_is_kept(tmp_path: Path, prefix: str | None, label: str) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    assert explicit_root(str(root), prefix) == {label: root}
