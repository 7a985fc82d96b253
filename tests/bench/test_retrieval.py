"""``ragplate bench retrieval``'s pure parts: the recipes, the scoring, the loss rule."""

from __future__ import annotations

import json
from types import SimpleNamespace

from ragplate.bench.retrieval import BASELINE, _loses, _score, recipes
from ragplate.catalog.settings import PROJECT_ROOT, Settings


def test_the_baseline_is_the_shipped_default_of_before_and_comes_first() -> None:
    every = recipes()
    assert every[0] == BASELINE
    assert len(every) == len(set(every))
    assert (BASELINE.splitting.max_words, BASELINE.splitting.overlap_words,
            BASELINE.weight, BASELINE.strategy) == (200, 0, 1.0, "vector")


def test_the_shipped_default_was_measured_and_loses_nowhere() -> None:
    default = {name: field.default for name, field in Settings.model_fields.items()}
    shipped = [r for r in recipes()
               if r.splitting.max_words == default["splitter_max_words"]
               and r.splitting.overlap_words == default["splitter_overlap_words"]
               and r.splitting.breadcrumb == default["splitter_prepend_heading_breadcrumb"]
               and r.splitting.source_label == default["splitter_prepend_source_label"]
               and r.weight == default["docs_context_weight"]
               and r.strategy == default["docs_retrieval"]
               and (r.strategy == "vector" or r.rrf_k == default["docs_rrf_k"])]
    assert len(shipped) == 1
    report = json.loads((PROJECT_ROOT / "reports" / "bench-retrieval.json").read_text())
    measured = report["recipes"][shipped[0].name]
    assert measured["loses_to_baseline"] == []
    assert report["baseline"] == BASELINE.name


def case(expected: list[str]) -> SimpleNamespace:
    return SimpleNamespace(expected_source_labels=expected)


def test_score_counts_hits_and_reciprocal_ranks_in_the_first_five() -> None:
    cases = [case(["a"]), case(["b"]), case(["c"]), case([])]
    answers = {"a": ["a", "x"], "b": ["x", "b"], "c": ["1", "2", "3", "4", "5", "c"]}

    figures = _score(cases, lambda c: answers[c.expected_source_labels[0]])

    assert figures == {"cases": 3, "hits": 2, "rr_sum": 1.5, "hit_at_5": 0.6667,
                       "mrr_at_5": 0.5}


def test_a_recipe_loses_when_it_drops_more_than_one_case() -> None:
    baseline = {"set": {"hits": 10, "rr_sum": 8.0}}
    assert _loses({"set": {"hits": 9, "rr_sum": 7.0}}, baseline) == []
    assert _loses({"set": {"hits": 8, "rr_sum": 8.0}}, baseline) == ["set"]
    assert _loses({"set": {"hits": 10, "rr_sum": 6.9}}, baseline) == ["set"]


def test_a_recipe_filter_matching_no_recipe_is_refused_before_any_work(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from ragplate.bench.retrieval import run
    from ragplate.catalog.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"^--recipe 'no-such-recipe': no recipe"):
        run(corpus=tmp_path, datasets=[], output=tmp_path / "b.json",
            only=["adaptive", "no-such-recipe"])
    assert not (tmp_path / "b.json").exists()


def test_the_passage_cache_is_this_users() -> None:
    from pathlib import Path

    from ragplate.bench.retrieval import cache_path

    assert cache_path({"XDG_CACHE_HOME": "/c"}) == Path(
        "/c/ragplate/bench-retrieval-embeddings.npz")
    assert cache_path({}) == Path.home() / ".cache/ragplate/bench-retrieval-embeddings.npz"


def test_labels_not_sources_of_the_corpus_are_counted_and_named_when_public() -> None:
    from pathlib import Path

    from ragplate.bench.retrieval import absent_label_warnings

    cases = {"public": [case(["ops/backup.md", "gone.md"]), case(["ops/backup.md"])],
             "secret": [case(["laraplate/secret-plan.md"]), case([])],
             "fits": [case(["ops/backup.md"])]}
    classes = {"public": "synthetic", "secret": "private", "fits": "synthetic"}
    lines = absent_label_warnings(cases, classes, ["ops/backup.md", "api/health.md"],
                                  Path("/corpus"))
    assert lines == [
        "warning: public: 1 of 2 expected source label(s) are not sources of the corpus "
        "/corpus (read with the label prefix '', so a label is a path under it), so its "
        "cases cannot score through them: gone.md",
        "warning: secret: 1 of 1 expected source label(s) are not sources of the corpus "
        "/corpus (read with the label prefix '', so a label is a path under it), so its "
        "cases cannot score through them: not named (the dataset is private)"]
    assert "secret-plan" not in "".join(lines)


def test_the_run_warns_before_the_scratch_database_starts(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import io

    import pytest
    from rich.console import Console

    from ragplate.bench import retrieval

    corpus = tmp_path / "docs"
    (corpus / "ops").mkdir(parents=True)
    (corpus / "ops" / "BACKUPS.md").write_text("# Backups\n\nNightly dumps.\n", encoding="utf-8")
    data = json.loads((PROJECT_ROOT / "datasets" / "documentation-developer-fixture.json")
                      .read_text(encoding="utf-8"))
    dataset = tmp_path / "d.json"
    dataset.write_text(json.dumps(data), encoding="utf-8")
    shown = io.StringIO()
    monkeypatch.setattr(retrieval, "console", Console(file=shown, width=400))
    monkeypatch.setattr(retrieval, "cache_path", lambda: tmp_path / "cache" / "v.npz")

    class Stop(Exception):
        pass

    def stop(*_args: object, **_kwargs: object) -> None:
        raise Stop

    monkeypatch.setattr(retrieval, "scratch_home", stop)
    with pytest.raises(Stop):
        retrieval.run(corpus=corpus, datasets=[dataset], output=tmp_path / "b.json")
    assert "warning: d: " in shown.getvalue()
    assert "expected source label(s) are not sources of the corpus" in shown.getvalue()
