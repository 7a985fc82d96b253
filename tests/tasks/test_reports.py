"""Report files: atomic JSON, no overwrite without force, refused directories, HTML page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.report_render import (
    markdown_summary,
    render_html,
    svg_bar_chart,
    table_rows,
)
from ragplate.tasks.reports import (
    ReportExistsError,
    assert_no_content,
    check_output,
    render_json,
    write_report,
)

REPORT = {
    "schema_version": "1", "module": "core", "case_count": 2,
    "metrics": {"source_hit_at_k": 1.0, "mean_reciprocal_rank": 0.75},
    "latency_ms": {"average": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0},
    "slices": {"locale": {"en": {"source_hit_at_k": 1.0, "mean_reciprocal_rank": 0.75}},
               "category": {"a<b": {"source_hit_at_k": 0.5, "mean_reciprocal_rank": 0.5}}},
    "embedding": {"profile": "local:x", "dimensions": 4},
}


def test_json_is_canonical() -> None:
    text = render_json(REPORT)
    assert text.endswith("}\n") and '"source_hit_at_k": 1.0' in text
    assert text == render_json(json.loads(text))
    with pytest.raises(ValueError):
        render_json({"metrics": {"x": float("nan")}})


def test_write_refuses_overwrite_without_force(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    write_report(out, REPORT, force=False, html="<html></html>")
    assert json.loads(out.read_text()) == REPORT
    assert out.with_suffix(".html").read_text() == "<html></html>"
    with pytest.raises(ReportExistsError, match=r"already exists .*--force"):
        write_report(out, {**REPORT, "case_count": 3}, force=False)
    assert json.loads(out.read_text())["case_count"] == 2
    write_report(out, {**REPORT, "case_count": 3}, force=True)
    assert json.loads(out.read_text())["case_count"] == 3
    assert oct(out.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_directories_are_checked(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        check_output(tmp_path / "missing" / "r.json", force=False)
    with pytest.raises(InvalidInputError, match="is a directory"):
        check_output(tmp_path, force=True)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permission bits
            pytest.skip("running with permissions that ignore the directory mode")
        with pytest.raises(InvalidInputError, match="not writable"):
            check_output(locked / "r.json", force=False)
    finally:
        locked.chmod(0o700)


def test_unwritable_directory_as_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ragplate.tasks.reports.os.access", lambda *_: False)
    with pytest.raises(InvalidInputError, match="not writable"):
        check_output(tmp_path / "r.json", force=False)


def test_a_failed_write_leaves_the_old_report(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r.json"
    write_report(out, REPORT, force=False)

    def boom(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("ragplate.tasks.reports.os.replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_report(out, {**REPORT, "case_count": 9}, force=True)
    assert json.loads(out.read_text()) == REPORT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pytest.mark.parametrize("key", ["query", "text", "excerpt", "Content"])
def test_reports_never_carry_text(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match="never carries text"):
        assert_no_content({"slices": {"x": [{key: "secret"}]}})
    with pytest.raises(ValueError):
        write_report(tmp_path / "r.json", {**REPORT, key: "q"}, force=False)
    assert not (tmp_path / "r.json").exists()


def test_html_page_is_self_contained_and_escaped() -> None:
    page = render_html(REPORT, title="core <report>")
    assert page.startswith("<!DOCTYPE html>") and page == render_html(REPORT,
                                                                      title="core <report>")
    assert "core &lt;report&gt;" in page and "a&lt;b" in page and "a<b" not in page
    assert "<svg" in page and "<table" in page and "mean_reciprocal_rank" in page
    for forbidden in ("http://", "https://", "<script", "<link"):
        assert forbidden not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_svg_bars_scale_and_clamp() -> None:
    svg = svg_bar_chart([("half", 0.5), ("over", 2.0)], title="t")
    assert 'width="180.0"' in svg and 'width="360"' in svg


def test_table_rows_and_markdown() -> None:
    rows = table_rows(REPORT)
    assert [(r["scope"], r["slice"]) for r in rows] == [("overall", "all"), ("locale", "en"),
                                                         ("category", "a<b")]
    text = markdown_summary(REPORT, title="t", page="/x/r.html")
    assert "| overall | all | 1.0 | 0.75 |" in text and "HTML report: `/x/r.html`" in text
    assert "| embedding.profile | local:x |" in text
