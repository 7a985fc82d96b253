"""The output policy on a complete answer: a rule's match or the length bound refuses the
whole answer (a fragment is never censored: a refusal is a clean refusal)."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from ragplate.catalog.output_policy import output_rules
from ragplate.tasks.assistant.screening import Verdict


@cache
def _compiled(end_user: bool) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    return tuple((r.id, r.category, re.compile(r.pattern)) for r in output_rules(end_user))


def check_output(text: str, *, end_user: bool, max_chars: int) -> Verdict:
    """Whether ``text`` may be given as an answer; if not, the category and the rule. The
    rules read the text as written and as a reader sees it (NFKC, invisible characters
    dropped), so a key split by a zero-width space or written in fullwidth letters is a key."""
    if len(text) > max_chars:
        return Verdict(False, "output_length", "output-length")
    seen = "".join(c for c in unicodedata.normalize("NFKC", text)
                   if unicodedata.category(c) != "Cf")
    for rule_id, category, pattern in _compiled(end_user):
        if pattern.search(text) or pattern.search(seen):
            return Verdict(False, category, rule_id)
    return Verdict(True)
