"""``ragplate servers check``: probe every configured server, one row per finding."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import httpx

from ragplate.catalog.errors import RagplateError
from ragplate.catalog.profiles import PROFILES, EmbeddingProfile
from ragplate.catalog.settings import Settings
from ragplate.infra.models.calls import make_client
from ragplate.infra.models.chat import CHAT, chat_client_from_settings
from ragplate.infra.models.config import (
    EMBEDDINGS,
    RERANK,
    TRANSCRIPTION,
    ServerConfig,
    embeddings_server_named,
    env_name,
    role_server,
)
from ragplate.infra.models.identity import inspect
from ragplate.infra.models.info import server_info
from ragplate.infra.models.openai_compatible import OpenAICompatibleEmbedder
from ragplate.infra.models.rerank import RerankClient

Status = Literal["ok", "warn", "fail", "listed", "skipped"]

RERANK_QUERY = "How do I index the documentation?"
RERANK_TEXTS = (
    "Run ragplate index-docs to index the configured documentation roots.",
    "The cafeteria serves lunch from noon.",
)
# Batches of 64 are what other clients of a shared TEI commonly send; a lower limit is worth
# knowing about even when ragplate's own batch size fits.
BATCH_REFERENCE = 64


@dataclass(frozen=True)
class CheckRow:
    """One finding: which server, what was checked, and the verdict."""

    server: str
    role: str
    subject: str
    endpoint: str
    status: Status
    detail: str

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def failed(rows: Iterable[CheckRow]) -> bool:
    """True when one row failed (the command then exits 1)."""
    return any(row.status == "fail" for row in rows)


def check_servers(
    settings: Settings,
    profiles: dict[str, EmbeddingProfile] | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
) -> list[CheckRow]:
    """Probe each ``openai_compatible`` profile through the server it names, the reranker
    with two fixed pairs, TEI batch limits and the chat model with one short completion;
    list transcription without probing it (that would need audio)."""
    catalog = PROFILES if profiles is None else profiles
    rows: list[CheckRow] = []
    by_server: dict[str, list[CheckRow]] = {}
    servers: dict[str, ServerConfig] = {}
    for profile in catalog.values():
        if profile.provider != "openai_compatible":
            continue
        server = embeddings_server_named(profile.server, settings)
        if server is None:
            rows.append(CheckRow(profile.server, EMBEDDINGS, profile.key, "", "skipped",
                                 f"not configured (set {env_name(profile.server, 'url')})"))
            continue
        servers[server.name] = server
        by_server.setdefault(server.name, []).append(_embedding_row(profile, server, transport))
    for name, profile_rows in by_server.items():
        rows.extend(_server_verdict(profile_rows))
        rows.extend(_batch_rows(servers[name], transport))
    used = set(servers)
    for name in sorted(set(settings.servers) - used - {EMBEDDINGS, RERANK, TRANSCRIPTION, CHAT}):
        server = embeddings_server_named(name, settings)
        if server is not None and server.name == name:
            rows.append(CheckRow(name, EMBEDDINGS, "-", server.safe_url, "skipped",
                                 "no embedding profile names this server"))
    rerank = role_server(RERANK, settings)
    if rerank is not None:
        rows.append(_rerank_row(rerank, transport))
        if rerank.api == "tei":
            rows.extend(_batch_rows(rerank, transport))
    chat = settings.servers.get(CHAT)
    if chat is not None and chat.url:
        rows.append(_chat_row(settings, transport))
    transcription = role_server(TRANSCRIPTION, settings)
    if transcription is not None:
        rows.append(CheckRow(TRANSCRIPTION, TRANSCRIPTION, transcription.model or "-",
                             transcription.safe_url, "listed", "not probed: it would need audio"))
    return rows


def _server_verdict(profile_rows: list[CheckRow]) -> list[CheckRow]:
    # Several profiles may name one server (or fall back to the default one); a server runs
    # one model, so the profiles it refuses only fail the check when it accepts none.
    if not any(row.status == "ok" for row in profile_rows):
        return profile_rows
    return [
        row if row.status != "fail" else replace(
            row, status="warn", detail=f"this profile cannot use this server: {row.detail}"
        )
        for row in profile_rows
    ]


def _embedding_row(
    profile: EmbeddingProfile, server: ServerConfig, transport: httpx.BaseTransport | None
) -> CheckRow:
    embedder = OpenAICompatibleEmbedder(profile, server=server, transport=transport)
    try:
        identity = inspect(profile, embedder=embedder)
    finally:
        embedder.close()
    refusal = identity.refusal()
    if refusal is not None:
        return CheckRow(server.name, EMBEDDINGS, profile.key, identity.endpoint, "fail", refusal)
    info = f", GET /info model_id {identity.info_model_id}" if identity.info_model_id else ""
    return CheckRow(server.name, EMBEDDINGS, profile.key, identity.endpoint, "ok",
                    f"model {identity.answer_model}, {identity.dimensions} dimensions, "
                    f"norm {identity.norm:.4f}{info}")


def _batch_rows(server: ServerConfig, transport: httpx.BaseTransport | None) -> list[CheckRow]:
    client = make_client(server, transport)
    try:
        info = server_info(server, client)
    finally:
        client.close()
    if info is None or info.max_client_batch_size is None:
        return []
    limit = info.max_client_batch_size
    status: Status = "ok"
    notes = [f"max_client_batch_size {limit}, batch_size {server.batch_size}"]
    if limit < server.batch_size:
        status = "fail"
        notes.append(f"set {env_name(server.name, 'batch_size')} to {limit} or less")
    if limit < BATCH_REFERENCE:
        status = "fail" if status == "fail" else "warn"
        notes.append(f"below {BATCH_REFERENCE}: larger batches from other clients are refused")
    return [CheckRow(server.name, server.role, "batch limits", server.safe_url, status,
                     "; ".join(notes))]


def _rerank_row(server: ServerConfig, transport: httpx.BaseTransport | None) -> CheckRow:
    client = RerankClient(server, transport=transport)
    try:
        result = client.rerank(RERANK_QUERY, RERANK_TEXTS)
    except RagplateError as exc:
        return CheckRow(RERANK, RERANK, f"{server.api}: two fixed pairs", client.endpoint,
                        "fail", str(exc))
    finally:
        client.close()
    scores = ", ".join(f"{score:.4f}" for score in result.scores)
    return CheckRow(RERANK, RERANK, f"{server.api}: two fixed pairs", client.endpoint, "ok",
                    f"scores {scores}; model {result.model or 'not named'}")


#: The chat probe: one completion this short costs next to nothing on a hosted model.
CHAT_PROBE = [{"role": "user", "content": "Reply with the single word OK."}]


def _chat_row(settings: Settings, transport: httpx.BaseTransport | None) -> CheckRow:
    """One short completion: the server answers, takes the key and knows the model."""
    try:
        client = chat_client_from_settings(settings, transport=transport)
    except RagplateError as exc:  # a URL without a model
        return CheckRow(CHAT, CHAT, "-", "", "fail", str(exc))
    assert client is not None  # the caller saw a URL
    try:
        reply = client.complete(CHAT_PROBE)
    except RagplateError as exc:
        return CheckRow(CHAT, CHAT, client.model, client.endpoint, "fail", str(exc))
    finally:
        client.close()
    return CheckRow(CHAT, CHAT, client.model, client.endpoint, "ok",
                    f"one completion, finish_reason {reply.finish_reason or 'not given'}")
