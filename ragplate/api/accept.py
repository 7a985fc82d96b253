"""Whether a request's ``Accept`` header accepts a media type (RFC 9110 §12.5.1).

A media type takes the quality of the most specific range that matches it
(``text/event-stream`` before ``text/*`` before ``*/*``); a quality of 0 means "not
acceptable", and a type no range matches is not acceptable either. A range that cannot be
read (no ``type/subtype``, or a ``q`` that is not a qvalue) is left out: a malformed weight
is no consent.
"""

from __future__ import annotations

import re

#: A token (RFC 9110 §5.6.2); ``*`` is one too, which is how the wildcards read.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_RANGE = re.compile(rf"\s*({_TOKEN})/({_TOKEN})\s*")
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")
#: The pieces of a list between separators, a quoted string (which may hold one) kept whole.
_PIECES = {sep: re.compile(rf'(?:[^{sep}"]|"(?:[^"\\]|\\.)*"?)+') for sep in ",;"}


def _ranges(header: str) -> list[tuple[str, str, float]]:
    """The readable ranges of an ``Accept`` value: type, subtype (lower case) and quality."""
    ranges = []
    for element in _PIECES[","].findall(header):
        kind, *parameters = _PIECES[";"].findall(element)
        matched = _MEDIA_RANGE.fullmatch(kind)
        if matched is None:
            continue
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                if not _QVALUE.fullmatch(value.strip()):
                    break
                quality = float(value)
        else:
            ranges.append((matched[1].lower(), matched[2].lower(), quality))
    return ranges


def accepts(header: str | None, media_type: str) -> bool:
    """Whether ``header`` (an ``Accept`` value; ``None`` or blank when the request sent
    none, which accepts anything) accepts ``media_type`` (``type/subtype``)."""
    if header is None or not header.strip():
        return True
    kind, _, subtype = media_type.lower().partition("/")
    best: tuple[int, float] | None = None
    for range_kind, range_subtype, quality in _ranges(header):
        if range_kind == kind and range_subtype == subtype:
            specificity = 2
        elif range_kind == kind and range_subtype == "*":
            specificity = 1
        elif range_kind == range_subtype == "*":
            specificity = 0
        else:
            continue
        # Of two equally specific ranges (the same one sent twice), the higher quality.
        if best is None or (specificity, quality) > best:
            best = (specificity, quality)
    return best is not None and best[1] > 0
