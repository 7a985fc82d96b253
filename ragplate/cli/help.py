"""``ragplate help``: the developer help assistant in the terminal.

One question (``--question``) or a chat at a prompt, answered over the developer index with
the ``developer_help`` profile (documentation only, never a data tool), through the same
path as the assistant API: :func:`~ragplate.tasks.assistant.respond.answer_turn` screens the
question, retrieves, answers (extractively, or with the chat model when one is configured)
and applies the output policy. The terminal stores no conversation; the chat keeps only its
prompt history (``RAGPLATE_HOME/help_history``) for the arrow keys.

A command that answers one question and exits is mostly start-up, so this module imports
nothing heavy when the CLI loads: the runtime, the models and the database are imported
when the command runs, and Rich's Markdown renderer on the first answer drawn.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from ragplate.catalog.people import Person
    from ragplate.infra.models.chat import ChatModel
    from ragplate.infra.runtime import Runtime
    from ragplate.tasks.assistant.respond import Turn

PROFILE = "developer_help"
#: The prompt history kept under RAGPLATE_HOME, and how many lines of it.
HISTORY_FILE = "help_history"
HISTORY_LINES = 1000
PROMPT = "help> "
#: Fewest characters of an excerpt shown under an answer (``/sources`` shows all of it).
SOURCE_LINE_MIN_CHARS = 20
COMMANDS = {
    "/sources": "the full excerpts of the last answer's sources (of an extractive answer: "
                "what it quotes of each)",
    "/help": "this list",
    "/quit": "leave (Ctrl-D too)",
}


class HelpLocale(StrEnum):
    """The languages the assistant's fixed texts are written in."""

    en = "en"
    it = "it"


def _leave_quickly() -> None:
    """At exit: close the database connections, then freeze the objects left so that the
    interpreter's final collections do not walk them again and again: an answer leaves
    some 100,000 of them in 800 modules (SQLAlchemy, pydantic, numpy), their collections
    took ~140 ms of a 0.9 s run, and the operating system frees them with the process."""
    from ragplate.infra.database import dispose_all

    dispose_all()
    gc.freeze()


@functools.cache
def _leave_quickly_at_exit() -> None:
    """Register :func:`_leave_quickly` once per process, however often the command runs in
    it (a test runs it many times in one)."""
    atexit.register(_leave_quickly)


def _person(locale: str) -> Person:
    """The person at the terminal: not a stored account (id 0), named after the user."""
    import getpass

    from ragplate.catalog.people import Person

    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment or the password file
        name = "terminal"
    return Person(id=0, name=name or "terminal", locale=locale)


def turn_data(turn: Turn) -> dict[str, Any]:
    """The answer as ``--json`` prints it."""
    return {
        "status": turn.status,
        "text": turn.text,
        "refusal_category": turn.refusal_category,
        "citations": [{"source_label": c["source_label"], "excerpt": c["excerpt"],
                       "score": c["score"]} for c in turn.citations],
        "metadata": turn.metadata,
    }


def _first_line(text: str, limit: int) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def render_turn(console: Console, turn: Turn, *, locale: str = "en") -> None:
    """An answer as Markdown with its sources listed below it (label and the excerpt's
    first line); a refusal, an abstention or a question back says so first. Headings are
    in the person's language; on a pipe the answer is its Markdown text, unwrapped."""
    from rich.markdown import Markdown
    from rich.text import Text

    from ragplate.catalog.assistant import text

    if turn.status == "refused":
        heading = f"{text(locale, 'refused')} ({turn.refusal_category or 'policy'})"
        console.print(Text(heading, style="bold yellow"))
        console.print(Text(turn.text))
        return
    if turn.status == "abstained":
        console.print(Text(text(locale, "no_answer"), style="bold yellow"))
        console.print(Text(turn.text))
        return
    if turn.status == "clarification":
        console.print(Text(text(locale, "asks"), style="bold cyan"))
    if console.is_terminal:
        console.print(Markdown(turn.text))
    else:  # Rich would pad and wrap every line to the console's width
        console.print(turn.text, markup=False, highlight=False, emoji=False, soft_wrap=True)
    if turn.metadata.get("degraded_reason"):
        console.print(Text(text(locale, "degraded"), style="dim"))
    if not turn.citations:
        return
    console.print()
    console.print(Text(text(locale, "sources"), style="bold"))
    for number, citation in enumerate(turn.citations, 1):
        head = f"[{number}] {citation['source_label']}  "
        # One line per source where the terminal is wide enough; /sources has the rest.
        room = max(SOURCE_LINE_MIN_CHARS, console.width - len(head) - 1)
        console.print(Text.assemble((head, "bold"),
                                    (_first_line(citation["excerpt"], room), "dim")))


def render_sources(console: Console, turn: Turn | None) -> None:
    """The full excerpts of an answer's sources."""
    from rich.text import Text

    if turn is None or not turn.citations:
        said = ("No sources yet: ask a question first." if turn is None
                else "The last answer has no sources.")
        console.print(Text(said, style="dim"))
        return
    for number, citation in enumerate(turn.citations, 1):
        console.print(Text.assemble((f"[{number}] {citation['source_label']}", "bold"),
                                    (f"  (similarity {citation['score']:.3f})", "dim")))
        console.print(Text(citation["excerpt"]))
        console.print()


def _use_history(path: Path) -> Callable[[], None]:
    """Load the prompt history into readline (the arrow keys recall it); returns what
    saves it again when the chat ends."""
    import readline

    readline.set_history_length(HISTORY_LINES)
    with contextlib.suppress(OSError):  # none yet, or unreadable: an empty history
        readline.read_history_file(path)

    def save() -> None:
        try:
            readline.write_history_file(path)
            # The questions typed are the developer's own, like a shell history.
            os.chmod(path, 0o600)
        except OSError:
            pass  # a history that cannot be written must not fail the chat's ending

    return save


def _keep_questions_only(line: str) -> None:
    """Drop ``line`` from the history input() just added it to when it is a command or the
    question before it again: the arrow keys then recall distinct questions (a ``/quit``
    recalled first would leave on Enter)."""
    import readline

    length = readline.get_current_history_length()
    if length == 0 or readline.get_history_item(length) != line:
        return
    previous = readline.get_history_item(length - 1) if length > 1 else None
    if line.startswith("/") or line == previous:
        readline.remove_history_item(length - 1)


def chat(ask: Callable[[str], Turn], console: Console, *,
         history: Path | None = None, locale: str = "en") -> None:
    """The interactive help: read a line at the prompt, answer it, until ``/quit`` or
    end of input. Ctrl-C drops the line being typed (or the answer being prepared); an
    error is shown and the chat goes on."""
    from rich.markup import escape

    from ragplate.catalog.errors import RagplateError
    from ragplate.catalog.text import text_problem

    save = _use_history(history) if history is not None else None
    console.print("[bold]ragplate help[/bold]: ask about the developer documentation. "
                  "[dim]/help lists the commands, /quit leaves.[/dim]", highlight=False)
    last: Turn | None = None
    try:
        while True:
            try:
                line = input(PROMPT).strip()
            except KeyboardInterrupt:
                console.print()
                continue
            except EOFError:
                console.print()
                return
            if not line:
                continue
            if save is not None:
                _keep_questions_only(line)
            if line.startswith("/"):
                command = line.split()[0].lower()
                if command in ("/quit", "/exit"):
                    return
                if command == "/sources":
                    render_sources(console, last)
                elif command == "/help":
                    for name, meaning in COMMANDS.items():
                        console.print(f"  [bold]{name:<9}[/bold] {meaning}", highlight=False)
                else:
                    console.print(f"[yellow]Unknown command {escape(command)}[/yellow]: "
                                  "/help lists the commands.", highlight=False)
                continue
            problem = text_problem(line)
            if problem is not None:
                console.print(f"[red]Error:[/red] the question {escape(problem)}",
                              highlight=False)
                continue
            try:
                with console.status("Searching the documentation…"):
                    last = ask(line)
            except KeyboardInterrupt:
                console.print("[yellow]Cancelled.[/yellow]")
                continue
            except RagplateError as exc:
                console.print(f"[red]Error:[/red] {escape(str(exc))}", highlight=False,
                              soft_wrap=True)
                continue
            render_turn(console, last, locale=locale)
            console.print()
    finally:
        if save is not None:
            save()


def help_command(
    question: Annotated[str | None, typer.Option(
        "--question", "-q", help="Answer this question and exit (no question: a chat at a "
        "prompt).")] = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print the answer as JSON (with --question).")] = False,
    locale: Annotated[HelpLocale, typer.Option(
        help="The asker's locale, as a person's in the assistant: the language of its "
        "framing, refusal and abstention texts, and the documents' language preferred.")
    ] = HelpLocale.en,
) -> None:
    """Ask the developer help assistant: answers from the developer index, with sources.

    With --question it answers once; without, it opens a chat: the arrow keys recall
    earlier questions, /sources shows the last answer's excerpts in full, /help lists the
    commands, /quit or Ctrl-D leaves. A refused or unanswerable question is shown as such.
    Nothing is stored but the prompt history (RAGPLATE_HOME/help_history).

    Examples:

      ragplate help --question "How do I rebuild the documentation index?"

      ragplate help -q "Come aggiungo un profilo di embedding?" --locale it --json

      ragplate help                                # the chat
    """
    from ragplate.catalog.errors import InvalidInputError
    from ragplate.catalog.text import check_text

    if question is not None:
        check_text(question, "--question")  # before any service starts
    elif json_output:
        raise InvalidInputError("--json prints one answer: give the question with --question")
    # One short question at a time: libgomp's default, spinning its threads between
    # parallel regions, made a question's embedding take 0.3-1.7 s instead of ~25 ms
    # whenever another process held a CPU, to save ~10 ms when none does. Read when the
    # model loads, so only this process's own model is affected.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    from ragplate.cli.output import console, print_json
    from ragplate.infra.environment import get_settings
    from ragplate.infra.home import ensure_dir
    from ragplate.infra.models.chat import chat_client_from_settings
    from ragplate.infra.runtime import Runtime

    _leave_quickly_at_exit()
    settings = get_settings()
    runtime = Runtime(settings)
    chat_model = chat_client_from_settings(settings)  # a misconfiguration fails here, once
    _require_documents(runtime)
    person = _person(locale.value)

    def ask(text: str) -> Turn:
        return answer(runtime, person, text, chat_model)

    if question is not None:
        turn = ask(question)
        if json_output:
            print_json(turn_data(turn))
        else:
            render_turn(console, turn, locale=locale.value)
        return
    # Piped input has no arrow keys to recall a history with.
    history = ensure_dir(settings.home) / HISTORY_FILE if sys.stdin.isatty() else None
    chat(ask, console, history=history, locale=locale.value)


def _require_documents(runtime: Runtime) -> None:
    """An empty developer index answers every question with the abstention, which tells a
    developer on a new home nothing they can act on: say what to run instead."""
    from ragplate.catalog.errors import InvalidInputError

    if runtime.store("developer").count() == 0:
        raise InvalidInputError("the developer index holds no documentation of the serving "
                                "embedding model: run `ragplate index-docs` first")


def answer(runtime: Runtime, person: Person, text: str, chat_model: ChatModel | None) -> Turn:
    """One question answered with the ``developer_help`` profile, nothing stored."""
    from ragplate.tasks.assistant.respond import answer_turn

    return answer_turn(runtime, person=person, text_in=text, context=None, profile=PROFILE,
                       chat=chat_model)


def register(app: typer.Typer) -> None:
    """Attach the command to the root app."""
    app.command("help")(help_command)
