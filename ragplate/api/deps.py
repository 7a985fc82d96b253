"""FastAPI dependencies (``Annotated`` aliases used by the routers)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ragplate.infra.runtime import Runtime


def get_runtime(request: Request) -> Runtime:
    """The process's runtime, created once at startup."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
