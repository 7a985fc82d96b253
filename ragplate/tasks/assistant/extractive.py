"""The extractive answerer: the answer is made of the evidence's own sentences, each citing
its source, in the person's language's framing. No model writes a word of it.

Sentences are taken from the prose of the evidence (headings, code, tables and list
markers left out), scored by the question's words they hold (each word weighed by how rare
it is among the evidence's sentences, stems in the evidence's language) plus a little for
their source's rank, and the best few are kept in their sources' order. A question none of
whose words any sentence holds gets no answer: the evidence does not support one. Nor does
a sentence holding only one of its words answer it unless it is near the question in
meaning (its similarity reaches the evidence floor, as its chunk's did): an everyday
question shares a word with a page by chance. A sentence that is only part of one (the
rest of one the chunk starts inside, or that a code block or table interrupts; one leaving
a parenthesis open) is never quoted; a list item going on from the sentence that
introduces its list is quoted after it.

A question that names a setting (an upper-case name with an underscore, ``RAGPLATE_APP_KEY``),
an exit code or an HTTP status (:func:`~ragplate.tasks.assistant.setting_lines.asked_names`)
asks about that setting: only sentences that name it are quoted, and the answer names every
one the question does, or there is none. Split into words, ``RAGPLATE_APP_KEY`` shares
most of them with ``RAGPLATE_EMBEDDINGS_API_KEY``, whose sentence would otherwise answer.
For such a question the configuration lines, table rows and list items that state the
setting are candidates too (:mod:`ragplate.tasks.assistant.setting_lines`): documentation
often gives a setting nowhere else.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ragplate.catalog.text_search import language
from ragplate.infra.stores.lexical import tokens
from ragplate.tasks.assistant.markdown_text import (
    LIST_ITEM,
    SENTENCE_END,
    list_introduction,
    plain,
)
from ragplate.tasks.assistant.setting_lines import asked_names, named_in, setting_lines
from ragplate.tasks.retrieval.documentation import Hit

#: Sentences an answer holds at most, and sources it cites at most.
MAX_SENTENCES = 3
MAX_SOURCES = 3
#: A sentence shorter than this many words reads as a fragment; longer is a wall of text.
MIN_WORDS, MAX_WORDS = 4, 70
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*(```|~~~)\s*$", re.MULTILINE | re.DOTALL)
# "(see below)" points at a place the answer does not have.
_POINTER = re.compile(r"\s*\((see|vedi|cf\.?)\s+(below|above|sotto|sopra|the (next|previous) "
                      r"section)[^)]*\)", re.IGNORECASE)
# A sentence that leans on the one before it reads as a fragment on its own.
_ANAPHORA = re.compile(r"^(This|That|These|Those|It|They|Here|There|Such|Both|Questo|Questa|"
                       r"Questi|Queste|Quello|Ciò|Qui|Entrambi)\b")


@dataclass(frozen=True)
class Sentence:
    """One sentence of the answer and the citation (1-based) of its source."""

    text: str
    citation: int


@dataclass(frozen=True)
class Extract:
    """The chosen sentences and the hits they cite, in citation order."""

    sentences: list[Sentence]
    cited: list[Hit]


#: Marks a paragraph that goes on from words the text does not hold (the chunk starts
#: inside a sentence) or from a code block or table: a first sentence in lower case is
#: only part of one.
_CUT = "\u2063"


def prose_sentences(text: str, leads: dict[str, str] | None = None) -> list[str]:
    """The sentences of a chunk's prose: no headings, code blocks, tables or bare list
    markers; Markdown emphasis and links reduced to their words. A list item in lower case
    goes on from the sentence introducing its list, which is put before it (``leads``, when
    given, is told each such sentence and its introduction)."""
    # A code block becomes one fence line: a barrier between the text around it.
    lines = [line.strip() for line in _FENCE.sub("```", text).splitlines()]
    first = next((index for index, line in enumerate(lines) if line), None)
    kept: list[str] = []
    introduced: set[str] = set()
    for index, stripped in enumerate(lines):
        if not stripped or stripped.startswith(_BLOCKS):
            kept.append("\n")
            continue
        item = plain(LIST_ITEM.sub("", stripped))
        if item != plain(stripped):  # a list item is its own paragraph, never glued to the last
            kept.append("\n")
            if item[:1].islower():  # it goes on from the sentence introducing the list
                lead = list_introduction(lines, index)
                if lead:
                    item = f"{lead} {item}"
                    introduced.add(lead)
        elif index == first or lines[index - 1].startswith(("```", "~~~", "|")):
            kept.append("\n")
            item = _CUT + item
        kept.append(item)
    paragraphs = re.split(r"\n\s*\n|\n(?=\S)", " ".join(kept).replace(" \n ", "\n\n"))
    sentences = []
    for paragraph in paragraphs:
        paragraph = " ".join(paragraph.split())
        cut = paragraph.startswith(_CUT)
        for position, sentence in enumerate(SENTENCE_END.split(paragraph.removeprefix(_CUT))):
            sentence = _POINTER.sub("", sentence).strip()
            words = len(sentence.split())
            if cut and position == 0 and sentence[:1].islower():
                continue  # the rest of a sentence whose start is elsewhere
            # A sentence ending in a colon introduces a list the answer would not show.
            if (MIN_WORDS <= words <= MAX_WORDS and sentence[-1:] in ".!?)"
                    and sentence.count("(") <= sentence.count(")")  # not cut inside one
                    and not _mostly_code(sentence)):
                sentences.append(sentence)
                lead = next((lead for lead in introduced
                             if position == 0 and sentence.startswith(lead + " ")), None)
                if lead is not None and leads is not None:
                    leads[sentence] = lead
    return sentences


#: Lines that are no prose: headings, tables, quotes, comments, rules, code fences.
_BLOCKS = ("#", "|", ">", "<!--", "---", "```", "~~~")

_CODE_SPAN = re.compile(r"`[^`]*`")


def _mostly_code(sentence: str) -> bool:
    """Whether inline code makes up most of a sentence (a list of options, not prose); a
    sentence that names a command or two reads as prose. Judged per sentence: a Markdown
    paragraph is one line, and one code-heavy sentence must not take its paragraph along."""
    code = sum(len(span) for span in _CODE_SPAN.findall(sentence))
    return code > len(sentence) / 2


def extract(question: str, hits: list[Hit], *, locale: str | None,
            passages: dict[int, list[str]] | None = None,
            quotable: Callable[[str], bool] = lambda _: True,
            similarity: Callable[[list[str]], list[float]] | None = None,
            min_similarity: float = 0.0) -> Extract:
    """The best sentences of ``hits`` for ``question`` (none when no sentence holds a word
    of the question). ``passages`` gives more chunks of a hit's source under its label
    (``{hit index: [texts]}``); a hit without them is read from its own chunk.
    ``quotable`` tells which lines stating a setting may be quoted (the output policy's
    verdict: an end user's answer holds no ``NAME=value``, no answer a secret).
    ``similarity`` gives the question's similarity with each of some texts: a sentence
    holding fewer than :data:`MIN_SHARED_TERMS` of the question's words is quoted only
    when it reaches ``min_similarity`` (see :func:`_near_enough`)."""
    candidates: list[tuple[int, int, str, set[str]]] = []  # hit rank, position, text, terms
    nearest: set[tuple[int, str]] = set()  # the sentences of each hit's best chunk
    named = asked_names(question)
    stated: set[str] = set()  # the lines stating a setting (no prose: never anaphora)
    leads: dict[str, str] = {}  # a list item's sentence: the introduction read before it
    for rank, hit in enumerate(hits[:MAX_SOURCES]):
        name = language(str(hit.metadata.get("locale") or locale or ""))
        texts = (passages or {}).get(rank) or [hit.text or hit.excerpt]
        # Overlapping chunks repeat sentences: each is read once, in its first place. The
        # best chunk's come first: the retrieval found it nearest to the question.
        first = set(prose_sentences(texts[0], leads))
        read = list(dict.fromkeys(s for text in texts for s in prose_sentences(text, leads)))
        for position, sentence in enumerate(read):
            candidates.append((rank, position, sentence, set(tokens(sentence, name))))
            if sentence in first:
                nearest.add((rank, sentence))
        # A setting asked of may be stated only in a code block, a table or a list. After
        # a gap: no prose sentence is followed by one in _choose.
        lines = [[line.text for line in setting_lines(text, named) if quotable(line.text)]
                 for text in texts]
        quoted = list(dict.fromkeys(q for found in lines for q in found))
        # A chunk starting inside a list reads an item without the sentence it goes on
        # from, which another chunk has: the longer one is quoted.
        quoted = [q for q in quoted if not any(o != q and o.endswith(" " + q) for o in quoted)]
        for position, line in enumerate(quoted, len(read) + 1):
            candidates.append((rank, position, line, set(tokens(line, name))))
            stated.add(line)
            if line in lines[0]:
                nearest.add((rank, line))
    if not candidates:
        return Extract([], [])
    names = {language(locale)} | {language(str(h.metadata.get("locale") or ""))
                                  for h in hits[:MAX_SOURCES]}
    asked = {term for name in names for term in tokens(question, name)}
    frequency = Counter(term for *_, terms in candidates for term in terms)
    total = len(candidates)
    present = {t for t in asked if frequency[t]}

    def score(candidate: tuple[int, int, str, set[str]]) -> float:
        rank, position, text_, terms = candidate
        held = asked & terms
        weight = sum(math.log(1 + total / frequency[t]) for t in held)
        coverage = len(held) / max(len(present), 1)
        penalty = 1.0 if _ANAPHORA.match(text_) and text_ not in stated else 0.0
        bonus = 0.6 if (rank, text_) in nearest else 0.0
        return weight * (0.5 + coverage) + bonus - penalty - 0.15 * rank - 0.02 * position

    def naming(text_: str) -> set[str]:
        return named_in(named, text_)

    scores = {(c[0], c[1]): score(c) for c in candidates}
    scored = sorted(((scores[(c[0], c[1])], c) for c in candidates
                     if asked & c[3] and (not named or naming(c[2]))),
                    key=lambda sc: (-sc[0], sc[1][0], sc[1][1]))
    # For a setting asked of, the sentence after the best one is quoted only if it names
    # the setting too: the next one may already describe another setting or section.
    places = {(c[0], c[1]): c for c in candidates if not named or naming(c[2])}
    # A question naming a setting has its own check: every quoted sentence names it.
    if similarity is not None and min_similarity > 0 and not named:
        scored = _near_enough(scored, asked, similarity, min_similarity)
    if not scored:
        return Extract([], [])
    chosen = _choose(scored, places)
    if named and not named <= {n for c in chosen for n in naming(c[2])}:
        return Extract([], [])  # the evidence does not name every setting asked of
    order: list[int] = []
    for rank, *_ in chosen:
        if rank not in order:
            order.append(rank)
    sentences = [Sentence(text, order.index(rank) + 1) for rank, _p, text, _t in chosen]
    return Extract(one_introduction(sentences, leads), [hits[rank] for rank in order])


def one_introduction(sentences: list[Sentence], leads: dict[str, str]) -> list[Sentence]:
    """Items of one list quoted one after the other from one source, each read after the
    sentence introducing the list (``leads``: item sentence → introduction, as
    :func:`prose_sentences` tells them), become one sentence: the introduction once, the
    items joined by a semicolon ("The probe exits in these cases: the server is down (3);
    the model differs (4).")."""
    merged: list[Sentence] = []
    last_lead: str | None = None
    for sentence in sentences:
        lead = leads.get(sentence.text)
        last = merged[-1] if merged else None
        if (last is None or lead is None or lead != last_lead
                or last.citation != sentence.citation or not last.text.endswith(".")):
            merged.append(sentence)
            last_lead = lead
            continue
        item = sentence.text[len(lead) + 1:]
        merged[-1] = Sentence(f"{last.text[:-1]}; {item}", last.citation)
    return merged


Candidate = tuple[int, int, str, set[str]]

#: A sentence holding this many of the question's words is about it; one holding fewer
#: must be near it in meaning.
MIN_SHARED_TERMS = 2
#: The best-scored sentences checked for meaning: more than the answer could quote.
NEAR_POOL = 8


def _near_enough(scored: list[tuple[float, Candidate]], asked: set[str],
                 similarity: Callable[[list[str]], list[float]], floor: float,
                 ) -> list[tuple[float, Candidate]]:
    """The scored sentences that are about the question: they hold
    :data:`MIN_SHARED_TERMS` of its words, or they are among the best :data:`NEAR_POOL`
    and their similarity with it reaches ``floor``. An everyday question shares a word
    with a page by chance ("Is it safe to cook chicken straight from frozen?" and "It is
    safe to run with nothing configured"); the sentence holding it is not about the
    question, which its meaning shows. The sentence following the best one is not judged
    here: it is quoted for reading on from the best one (see :func:`_choose`), whatever it
    holds."""
    def shares(candidate: Candidate) -> bool:
        return len(asked & candidate[3]) >= MIN_SHARED_TERMS

    unsure = [c for _s, c in scored[:NEAR_POOL] if not shares(c)]
    measured = similarity([c[2] for c in unsure]) if unsure else []
    near = {(c[0], c[1]) for c, value in zip(unsure, measured, strict=True) if value >= floor}
    return [(s, c) for s, c in scored if shares(c) or (c[0], c[1]) in near]


def _choose(scored: list[tuple[float, Candidate]], by_place: dict[tuple[int, int], Candidate]
            ) -> list[Candidate]:
    """The best sentence, the one that follows it in its source (an answer reads on from
    where it starts: a sentence leaning on the one before keeps its antecedent), then the
    best of another source, or else of the same one, that scores at least half as well;
    in their sources' order."""
    top_score, top = scored[0]
    chosen = [top]
    follower = by_place.get((top[0], top[1] + 1))
    if follower is not None and (follower[3] & top[3] or _ANAPHORA.match(follower[2])):
        chosen.append(follower)
    others = [c for s, c in scored if c not in chosen and s >= top_score / 2]
    elsewhere = [c for c in others if c[0] != top[0]]
    for candidate in (elsewhere or others)[:MAX_SENTENCES - len(chosen)]:
        chosen.append(candidate)
    return sorted(chosen, key=lambda c: (c[0], c[1]))


def compose(extract: Extract, *, framing: str) -> str:
    """The answer text: the framing line, then each sentence with its citation mark."""
    body = " ".join(f"{s.text} [{s.citation}]" for s in extract.sentences)
    return f"{framing}\n\n{body}"
