"""``ragplate embeddings …``."""

from __future__ import annotations

from typing import Annotated

import typer

from ragplate.catalog.errors import DimensionMismatchError
from ragplate.cli import switch
from ragplate.cli.output import console, examples, print_json


def probe_command(
    key: Annotated[str, typer.Argument(help="Profile key, provider:service_model.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Embed a fixed text with the profile and compare the measured dimensions.

    Exits non-zero when the profile is unknown, its provider does not answer, or the
    measured length differs from the declared one.

    Example: ragplate embeddings probe local:intfloat/multilingual-e5-small
    """
    from ragplate.catalog.profiles import get_profile
    from ragplate.infra.environment import get_settings
    from ragplate.infra.models import make_embedder, probe

    settings = get_settings()  # first: it declares the test profiles when asked to
    profile = get_profile(key)
    result = probe(make_embedder(profile, settings))
    if json_output:
        print_json({"profile": result.profile, "model": result.model,
                    "declared_dimensions": result.declared_dimensions,
                    "dimensions": result.measured_dimensions,
                    "norm": None if result.norm is None else round(result.norm, 6),
                    "ok": result.ok})
    else:
        norm = "not measured" if result.norm is None else f"{result.norm:.4f}"
        console.print(f"profile     {result.profile}\nmodel       {result.model}\n"
                      f"dimensions  {result.measured_dimensions} (declared "
                      f"{result.declared_dimensions})\nnorm        {norm}",
                      highlight=False)
    if not result.ok:
        raise DimensionMismatchError(profile.key, result.declared_dimensions,
                                     result.measured_dimensions)


def register(app: typer.Typer) -> None:
    """Attach the ``embeddings`` group (the probe here, the switch's commands from
    :mod:`ragplate.cli.switch`) to the root app."""
    group = typer.Typer(help="Embedding profiles: probe a profile's provider, switch the "
                        "serving model.", no_args_is_help=True,
                        epilog=examples(
                            "ragplate embeddings probe local:intfloat/multilingual-e5-small",
                            "ragplate embeddings status --json",
                            "ragplate embeddings switch "
                            "local:cnmoro/portuguese-multilingual-e5-small --yes",
                            "ragplate embeddings switch --resume"))
    group.command("probe")(probe_command)
    switch.register(group)
    app.add_typer(group, name="embeddings")
