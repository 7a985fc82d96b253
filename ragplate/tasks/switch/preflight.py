"""Starting, resuming and abandoning a switch: every refusal (which changes nothing), the
confirmation, and the preflight phase's count of the work.

Refusals are :class:`~ragplate.catalog.switch.SwitchRefusedError`; the state is written
only once every check passed, in one transaction under the state lock.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ragplate.catalog.entities import entities
from ragplate.catalog.errors import RagplateError, UnknownProfileError
from ragplate.catalog.profiles import EmbeddingProfile, get_profile
from ragplate.catalog.settings import Settings
from ragplate.catalog.switch import SwitchRefusedError, SwitchState, now
from ragplate.infra import locks, settings_store
from ragplate.infra.models import make_embedder, probe
from ragplate.infra.records.texts import count_texts
from ragplate.infra.runtime import Runtime
from ragplate.infra.switch_state import read_state
from ragplate.tasks.switch.documentation import configured_sources, documentation_refusal
from ragplate.tasks.switch.indexes import doc_indexes
from ragplate.tasks.switch.state import update_state


@dataclass(frozen=True)
class Confirmation:
    """What the operator confirms before a switch starts (computing it writes nothing)."""

    current: EmbeddingProfile
    target: EmbeddingProfile
    texts: int
    estimate_seconds: float | None

    @property
    def dimensions_differ(self) -> bool:
        """The class of change: the target's vectors have another length."""
        return self.current.dimensions != self.target.dimensions

    def lines(self) -> list[str]:
        """The confirmation, one statement per line."""
        change = (
            "dimensions differ: the target gets its own vector indexes of "
            f"{self.target.dimensions} dimensions and every record is re-embedded"
            if self.dimensions_differ
            else "dimensions equal: every record is re-embedded into the target's own indexes"
        )
        estimate = ("no time estimate for this provider" if self.estimate_seconds is None
                    else f"about {self.estimate_seconds:.0f} s (estimate)")
        return [
            f"current model  {self.current.key} ({self.current.dimensions} dimensions)",
            f"target model   {self.target.key} ({self.target.dimensions} dimensions)",
            f"change         {change}",
            f"texts to embed {self.texts} (searchable records times their translations), "
            f"plus the documentation; {estimate}",
            "search keeps serving the current model (vector and hybrid) until the atomic "
            "activation; records edited meanwhile are embedded with both models",
            "going back to the previous model is the same procedure and costs the same",
        ]


def declared(key: str) -> EmbeddingProfile:
    """The declared profile ``key``, or a refusal naming the known ones."""
    try:
        return get_profile(key)
    except UnknownProfileError as exc:
        raise SwitchRefusedError(f"refused: {exc}") from None


def total_texts(runtime: Runtime) -> int:
    """Searchable texts of every declared entity."""
    with runtime.engine.connect() as conn:
        return sum(count_texts(conn, entity) for entity in entities(runtime.settings).values())


def confirmation(runtime: Runtime, key: str) -> Confirmation:
    """The confirmation for a switch to ``key``: cheap, and it writes nothing. The time
    estimate is the probe latency times the batch count, for ``openai_compatible`` only."""
    target = declared(key)
    current = get_profile(settings_store.active_profile_key(runtime.engine))
    texts = total_texts(runtime)
    estimate = None
    if target.provider == "openai_compatible":
        estimate = _server_estimate(target, runtime.settings, texts)
    return Confirmation(current, target, texts, estimate)


def _server_estimate(profile: EmbeddingProfile, settings: Settings, texts: int) -> float | None:
    from ragplate.infra.models.config import embeddings_server_named

    server = embeddings_server_named(profile.server, settings)
    if server is None:
        return None
    try:
        embedder = make_embedder(profile, settings)
        started = time.perf_counter()
        embedder.embed_query("embedding service probe")
        latency = time.perf_counter() - started
    except RagplateError:
        return None
    return latency * math.ceil(texts / max(1, server.batch_size))


def provider_refusal(profile: EmbeddingProfile, settings: Settings) -> str | None:
    """Why the profile's provider cannot be used: an ``openai_compatible`` profile needs
    the URL of the server it names (or of the default one)."""
    if profile.provider != "openai_compatible":
        return None
    from ragplate.infra.models.config import embeddings_server_named, env_name

    if embeddings_server_named(profile.server, settings) is None:
        return (f"provider of '{profile.key}' is not configured: set "
                f"{env_name(profile.server, 'url')} or RAGPLATE_EMBEDDINGS_URL")
    return None


def probe_refusal(profile: EmbeddingProfile, settings: Settings) -> str | None:
    """The probe of the start: a local profile embeds the probe text and must measure its
    declared dimensions; an ``openai_compatible`` one must pass the server identity check
    (answers, names the profile's model in the answer and in ``GET /info``, the declared
    length, normalised vectors when the profile normalises)."""
    if profile.provider == "openai_compatible":
        from ragplate.infra.models.identity import inspect

        return inspect(profile, settings).refusal()
    try:
        result = probe(make_embedder(profile, settings))
    except RagplateError as exc:
        return f"probe of '{profile.key}' failed: {exc}"
    if not result.ok:
        return (f"probe of '{profile.key}' measures {result.measured_dimensions} dimensions, "
                f"the profile declares {result.declared_dimensions}")
    return None


def identity_refusal(profile: EmbeddingProfile, settings: Settings) -> str | None:
    """The start's identity check without its probe (for ``--abandon``): the server of an
    ``openai_compatible`` profile must answer and run the profile's model."""
    if profile.provider != "openai_compatible":
        return None
    reason = provider_refusal(profile, settings)
    if reason is not None:
        return reason
    from ragplate.infra.models.identity import inspect

    identity = inspect(profile, settings)
    if identity.failure is not None or identity.answer_model != identity.expected_model or (
        identity.info_model_id is not None and identity.info_model_id != identity.expected_model
    ):
        return identity.refusal()
    return None


def _running_refusal(runtime: Runtime, state: SwitchState, what: str) -> str | None:
    if state.status == "running" and locks.run_lock_held(runtime.engine):
        written, pending, round_ = state.chunk_counts()
        return (f"refused: a switch to {state.target} is running normally (phase "
                f"{state.phase}, chunks written {written}, pending {pending}, round "
                f"{round_}); {what} acts only on a failed or interrupted switch")
    return None


def start(runtime: Runtime, key: str, *, force_activate: bool = False,
          flow_run_id: str | None = None, check_only: bool = False) -> SwitchState:
    """Check everything the start checks and store ``running``/``preflight``; raises
    :class:`SwitchRefusedError` (changing nothing) at the first check that fails. With
    ``check_only`` nothing is stored (the CLI's check before it starts the flow)."""
    engine = runtime.engine
    target = declared(key)
    serving = settings_store.active_profile_key(engine)
    if target.key == serving:
        # A stored switch is the reason that matters: it is what the operator must act on.
        _refuse_if_stored(read_state(engine))
        raise SwitchRefusedError(f"refused: '{key}' is already the serving model")
    with locks.start_lock(engine) as acquired:
        if not acquired:
            raise SwitchRefusedError("refused: another start holds the start lock")
        state = read_state(engine)
        _refuse_if_stored(state)
        reason = (provider_refusal(target, runtime.settings)
                  or probe_refusal(target, runtime.settings)
                  or documentation_refusal(runtime, doc_indexes(runtime)))
        if reason is not None:
            raise SwitchRefusedError(f"refused: {reason}")
        if check_only:
            return state

        def store(current: SwitchState) -> None:
            if current.status != "idle":  # a resume slipped in between: refuse, write nothing
                raise SwitchRefusedError(f"refused: a switch is already stored "
                                         f"({current.summary()})")
            fresh = SwitchState(status="running", phase="preflight", target=target.key,
                                previous=serving, force_activate=force_activate,
                                flow_run_id=flow_run_id, started_at=now(), progress_at=now(),
                                last=current.last, prune_pending=current.prune_pending)
            for name in SwitchState.model_fields:
                setattr(current, name, getattr(fresh, name))

        stored, _ = update_state(engine, runtime.settings.state_lock_wait_seconds, store)
        return stored


def _refuse_if_stored(state: SwitchState) -> None:
    if state.status != "idle":
        # --resume and --abandon take a failed or interrupted switch, not a live one.
        advice = ("wait for it to end (`ragplate embeddings status` shows its progress), or "
                  "once it has failed or been interrupted, use `ragplate embeddings switch "
                  "--resume` or `--abandon`") if state.status == "running" else (
                  "use `ragplate embeddings switch --resume` or `--abandon`")
        raise SwitchRefusedError(
            f"refused: a switch is already stored ({state.summary()}); {advice}")


def resume(runtime: Runtime, *, force_activate: bool = False, flow_run_id: str | None = None,
           own_run_lock: bool = False, check_only: bool = False) -> SwitchState:
    """Continue a failed or interrupted switch from its stored state and plan.

    A failed indexes phase resumes at embeddings, then writes only the pending chunks of
    its plan; a verify whose refresh ran out of rounds (or stalled, or was refused by the
    gate) goes back to verify; a verify that failed a check or was interrupted empties and
    rebuilds the indexes. Refused (nothing changed) when no switch is stored or one is
    running normally. ``own_run_lock``: the caller holds the run lock, so a ``running``
    state is one whose process died. A switch killed between its activation and its
    prune (idle, prune pending) is returned as is: the caller prunes.
    """
    engine = runtime.engine
    state = read_state(engine)
    if state.status == "idle":
        if state.prune_pending:  # killed between the activation and its prune
            return state
        raise SwitchRefusedError("refused: no switch to resume")
    reason = None if own_run_lock else _running_refusal(runtime, state, "--resume")
    if reason is not None:
        raise SwitchRefusedError(reason)
    declared(state.target or "")
    if check_only:
        return state

    def apply(current: SwitchState) -> None:
        if current.status == "idle":
            raise SwitchRefusedError("refused: no switch to resume")
        kind = current.failure if current.status == "failed" else "interrupted"
        if current.phase == "indexes":
            current.phase, current.after_embeddings = "embeddings", "indexes"
            if current.plan is not None:
                current.plan.round = 0
        elif current.phase == "verify":
            current.phase = "embeddings"
            if kind in ("rounds", "stall", "gate"):
                current.after_embeddings = "verify"
            else:
                current.after_embeddings, current.prepare = "indexes", True
            current.plan = None
        elif current.phase == "embeddings":
            current.embed_round = 0
        current.status, current.error, current.failure = "running", None, None
        current.force_activate = current.force_activate or force_activate
        current.flow_run_id = flow_run_id
        current.progress_at = now()

    stored, _ = update_state(engine, runtime.settings.state_lock_wait_seconds, apply)
    return stored


def abandon(runtime: Runtime, *, flow_run_id: str | None = None,
            own_run_lock: bool = False, check_only: bool = False) -> SwitchState:
    """Give up a failed or interrupted switch.

    Stopped in preflight: the state is cleared (nothing was embedded). Later: a return
    switch to the previous model is stored (its rows and indexes still exist and still
    serve, so only what is missing is written), checked first like a start's identity
    check; it ends with the previous model activated and the target's rows pruned.
    """
    engine = runtime.engine
    state = read_state(engine)
    if state.status == "idle":
        raise SwitchRefusedError("refused: no switch to abandon")
    reason = None if own_run_lock else _running_refusal(runtime, state, "--abandon")
    if reason is not None:
        raise SwitchRefusedError(reason)
    if state.phase != "preflight":
        previous = declared(state.previous or "")
        reason = identity_refusal(previous, runtime.settings)
        if reason is not None:
            raise SwitchRefusedError(f"refused: previous model {previous.key}: {reason}")
    if check_only:
        return state

    def apply(current: SwitchState) -> None:
        if current.status == "idle":
            raise SwitchRefusedError("refused: no switch to abandon")
        if current.phase == "preflight":
            current.status, current.phase, current.target = "idle", None, None
            current.error = current.failure = None
            current.plan = None
            return
        current.status, current.phase = "running", "embeddings"
        if not current.abandon:  # an abandon resumed or abandoned again keeps its name
            current.abandoned = current.target
        current.target, current.abandon = current.previous, True
        current.after_embeddings, current.prepare, current.plan = "indexes", True, None
        current.force_activate = False
        current.error = current.failure = None
        current.embed_round = 0
        current.flow_run_id = flow_run_id
        current.progress_at = now()

    stored, _ = update_state(engine, runtime.settings.state_lock_wait_seconds, apply)
    return stored


def count_work(runtime: Runtime) -> tuple[int, int]:
    """The preflight phase's count: (searchable texts, documentation files). Reading every
    documentation source validates it before anything is written."""
    return total_texts(runtime), len(configured_sources(runtime))
