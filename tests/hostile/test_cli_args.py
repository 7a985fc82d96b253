"""Command-line arguments that are not UTF-8 (a file name in Latin-1, a pasted byte): one
line naming the argument, exit 2, never a traceback — whatever the command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BAD = os.fsdecode(b"caf\xe9")  # Python keeps the byte as a lone surrogate


@pytest.mark.parametrize("arguments", [
    ["retrieve", BAD],
    ["search", BAD],
    ["index-docs", "--path", BAD],
    ["evaluate", "check", BAD],
    ["embeddings", "probe", BAD],
    [BAD],
])
def test_an_argument_that_is_not_utf8_is_one_line_and_exit_2(
    arguments: list[str], tmp_path: Path
) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAGPLATE_")}
    environ["RAGPLATE_HOME"] = str(tmp_path / "home")

    result = subprocess.run([sys.executable, "-m", "ragplate", *arguments], env=environ,
                            capture_output=True, timeout=60, check=False)

    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines() == [
        f"Error: argument {arguments.index(BAD) + 1} 'caf\\xe9' is not valid UTF-8"]
    assert not (tmp_path / "home").exists()  # refused before anything started
