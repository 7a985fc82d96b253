"""Sentences that claim a change was made, in English and Italian.

A proposal only waits for the person, so an answer saying it was applied ("I have updated",
"has been saved", "ho modificato", "è stata applicata", "Done.") misleads them. A claim is a
first-person change in the past ("I've switched", "l'ho cambiato"), a passive of a change
("has been applied", "sono state salvate"), a state said to hold now ("is now set", "ora è
impostato"), or a bare "done" / "fatto". What is not a claim: an instruction or a
possibility ("you can change it", "to change the layout, open Settings"), the future ("it
will be saved"), a negation ("nothing has been changed", "non ho modificato nulla"), a
condition or a time clause before the claim ("once it has been applied, …"), and offering a
suggestion ("I have added a suggestion").
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["claims_change", "replace_claims", "sentences"]

_EN_DONE = (r"updated|changed|applied|saved|set|switched|enabled|disabled|turned\s+(?:on|off)"
            r"|modified|configured|adjusted|activated|deactivated|reset|moved|replaced|removed"
            r"|added|stored|closed|reopened|opened|deleted|created|archived|published"
            r"|approved|submitted|assigned|renamed|marked"
            r"|made\s+(?:the|that|this|your|those|these)\s+changes?")
_IT_DONE = (r"modificat|aggiornat|cambiat|applicat|salvat|impostat|attivat|disattivat"
            r"|abilitat|disabilitat|configurat|sostituit|spostat|rimoss|aggiunt|reimpostat"
            r"|memorizzat|registrat|regolat|chius|cancellat|eliminat|creat|apert|riapert"
            r"|archiviat|pubblicat|approvat|assegnat|rinominat|segnat")
_ADVERBS = r"(?:(?:just|now|already|successfully|also|finally|gone\s+ahead\s+and)\s+)*"
_IT_ADVERBS = r"(?:(?:già|appena|ora|adesso|anche|correttamente|finalmente)\s+)*"
_CLAIMS: Final = tuple(re.compile(p, re.IGNORECASE) for p in (
    # English: I/we did it, it has been done, it is now so, done.
    rf"\b(?:i|we)(?:\s+have|'ve)?\s+{_ADVERBS}(?:{_EN_DONE})\b",
    rf"\b(?:i|we)\s+went\s+ahead\s+and\s+(?:{_EN_DONE})\b",
    rf"\b(?:(?:has|have|had)\s+{_ADVERBS}been|was|were)\s+{_ADVERBS}(?:{_EN_DONE})\b",
    r"\b(?:is|are)\s+now\s+(?:set|configured|enabled|disabled|active|activated|on|off|"
    r"updated|changed|applied|saved|in\s+place|in\s+effect|live|using|shown|displayed)\b",
    r"\bnow\s+(?:uses?|shows?|displays?)\b",
    r"\byour\b[^.!?]{0,60}\b(?:is|are)\s+now\b",
    r"\b(?:has|have)\s+(?:now\s+)?taken\s+effect\b|\btook\s+effect\b",
    r"\bsuccessfully\s+(?:" + _EN_DONE + r")\b",
    r"\b(?:it|that|this|everything)\s*(?:is|'s|has\s+been)\s+(?:all\s+)?done\b"
    r"(?!\s+(?:in|from|by|through|via|with|on|using|when|once|for|automatically)\b)",
    r"^\W*(?:all\s+)?done\b",
    r"^\W*(?:the\s+)?(?:changes?|preferences?|settings?|layout|view)\s+"
    r"(?:saved|applied|updated|changed)\b",
    # Italian: ho/abbiamo fatto, è stato fatto, ora è così, fatto.
    rf"\b(?:ho|abbiamo)\s+{_IT_ADVERBS}(?:(?:{_IT_DONE})[oaie]\b|(?:fatto|effettuato|"
    r"apportato)\s+(?:la|le|il|i|questa|queste|questo)\s+(?:modific|cambi)\w*)",
    rf"\b(?:è|e'|sono)\s+{_IT_ADVERBS}stat[oaie]\s+{_IT_ADVERBS}(?:{_IT_DONE})[oaie]\b",
    r"\b(?:è|sono)\s+(?:ora|adesso)\s+(?:impostat|attiv|configurat|abilitat|disabilitat|"
    r"applicat|salvat|in\s+uso|visualizzat|mostrat)\w*",
    r"\b(?:ora|adesso)\s+(?:è|sono)\s+(?:impostat|attiv|configurat|abilitat|disabilitat|"
    r"applicat|salvat|in\s+uso|visualizzat|mostrat)\w*",
    r"\b(?:tuo|tua|tuoi|tue)\b[^.!?]{0,60}\b(?:(?:ora|adesso)\s+(?:è|sono)|(?:è|sono)\s+"
    r"(?:ora|adesso))\b",
    r"\b(?:è|e')\s+(?:stato\s+)?fatto\b(?!\s+(?:di|da|dal|dalla|per|in|nel|nella|con|così|"
    r"apposta|tramite|su|quando|automaticamente)\b)",
    r"^\W*(?:ecco\s+|tutto\s+)?fatto\b(?!\s+(?:sta|che|di)\b)",
    r"^\W*(?:la\s+|le\s+)?(?:modific[ah]e?|impostazion[ei]|preferenz[ae])\s+"
    r"(?:applicat|salvat|aggiornat)[aeio]\b",
))
# A negation just before the claim, or "nothing" just after, undoes it.
_NEGATED_BEFORE = re.compile(
    r"(?:\b(?:not|never|nothing|none|neither|nor|non|nulla|niente|mai|nessun\w*)\b"
    r"(?:\W+\w+){0,3}|\bno\s+\w+)\W*$", re.IGNORECASE)
_NEGATED_AFTER = re.compile(r"^\W*(?:\w+\W+)?(?:nothing|nulla|niente)\b", re.IGNORECASE)
# A condition or time clause holding the claim (no comma between them): it describes, it
# does not report. "After your request, I have updated it" still reports.
_SUBORDINATE = re.compile(
    r"\b(?:if|when|whenever|once|after|until|unless|whether|before|as\s+soon\s+as|se|quando|"
    r"una\s+volta\s+che|dopo\s+che|finché|prima\s+che|non\s+appena|qualora)\b", re.IGNORECASE)
# "I have added a suggestion": offering the proposal is not a change.
_SUGGESTION_AFTER = re.compile(
    r"^\s+(?:a|an|the|this|my|one|un|una|il|la|questo|questa)\s+(?:suggest|propos|"
    r"suggeriment|propost)", re.IGNORECASE)
_SENTENCE = re.compile(r"(\S.*?(?:[.!?…]+[\"'”’»)\]]*(?=\s|$)|(?=\n)|$))(\s*)", re.DOTALL)


def sentences(text: str) -> list[tuple[str, str]]:
    """``text`` as sentences, each with the whitespace that follows it (joined back, they
    give ``text`` without its leading whitespace). A sentence ends at ``.``, ``!``, ``?`` or
    ``…`` before a space, or at a line break."""
    return [(m.group(1), m.group(2)) for m in _SENTENCE.finditer(text) if m.group(1)]


def _normalised(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"\s+", " ", text.replace("’", "'").replace("`", "'"))


#: The claims the assistant makes of itself ("I have deleted…", "Done.", "ho modificato"):
#: in a turn that proposed nothing, a change it says it made is never one it made, while
#: "Ticket 42 was closed on Monday" may report what it read and "We have moved the Export
#: button" what a page says (so "I", never "we"; and "opened", which reading is too).
_SELF_DONE = "|".join(verb for verb in _EN_DONE.split("|")
                      if verb not in ("opened", "reopened"))
_FIRST_PERSON: Final = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\bi(?:\s+have|'ve)?\s+{_ADVERBS}(?:{_SELF_DONE})\b",
    rf"\bi\s+went\s+ahead\s+and\s+(?:{_SELF_DONE})\b",
    r"^\W*(?:all\s+)?done\b",
    rf"\bho\s+{_IT_ADVERBS}(?:(?:{_IT_DONE})[oaie]\b|(?:fatto|effettuato|apportato)\s+"
    r"(?:la|le|il|i|questa|queste|questo)\s+(?:modific|cambi)\w*)",
    r"^\W*(?:ecco\s+|tutto\s+)?fatto\b(?!\s+(?:sta|che|di)\b)",
))
#: A sentence citing its source reports what the source says.
_CITED = re.compile(r"\[\d+\]")


def _claims(sentence: str, patterns: tuple[re.Pattern[str], ...] = _CLAIMS) -> bool:
    seen = _normalised(sentence)
    for pattern in patterns:
        for match in pattern.finditer(seen):
            before, after = seen[: match.start()], seen[match.end():]
            clause = re.split(r"[,;:()—–]", before)[-1]
            if (_NEGATED_BEFORE.search(clause) or _NEGATED_AFTER.search(after)
                    or _SUBORDINATE.search(clause) or _SUGGESTION_AFTER.search(after)):
                continue
            return True
    return False


def claims_change(text: str) -> bool:
    """Whether a sentence of ``text`` claims that a change was made or applied."""
    return any(_claims(sentence) for sentence, _ in sentences(text))


def replace_claims(text: str, replacement: str, *, first_person: bool = False) -> str:
    """``text`` with each sentence claiming a change replaced by ``replacement`` (only the
    assistant's claims of itself, in a sentence citing no source, with ``first_person``:
    see :data:`_FIRST_PERSON`); a
    run of consecutive claims becomes one ``replacement``. A text without claims is
    returned unchanged."""
    patterns = _FIRST_PERSON if first_person else _CLAIMS
    parts = sentences(text)
    if not any(_claims(sentence, patterns) and not (first_person and _CITED.search(sentence))
               for sentence, _ in parts):
        return text
    lead = text[: len(text) - len(text.lstrip())]
    out: list[list[str]] = []
    replaced_last = False
    for sentence, space in parts:
        if not _claims(sentence, patterns) or (first_person and _CITED.search(sentence)):
            out.append([sentence, space])
            replaced_last = False
        elif replaced_last:
            out[-1][1] = space
        else:
            out.append([replacement, space])
            replaced_last = True
    return lead + "".join(sentence + space for sentence, space in out)
