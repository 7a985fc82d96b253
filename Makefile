# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install lint bench clean bytecode

# Bytecode is compiled at install: where Python may not write it (PYTHONDONTWRITEBYTECODE)
# every command would compile its dependencies again: about a second more per CLI start.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --python $(BIN)/python --quiet --compile-bytecode -e '.[dev]'
	touch $(STAMP)

# The editable package itself is not compiled by the install: compiled here (only what
# changed since), so that `make run`'s commands start as fast as the dependencies do.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q ragplate

install: $(STAMP)

## Index the bundled docs/ through the Prefect flow, answer a sample question, serve the API
## (on RAGPLATE_API_HOST:RAGPLATE_API_PORT, default 127.0.0.1:8000: checked first, before any work).
run: $(STAMP) bytecode
	$(BIN)/ragplate serve --check
	$(BIN)/ragplate up
	$(BIN)/ragplate index-docs
	$(BIN)/ragplate retrieve "How do I add an embedding profile?" --top-k 3
	$(BIN)/ragplate serve

## Lint, type-check and run the whole test suite.
test: $(STAMP)
	$(BIN)/ruff check ragplate tests
	$(BIN)/mypy
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/ragplate bench indexing

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
