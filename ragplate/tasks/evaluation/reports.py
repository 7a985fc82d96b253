"""Writing evaluation reports: checked output paths, atomic JSON, an HTML page beside it.

Every evaluation and tuning command writes its report through :func:`write_report`:

- an existing report is never overwritten without ``force`` (:func:`check_output` says so
  before a long run starts, and the write checks again);
- a directory that does not exist or cannot be written is refused;
- the JSON goes to a temporary file in the same directory and is moved into place with
  ``os.replace``, so a reader never sees half a report and a crash leaves the old one;
- the HTML page (``<name>.html`` beside ``<name>.json``) is written the same way.

The JSON rendering is canonical (four-space indent, keys in insertion order, UTF-8,
whole-number floats kept as ``1.0``, final newline), so the same figures give the same
bytes on every run.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragplate.catalog.errors import InvalidInputError

#: Keys a report may never hold at any depth: they would carry query text or content.
FORBIDDEN_KEYS: frozenset[str] = frozenset({
    "query", "queries", "text", "excerpt", "content", "body", "title", "question",
})


class ReportExistsError(InvalidInputError):
    """The output report exists and ``--force`` was not given."""


def render_json(report: Mapping[str, Any]) -> str:
    """The canonical text of a report (see the module docstring)."""
    return json.dumps(report, indent=4, ensure_ascii=False, allow_nan=False) + "\n"


def html_path(output: Path) -> Path:
    """Where the HTML page of the report ``output`` goes (same name, ``.html``)."""
    return output.with_suffix(".html")


def check_output(output: Path | str, *, force: bool, option: str = "--output",
                 page: bool = True, inputs: Iterable[Path | str] = (),
                 also_reads: Mapping[str, Path | str] | None = None) -> Path:
    """Refuse an output that exists (without ``force``), is a directory, or whose
    directory is missing or not writable, and one that is a file the run reads
    (``inputs``: its dataset; ``also_reads``: other files it reads, by what they are,
    e.g. ``{"the --grid file": path}``), even with ``force``; returns the path. With
    ``page`` (a report, whose HTML page goes beside it) also an HTML name, an existing
    page and a page path that is a directory. ``option`` names the output in the messages
    (``--cases`` for the per-case file, which has no page). Run it before the evaluation,
    so a long run does not end in a refusal."""
    path = Path(output)
    written = {path.resolve(), *([html_path(path).resolve()] if page else [])}
    reads = [(read, "the dataset") for read in inputs]
    reads += [(read, what) for what, read in (also_reads or {}).items()]
    for read, what in reads:
        if Path(read).resolve() in written:
            # --force overwrites a report, never a file the report is made from.
            raise InvalidInputError(f"{option} {path}: would overwrite {read}, {what} "
                                    "this run reads; choose another path")
    if page and path.suffix.lower() == ".html":
        raise InvalidInputError(f"{option} {path}: names the JSON report, and its HTML page "
                                f"is written beside it with the suffix .html; give the "
                                f"report another suffix (e.g. {path.with_suffix('.json')})")
    if path.is_dir():
        raise InvalidInputError(f"{option} {path}: is a directory, not a file")
    if page and html_path(path).is_dir():
        # Found here, not when the page is written after the whole run.
        raise InvalidInputError(f"{option} {path}: its HTML page {html_path(path)} is a "
                                "directory, not a file")
    if path.exists() and not force:
        what = "the report" if page else "the file"
        raise ReportExistsError(f"{option} {path}: {what} already exists (pass --force "
                                "to overwrite it, or choose another path)")
    if page and html_path(path).exists() and not force:
        raise ReportExistsError(f"{option} {path}: its HTML page {html_path(path)} already "
                                "exists (pass --force to overwrite it, or choose another path)")
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InvalidInputError(f"{option} {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidInputError(f"{option} {path}: directory {directory} is not writable")
    return path


def check_extra_output(output: Path | str, *, option: str, report: Path | str,
                       force: bool, inputs: Iterable[Path | str] = ()) -> Path:
    """Check a file a run writes besides its report (``--cases``): as :func:`check_output`
    without an HTML page, and neither the report nor its page."""
    path = check_output(output, force=force, option=option, page=False, inputs=inputs)
    taken = Path(report).resolve()
    if path.resolve() in (taken, html_path(taken)):
        raise InvalidInputError(f"{option} {path}: is the report's --output or its HTML page")
    return path


def assert_no_content(report: Any, where: str = "report") -> None:
    """Raise ``ValueError`` when a report holds a key that would carry query text or
    record content (:data:`FORBIDDEN_KEYS`): reports may be committed, datasets may not."""
    if isinstance(report, Mapping):
        for key, value in report.items():
            if str(key).lower() in FORBIDDEN_KEYS:
                raise ValueError(f"{where}.{key}: a report never carries text or content")
            assert_no_content(value, f"{where}.{key}")
    elif isinstance(report, list):
        for index, value in enumerate(report):
            assert_no_content(value, f"{where}[{index}]")


def write_atomic(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and
    ``os.replace`` (atomic on POSIX: readers see the old file or the new one), with
    permissions ``mode`` (an ordinary file; ``0o600`` for one holding people's words)."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp creates 0600; a report is an ordinary file unless told otherwise.
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_report(output: Path | str, report: Mapping[str, Any], *, force: bool,
                 html: str | None = None) -> Path:
    """Check ``output`` (:func:`check_output`), then write the JSON report atomically and,
    when given, the HTML page beside it; returns the JSON path."""
    path = check_output(output, force=force)
    assert_no_content(report)
    for target, text in ((path, render_json(report)), (html_path(path), html)):
        if text is None:
            continue
        try:
            write_atomic(target, text)
        except OSError as exc:
            # A full disk or a path the access check could not foresee (/proc, a
            # read-only mount seen as writable by root): the caller's output, named.
            raise InvalidInputError(
                f"--output {path}: cannot write {target} ({exc.strerror or exc})") from exc
    return path
