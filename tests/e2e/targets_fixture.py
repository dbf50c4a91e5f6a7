"""Python callables used as targets by CLI tests (imported by name from a targets file)."""

from __future__ import annotations


def knows_nothing(query: str) -> dict[str, object]:
    return {"answer": "I don't know.", "retrieved_ids": [], "contexts": []}
