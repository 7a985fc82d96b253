"""The ``ui_proposals`` tools: the model proposes a preference or a view state that the page
declared proposable, and the person accepts or refuses it in their client.

The page's ``proposable`` list and every call of the model are untrusted input. An entry of
the list that breaks a bound is dropped, never repaired (:func:`declared_targets`): at most
30 entries (a longer list declares nothing), exactly the keys ``kind``, ``target``,
``schema``, ``current`` (``null`` is a value) and an optional ``description``; a target
matching its patterns (a ``resource`` also at most 200 characters, like the page's own);
a schema of the subset of :mod:`~ragplate.tasks.assistant.proposal_schema` of at most 2000
bytes and 4 levels; a ``current`` of at most 500 bytes; a description of at most 120
characters on one line. Sizes are of compact UTF-8 JSON. Two entries for one target are both
dropped: which schema the client meant cannot be known.

A call is recorded only when its target is declared, its value (JSON text, at most 500 bytes
parsed) satisfies the declared schema and differs from ``current``, its reason is plain text
(:func:`reason_ok`), and the message holds fewer than three proposals and none for that
target. A refused call gets a fixed text that never repeats what the model sent. Nothing is
ever applied: the server keeps no record of what the person decides.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import unicodedata
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ragplate.tasks.assistant.agent import Tool
from ragplate.tasks.assistant.output_policy import check_output
from ragplate.tasks.assistant.proposal_schema import (
    INVALID,
    fits,
    is_proposable_schema,
    json_equal,
    parse_value,
    satisfies,
)

__all__ = ["ACCEPTED", "LIMIT_REACHED", "MAX_PROPOSALS", "PREFERENCE_TOOL", "REFUSED",
           "VIEW_STATE_TOOL", "Target", "UiProposals", "declaration_problem",
           "declared_targets", "reason_ok"]

logger = logging.getLogger("ragplate.assistant")

MAX_TARGETS: Final = 30
MAX_SCHEMA_BYTES: Final = 2000
MAX_SCHEMA_DEPTH: Final = 4
MAX_VALUE_BYTES: Final = 500
MAX_DESCRIPTION_CHARS: Final = 120
MAX_RESOURCE_CHARS: Final = 200
MAX_REASON_CHARS: Final = 240
MAX_PROPOSALS: Final = 3
SCHEMA_VERSION: Final = 1
PREFERENCE_TOOL: Final = "propose_preference_change"
VIEW_STATE_TOOL: Final = "propose_view_state"
TOOL_NAMES: Final = {"preference": PREFERENCE_TOOL, "view_state": VIEW_STATE_TOOL}
# Three accepted calls and as many corrected retries.
TOOL_MAX_RUNS: Final = 6

ACCEPTED: Final = (
    "The proposal was recorded. It waits for the person to accept or refuse it; nothing has "
    "been changed. Never say or imply that it was applied, changed or saved: say that you "
    "suggested it and that they can accept or refuse it.")
REFUSED: Final = (
    "The proposal was refused and nothing was recorded. A proposal needs a target this page "
    'declared, a value given as JSON text (a string in quotes, such as "\\"cards\\"") that '
    "satisfies the target's schema and differs from its current value, and a reason in plain "
    "text of at most 240 characters without markup or links; one proposal per target.")
LIMIT_REACHED: Final = (
    "The proposal was refused: this message already holds the three proposals it may. "
    "Answer without proposing more.")
NOTICES: Final = {
    "en": ("This is only a suggestion: it waits for you to accept or refuse it, and nothing "
           "has been changed.",
           "These are only suggestions: they wait for you to accept or refuse them, and "
           "nothing has been changed."),
    "it": ("Questo è solo un suggerimento: attende che tu lo accetti o lo rifiuti, e non è "
           "stato modificato nulla.",
           "Questi sono solo suggerimenti: attendono che tu li accetti o li rifiuti, e non è "
           "stato modificato nulla."),
}

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_FIELDS: Final = {
    "preference": {"namespace": _NAME, "key": _NAME},
    "view_state": {"resource": re.compile(r"[a-z][a-z0-9_]*/[a-z][a-z0-9_]*"),
                   "view": re.compile(r"[a-z][a-z0-9_-]{0,63}")},
}
_REQUIRED_KEYS: Final = frozenset({"kind", "target", "schema", "current"})
_ENTRY_KEYS: Final = _REQUIRED_KEYS | {"description"}
_ARGUMENT_KEYS: Final = frozenset({"target", "value", "reason"})
# Characters no line of plain text needs: controls, invisible format characters, line and
# paragraph separators, surrogates, private use and unassigned code points.
_NOT_PLAIN: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_MARKUP: Final = frozenset("<>[]{}`*_~|\\")
_LINK = re.compile(
    r"(?i)://|\bwww\.|\b(mailto|javascript|vbscript|data|tel|file|ftp|sms):\S|&#?\w+;|"
    r"[\w.+-]+@[\w-]+\.\w|\b[\w-]+\.(com|net|org|io|it|eu|dev|app|co|uk|de|fr|info|biz|me|"
    r"ly|gl|ai|xyz)\b")


@dataclass(frozen=True, eq=False)
class Target:
    """One proposable target the page declared and that kept its bounds."""

    kind: str
    target: dict[str, str]
    schema: dict[str, Any]
    current: Any
    description: str | None

    @property
    def key(self) -> tuple[str, ...]:
        """What identifies the target: its kind and its fields' values."""
        return (self.kind, *(self.target[name] for name in _FIELDS[self.kind]))

    def shown(self) -> dict[str, Any]:
        """The target as the model is shown it."""
        shown = {"target": self.target, "schema": self.schema, "current": self.current}
        return shown | ({"description": self.description} if self.description else {})


def _plain_line(text: object, max_chars: int) -> bool:
    return (isinstance(text, str) and bool(text.strip()) and len(text) <= max_chars
            and not any(unicodedata.category(c) in _NOT_PLAIN for c in text))


def _target(kind: str, value: object) -> dict[str, str] | None:
    fields = _FIELDS[kind]
    if not isinstance(value, dict) or value.keys() != fields.keys():
        return None
    for name, pattern in fields.items():
        field = value[name]
        if not isinstance(field, str) or len(field) > MAX_RESOURCE_CHARS \
                or not pattern.fullmatch(field):
            return None
    return {name: value[name] for name in fields}


def declaration_problem(entry: object) -> str | None:
    """What makes ``entry`` of a page's ``proposable`` list malformed (its shape, not its
    bounds), in words a client developer can act on; ``None`` when its shape is right. The
    API refuses such a list (422): an entry of a wrong shape is a client's bug, where one
    out of bounds (a long ``current``) may come from the data and is dropped."""
    if not isinstance(entry, dict):
        return "an entry is an object"
    missing = sorted(_REQUIRED_KEYS - entry.keys())
    if missing:
        return f"missing {', '.join(missing)}"
    if entry.keys() - _ENTRY_KEYS:
        return ("unknown keys (an entry has kind, target, schema, current and an optional "
                "description)")
    kind = entry["kind"]
    if not isinstance(kind, str) or kind not in _FIELDS:
        return "kind is 'preference' or 'view_state'"
    if _target(kind, entry["target"]) is None:
        shape = ('{"namespace": NAME, "key": NAME}' if kind == "preference"
                 else '{"resource": "module/entity", "view": NAME}')
        return f"a {kind}'s target is {shape} (names of letters, digits, _ . -)"
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        return "description is text"
    schema = entry["schema"]
    # Too large or too deep is a bound (the entry is dropped), and is not read further.
    if fits(schema, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH) and not is_proposable_schema(schema):
        return ("schema is not of the supported JSON Schema subset (type, enum, const, "
                "minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, "
                "minItems, maxItems, items, properties, required, additionalProperties) or "
                "constrains nothing")
    return None


def _entry(entry: object) -> Target | None:
    if not isinstance(entry, dict) or not _REQUIRED_KEYS <= entry.keys() <= _ENTRY_KEYS:
        return None
    kind, description = entry["kind"], entry.get("description")
    if not isinstance(kind, str) or kind not in _FIELDS:
        return None
    target, schema = _target(kind, entry["target"]), entry["schema"]
    if (target is None or not fits(schema, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH)
            or not is_proposable_schema(schema)
            or not fits(entry["current"], MAX_VALUE_BYTES)
            or (description is not None
                and not _plain_line(description, MAX_DESCRIPTION_CHARS))):
        return None
    # A copy made through JSON: nothing later shares the request's objects.
    return Target(kind, target, json.loads(json.dumps(schema)),
                  json.loads(json.dumps(entry["current"])), description)


def declared_targets(page: Mapping[str, Any] | None) -> list[Target]:
    """The targets of ``page["proposable"]`` that keep their bounds (see the module
    docstring), in the page's order."""
    entries = page.get("proposable") if isinstance(page, Mapping) else None
    if not isinstance(entries, list) or len(entries) > MAX_TARGETS:
        return []
    parsed = [target for target in map(_entry, entries) if target is not None]
    counts = Counter(target.key for target in parsed)
    return [target for target in parsed if counts[target.key] == 1]


def reason_ok(reason: object) -> bool:
    """Whether ``reason`` is plain text of at most 240 characters on one line, without
    markup, entity or link, that the end-user output policy allows."""
    if not isinstance(reason, str) or not _plain_line(reason, MAX_REASON_CHARS):
        return False
    if any(c in _MARKUP for c in reason) or _LINK.search(unicodedata.normalize("NFKC", reason)):
        return False
    return check_output(reason, end_user=True, max_chars=MAX_REASON_CHARS).allowed


class UiProposals:
    """The proposal tools of one message (a :class:`~ragplate.tasks.assistant.toolsets.
    Toolset`): ``allowed`` is the compiled policy's permission to offer them, ``page`` the
    request's ``context.page``."""

    def __init__(self, allowed: bool, page: Mapping[str, Any] | None) -> None:
        self._targets = {t.key: t for t in declared_targets(page)} if allowed else {}
        self._proposals: list[dict[str, Any]] = []
        self._proposed: set[tuple[str, ...]] = set()

    def tools(self) -> list[Tool]:
        """One tool per kind the page declared a valid target of; none when not allowed."""
        kinds = {target.kind for target in self._targets.values()}
        return [self._tool(kind) for kind in TOOL_NAMES if kind in kinds]

    def instructions(self) -> str:
        """What the system message says of the tools when they are offered, else ``""``."""
        if not self._targets:
            return ""
        return (" The page declared settings you may propose to change with the propose "
                "tools when it would help the person; a proposal waits for them to accept "
                "or refuse it, so never say that anything was changed, applied or saved.")

    def metadata(self) -> dict[str, Any]:
        """``{"proposals": [...]}`` with the accepted proposals, or ``{}``."""
        if not self._proposals:
            return {}
        return {"proposals": json.loads(json.dumps(self._proposals))}

    def grounds(self) -> bool:
        """Whether the answer may rest on this turn's proposals instead of documentation."""
        return bool(self._proposals)

    def notice(self, locale: str) -> str | None:
        """That the suggestions wait for the person and nothing was changed, in English or
        Italian; ``None`` without proposals."""
        if not self._proposals:
            return None
        language = locale.replace("_", "-").split("-")[0].lower()
        single, plural = NOTICES.get(language, NOTICES["en"])
        return single if len(self._proposals) == 1 else plural

    def _tool(self, kind: str) -> Tool:
        targets = [t for t in self._targets.values() if t.kind == kind]
        fields = list(_FIELDS[kind])
        what = "one of the person's preferences" if kind == "preference" else "a view state"
        listed = "\n".join(json.dumps(t.shown(), ensure_ascii=False) for t in targets)
        target_schema = {
            "type": "object",
            "properties": {name: {"type": "string",
                                  "enum": sorted({t.target[name] for t in targets})}
                           for name in fields},
            "required": fields, "additionalProperties": False,
            "description": "One of the declared targets, exactly as listed."}
        return Tool(
            name=TOOL_NAMES[kind],
            description=(
                f"Propose to the person a change of {what} that this page declared. It is "
                "only a suggestion: it waits for the person to accept or refuse it, and "
                "calling this tool changes nothing, so never say that it was applied. At "
                f"most {MAX_PROPOSALS} proposals per message, one per target. Declared "
                f"targets (JSON, one a line):\n{listed}"),
            parameters={
                "type": "object",
                "properties": {
                    "target": target_schema,
                    "value": {"type": "string", "description": (
                        "The proposed value as JSON text, satisfying the target's schema and "
                        'different from its current value (a string is quoted: "\\"cards\\"").'
                    )},
                    "reason": {"type": "string", "maxLength": MAX_REASON_CHARS, "description": (
                        "Why it helps the person, in their language: plain text of at most "
                        f"{MAX_REASON_CHARS} characters on one line, without markup or links.")},
                },
                "required": sorted(_ARGUMENT_KEYS), "additionalProperties": False},
            handler=functools.partial(self._handle, kind),
            max_runs=TOOL_MAX_RUNS)

    def _handle(self, kind: str, arguments: dict[str, Any]) -> str:
        if len(self._proposals) >= MAX_PROPOSALS:
            self._log(kind, "limit")
            return LIMIT_REACHED
        problem = self._check(kind, arguments)
        if problem is not None:
            self._log(kind, problem)
            return REFUSED
        return ACCEPTED

    def _check(self, kind: str, arguments: dict[str, Any]) -> str | None:
        """Records the proposal and returns ``None``, or names the check it failed."""
        if arguments.keys() != _ARGUMENT_KEYS:
            return "arguments"
        target = _target(kind, arguments["target"])
        declared = self._targets.get((kind, *target.values())) if target else None
        if declared is None:
            return "target"
        if declared.key in self._proposed:
            return "repeated_target"
        value = parse_value(arguments["value"], MAX_VALUE_BYTES)
        if value is INVALID or not satisfies(value, declared.schema):
            return "value"
        if json_equal(value, declared.current):
            return "unchanged"
        if not reason_ok(arguments["reason"]):
            return "reason"
        self._proposed.add(declared.key)
        self._proposals.append({
            "id": str(uuid.uuid4()), "schemaVersion": SCHEMA_VERSION, "kind": kind,
            "target": dict(declared.target), "current": declared.current,
            "proposed": value, "reason": arguments["reason"]})
        return None

    @staticmethod
    def _log(kind: str, check: str) -> None:
        # The check's name only: what the model sent may be a probe, and is not logged.
        logger.info("Proposal refused: tool=%s check=%s", TOOL_NAMES[kind], check,
                    extra={"tool": TOOL_NAMES[kind], "check": check})
