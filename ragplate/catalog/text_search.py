"""The language keyword search reads a text in: from its locale to a text-search
configuration.

A locale's language part (``it`` of ``it-CH``) picks a Snowball stemmer; ``und`` and any
language without one get ``simple`` (lower-cased words, no stemming, English stop words
dropped). ragplate's own
configurations, ``ragplate_<language>`` (migration 0008), are PostgreSQL's with accents
folded (``unaccent``) before stemming; the Python drivers fold accents and stem with the
same Snowball algorithms, so both rank alike.
"""

from __future__ import annotations

#: Locale language -> Snowball stemmer (PostgreSQL dictionary ``<name>_stem``).
LANGUAGES: dict[str, str] = {
    "da": "danish", "de": "german", "en": "english", "es": "spanish", "fi": "finnish",
    "fr": "french", "hu": "hungarian", "it": "italian", "nb": "norwegian", "nl": "dutch",
    "nn": "norwegian", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sv": "swedish", "tr": "turkish",
}
SIMPLE = "simple"
#: Every language a configuration exists for, ``simple`` first.
CONFIGURED: tuple[str, ...] = (SIMPLE, *sorted(set(LANGUAGES.values())))


def language(locale: str | None) -> str:
    """The stemmer of ``locale`` (``en``, ``pt-BR``, ``it_IT``…), ``simple`` for ``und``,
    a missing locale and a language without one."""
    if not locale:
        return SIMPLE
    code = locale.replace("_", "-").split("-", 1)[0].strip().lower()
    return LANGUAGES.get(code, SIMPLE)


def configuration(name: str) -> str:
    """ragplate's text-search configuration of a language (``ragplate_italian``)."""
    if name not in CONFIGURED:
        raise ValueError(f"no text-search configuration for {name!r}")
    return f"ragplate_{name}"


def configuration_sql(locale_sql: str) -> str:
    """A SQL expression (immutable, so a generated column can use it) giving the
    configuration of the locale in ``locale_sql``, e.g. ``metadata->>'locale'``."""
    code = f"split_part(lower(translate(coalesce({locale_sql}, ''), '_', '-')), '-', 1)"
    cases = " ".join(f"WHEN '{code_}' THEN '{configuration(name)}'::regconfig"
                     for code_, name in sorted(LANGUAGES.items()))
    return f"(CASE {code} {cases} ELSE '{configuration(SIMPLE)}'::regconfig END)"
