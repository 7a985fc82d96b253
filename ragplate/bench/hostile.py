"""The hostile documentation corpus, and a benchmark of ``index-docs`` over it.

:func:`write_hostile_corpus` writes, beside a copy of a clean corpus, the files a hostile
author of a documentation root could leave there. Two kinds:

- **indexable** (the run goes on): links to a private file and to a directory outside
  the root (skipped with a warning), a link to a parent directory inside it (read once),
  an alias bomb and a 20,000-level nesting in front matter (warnings, no metadata), front
  matter after a byte order mark (read);
- **refused** (the run stops before writing, naming each, exit 2): a NUL byte, a 20 MB
  file, a binary file named ``.md``.

The benchmark runs ``ragplate index-docs --full`` as a separate process over the clean
corpus, over it with the indexable hostile files and over it with all of them, and prints
each run's time, peak RSS (the process and its children), exit code and refusals.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ragplate.bench.scratch import scratch_home, write_figures

console = Console()

#: A secret outside every root, which no index may ever hold.
SECRET = "db_password=hunter2-never-indexed"
ALIAS_BOMB = "\n".join(
    ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]"
       for i in range(8)]
    + ["---", "", "# Laughs", "", "A page whose front matter is an alias bomb."]) + "\n"
DEPTH = 20_000


@dataclass(frozen=True)
class HostileFile:
    """One file of the hostile corpus: its path in the root and what it tries."""

    path: str
    attack: str
    refused: bool


def write_hostile_corpus(root: Path, outside: Path, *, refused: bool = True,
                         big_bytes: int = 20_000_000) -> list[HostileFile]:
    """Write the hostile files into ``root`` (a private file and directory go to
    ``outside``, which must not be inside ``root``); with ``refused=False`` only the
    indexable ones. Returns what was written."""
    outside.mkdir(parents=True, exist_ok=True)
    secret = outside / "secret.md"
    secret.write_text(f"# Credentials\n\n{SECRET}\n")
    secret.chmod(0o600)
    (outside / "private").mkdir(exist_ok=True)
    (outside / "private" / "notes.md").write_text(f"# Notes\n\n{SECRET}\n")
    hostile = root / "hostile"
    hostile.mkdir(parents=True, exist_ok=True)
    written = [
        HostileFile("hostile/secret.md", "a link to a private file outside the root", False),
        HostileFile("hostile/private", "a link to a directory outside the root", False),
        HostileFile("hostile/loop", "a link to a parent directory inside the root", False),
        HostileFile("hostile/laughs.md", "an alias bomb in front matter", False),
        HostileFile("hostile/deep.md", f"front matter nested {DEPTH} levels", False),
        HostileFile("hostile/bom.md", "front matter after a byte order mark", False),
    ]
    (hostile / "secret.md").symlink_to(secret)
    (hostile / "private").symlink_to(outside / "private", target_is_directory=True)
    (hostile / "loop").symlink_to(root, target_is_directory=True)
    (hostile / "laughs.md").write_text(ALIAS_BOMB)
    (hostile / "deep.md").write_text("---\nx: " + "[" * DEPTH + "]" * DEPTH
                                     + "\n---\n\n# Deep\n\nDeeply nested front matter.\n")
    (hostile / "bom.md").write_bytes(b"\xef\xbb\xbf---\naudience: shared\nmodule: hostile\n"
                                     b"---\n\n# Marked\n\nFront matter after a BOM.\n")
    if refused:
        written += [
            HostileFile("hostile/nul.md", "a NUL byte in the text", True),
            HostileFile("hostile/huge.md", f"a file of {big_bytes} bytes", True),
            HostileFile("hostile/binary.md", "a binary file named .md", True),
        ]
        (hostile / "nul.md").write_bytes(b"# Nul\n\nA NUL \x00 byte.\n")
        with (hostile / "huge.md").open("w") as handle:
            line = "A sentence of a very long page. " * 31 + "\n"
            handle.write(line * (big_bytes // len(line) + 1))
        (hostile / "binary.md").write_bytes(bytes(range(256)) * 64)
    return written


def _peak_run(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``command``; its time, exit code, stderr and peak RSS (the process and its
    children, sampled every 20 ms)."""
    import psutil

    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(process.pid)
    peak = 0
    try:
        while process.poll() is None:
            try:
                tree = [watched, *watched.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree))
            except psutil.Error:
                pass
            time.sleep(0.02)
        stdout, stderr = process.communicate()
    finally:
        if process.poll() is None:
            # Interrupted (SIGTERM, Ctrl-C): the run goes too, rather than indexing on into
            # a scratch home that the caller is removing.
            process.kill()
            process.communicate()
    return {"seconds": round(time.perf_counter() - started, 2), "exit_code": process.returncode,
            "peak_rss_mb": round(peak / 2**20, 1), "stderr": stderr, "stdout": stdout}


def run(*, corpus: Path, output: Path) -> dict[str, Any]:
    """Index ``corpus`` clean, with the indexable hostile files and with all of them, each
    as its own ``index-docs`` process in a scratch home; write and print the figures."""
    from ragplate.infra import services
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.retrieval.documentation import keyword_store

    with scratch_home("ragplate-bench-hostile-") as (scratch, settings):
        services.up(settings)
        env = {**os.environ, "RAGPLATE_HOME": str(settings.home)}
        runs: dict[str, dict[str, Any]] = {}
        for name, hostile, refused in (("clean", False, False), ("indexable", True, False),
                                       ("all", True, True)):
            root = scratch / name
            shutil.copytree(corpus, root)
            files = write_hostile_corpus(root, scratch / f"{name}-outside",
                                         refused=refused) if hostile else []
            command = [sys.executable, "-m", "ragplate", "index-docs", "--profile", "developer",
                       "--path", str(root), "--prefix", name, "--full", "--json"]
            result = _peak_run(command, env)
            result["refusals_named"] = sum(1 for f in files if f.refused
                                           and f"{name}/{f.path}" in result["stderr"])
            result["refused_files"] = sum(1 for f in files if f.refused)
            runs[name] = result
        store = keyword_store(Runtime(settings).store("developer"))
        leaked = sorted(hit.source for hit in store.keyword_search(
            "hunter2 db_password credentials notes", top_k=100) if SECRET in hit.text)
    figures = {
        "corpus": str(corpus),
        "runs": {k: {key: v for key, v in r.items() if key not in ("stderr", "stdout")}
                 for k, r in runs.items()},
        "time_ratio_indexable_vs_clean": round(runs["indexable"]["seconds"]
                                               / max(runs["clean"]["seconds"], 1e-9), 2),
        "sources_holding_the_secret": leaked,
    }
    write_figures(output, figures)
    table = Table(title=f"index-docs over {corpus} and the hostile corpus")
    for column in ("run", "seconds", "peak RSS MB", "exit", "refused named"):
        table.add_column(column)
    for name, r in runs.items():
        table.add_row(name, str(r["seconds"]), str(r["peak_rss_mb"]), str(r["exit_code"]),
                      f"{r['refusals_named']}/{r['refused_files']}")
    console.print(table)
    console.print(f"time ratio, indexable hostile / clean: "
                  f"{figures['time_ratio_indexable_vs_clean']}; sources holding the secret: "
                  f"{leaked or 'none'}")
    return figures
