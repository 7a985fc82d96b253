"""The output policy on a complete answer: a rule's match or the length bound refuses the
whole answer (a fragment is never censored: a refusal is a clean refusal)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from ragplate.catalog.output_policy import SECRET_RULES, output_rules
from ragplate.tasks.assistant.screening import Verdict


@cache
def _compiled(end_user: bool) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    return tuple((r.id, r.category, re.compile(r.pattern)) for r in output_rules(end_user))


@cache
def _key_rules() -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    return tuple((r.id, r.category, re.compile(r.pattern)) for r in SECRET_RULES
                 if r.category == "output_secret")


def check_output(text: str, *, end_user: bool, max_chars: int) -> Verdict:
    """Whether ``text`` may be given as an answer; if not, the category and the rule. The
    rules read the text as written and as a reader sees it (NFKC, invisible characters
    dropped), so a key split by a zero-width space or written in fullwidth letters is a key."""
    if len(text) > max_chars:
        return Verdict(False, "output_length", "output-length")
    return _matched(text, _compiled(end_user))


def _seen(text: str) -> str:
    """``text`` as a reader sees it: NFKC, invisible characters dropped."""
    return "".join(c for c in unicodedata.normalize("NFKC", text)
                   if unicodedata.category(c) != "Cf")


def _matched(text: str, rules: tuple[tuple[str, str, re.Pattern[str]], ...]) -> Verdict:
    seen = _seen(text)
    for rule_id, category, pattern in rules:
        if pattern.search(text) or pattern.search(seen):
            return Verdict(False, category, rule_id)
    return Verdict(True)


def check_proposed(metadata: Mapping[str, Any]) -> Verdict:
    """The key rules of the output policy (category ``output_secret``) on what a turn
    proposes (its ``writes`` and ``proposals``: values, fields and summaries the model
    wrote): they reach the wire and the chat page as the answer does, so a key the model
    put in a proposed value is refused as one in its text would be. Keys only: a proposed
    value is the person's data, which may rightly hold what an answer may not (a code
    sample, a setting, a note to send a customer a new password); but not a script URL
    (``javascript:``), which a page would run where it shows a link."""
    proposed = [metadata.get(key) for key in ("writes", "proposals") if metadata.get(key)]
    if not proposed:
        return Verdict(True)
    # Every key and value on a line of its own, as written (not JSON-escaped).
    if any(_script_url(value) for value in _strings(proposed)):
        return Verdict(False, "output_unsafe_value", "output-script-url")
    return _matched(_lines(proposed), _key_rules())


#: A value a page would follow as a script rather than show (a proposed homepage or link),
#: read as a browser reads a URL: tabs and line breaks dropped, leading controls and
#: spaces too ("java\tscript:" is "javascript:"). "JavaScript: TypeError in cart.js" is
#: a sentence.
_SCRIPT_URL = re.compile(r"(?i)(?:javascript|vbscript):\S|data:text/html[;,]")


def _script_url(value: str) -> bool:
    return _SCRIPT_URL.match(re.sub(r"[\t\n\r]", "", value).lstrip("".join(
        map(chr, range(0x21))))) is not None


def _strings(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return [value] if isinstance(value, str) else []


def check_cited(citations: Sequence[Mapping[str, Any]]) -> Verdict:
    """The key rules (category ``output_secret``) on the citations' excerpts: they reach the
    wire with the answer, so a key a page holds is refused there as in the answer's text.
    Not the credential-request rule: a cited sign-in or support page says, rightly, where a
    password or a token goes."""
    shown = "\n".join(str(c.get("excerpt") or "") for c in citations)
    return _matched(shown, _key_rules()) if shown.strip() else Verdict(True)


def _lines(value: Any) -> str:
    if isinstance(value, Mapping):
        return "\n".join(f"{_lines(k)}\n{_lines(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(_lines(item) for item in value)
    return str(value)


#: What a secret in a recorded question is replaced by.
REDACTED = "[redacted]"
#: A private key's header reaches to its footer (or the end): the key is the lines between.
_PRIVATE_KEY_END = re.compile(r"-----END ([A-Z0-9]+ )*PRIVATE KEY-----")


def redact_secrets(text: str) -> str:
    """``text`` with every span the key rules (category ``output_secret``) find replaced by
    :data:`REDACTED`: what a person typed into a question (a token, ``my password is …``,
    an AWS key) is stored in the query analytics without the secret. The same rules that
    keep a key out of an answer, so what one refuses the other hides; a key hidden from
    them (a zero-width space, fullwidth letters) is redacted in the text as a reader sees
    it, which is then what is kept."""
    redacted = _redact(text)
    seen = _seen(redacted)
    if seen != redacted and not _matched(seen, _key_rules()).allowed:
        redacted = _redact(seen)
    return redacted


def _redact(text: str) -> str:
    for rule_id, _, pattern in _key_rules():
        if rule_id == "output-private-key":
            pattern = re.compile(f"(?:{pattern.pattern})(?:.*?{_PRIVATE_KEY_END.pattern}|.*)",
                                 re.DOTALL)
        text = pattern.sub(REDACTED, text)
    return text
