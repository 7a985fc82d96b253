"""Range-bound number options: a value that is not a finite number is named as such."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from ragplate.cli import app
from ragplate.cli.numbers import fraction


@pytest.mark.parametrize(("text", "value"), [("0", 0.0), ("0.5", 0.5), ("1", 1.0),
                                             ("1e-1", 0.1)])
def test_a_number_in_range_is_read(text: str, value: float) -> None:
    assert fraction()(text) == value


@pytest.mark.parametrize(("text", "message"), [
    ("nan", "'nan' is not a finite number; give one from 0 to 1"),
    ("-inf", "'-inf' is not a finite number; give one from 0 to 1"),
    ("half", "'half' is not a number"),
    ("1.5", "1.5 is out of range: give a number from 0 to 1"),
    ("-0.1", "-0.1 is out of range: give a number from 0 to 1"),
])
def test_a_value_that_is_not_a_number_in_range_is_named(text: str, message: str) -> None:
    with pytest.raises(typer.BadParameter) as raised:
        fraction()(text)
    assert str(raised.value) == message


@pytest.mark.parametrize(("args", "message"), [
    (["evaluate", "documentation", "--index", "developer", "--dataset", "d.json",
      "--output", "r.json", "--min-hit-at-5", "nan"],
     "Invalid value for '--min-hit-at-5': 'nan' is not a finite number; give one from 0 to 1"),
    (["evaluate", "documentation", "--index", "developer", "--dataset", "d.json",
      "--output", "r.json", "--min-mrr", "2"],
     "Invalid value for '--min-mrr': 2 is out of range: give a number from 0 to 1"),
    (["tune-floor", "--index", "developer", "--dataset", "d.json", "--holdout", "nan"],
     "Invalid value for '--holdout': 'nan' is not a finite number; give one from 0 to 0.99"),
    (["tune-retrieval", "--dataset", "d.json", "--output", "r.json", "--class-margin",
      "inf"],
     "Invalid value for '--class-margin': 'inf' is not a finite number; give one from 0 "
     "to 1"),
])
def test_the_commands_refuse_a_threshold_that_is_not_a_number_in_range(
    args: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, args)

    assert result.exit_code == 2
    assert message in " ".join(result.output.replace("│", " ").split())
