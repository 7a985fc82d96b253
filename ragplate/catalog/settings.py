"""Process settings: every ``RAGPLATE_*`` variable, its type, default and meaning.

These are deployment settings (where things are, how big batches are). The active
embedding profile is not one of them: it is stored in PostgreSQL (see
``ragplate.infra.settings_store``) so every process sharing a database agrees on it.

This module declares them and reads nothing: the edges (a CLI command, the API's factory,
a flow's start) read them once with :func:`ragplate.infra.environment.load_settings` and
pass them on.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from ragplate.catalog.crud import CRUD_ENTITIES, OPERATIONS
from ragplate.catalog.documents import DEFAULT_MAX_SOURCE_BYTES, label_prefix_problem
from ragplate.catalog.entities import Entity
from ragplate.catalog.errors import ConfigurationError, EmptyVariableError, is_blank

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_DOCS = PROJECT_ROOT / "docs"
DEFAULT_PROFILE = "local:intfloat/multilingual-e5-small"
#: ``RAGPLATE_HOME`` when neither it nor ``XDG_DATA_HOME`` is set (``~`` is expanded).
DEFAULT_HOME = Path("~/.local/share/ragplate")
#: The document-context share of stored documentation vectors (see ``docs_context_weight``).
DEFAULT_DOCS_CONTEXT_WEIGHT = 0.5

SplitterName = Literal["markdown_aware", "sentence", "delimiter"]
StoreName = Literal["pgvector", "filesystem", "memory", "elasticsearch"]
RerankApi = Literal["tei", "cohere"]
DocsRetrieval = Literal["vector", "hybrid", "adaptive"]


class ServerSettings(BaseModel):
    """One self-hosted AI server, read from ``RAGPLATE_SERVERS__<NAME>__<FIELD>``.

    Names: ``embeddings`` (the default embeddings server), ``rerank``, ``transcription``, or
    the ``server`` an embedding profile names. Only the environment configures a server: a
    database setting never does.
    """

    # A misspelt field (RAGPLATE_SERVERS__RERANK__KEYY) would otherwise be dropped silently
    # and the server called without its key.
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(
        default=None,
        description="Base URL: scheme, host, port and an optional path prefix (e.g. "
        "http://127.0.0.1:8080). Embeddings go to <url>/v1/embeddings, TEI rerank to "
        "<url>/rerank, Cohere-style (Infinity) rerank to <url>/v1/rerank, transcription to "
        "<url>/v1/audio/transcriptions; a URL already ending in /v1 is not doubled.",
    )
    key: SecretStr | None = Field(
        default=None, description="Bearer key sent to this server, if it needs one."
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds before a request times out (default: RAGPLATE_EMBEDDINGS_TIMEOUT "
        "for embedding servers, 30 for rerank, 120 for transcription).",
    )
    batch_size: int | None = Field(
        default=None,
        ge=1,
        le=2048,
        description="Most texts per request (default: RAGPLATE_EMBED_BATCH_SIZE). A TEI "
        "server's max_client_batch_size from GET /info lowers it further.",
    )
    slow_seconds: float | None = Field(
        default=None,
        gt=0,
        description="An embeddings answer slower than this halves the next batch (default: "
        "half the timeout).",
    )
    api: RerankApi | None = Field(
        default=None,
        description="Rerank API: tei (POST /rerank with texts, model from GET /info; the "
        "default) or cohere (Infinity: POST /v1/rerank with documents, model from the answer).",
    )
    model: str | None = Field(
        default=None,
        description="Model sent to a Cohere-style rerank server or a transcription server "
        "(required for transcription, e.g. Systran/faster-whisper-small).",
    )

    @field_validator("url", mode="after")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().lower().startswith(("http://", "https://")):
            raise ValueError("a server URL starts with http:// or https://")
        return value.strip() if value else None


def _known_entity(name: str) -> None:
    if name not in CRUD_ENTITIES:
        raise ValueError(f"{name!r} is not an application entity (known: "
                         f"{', '.join(sorted(CRUD_ENTITIES))})")


#: Settings whose value may be only whitespace (the delimiter splitter's ``\n\n``): only
#: an empty variable is refused for them.
_WHITESPACE_VALUES = frozenset({"splitter_delimiter"})


class _EnvRefusingEmpty(EnvSettingsSource):
    """The environment source, refusing every variable it reads for a field that is set
    but empty (or only whitespace), nested ones included, instead of reading it as a value
    or as unset: ``RAGPLATE_DATABASE_URL=`` (a compose file whose ``${DATABASE_URL}`` is
    unset) must not start on the embedded database. Other ``RAGPLATE_*`` variables are not
    its to judge, and a value given in code is not read here."""

    def __call__(self) -> dict[str, Any]:
        empty = self.empty_variables()
        if empty:
            raise EmptyVariableError(empty)
        return super().__call__()

    def empty_variables(self) -> list[str]:
        """The variables read for a field (``RAGPLATE_DATABASE_URL``) or exploded into one
        (``RAGPLATE_SERVERS__CHAT__URL``) that hold no value, upper-case, in field order."""
        found: dict[str, None] = {}
        for field_name, field in self.settings_cls.model_fields.items():
            if field_name in SWITCH_BOUNDS:
                continue  # the spec: any bad value of these, empty too, gives the default
            blank = ((lambda value: value == "") if field_name in _WHITESPACE_VALUES
                     else is_blank)
            for _, env_name, value_is_complex in self._extract_field_info(field, field_name):
                # As prepare_field_value: nested variables are read for a complex field.
                nested = (f"{env_name}{self.env_nested_delimiter}"
                          if self.env_nested_delimiter
                          and (value_is_complex or self._field_is_complex(field)[0])
                          else None)
                for name, value in self.env_vars.items():
                    read = name == env_name or (nested is not None and name.startswith(nested))
                    if read and isinstance(value, str) and blank(value):
                        found[name.upper()] = None
        return list(found)


class Settings(BaseSettings):
    """Every ``RAGPLATE_*`` setting, with its default and meaning."""

    model_config = SettingsConfigDict(
        env_prefix="RAGPLATE_",
        env_nested_delimiter="__",
        extra="ignore",
        validate_default=True,
    )

    home: Path = Field(
        default=DEFAULT_HOME,
        description="Data directory of the embedded services (PostgreSQL data, Prefect "
        "server state, logs, filesystem store). Default: $XDG_DATA_HOME/ragplate, or "
        "~/.local/share/ragplate.",
    )
    database_url: SecretStr | None = Field(
        default=None,
        description="External PostgreSQL (with pgvector) as a SQLAlchemy/libpq URL. Unset: "
        "ragplate runs its own embedded PostgreSQL under RAGPLATE_HOME.",
    )
    prefect_port: int = Field(
        default=4200,
        ge=1,
        le=65535,
        description="Loopback port of the local Prefect server ragplate starts when "
        "PREFECT_API_URL is not set.",
    )
    docs_roots: dict[str, Path] = Field(
        default_factory=lambda: {"faq-app-ragplate": BUNDLED_DOCS},
        description="Configured documentation roots as a JSON object {source prefix: "
        "directory}. Default: ragplate's own docs/ under the prefix faq-app-ragplate.",
    )
    docs_path: str = Field(
        default="",
        description="Extra documentation roots, separated by the OS path separator (':'). "
        "Each is indexed with the prefix faq-extra-<directory name>.",
    )
    vector_store: StoreName = Field(
        default="pgvector",
        description="Documentation store driver: pgvector (the default without "
        "RAGPLATE_ELASTICSEARCH_URL), elasticsearch (the default with it), filesystem "
        "(single instance, one file per index under RAGPLATE_HOME/stores) or memory (tests).",
    )
    elasticsearch_url: str | None = Field(
        default=None,
        description="Elasticsearch 8.x cluster (e.g. https://es.internal:9200). Set: the "
        "documentation indexes, application search, the switch's per-model indexes and the "
        "query analytics live in Elasticsearch; unset: in PostgreSQL.",
    )
    elasticsearch_api_key: SecretStr | None = Field(
        default=None,
        description="Elasticsearch API key (the base64 'id:key' form); or basic auth below.",
    )
    elasticsearch_username: str | None = Field(
        default=None, description="Elasticsearch basic-auth user (with the password below)."
    )
    elasticsearch_password: SecretStr | None = Field(
        default=None, description="Elasticsearch basic-auth password."
    )
    elasticsearch_ca_file: Path | None = Field(
        default=None,
        description="PEM file of the certificate authority that signed the cluster's HTTPS "
        "certificate (unset: the system's trust store).",
    )
    elasticsearch_index_prefix: str = Field(
        default="ragplate", pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$",
        description="The application name every Elasticsearch index and alias starts with "
        "({app}): lower-case letters, digits, - and _.",
    )
    elasticsearch_query_log_index: str | None = Field(
        default=None, pattern=r"^[a-z0-9][a-z0-9_.-]{0,199}$",
        description="Name of the query-analytics index; unset: {app}_rag_queries.",
    )
    elasticsearch_timeout: float = Field(
        default=30.0, gt=0, le=600, description="Seconds per Elasticsearch request."
    )
    elasticsearch_retries: int = Field(
        default=5, ge=0, le=20,
        description="Retries of a request or bulk item refused with 429 (or a 502/503/504), "
        "with exponential back-off from 0.5 s.",
    )
    elasticsearch_shards: int = Field(
        default=1, ge=1, le=64, description="Primary shards of each index ragplate creates."
    )
    elasticsearch_replicas: int = Field(
        default=1, ge=0, le=8, description="Replicas of each index ragplate creates."
    )
    docs_max_file_bytes: int = Field(
        default=DEFAULT_MAX_SOURCE_BYTES, ge=1024,
        description="Largest documentation file an indexing run reads, in bytes; a larger "
        "one is refused naming the file (exit 2, nothing changed).",
    )
    splitter: SplitterName = Field(
        default="markdown_aware",
        description="Document splitter: markdown_aware, sentence or delimiter.",
    )
    splitter_max_words: int = Field(
        default=120, ge=20, le=2000, description="Maximum words per chunk."
    )
    splitter_overlap_words: int = Field(
        default=20, ge=0, le=500, description="Words repeated between consecutive chunks of a "
        "long section."
    )
    splitter_prepend_heading_breadcrumb: bool = Field(
        default=True,
        description="Prefix every chunk's text with its heading breadcrumb before embedding.",
    )
    splitter_prepend_source_label: bool = Field(
        default=True,
        description="Prefix every chunk's embedded text with its source label in words "
        "(markdown_aware splitter).",
    )
    splitter_delimiter: str = Field(
        default="\n\n", description="Separator used by the delimiter splitter."
    )
    index_batch_chunks: int = Field(
        default=100,
        ge=1,
        le=5000,
        description="Chunks per write batch; a batch never splits a source.",
    )
    embed_batch_size: int = Field(
        default=32, ge=1, le=1024, description="Passages per embedding call."
    )
    max_documents: int = Field(
        default=5, description="Default retrieval depth (top-k), clamped to 1-10."
    )
    min_similarity: float | None = Field(
        default=None, ge=-1.0, le=1.0, allow_inf_nan=False,
        description="Similarity floor for retrieval hits, a cosine between -1 and 1 (off by "
        "default; ragplate tune-floor measures one).",
    )
    assistant_min_similarity: float = Field(
        default=0.82, ge=-1.0, le=1.0, allow_inf_nan=False,
        description="The assistant's evidence floor: it answers only from documents whose "
        "similarity with the question reaches this, and abstains otherwise; in an extractive "
        "answer (no chat model, or one that failed), a quoted sentence holding fewer than "
        "two of the question's words must reach it too. 0.82 was measured "
        "with ragplate tune-floor on the development dataset for the default model "
        "(multilingual-e5-small); measure it again for another model. RAGPLATE_MIN_SIMILARITY, "
        "when set higher, wins.",
    )
    assistant_fallback_locales: list[str] = Field(
        default=["en"],
        description="Locales of user documentation the assistant also answers from when the "
        "person's own locale has no guide (JSON list; [] answers from the person's locale "
        "only). The answer's framing stays in the person's language.",
    )
    assistant_min_coverage: float = Field(
        default=0.25, ge=0.0, le=1.0,
        description="The extractive answerer's second relevance check: the share of the "
        "question's content words (stemmed, stop words dropped) its evidence must hold, "
        "when both are in one language; less and it abstains. 0.25 was chosen on half of "
        "the laraplate documentation and everyday questions; 0 turns the check off. Not "
        "used with a chat model, which judges the evidence itself, but used when a "
        "configured chat model fails and the answer falls back to the extractive one.",
    )
    assistant_min_weighted_coverage: float = Field(
        default=0.30, ge=0.0, le=1.0,
        description="The coverage check again, each of the question's words weighing by how "
        "rare it is among the developer index's chunks (inverse document frequency): an "
        "everyday question shares common words with a page, a documentation question the "
        "rare ones. Less and the extractive answer abstains. Applies on the developer index "
        "(not on the user index, nor on an index holding chunks whose words another "
        "release counted or that carry none, until the next `index-docs` counts them "
        "again). 0.30 was chosen on half of the laraplate documentation and everyday "
        "questions; 0 turns it off.",
    )
    assistant_max_documents: int = Field(
        default=3, ge=1, le=10,
        description="Documents the assistant retrieves as evidence for one message.",
    )
    assistant_stream_delay_ms: int = Field(
        default=30, ge=0, le=1000,
        description="Pause between two text chunks of a streamed answer (POST /app/ai/agent): "
        "the validated answer is delivered a few words at a time so it reads as it arrives.",
    )
    assistant_stream_workers: int = Field(
        default=8, ge=1, le=64,
        description="Streamed answers (POST /app/ai/agent) prepared at once by one API "
        "process; one more is answered 503 before its stream opens, with Retry-After: 5 "
        "(seconds: a slot is free again once an answer is stored).",
    )
    assistant_stream_per_person: int = Field(
        default=2, ge=1, le=16,
        description="Streamed answers one person may have in preparation at once; one more "
        "is answered 429 before its stream opens, with Retry-After: 5 (a stream the client "
        "left still counts until its answer is stored).",
    )
    assistant_stream_keepalive_seconds: float = Field(
        default=10.0, gt=0, le=300,
        description="While a streamed answer is being prepared, a keep-alive comment is sent "
        "after this many seconds without an event, so proxies keep the connection open.",
    )
    guardrails_input_max_chars: int = Field(
        default=4000, ge=100, le=100_000,
        description="The longest message the assistant accepts; a longer one is refused "
        "(category length).",
    )
    guardrails_output_max_chars: int = Field(
        default=4000, ge=100, le=100_000,
        description="The longest answer the assistant gives; a longer one is refused as a "
        "whole (category output_length).",
    )
    guardrails_policy_version: str = Field(
        default="2026-12-01", min_length=1, max_length=50,
        description="The assistant policy version recorded on every message.",
    )
    format_citations: bool = Field(
        default=False,
        description="Append a Markdown Sources block (one line per cited source) to the "
        "assistant's answers; the citations are on the message either way.",
    )
    docs_context_weight: float = Field(
        default=DEFAULT_DOCS_CONTEXT_WEIGHT, ge=0.0, le=4.0,
        description="How much of its document a documentation chunk's stored vector carries: "
        "the chunk's own direction plus this weight times the mean direction of its "
        "document's chunks. 0.5 (default) keeps a chunk mostly itself while it carries what its "
        "document covers; 0 stores each chunk's own vector, sharper for finding one section "
        "by its own words. A change re-embeds every source on the next index run.",
    )
    docs_retrieval: DocsRetrieval = Field(
        default="adaptive",
        description="Documentation retrieval strategy (developer and user indexes): adaptive "
        "(default: vector for questions; hybrid with the keyword ranking weighing twice for a "
        "query of one or two significant words or holding an identifier, where a bare term's "
        "vector says little), vector, or hybrid for every query (full-text BM25 + vector, "
        "fused by reciprocal rank fusion; the memory and filesystem stores compute BM25 in "
        "Python).",
    )
    docs_rrf_k: int = Field(
        default=20, ge=1, le=1000,
        description="The reciprocal-rank-fusion constant of hybrid documentation retrieval: "
        "a label scores 1 / (k + rank) in each ranking; a smaller k weighs the first ranks "
        "more.",
    )
    search_adaptive_tuning: bool = Field(
        default=False,
        description="Application search (balanced and deep): fuse keyword, vector and hybrid "
        "with the committed retrieval tuning profile (ragplate/catalog/search_tuning.py: "
        "weighted scores + RRF + agreement, per query class) instead of plain RRF.",
    )
    policy_classification_version: str = Field(
        default="in-app-docs-v1",
        description="policy_classification_version a user-corpus document must declare.",
    )
    embeddings_url: str | None = Field(
        default=None,
        description="Base URL of the OpenAI-compatible embeddings server used by "
        "openai_compatible profiles (e.g. http://127.0.0.1:8080).",
    )
    embeddings_api_key: SecretStr | None = Field(
        default=None, description="Bearer key for the embeddings server, if it needs one."
    )
    embeddings_timeout: float = Field(
        default=30.0, gt=0, description="Seconds before an embeddings request times out."
    )
    servers: dict[str, ServerSettings] = Field(
        default_factory=dict,
        description="Self-hosted AI servers by name, e.g. RAGPLATE_SERVERS__EMBEDDINGS__URL, "
        "RAGPLATE_SERVERS__RERANK__URL, RAGPLATE_SERVERS__TRANSCRIPTION__MODEL (fields: url, "
        "key, timeout, batch_size, slow_seconds, api, model). The embeddings server falls back "
        "to RAGPLATE_EMBEDDINGS_URL, _API_KEY, _TIMEOUT and RAGPLATE_EMBED_BATCH_SIZE.",
    )
    api_host: str = Field(default="127.0.0.1", description="Address the API binds to.")
    api_port: int = Field(default=8000, ge=1, le=65535, description="Port the API binds to.")
    api_max_body_bytes: int = Field(
        default=1_048_576, ge=1024,
        description="Largest request body the API reads, in bytes; a larger one is refused "
        "with 413 before it is read.",
    )
    token_ttl_days: int = Field(
        default=90, ge=1, le=3650,
        description="Days an API token lives (ragplate users token NAME); --expires-in "
        "sets one token's lifetime, and a token acting as someone (--impersonated-by) "
        "lives 8 hours unless it says otherwise. An expired token is a 401.",
    )
    entities: list[Entity] = Field(
        default_factory=list,
        description="Extra embeddable entities as a JSON list of objects (name, table, "
        "key_column, key_type, tenant_column, status_column, searchable_statuses, translations "
        "{table, key_column, locale_column, text_fields, search_column}); cms.contents is "
        "shipped. Their tables are the operator's to create.",
    )
    embeddings_modules: list[str] = Field(
        default_factory=list,
        description="Modules whose records an applied CRUD write re-embeds, as a JSON list "
        "of module names (e.g. [\"cms\"]); empty: every module.",
    )
    query_logging_enabled: bool = Field(
        default=False,
        description="Log each answered or abstained assistant question (write-only, never "
        "read to answer) for the corpus-gap report; guests, acting-as tokens and refused "
        "turns are never logged. Needs RAGPLATE_APP_KEY.",
    )
    query_logging_query_text_mode: Literal["raw", "off"] = Field(
        default="raw",
        description="raw: store the question as typed, every secret in it replaced by "
        "[redacted] (it may hold what a person typed about themselves; retention and "
        "erasure bound it); off: counts, latency, locale and profile only.",
    )
    query_logging_retention_days: int = Field(
        default=30, ge=1, le=3650,
        description="Days a query record is kept; ragplate analytics prune (and the "
        "daily-analytics-prune deployment) deletes older ones.",
    )
    app_key: SecretStr | None = Field(
        default=None,
        description="The application key: query records refer to a person as HMAC-SHA256 "
        "of their id under it. Rotate by moving the old one to RAGPLATE_APP_PREVIOUS_KEYS.",
    )
    app_previous_keys: list[SecretStr] = Field(
        default_factory=list,
        description="Earlier application keys, as a JSON list: erasing a person's query "
        "records also matches the references written under them.",
    )
    tools_crud_entities: dict[str, list[str]] = Field(
        default_factory=dict,
        description="The application entities the in-app assistant's data tools may use, "
        "and the operations of each, as a JSON object (e.g. {\"sao.tickets\": [\"read\", "
        "\"create\", \"update\"]}); empty: no data tool. A person is offered only what "
        "they may do; approve and disapprove are never offered.",
    )
    tools_crud_unmoderated_writes: list[str] = Field(
        default_factory=list,
        description="Entities without approvals whose write operations the assistant may "
        "propose, as a JSON list (e.g. [\"cms.contents\"]); an entity with approvals "
        "needs no listing.",
    )
    assistant_writes_ttl_minutes: int = Field(
        default=30, ge=1, le=1440,
        description="Minutes a write the assistant proposed can be confirmed; then it "
        "expires and nothing is written.",
    )

    # The embedding-model switch (``ragplate embeddings switch``). Out-of-range values fall
    # back instead of failing, as the switch's operating notes say: a typo must not stop a
    # switch that is half done.
    index_chunk_size: int = Field(
        default=250,
        description="Records per index chunk of the embedding switch (one Prefect task run "
        "each). Below 1 or not a number: 250; above 2000: 2000.",
    )
    rag_chunk_size: int = Field(
        default=20,
        description="Documentation files per documentation chunk of the embedding switch. "
        "Below 1 or not a number: 20; above 200: 200.",
    )
    index_chunk_stall_seconds: float = Field(
        default=900.0,
        description="Seconds a chunked switch phase waits with chunks queued and none "
        "written before it fails naming the queue and its worker. Below 1 or not a "
        "number: 900.",
    )
    state_lock_wait_seconds: float = Field(
        default=10.0,
        description="Seconds a writer of the switch state waits for its advisory lock "
        "before failing (and being retried). Below 1 or not a number: 10.",
    )
    switch_gate_margin: float = Field(
        default=0.05,
        description="Largest drop of hit@5 or MRR (target against serving model, on the "
        "switch-gate dataset) that still lets a switch activate. Outside 0-1 or not a "
        "number: 0.05.",
    )
    switch_prune_grace_seconds: float = Field(
        default=2.0, ge=0, le=600,
        description="Seconds an activated switch waits before deleting the previous "
        "model's rows and indexes, so that a search that read the previous serving model "
        "just before the activation still finds them.",
    )
    switch_retry_delays: list[float] = Field(
        default_factory=lambda: [10.0, 30.0],
        description="Seconds between the three tries of a switch chunk task, as a JSON "
        "list (default [10, 30]); tests lower them.",
    )
    test_profiles: bool = Field(
        default=False,
        description="Tests only: also declare the fast hashing embedding profiles "
        "(local:ragplate/hashing-64 and others; read when ragplate starts).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The default sources, the environment's refusing a variable set but empty."""
        assert isinstance(env_settings, EnvSettingsSource)
        env = _EnvRefusingEmpty(
            settings_cls,
            case_sensitive=env_settings.case_sensitive,
            env_prefix=env_settings.env_prefix,
            env_prefix_target=env_settings.env_prefix_target,
            env_nested_delimiter=env_settings.env_nested_delimiter,
            env_nested_max_split=env_settings.env_nested_max_split,
            env_ignore_empty=False,
            env_parse_none_str=env_settings.env_parse_none_str,
            env_parse_enums=env_settings.env_parse_enums,
        )
        return init_settings, env, dotenv_settings, file_secret_settings

    @field_validator("database_url", mode="after")
    @classmethod
    def _postgresql_url(cls, value: SecretStr | None) -> SecretStr | None:
        # Checked here, so a wrong URL is one line naming the setting, not a driver's
        # traceback on first use; the value itself is never echoed (it holds a password).
        if value is not None and not re.match(
                r"postgres(ql)?(\+[a-z0-9_]+)?://", value.get_secret_value()):
            raise ValueError("must be a PostgreSQL URL, e.g. "
                             "postgresql+psycopg://user:password@host:5432/ragplate")
        return value

    @field_validator("docs_roots", mode="after")
    @classmethod
    def _root_prefixes(cls, value: dict[str, Path]) -> dict[str, Path]:
        # The same rule as index-docs --prefix: a configured root must not label its
        # documents "../x/…" or with a control character either.
        for prefix in value:
            problem = label_prefix_problem(prefix)
            if problem is not None:
                raise ValueError(f"prefix {prefix!r}: {problem}")
        return value

    @field_validator("assistant_fallback_locales", mode="after")
    @classmethod
    def _locales(cls, value: list[str]) -> list[str]:
        for locale in value:
            if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*", locale):
                raise ValueError(f"{locale!r} is not a locale (e.g. en, it, pt-BR)")
        return value

    @field_validator("tools_crud_entities", mode="after")
    @classmethod
    def _crud_tools(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for entity, operations in value.items():
            _known_entity(entity)
            for operation in operations:
                if operation not in OPERATIONS:
                    raise ValueError(f"{entity}: {operation!r} is not an operation the "
                                     f"assistant may be offered ({', '.join(OPERATIONS)})")
        return value

    @field_validator("tools_crud_unmoderated_writes", mode="after")
    @classmethod
    def _unmoderated(cls, value: list[str]) -> list[str]:
        for entity in value:
            _known_entity(entity)
        return value

    @field_validator("embeddings_modules", mode="after")
    @classmethod
    def _modules(cls, value: list[str]) -> list[str]:
        for module in value:
            if not re.fullmatch(r"[a-z][a-z0-9_]*", module):
                raise ValueError(f"{module!r} is not a module name (e.g. cms)")
        return value

    @field_validator("index_chunk_size", "rag_chunk_size", "index_chunk_stall_seconds",
                     "state_lock_wait_seconds", "switch_gate_margin", mode="before")
    @classmethod
    def _switch_fallbacks(cls, value: object, info: ValidationInfo) -> object:
        return switch_fallback(info.field_name or "", value)

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("max_documents", mode="after")
    @classmethod
    def _clamp_top_k(cls, value: int) -> int:
        return clamp_top_k(value)

    @field_validator("servers", mode="after")
    @classmethod
    def _server_names(cls, value: dict[str, ServerSettings]) -> dict[str, ServerSettings]:
        for name in value:
            if not name or not all(c.isalnum() or c == "_" for c in name):
                raise ValueError(f"server name {name!r}: use letters, digits and _ only")
        return {name.lower(): server for name, server in value.items()}

    @field_validator("elasticsearch_url", mode="after")
    @classmethod
    def _cluster_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("give the cluster's URL with its scheme, e.g. "
                             "https://es.internal:9200")
        return value

    @model_validator(mode="after")
    def _engine(self) -> Settings:
        # The URL alone switches every role to Elasticsearch; an explicit store wins.
        if self.elasticsearch_url and "vector_store" not in self.model_fields_set:
            self.vector_store = "elasticsearch"
        elif self.vector_store == "elasticsearch" and not self.elasticsearch_url:
            raise ValueError("RAGPLATE_VECTOR_STORE=elasticsearch needs "
                             "RAGPLATE_ELASTICSEARCH_URL")
        return self

    @property
    def uses_elasticsearch(self) -> bool:
        """Whether application search, the switch's per-model indexes and the query
        analytics live in Elasticsearch (``RAGPLATE_ELASTICSEARCH_URL`` is set)."""
        return self.elasticsearch_url is not None

    @property
    def query_log_index(self) -> str:
        """The Elasticsearch index of the query analytics (``{app}_rag_queries``)."""
        prefix = self.elasticsearch_index_prefix
        return self.elasticsearch_query_log_index or f"{prefix}_rag_queries"

    def extra_roots(self) -> dict[str, Path]:
        """Roots from ``RAGPLATE_DOCS_PATH``, keyed by their synthetic prefix."""
        roots: dict[str, Path] = {}
        for raw in filter(None, (p.strip() for p in self.docs_path.split(os.pathsep))):
            path = Path(raw).expanduser()
            if not path.is_dir():
                raise ConfigurationError(f"RAGPLATE_DOCS_PATH entry is not a directory: {raw}")
            prefix = f"faq-extra-{path.resolve().name}"
            if prefix in roots and roots[prefix].resolve() != path.resolve():
                # One prefix is one root: the second would silently replace the first.
                raise ConfigurationError(
                    f"RAGPLATE_DOCS_PATH entries {roots[prefix]} and {raw} share the prefix "
                    f"{prefix!r} (the directory name): rename one, or index it with "
                    "index-docs --path DIR --prefix P")
            roots[prefix] = path
        return roots

    def all_roots(self) -> dict[str, Path]:
        """Configured roots plus the extra ones, in a stable order."""
        return {**self.docs_roots, **self.extra_roots()}

    @property
    def run_dir(self) -> Path:
        """Where pid files and locks of the embedded services live."""
        return self.home / "run"

    @property
    def log_dir(self) -> Path:
        """Where the embedded services write their logs."""
        return self.home / "logs"


#: (default, lower bound, cap) of the switch settings that fall back instead of failing.
SWITCH_BOUNDS: dict[str, tuple[float, float, float | None]] = {
    "index_chunk_size": (250, 1, 2000),
    "rag_chunk_size": (20, 1, 200),
    "index_chunk_stall_seconds": (900, 1, None),
    "state_lock_wait_seconds": (10, 1, None),
    "switch_gate_margin": (0.05, 0, None),
}


def switch_fallback(name: str, value: object) -> float:
    """A switch setting's value with the fallbacks of its bounds: not a number or below the
    lower bound gives the default, above the cap gives the cap (the margin has no cap: a
    value above 1 is invalid and gives the default too)."""
    default, low, cap = SWITCH_BOUNDS[name]
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    if not math.isfinite(number) or number < low:  # NaN, or an infinity: not a number
        return default
    if name == "switch_gate_margin" and number > 1:
        return default
    if cap is not None and number > cap:
        return cap
    if name in ("index_chunk_size", "rag_chunk_size"):
        return float(int(number))
    return number


def clamp_top_k(value: int) -> int:
    """Retrieval depth is always between 1 and 10."""
    return max(1, min(10, int(value)))
