"""The README and prefect.yaml stay true to the code."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import itertools
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from prefect import Flow

from ragplate.catalog.datasets import DatasetKind
from ragplate.catalog.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def test_readme_documents_every_setting() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [
        f"RAGPLATE_{name.upper()}"
        for name in Settings.model_fields
        if f"`RAGPLATE_{name.upper()}`" not in readme
    ]
    assert missing == []


def test_every_setting_has_a_description() -> None:
    assert all(field.description for field in Settings.model_fields.values())


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    """Every visible leaf command of the CLI as ``("ragplate a b", command)``."""
    if hasattr(command, "commands"):
        return [leaf for name, sub in command.commands.items() if not sub.hidden
                for leaf in _commands(sub, (*path, name))]
    return [(" ".join(("ragplate", *path)), command)]


def test_readme_cli_table_names_every_command_and_option() -> None:
    import typer.main

    from ragplate.cli import app

    readme = (ROOT / "README.md").read_text()
    # The first cell of each row of the CLI table (a literal "|" inside it is escaped).
    cells = [re.split(r"(?<!\\)\|", line)[1] for line in readme.splitlines()
             if line.startswith("| `ragplate ")]
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 30
    gaps = {}
    for name, command in commands:
        rows = [c for c in cells if re.search("`" + re.escape(name) + r"(?=[ `])", c)]
        missing = [
            param.opts[0] for param in command.params
            if param.param_type_name == "option" and "--help" not in param.opts
            and not any(re.search(re.escape(flag) + r"(?![\w-])", row)
                        for row in rows for flag in (*param.opts, *param.secondary_opts)
                        if flag.startswith("--"))
        ]
        if not rows or missing:
            gaps[name] = missing or ["(no row)"]
    assert gaps == {}


def _documented(readme: str, method: str, path: str) -> bool:
    """Whether the README's API table names ``METHOD path``: any parameter name stands for
    a parameter, and a row may add a sibling as `` `…/last` `` after its first path."""
    def pattern(p: str) -> str:
        return re.sub(r"\\\{[^}]*\\\}", r"\\{[^}]+\\}", re.escape(p))

    if re.search(f"`{method} {pattern(path)}`", readme):
        return True
    parent, _, last = path.rpartition("/")
    return any(f"`…/{last}`" in line and re.search(f"`{method} {pattern(parent)}/", line)
               for line in readme.splitlines())


def test_readme_api_table_names_every_route(tmp_path: Path) -> None:
    from ragplate.api.app import create_app

    readme = (ROOT / "README.md").read_text()
    paths = create_app(Settings(home=tmp_path)).openapi()["paths"]
    routes = [(method.upper(), path) for path, ops in paths.items() for method in ops]
    assert len(routes) > 20
    # Each declared entity has its own CRUD routes; the table names them once.
    generic = [(m, re.sub(r"^/app/crud/(?!update/|approvals\b)[^/]+/[^/]+",
                          "/app/crud/{module}/{entity}", p)) for m, p in routes]
    assert [r for r in generic if not _documented(readme, *r)] == []


def test_the_api_error_table_names_every_error_status_the_api_declares(
        tmp_path: Path) -> None:
    from ragplate.api.app import create_app

    api = (ROOT / "docs" / "api.md").read_text()
    section = api.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    # The Status cell of each row of the section's table.
    tabled = {int(code) for line in section.splitlines() if line.startswith("| ")
              for code in re.findall(r"\b[45]\d\d\b", line.rsplit("|", 2)[1])}
    paths = create_app(Settings(home=tmp_path)).openapi()["paths"]
    declared = {int(code) for ops in paths.values() for op in ops.values()
                for code in op["responses"] if code.isdigit() and int(code) >= 400}
    assert {400, 401, 404, 422, 503} <= declared
    assert sorted(declared - tabled) == []


def test_readme_names_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def deployments() -> list[dict[str, Any]]:
    """The deployments of ``prefect.yaml``."""
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    found: list[dict[str, Any]] = config["deployments"]
    return found


def flow_of(deployment: dict[str, Any]) -> Flow[Any, Any]:
    """The flow object a deployment's entrypoint names."""
    path, _, name = deployment["entrypoint"].partition(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    found: Flow[Any, Any] = getattr(module, name)
    return found


def fire_times(schedule: dict[str, Any], count: int = 60) -> list[datetime]:
    """The next ``count`` runs of a cron schedule, computed the way Prefect's scheduler
    computes them (its day-of-month / day-of-week semantics included)."""
    from prefect.server.schemas.schedules import CronSchedule

    cron = CronSchedule(**{k: v for k, v in schedule.items() if k in ("cron", "timezone",
                                                                        "day_or")})
    return list(asyncio.run(cron.get_dates(n=count, start=datetime(2026, 1, 1, tzinfo=UTC))))


#: The kind of dataset each report-writing flow reads.
DATASET_KINDS: dict[str, DatasetKind] = {
    "evaluate-documentation": "documentation",
    "evaluate-application-content": "application_content",
    "evaluate-retrieval-strategies": "application_content",
    "tune-retrieval": "application_content",
}


def test_prefect_deployments_point_at_flows_with_valid_parameters() -> None:
    assert deployments(), "prefect.yaml declares no deployment"
    for deployment in deployments():
        flow = flow_of(deployment)
        accepted = inspect.signature(flow.fn).parameters
        parameters = deployment.get("parameters", {})
        unknown = set(parameters) - set(accepted)
        assert unknown == set(), f"{deployment['name']}: unknown parameters {unknown}"
        # Required parameters present and every value of the type the flow declares.
        flow.validate_parameters(parameters)
        for schedule in deployment.get("schedules", []):
            assert schedule.get("cron") and schedule.get("timezone")


def test_application_content_evaluation_and_tuning_are_deployed() -> None:
    flows = {flow_of(d).name: d for d in deployments()}
    content = ("evaluate-application-content", "evaluate-retrieval-strategies",
               "tune-retrieval")
    assert {"evaluate-documentation", *content} <= set(flows)
    for name in content:
        assert flows[name].get("schedules"), f"{flows[name]['name']}: not scheduled"


def test_report_deployments_write_distinct_replaceable_reports_from_real_datasets(
    settings: Settings,
) -> None:
    from ragplate.tasks.evaluation.application_content import check_dataset
    from ragplate.tasks.evaluation.dataset_files import read_named

    outputs: list[str] = []
    for deployment in deployments():
        parameters = deployment.get("parameters", {})
        if "output" not in parameters:
            continue
        name, flow = deployment["name"], flow_of(deployment)
        output = PurePosixPath(parameters["output"])
        assert output.parent == PurePosixPath("reports/evaluations") and output.suffix == ".json"
        assert (ROOT / output.parent).is_dir()
        outputs.append(str(output))
        if deployment.get("schedules"):
            # A report is never overwritten without force: the second run would fail.
            assert parameters.get("force") is True, f"{name}: scheduled without force"
        # The deterministic setup replaces every cms.contents record with the fixture.
        assert parameters.get("setup", "live") == "live", f"{name}: setup must stay live"
        assert flow.name in DATASET_KINDS, f"{name}: add the dataset kind of {flow.name}"
        loaded = read_named(ROOT / parameters["dataset"], DATASET_KINDS[flow.name])
        if DATASET_KINDS[flow.name] == "application_content":
            check_dataset(loaded.data, parameters["source"], settings)
    assert len(outputs) == len(set(outputs)), f"two deployments share a report: {outputs}"


def test_tuning_runs_at_most_weekly() -> None:
    tuning = [d for d in deployments() if flow_of(d).name == "tune-retrieval"]
    assert tuning
    for deployment in tuning:
        for schedule in deployment.get("schedules", []):
            times = fire_times(schedule)
            gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
            assert min(gaps) >= timedelta(days=7), f"{deployment['name']}: {schedule}"


def test_the_documentation_names_every_deployment_and_scheduled_report() -> None:
    readme = (ROOT / "README.md").read_text()
    reports_readme = (ROOT / "reports" / "evaluations" / "README.md").read_text()
    for deployment in deployments():
        assert f"`{deployment['name']}`" in readme, deployment["name"]
        output = deployment.get("parameters", {}).get("output")
        if output and deployment.get("schedules"):
            assert f"`{deployment['name']}`" in reports_readme, deployment["name"]
            assert f"`{PurePosixPath(output).name}`" in reports_readme, output


def test_the_weekly_documentation_evaluation_fails_below_its_thresholds() -> None:
    weekly = [d for d in deployments() if flow_of(d).name == "evaluate-documentation"
              and d.get("schedules")]
    assert weekly
    for deployment in weekly:
        parameters = deployment["parameters"]
        assert 0.0 < parameters["min_hit_at_5"] <= 1.0, deployment["name"]
        assert 0.0 < parameters["min_mrr"] <= 1.0, deployment["name"]
