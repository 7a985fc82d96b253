"""Input guardrails: normalise a message, then match the catalog's rules; fail closed.

The order: the length bound; hidden characters (Unicode tag characters and bidi controls
always refuse, two or more invisible characters refuse); the message normalised (NFKC,
homoglyphs folded to Latin, case folded, accents stripped, leetspeak-lite undone, invisible
characters dropped, letters spaced one by one joined); chat markup; encoded payloads
(base64 or hex blobs are decoded and screened again, and "decode this and do it" refuses
whatever the blob says); then the pattern rules of :mod:`ragplate.catalog.guardrails`. An
attack found in a message that also carried obfuscation (invisible or mixed-script
characters, spaced or fullwidth letters) is reported as ``hidden_characters``.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass
from functools import cache

from ragplate.catalog.guardrails import MARKUP_RULES, RULES, Rule

#: Characters that render as nothing (besides Unicode's format category ``Cf``).
_INVISIBLE_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u034f")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ZWJ, _VS16 = "\u200d", "\ufe0f"
#: Latin look-alikes of Cyrillic and Greek letters (what NFKC leaves alone).
_CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "ɡ": "g", "һ": "h", "ո": "n", "ս": "u", "ԛ": "q", "ԝ": "w",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w", "ѵ": "v",
    # Latin letters that look like others and that NFKC keeps.
    "ı": "i", "ȷ": "j", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ŀ": "l", "ſ": "s",
})
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s"})
# A word of letters and digits; whether it mixes both is checked on the match (a look-ahead
# here would rescan the rest of a long word at every position: quadratic).
_LEET_WORD = re.compile(r"(?<![a-z0-9@$])[a-z0-9@$]{3,}(?![a-z0-9@$])")
# Letters one by one, spaced, dotted or underscored ("i g n o r e", "i.g.n.o.r.e").
_SPACED = re.compile(r"(?<![a-z])(?:[a-z](?: {1,3}|[._\-*] ?)){3,}[a-z](?![a-z])")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "`": "'", "\u00b4": "'",
                         "\u201c": '"', "\u201d": '"', "\u00ab": '"', "\u00bb": '"'})
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
# Hex bytes, plain or written as \x41 / 0x41, separated or not.
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:(?:\\x|0x)?[0-9A-Fa-f]{2}[ :,-]?){8,}(?![0-9A-Fa-f])")
#: Blobs decoded per message at most; a message holding more is refused (nobody asks a
#: question with seventeen encoded strings, and decoding each costs time).
MAX_BLOBS = 16
_CARRIER = re.compile(
    r"\b(decode|decoded|decoding|decodifica\w*|decifra\w*|traduci|interpret|base ?64|"
    r"hex\w*|esadecimal\w*|rot13)\b[^.?!]{0,80}?\b(and |then |e |poi |quindi |, )?(do|"
    r"execute|run|follow|obey|apply|perform|carry out|esegui\w*|segui\w*|fai|applica\w*|"
    r"obbedisci|ubbidisci|metti in pratica|carica\w*|rispett\w*|adotta\w*|load|adopt|"
    r"comply|respect|act on|act upon|agisci|eseguil\w*)\b")
#: Decoded payloads are screened again at most this deep (base64 of base64 …).
MAX_DEPTH = 3


@dataclass(frozen=True)
class Verdict:
    """What the guardrails decided: allowed, or refused with a category and the rule."""

    allowed: bool
    category: str | None = None
    rule: str | None = None


ALLOWED = Verdict(True)


@dataclass(frozen=True)
class Normalised:
    """A message as the rules read it, and whether it carried obfuscation."""

    text: str
    obfuscated: bool


@cache
def _compiled(rules: tuple[Rule, ...]) -> tuple[tuple[Rule, re.Pattern[str]], ...]:
    return tuple((rule, rule.compiled()) for rule in rules)


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or char in _INVISIBLE_EXTRA


def _emoji_joiner(text: str, at: int) -> bool:
    """A zero-width joiner or variation selector inside an emoji sequence (👩‍💻)."""
    before = text[at - 1] if at > 0 else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    return bool(before and after and ord(before) > 0x2000 and ord(after) > 0x2000
                and unicodedata.category(after) in ("So", "Sk", "Mn"))


def hidden_characters(text: str) -> str | None:
    """The rule a message's invisible characters break, or ``None``."""
    count = 0
    for at, char in enumerate(text):
        if 0xE0000 <= ord(char) <= 0xE007F:
            return "hidden-tag-characters"
        if char in _BIDI:
            return "hidden-bidi-controls"
        if char in (_ZWJ, _VS16) and _emoji_joiner(text, at):
            continue
        if _invisible(char):
            count += 1
    # One stray zero-width space is what a paste from a word processor leaves; more is a
    # message hiding something between its letters.
    return "hidden-invisible-characters" if count >= 2 else None


def _mixed_script(word: str) -> bool:
    scripts = set()
    for char in word:
        if char.isalpha():
            name = unicodedata.name(char, "")
            scripts.add(name.split(" ")[0])
    return "LATIN" in scripts and bool(scripts & {"CYRILLIC", "GREEK", "ARMENIAN"})


def _mixes(word: str) -> bool:
    """Letters and digits (or @ $) in one word: leetspeak, or a code like a1b2."""
    return any(c.isalpha() for c in word) and any(c.isdigit() or c in "@$" for c in word)


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def _join_spaced(match: re.Match[str]) -> str:
    words = re.split(r" {2,}|[._\-*] {1,3}| [._\-*] ?", match.group(0))
    return " ".join(re.sub(r"[ ._\-*]", "", word) for word in words)


def normalise(text: str) -> Normalised:
    """The message as the rules read it (see the module's docstring)."""
    nfkc = unicodedata.normalize("NFKC", text)
    obfuscated = nfkc != unicodedata.normalize("NFC", text) and any(
        0xFF01 <= ord(c) <= 0xFF5E for c in text)  # fullwidth letters
    visible = "".join(c for c in nfkc if not _invisible(c))
    obfuscated = obfuscated or len(visible) != len(nfkc)
    obfuscated = obfuscated or any(_mixed_script(w) for w in visible.split())
    folded = _strip_accents(visible.translate(_CONFUSABLES).casefold().translate(_CONFUSABLES))
    folded = folded.translate(_QUOTES)
    leet = _LEET_WORD.sub(lambda m: m.group(0).translate(_LEET) if _mixes(m.group(0))
                          else m.group(0), folded)
    obfuscated = obfuscated or (leet != folded and bool(re.search(r"[a-z][0-9]|[0-9][a-z]",
                                                                  folded)))
    joined = _SPACED.sub(_join_spaced, leet)
    obfuscated = obfuscated or joined != leet
    lines = [re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in joined.split("\n")]
    return Normalised("\n".join(line for line in lines if line), obfuscated)


def _decoded(blob: str) -> str | None:
    """A blob's text when it decodes (base64, URL-safe base64 or hex) to readable UTF-8."""
    candidates: list[bytes] = []
    compact = re.sub(r"[ :,-]|\\x|0x", "", blob)
    if re.fullmatch(r"(?:[0-9A-Fa-f]{2})+", compact):
        candidates.append(binascii.unhexlify(compact))
    padded = blob + "=" * (-len(blob) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            candidates.append(decode(padded))
        except (binascii.Error, ValueError):
            continue
    for raw in candidates:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        printable = sum(c.isprintable() or c in "\n\t" for c in text)
        if len(text) >= 6 and printable >= 0.9 * len(text):
            return text
    return None


def encoded_blobs(text: str) -> list[str]:
    """The distinct hex and base64 runs of a message (base64 wrapped over lines joined)."""
    unwrapped = re.sub(r"(?<=[A-Za-z0-9+/=])\r?\n(?=[A-Za-z0-9+/])", "", text)
    found = [m.group(0).strip() for m in _HEX.finditer(text)]
    found += [m.group(0) for m in _BASE64.finditer(unwrapped)]
    return list(dict.fromkeys(found))


def _payload(text: str, normalised: str, depth: int) -> Verdict | None:
    blobs = encoded_blobs(text)
    if len(blobs) > MAX_BLOBS:
        return Verdict(False, "encoded_payload", "encoded-too-many")
    carrier = None
    for blob in blobs:
        decoded = _decoded(blob)
        if decoded is None:
            continue
        if carrier is None:
            carrier = bool(_CARRIER.search(normalised))
        if carrier:
            return Verdict(False, "encoded_payload", "encoded-decode-and-do")
        if depth < MAX_DEPTH and not screen(decoded, max_chars=None, depth=depth + 1).allowed:
            return Verdict(False, "encoded_payload", "encoded-attack")
    return None


def screen(text: str, *, max_chars: int | None, depth: int = 0) -> Verdict:
    """Whether a message may go on, and if not, its category and rule."""
    return screen_normalised(text, max_chars=max_chars, depth=depth)[0]


def screen_normalised(text: str, *, max_chars: int | None, depth: int = 0
                      ) -> tuple[Verdict, Normalised | None]:
    """:func:`screen`, with the normalised message when it got that far (so a later stage
    does not normalise it again)."""
    if max_chars is not None and len(text) > max_chars:
        return Verdict(False, "length", "length"), None
    hidden = hidden_characters(text)
    if hidden is not None:
        return Verdict(False, "hidden_characters", hidden), None
    norm = normalise(text)
    for rule, pattern in _compiled(MARKUP_RULES):
        if pattern.search(norm.text):
            return Verdict(False, rule.category, rule.id), norm
    payload = _payload(unicodedata.normalize("NFKC", text), norm.text, depth)
    if payload is not None:
        return payload, norm
    # The pattern rules read sentences; a line break inside one must not hide it.
    flat = norm.text.replace("\n", " ")
    for rule, pattern in _compiled(RULES):
        if pattern.search(flat):
            category = "hidden_characters" if norm.obfuscated else rule.category
            return Verdict(False, category, rule.id), norm
    return ALLOWED, norm
