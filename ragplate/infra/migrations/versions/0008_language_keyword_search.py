"""Language-aware keyword search: the generated keyword columns read each text in its
locale's language.

``rag_chunks.search`` read every chunk with English stemming and
``cms_content_translations.search`` every translation with ``simple`` (no stemming): an
Italian chunk's words were stemmed as English, and application search found a record only
when the query used its exact word forms. Both columns now pick ragplate's configuration of
the row's locale (``ragplate_<language>``: PostgreSQL's Snowball configuration with accents
folded by ``unaccent`` when the server has it; ``ragplate_simple`` for ``und`` and locales
without a stemmer). The columns are recomputed from the stored text: nothing needs
re-embedding.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

# Kept literal (not imported from the catalog) so this revision never changes after release;
# ragplate.catalog.schema's DOCS_SEARCH_VECTOR and CONTENT_SEARCH_VECTOR must stay equal
# to the expressions below (a test checks it).
LOCALES = {
    "da": "danish", "de": "german", "en": "english", "es": "spanish", "fi": "finnish",
    "fr": "french", "hu": "hungarian", "it": "italian", "nb": "norwegian", "nl": "dutch",
    "nn": "norwegian", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sv": "swedish", "tr": "turkish",
}
LANGUAGES = tuple(sorted(set(LOCALES.values())))


def configuration_sql(locale_sql: str) -> str:
    code = f"split_part(lower(translate(coalesce({locale_sql}, ''), '_', '-')), '-', 1)"
    cases = " ".join(f"WHEN '{code_}' THEN 'ragplate_{name}'::regconfig"
                     for code_, name in sorted(LOCALES.items()))
    return f"(CASE {code} {cases} ELSE 'ragplate_simple'::regconfig END)"


_DOCS = configuration_sql("metadata->>'locale'")
_CONTENT = configuration_sql("locale")
DOCS_SEARCH_VECTOR = (
    f"setweight(to_tsvector({_DOCS}, translate(source, '/_.-', '    ') || ' ' "
    f"|| coalesce(metadata->>'heading_breadcrumb', '')), 'A') "
    f"|| setweight(to_tsvector({_DOCS}, left(text, 100000)), 'D')"
)
CONTENT_SEARCH_VECTOR = (f"setweight(to_tsvector({_CONTENT}, title), 'A') "
                         f"|| to_tsvector({_CONTENT}, body)")
PREVIOUS_DOCS = (
    "setweight(to_tsvector('english'::regconfig, translate(source, '/_.-', '    ') || ' ' "
    "|| coalesce(metadata->>'heading_breadcrumb', '')), 'A') "
    "|| setweight(to_tsvector('english'::regconfig, left(text, 100000)), 'D')"
)
PREVIOUS_CONTENT = "setweight(to_tsvector('simple', title), 'A') || to_tsvector('simple', body)"

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _unaccent() -> bool:
    """Create ``unaccent`` when the server has it and lets us (a managed PostgreSQL may
    not): without it the configurations fold no accents, and nothing else changes."""
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT 1 FROM pg_available_extensions "
                            "WHERE name = 'unaccent'")).first() is None:
        return False
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS unaccent"))
    except sa.exc.DBAPIError:
        return False
    return True


def _configuration(name: str, dictionary: str, unaccent: bool) -> None:
    config = f"ragplate_{name}"
    op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {config}")
    op.execute(f"CREATE TEXT SEARCH CONFIGURATION {config} (COPY = {name})")
    if unaccent:
        op.execute(f"ALTER TEXT SEARCH CONFIGURATION {config} ALTER MAPPING FOR "
                   f"hword, hword_part, word WITH unaccent, {dictionary}")


def _simple(unaccent: bool) -> None:
    """``ragplate_simple``: words as they are, without English stop words (a text of
    unknown language is most often English, and "the" or "of" finds everything)."""
    op.execute("DROP TEXT SEARCH CONFIGURATION IF EXISTS ragplate_simple")
    op.execute("DROP TEXT SEARCH DICTIONARY IF EXISTS ragplate_simple_words")
    op.execute("CREATE TEXT SEARCH DICTIONARY ragplate_simple_words "
               "(TEMPLATE = pg_catalog.simple, STOPWORDS = english)")
    op.execute("CREATE TEXT SEARCH CONFIGURATION ragplate_simple (COPY = simple)")
    op.execute("ALTER TEXT SEARCH CONFIGURATION ragplate_simple ALTER MAPPING FOR "
               "asciiword, asciihword, hword_asciipart WITH ragplate_simple_words")
    folded = "unaccent, ragplate_simple_words" if unaccent else "ragplate_simple_words"
    op.execute("ALTER TEXT SEARCH CONFIGURATION ragplate_simple ALTER MAPPING FOR "
               f"hword, hword_part, word WITH {folded}")


def _column(table: str, index: str, expression: str) -> None:
    op.execute(f"DROP INDEX IF EXISTS {index}")
    op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search")
    op.execute(f"ALTER TABLE {table} ADD COLUMN search tsvector "
               f"GENERATED ALWAYS AS ({expression}) STORED")
    op.execute(f"CREATE INDEX {index} ON {table} USING gin (search)")


def upgrade() -> None:
    # The columns of revision 0007 go first: they do not depend on the configurations.
    op.execute("ALTER TABLE rag_chunks DROP COLUMN IF EXISTS search")
    op.execute("ALTER TABLE cms_content_translations DROP COLUMN IF EXISTS search")
    unaccent = _unaccent()
    _simple(unaccent)
    for name in LANGUAGES:
        _configuration(name, f"{name}_stem", unaccent)
    _column("rag_chunks", "ix_rag_chunks_search", DOCS_SEARCH_VECTOR)
    _column("cms_content_translations", "ix_cms_content_translations_search",
            CONTENT_SEARCH_VECTOR)


def downgrade() -> None:
    _column("rag_chunks", "ix_rag_chunks_search", PREVIOUS_DOCS)
    _column("cms_content_translations", "ix_cms_content_translations_search",
            PREVIOUS_CONTENT)
    for name in ("simple", *LANGUAGES):
        op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS ragplate_{name}")
    op.execute("DROP TEXT SEARCH DICTIONARY IF EXISTS ragplate_simple_words")
