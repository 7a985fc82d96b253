"""The tools one turn offers the chat model, grouped by what they serve.

A toolset is built for one message of one person (what it offers is decided from that
person and the compiled policy, never from what the message or the model says), hands its
:class:`~ragplate.tasks.assistant.agent.Tool` objects to the completion, collects what its
tools produced, and says what the stored message must carry of it. Nothing a toolset
collects is applied: a proposal waits for the person.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ragplate.tasks.assistant.agent import Tool


class Toolset(Protocol):
    """The tools of one capability for one turn."""

    def tools(self) -> list[Tool]:
        """The tools offered to the model in this turn (none: the toolset is idle)."""

    def metadata(self) -> dict[str, Any]:
        """What the assistant message carries of this turn's results (``{"proposals":
        [...]}``); empty when nothing was produced."""

    def notice(self, locale: str) -> str | None:
        """The sentence the message must end with when something waits for the person
        (in their language), else ``None``."""

    def grounds(self) -> bool:
        """Whether the turn's answer may rest on what these tools produced (records read,
        a proposal stored) instead of citing documentation."""

    def instructions(self) -> str | None:
        """What the system message adds when these tools are offered (server-built; no
        text of the person's or the model's), else ``None``."""


def offered(toolsets: Sequence[Toolset]) -> list[Tool]:
    """Every tool of ``toolsets``, in order."""
    return [tool for toolset in toolsets for tool in toolset.tools()]


_READ_PREFIXES = ("crud_list_", "crud_read_")


def proposes(name: str) -> bool:
    """Whether the tool called ``name`` proposes a change (a data write or a page
    suggestion), as opposed to reading."""
    return (name.startswith("crud_") and not name.startswith(_READ_PREFIXES)) or (
        name.startswith("propose_"))
