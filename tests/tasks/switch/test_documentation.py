"""The switch's documentation check (pure functions, literal stores)."""

from __future__ import annotations

from ragplate.catalog.documents import Document
from ragplate.infra.stores.base import SourceRecord
from ragplate.tasks.switch.documentation import emptied_counts, foreign_sources, refusal


def rec(source: str, root: str | None) -> SourceRecord:
    return SourceRecord(source, "h", "m", 1, root=root)


def doc(source: str, root: str) -> Document:
    return Document(source, "text", {}, "h", root=root)


def test_foreign_sources_are_counted_per_recorded_root() -> None:
    stored = {s.source: s for s in [rec("docs/a.md", "docs"), rec("qa/b.md", "qa"),
                                    rec("qa/c.md", "qa"), rec("old/d.md", None),
                                    rec("docs/e.md", None)]}

    assert foreign_sources(stored, ["docs"]) == {"qa": 2, "?": 1}
    assert foreign_sources(stored, ["docs", "qa", "old"]) == {}


def test_emptied_counts_name_configured_roots_without_files_that_hold_sources() -> None:
    stored = {s.source: s for s in [rec("docs/a.md", "docs"), rec("more/b.md", "more")]}
    documents = [doc("docs/a.md", "docs")]

    assert emptied_counts(stored, documents, ["docs", "more", "none"]) == {"more": 1}
    assert emptied_counts(stored, [doc("docs/a.md", "docs"), doc("more/b.md", "more")],
                          ["docs", "more"]) == {}


def test_refusal_names_index_roots_and_counts() -> None:
    stored = {"developer": {s.source: s for s in [rec("docs/a.md", "docs"),
                                                  rec("qa/b.md", "qa")]},
              "user": {"more/x.md": rec("more/x.md", "more")}}

    message = refusal(stored, [doc("docs/a.md", "docs")], ["docs", "more"])

    assert message is not None
    assert ("the developer index holds sources of roots that are not configured ('qa': 1)"
            in message)
    assert "--allow-empty" in message
    assert ("the configured root 'more' holds no Markdown file, but the user index holds 1 "
            "of its sources") in message
    assert refusal({"developer": {"docs/a.md": rec("docs/a.md", "docs")}},
                   [doc("docs/a.md", "docs")], ["docs"]) is None
