"""How the installed Typer shows parameters, made consistent (applied once, at import).

Typer 0.2x draws its own help: it writes a flag's type (``--json <bool>``, though a flag
takes no value) and an argument as ``{question}`` in the usage line while its errors name
it ``'question'`` and ragplate's own messages ``QUESTION``. Here a flag shows no type, and
an argument is ``QUESTION`` (``[QUESTION]`` when optional) in the usage line, the help
panel and every error. A help text's paragraph is one paragraph, re-wrapped to the
terminal: Typer keeps a docstring's own line breaks, so at 80 columns every line longer
than the terminal broke in two. A Typer without these hooks is left as it is.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from typer import core

#: A line that starts an item of its own: a list item or a row of a ``\b`` block.
_ITEM = re.compile(r"^\s*(?:[-*•] |\d+\. )")


def _flag_type(original: Any) -> Any:
    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None  # a flag takes no value: nothing to show
        return original(self, ctx)

    return display_type_rich


def _argument_name(self: Any) -> str:
    return str(self.metavar) if self.metavar is not None else str(self.name or "").upper()


def _usage_name(self: Any) -> str:
    name = _argument_name(self)
    if not self.required:
        name = f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


def join_lines(paragraph: str) -> str:
    """One paragraph of help text with its single line breaks made spaces (the terminal
    wraps it), except in a ``\b`` paragraph (kept as written) and before a list item."""
    if paragraph.startswith("\b"):
        return paragraph
    lines = paragraph.split("\n")
    joined = lines[0]
    for line in lines[1:]:
        joined += ("\n" + line) if _ITEM.match(line) else (" " + line.strip())
    return joined


def _fix_linebreaks(paragraphs: list[str], markup_mode: Any) -> str:
    return "\n\n".join(join_lines(p) for p in paragraphs)


def apply() -> None:
    """Patch Typer's parameter classes and help paragraphs (idempotent)."""
    option, argument = getattr(core, "TyperOption", None), getattr(core, "TyperArgument", None)
    if option is not None and hasattr(option, "display_type_rich") \
            and not getattr(option, "_ragplate_styled", False):
        option.display_type_rich = _flag_type(option.display_type_rich)
        option._ragplate_styled = True
    if argument is not None and hasattr(argument, "_usage_display_name") \
            and hasattr(argument, "display_name_raw"):
        argument.display_name_raw = property(_argument_name)
        argument._usage_display_name = _usage_name
    # Typer coerces option values through pydantic and shows its first error as it is,
    # "Value error, 'foo' is not one of …": the prefix is pydantic's, not the person's.
    for name in ("typer._coercion", "typer._param_types"):
        module = sys.modules.get(name)
        shown = getattr(module, "get_error_msg", None)
        if shown is not None and not getattr(shown, "_ragplate_styled", False):
            module.get_error_msg = _without_pydantic_prefix(shown)  # type: ignore[union-attr]
    # Typer imports its Rich help (and with it Rich's Markdown renderer and Pygments) only
    # when it draws help; the paragraph hook is installed then, not at every start-up.
    for name in ("TyperCommand", "TyperGroup"):
        command = getattr(core, name, None)
        if command is not None and hasattr(command, "format_help") \
                and not getattr(command, "_ragplate_styled", False):
            command.format_help = _with_joined_paragraphs(command.format_help)
            command._ragplate_styled = True


#: What pydantic puts before a validator's own message.
PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


def _without_pydantic_prefix(original: Any) -> Any:
    def get_error_msg(exc: Any) -> str:
        message = str(original(exc))
        for prefix in PYDANTIC_PREFIXES:
            if message.startswith(prefix):
                return message[len(prefix):]
        return message

    get_error_msg._ragplate_styled = True  # type: ignore[attr-defined]
    return get_error_msg


def _with_joined_paragraphs(original: Any) -> Any:
    def format_help(self: Any, ctx: Any, formatter: Any) -> Any:
        try:
            from typer import rich_utils
        except ImportError:  # a Typer without Rich help has no such paragraphs
            return original(self, ctx, formatter)
        if hasattr(rich_utils, "_fix_linebreaks"):
            rich_utils._fix_linebreaks = _fix_linebreaks
        return original(self, ctx, formatter)

    return format_help
