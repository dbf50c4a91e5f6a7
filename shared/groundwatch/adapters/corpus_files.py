"""Load a document corpus: a JSON object ``{doc_id: text}`` or a directory of text files.

One reader for every place a corpus is configured — the reference RAG (``GW_RAG_CORPUS``) and the
data-quality check of gap groups (``GW_CORPUS``, ``groundwatch run|report --corpus``) — so both
name the documents the same way (a file's id is its path without the suffix) and the check can
point at the very document the RAG under test returns.
"""

from __future__ import annotations

import json
from pathlib import Path

from groundwatch.errors import ConfigError

_TEXT_SUFFIXES = {".txt", ".md", ".markdown"}


def load_corpus(path: Path, setting: str = "GW_RAG_CORPUS") -> dict[str, str]:
    """Read the corpus at ``path``; a malformed corpus is a :class:`ConfigError` naming the file
    and the ``setting`` it came from."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _TEXT_SUFFIXES)
        corpus: dict[str, str] = {}
        for p in files:
            doc_id = p.relative_to(path).with_suffix("").as_posix()
            corpus[doc_id] = p.read_text(encoding="utf-8")
        if not corpus:
            raise ConfigError(f"{setting}: no .txt/.md documents under {path}")
        return corpus
    if not path.is_file():
        raise ConfigError(f"{setting}: {path} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{setting}: {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigError(f"{setting}: {path} must be a JSON object {{doc_id: text}}")
    if not data:
        raise ConfigError(f"{setting}: {path} holds no documents")
    return data
