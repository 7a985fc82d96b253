"""The serving edge: the FastAPI app, its routers and the CLI."""
