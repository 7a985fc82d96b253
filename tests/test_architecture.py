"""The house rules of docs/architecture.md, read off the code's own imports: what each
room may import, SQL only in infra/, a catalog that reads no environment, tasks/ in wings,
and no import circle between modules."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ragplate"

#: What each room may import of ragplate, besides itself (docs/architecture.md).
MAY_IMPORT: dict[str, set[str]] = {
    "catalog": set(),
    "infra": {"catalog"},
    "tasks": {"catalog", "infra"},
    "flows": {"catalog", "infra", "tasks"},
    "api": {"catalog", "infra", "tasks"},
    "bench": {"catalog", "infra", "tasks", "flows"},
    "cli": {"catalog", "infra", "tasks", "flows", "bench"},
    "__main__": {"cli"},
    "__init__": set(),
}
#: The wings of tasks/ and the modules every wing shares.
WINGS = {"indexing", "retrieval", "records", "evaluation", "tuning", "switch", "people",
         "assistant", "crud", "writes", "analytics"}
SHARED_TASK_MODULES = {"__init__.py", "flow_runs.py", "progress.py", "retries.py"}


def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    """Every module of the package: its dotted name, path and syntax tree."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path, ast.parse(path.read_text(encoding="utf-8"))


def imported(tree: ast.Module) -> set[str]:
    """The ragplate modules a module imports, wherever the import statement stands
    (``from package import module`` imports the module, not the package's face)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("ragplate")}
        elif (isinstance(node, ast.ImportFrom) and node.module and node.level == 0
              and node.module.startswith("ragplate")):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.add(submodule if submodule in KNOWN else node.module)
    return names


ALL = list(modules())
KNOWN = {name for name, _, _ in ALL}


def room(name: str) -> str:
    """``ragplate.tasks.indexing.read`` -> ``tasks``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"




@pytest.mark.parametrize(("name", "path", "tree"), ALL, ids=[n for n, _, _ in ALL])
def test_each_room_imports_only_the_rooms_below_it(name: str, path: Path,
                                                   tree: ast.Module) -> None:
    own = room(name)
    # The package's face holds only the version, which every room may read.
    rooms = {room(m) for m in imported(tree) if m in KNOWN} - {own, "__init__"}
    assert rooms <= MAY_IMPORT[own], f"{path}: {own} imports {sorted(rooms - MAY_IMPORT[own])}"


def test_sql_lives_in_infra_only() -> None:
    offenders = []
    for name, path, tree in ALL:
        if room(name) != "tasks":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    node.func.attr == "execute"
                    or (node.func.attr == "text" and ast.unparse(node.func.value) == "sa")):
                offenders.append(f"{path}:{node.lineno}")
            if isinstance(node, ast.Import | ast.ImportFrom):
                module = getattr(node, "module", None) or ""
                names = [a.name for a in node.names]
                if module == "sqlalchemy" or "sqlalchemy" in names:
                    offenders.append(f"{path}:{node.lineno} imports sqlalchemy")
    assert offenders == []


def test_the_catalog_reads_no_environment_and_imports_no_infra() -> None:
    for name, path, tree in ALL:
        if room(name) != "catalog":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("environ", "getenv"), f"{path}:{node.lineno}"
            if isinstance(node, ast.Name | ast.alias):
                word = node.id if isinstance(node, ast.Name) else node.name
                assert word not in ("get_settings", "load_settings"), f"{path}: {word}"
        assert not any(room(m) == "infra" for m in imported(tree)), path


def test_tasks_is_in_wings() -> None:
    tasks = PACKAGE / "tasks"
    assert {p.name for p in tasks.glob("*.py")} == SHARED_TASK_MODULES
    assert {p.name for p in tasks.iterdir() if p.is_dir() and p.name != "__pycache__"} == WINGS


def test_no_two_modules_import_each_other_through_a_circle() -> None:
    graph = {name: {m for m in imported(tree) if m in KNOWN and m != name}
             for name, _, tree in ALL}
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []
