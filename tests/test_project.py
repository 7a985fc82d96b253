"""The README and prefect.yaml stay true to the code."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml

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


def test_readme_names_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_prefect_deployments_point_at_flows_with_valid_parameters() -> None:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert config["deployments"], "prefect.yaml declares no deployment"
    for deployment in config["deployments"]:
        path, _, name = deployment["entrypoint"].partition(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, name)
        accepted = inspect.signature(flow.fn).parameters
        unknown = set(deployment.get("parameters", {})) - set(accepted)
        assert unknown == set(), f"{deployment['name']}: unknown parameters {unknown}"
        for schedule in deployment.get("schedules", []):
            assert schedule.get("cron") and schedule.get("timezone")
