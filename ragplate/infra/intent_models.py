"""Where the guardrails' intent models live: one JSON file per embedding model, in
``RAGPLATE_HOME/intent-models/`` (written by ``ragplate guardrails train``), else the one
bundled for the default model in ``ragplate/catalog/intent_models/``."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from ragplate.catalog.errors import ConfigurationError
from ragplate.catalog.intent_model import IntentModel

BUNDLED = Path(__file__).resolve().parents[1] / "catalog" / "intent_models"


def file_name(model_key: str) -> str:
    """The file of a model key (``local:intfloat/…`` → ``local_intfloat_…json``)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", model_key).strip("_") + ".json"


def home_dir(home: Path) -> Path:
    """The directory of trained models in a home."""
    return home / "intent-models"


def load(home: Path, model_key: str) -> IntentModel | None:
    """The intent model of ``model_key``: the home's, else the bundled one, else ``None``."""
    for directory in (home_dir(home), BUNDLED):
        path = directory / file_name(model_key)
        if path.is_file():
            return _read(path, path.stat().st_mtime_ns, model_key)
    return None


@lru_cache(maxsize=8)
def _read(path: Path, _mtime: int, model_key: str) -> IntentModel:
    try:
        model = IntentModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"the intent model {path.name} cannot be read "
                                 f"({exc.__class__.__name__}); train it again with "
                                 "ragplate guardrails train") from exc
    if model.model_key != model_key:
        raise ConfigurationError(f"the intent model {path.name} was trained for "
                                 f"{model.model_key}, not {model_key}")
    return model


def save(home: Path, model: IntentModel) -> Path:
    """Write ``model`` into the home (atomically: a reader never sees half a file)."""
    directory = home_dir(home)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(model.model_key)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(model.as_dict()) + "\n", encoding="utf-8")
    partial.replace(path)
    return path
