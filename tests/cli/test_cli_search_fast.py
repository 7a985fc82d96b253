"""Fast (keyword-only) application search answers a plain question, as the README shows."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from ragplate.cli import app
from tests.testing.cli import run_main
from tests.testing.records import reset_content

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _session_home(ragplate_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGPLATE_EMBEDDINGS_URL", raising=False)
    assert os.environ["RAGPLATE_HOME"] == str(ragplate_home)


@pytest.fixture(scope="module")
def seeded(engine: sa.Engine) -> None:
    reset_content(engine)
    result = CliRunner().invoke(app, ["demo", "seed", "--records", "100", "--reset", "--json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("query", ["how do I rebuild the index", "rebuild the index"])
def test_a_plain_question_finds_records_in_fast_mode(seeded: None, query: str) -> None:
    result = CliRunner().invoke(app, ["search", query, "--mode", "fast", "--json"])

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    hits = data["hits"]
    assert len(hits) >= 3
    assert data["meta"]["search"]["strategies"] == ["keyword"]
    texts = [f"{h['title']} {h['excerpt']}".lower() for h in hits]
    # Every hit holds a word of the question, stemmed ("indexes" counts for "index"): in
    # what it shows, unless its excerpt is cut before the word (the excerpt is the text's
    # beginning).
    shown = [t for t in texts if "index" in t or "rebuil" in t]
    assert all(t in shown or t.endswith("…") for t in texts), texts
    assert len(shown) >= 3
    assert any("indexes" in t for t in texts)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


@pytest.mark.parametrize(("option", "value"), [("--locale", "bad loc"),
                                               ("--tenant", "bad tenant"), ("--tenant", "")])
def test_search_refuses_a_locale_or_tenant_the_api_refuses(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        option: str, value: str) -> None:
    code, out = run_main(monkeypatch, capsys, "search", "rebuild the index", "--mode", "fast",
                         option, value)

    assert code == 2, out
    assert f"{value!r} is not valid" in out and "Traceback" not in out


@pytest.mark.parametrize(("args", "named"), [
    (["--locales", "en,bad locale"], "'bad locale'"),
    (["--locales", "en,it,en"], "names en more than once"),
    (["--locales", "en,,it"], "(got '')"),
    (["--tenant", "bad tenant"], "'bad tenant'"),
])
def test_demo_seed_refuses_bad_options_before_any_record_is_written(
        seeded: None, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], args: list[str], named: str) -> None:
    with engine.connect() as conn:
        before = conn.execute(sa.text("SELECT count(*) FROM cms_contents")).scalar_one()
    assert before > 0
    code, out = run_main(monkeypatch, capsys, "demo", "seed", "--records", "1", "--reset",
                         *args)

    assert code == 2, out
    assert named in out
    assert "cms.contents" not in out  # no progress bar: refused before the work
    with engine.connect() as conn:
        # --reset did not run either: nothing already stored is lost.
        assert conn.execute(sa.text("SELECT count(*) FROM cms_contents")).scalar_one() == before
