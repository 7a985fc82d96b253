"""``ragplate evaluate assistant``'s console table."""

from __future__ import annotations

import io

from rich.console import Console

from ragplate.cli.evaluate_assistant import metrics_table


def test_an_assistant_metric_no_case_measures_reads_n_a() -> None:
    report = {"module": "core", "case_count": 2,
              "metrics": {"surface_accuracy": 1.0, "proposal_accuracy": 0.0},
              "measured": {"surface_accuracy": 2, "proposal_accuracy": 0}}
    screen = io.StringIO()
    Console(file=screen, width=100).print(metrics_table(report))

    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in screen.getvalue().splitlines() if line.count("│") == 4}
    assert rows["surface_accuracy"] == "1.0" and rows["proposal_accuracy"] == "n/a"
