"""The in-process embedder: what the model is shown of a text (``bounded``)."""

from __future__ import annotations

import numpy as np

from ragplate.infra.models.base import Embedder
from ragplate.infra.models.local import MAX_CHARS, MAX_WORD_CHARS, bounded


def test_ordinary_text_is_shown_unchanged() -> None:
    text = "Run `ragplate index-docs` after editing. " * 20 + "x" * MAX_WORD_CHARS
    assert bounded(text) == text


def test_long_words_are_cut_and_the_text_is_capped() -> None:
    assert bounded("a " + "y" * 1000 + " b") == "a " + "y" * MAX_WORD_CHARS + " b"
    assert bounded("data:image/png;base64," + "QUJD" * 750_000) == (
        "data:image/png;base64," + "QUJD" * 750_000)[:MAX_WORD_CHARS]
    long_text = "word " * 5000
    assert bounded(long_text) == long_text[:MAX_CHARS]


def test_a_megabyte_word_embeds_like_what_the_model_is_shown(embedder: Embedder) -> None:
    # Unbounded, the tokenizer spends hours on such a passage (a base64 image inline).
    page = "# Logo\n\n![logo](data:image/png;base64," + "iVBORw0KGgo" * 100_000 + ")"

    vectors = embedder.embed_passages([page, bounded(page)])

    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    query = embedder.embed_query("what is " + "z" * 100_000)
    np.testing.assert_allclose(query, embedder.embed_query(bounded("what is " + "z" * 100_000)),
                               atol=1e-6)
