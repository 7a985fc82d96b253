"""Help and usage as a person reads them (:mod:`ragplate.cli.typer_style`): a flag shows
no value type, an argument is named the same way (``QUESTION``) in the usage line, the
help panel and the error."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from ragplate.cli import app


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_flags_show_no_value_type() -> None:
    result = CliRunner().invoke(app, ["up", "--help"])

    assert result.exit_code == 0, result.output
    assert "<bool>" not in _plain(result.output)
    assert re.search(r"--json\s+│", _plain(result.output))  # the flag, nothing after it


def test_an_option_taking_a_value_still_shows_its_type() -> None:
    result = CliRunner().invoke(app, ["retrieve", "--help"])

    assert "--top-k" in _plain(result.output) and "<int>" in _plain(result.output)
    assert "<bool>" not in _plain(result.output)


def test_an_argument_has_one_name_in_usage_help_and_error() -> None:
    shown = _plain(CliRunner().invoke(app, ["retrieve", "--help"]).output)
    missing = CliRunner().invoke(app, ["retrieve"])

    assert "retrieve [OPTIONS] QUESTION" in shown
    assert "{question}" not in shown
    assert missing.exit_code == 2
    assert "retrieve [OPTIONS] QUESTION" in _plain(missing.output)
    assert "Missing argument 'QUESTION'." in _plain(missing.output)


def test_a_repeatable_argument_is_shown_repeatable() -> None:
    shown = _plain(CliRunner().invoke(app, ["sources", "remove", "--help"]).output)

    assert "sources remove [OPTIONS] LABELS..." in shown


def test_a_help_paragraph_is_one_paragraph_lists_and_blocks_keep_their_lines() -> None:
    from ragplate.cli.typer_style import join_lines

    assert join_lines("Every source is read first; an invalid one\nstops the run.") == (
        "Every source is read first; an invalid one stops the run.")
    assert join_lines("    ragplate evaluate documentation --dataset\n    d.json --output r") == (
        "    ragplate evaluate documentation --dataset d.json --output r")
    assert join_lines("Modes:\n- fast: keywords\n- hybrid: both") == (
        "Modes:\n- fast: keywords\n- hybrid: both")
    assert join_lines("\b\nup      start\ndown    stop") == "\b\nup      start\ndown    stop"


def test_help_at_80_columns_wraps_a_paragraph_as_one() -> None:
    result = CliRunner().invoke(app, ["index-docs", "--help"], terminal_width=80)

    text = " ".join(_plain(result.output).split())
    assert "an invalid one (e.g. an unknown audience) stops the run with the store " \
        "unchanged. Unchanged sources are not embedded again." in text
    # With the docstring's own breaks kept, its 88-column line broke in two at 80 columns
    # and left this word alone on a line.
    assert "audience)" not in [line.strip() for line in _plain(result.output).splitlines()]


def test_a_bad_choice_is_named_without_pydantics_prefix() -> None:
    result = CliRunner().invoke(app, ["retrieve", "x", "--index", "foo"])

    assert result.exit_code == 2
    shown = " ".join(_plain(result.output).split())
    assert "Invalid value for '--index': 'foo' is not one of 'developer', 'user'." in shown
    assert "Value error" not in shown
