"""Option parsers for numbers a range bounds.

Click's own range check compares, and ``nan`` fails every comparison: it was refused as
"less than or equal to 1", which names the wrong fault. These parsers refuse a value that
is not a finite number first, then one out of range, each naming the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import typer


def fraction(low: float = 0.0, high: float = 1.0) -> Callable[[str], float]:
    """A typer ``parser`` for a number from ``low`` to ``high`` (both included)."""

    def parse(text: str | float) -> float:
        if isinstance(text, float):  # a default, already a number
            return text
        try:
            value = float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise typer.BadParameter(f"{text!r} is not a finite number; give one from "
                                     f"{low:g} to {high:g}")
        if not low <= value <= high:
            raise typer.BadParameter(f"{text} is out of range: give a number from {low:g} "
                                     f"to {high:g}")
        return value

    return parse
