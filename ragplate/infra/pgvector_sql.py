"""SQL shared by every pgvector table (documentation chunks, record vectors): literals for
partial-index predicates, the score of a distance, and PostgreSQL's binary COPY framing."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

from ragplate.catalog.errors import ConfigurationError

#: pgvector distance -> the ``similarity_score`` scale (higher is more similar).
SCORE_SQL = {"cosine": "1 - ({d})", "inner_product": "-({d})", "l2": "-({d})"}

_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def sql_literal(value: str) -> str:
    """A SQL string literal. Partial-index predicates cannot take bind parameters, and
    refusing backslashes keeps this safe whatever ``standard_conforming_strings`` says."""
    if "\x00" in value or "\\" in value:
        raise ConfigurationError(f"index or model key {value!r} contains NUL or backslash")
    return "'" + value.replace("'", "''") + "'"


def vector_literal(vector: np.ndarray) -> str:
    """A query vector as the text a ``CAST(:q AS vector(n))`` reads, every digit kept."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector).reshape(-1)) + "]"


def copy_field(data: bytes) -> bytes:
    """One field of a binary COPY row: its length, then its bytes."""
    return struct.pack(">i", len(data)) + data


def vector_field(vector: np.ndarray) -> bytes:
    """A pgvector ``vector`` in binary COPY form (no float-to-text round trip)."""
    vec = np.asarray(vector, dtype=">f4").reshape(-1)
    return copy_field(struct.pack(">HH", vec.shape[0], 0) + vec.tobytes())


#: PostgreSQL's type OID of ``text``, the element type a binary ``text[]`` names.
_TEXT_OID = 25


def text_array_field(values: Sequence[str]) -> bytes:
    """A one-dimensional ``text[]`` in binary COPY form (empty: zero dimensions)."""
    if not values:
        return copy_field(struct.pack(">iii", 0, 0, _TEXT_OID))
    head = struct.pack(">iiiii", 1, 0, _TEXT_OID, len(values), 1)
    return copy_field(head + b"".join(copy_field(v.encode()) for v in values))


def binary_copy(rows: Iterable[Sequence[bytes]]) -> bytes:
    """Rows of encoded fields (:func:`copy_field`, :func:`vector_field`) in PostgreSQL's
    binary COPY format: no type registration needed on pooled connections."""
    parts = [_COPY_SIGNATURE]
    for fields in rows:
        parts.append(struct.pack(">h", len(fields)))
        parts.extend(fields)
    parts.append(struct.pack(">h", -1))
    return b"".join(parts)
