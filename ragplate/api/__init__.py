"""The HTTP edge: the FastAPI app, its routers and their dependencies."""
