"""Python callables used as targets by CLI tests (imported by name from a targets file)."""

from __future__ import annotations


def knows_nothing(query: str) -> dict[str, object]:
    return {"answer": "I don't know.", "retrieved_ids": [], "contexts": []}


def knows_the_client_locations(query: str) -> dict[str, object]:
    """An 'LLM-only baseline' that happens to know one kind of fact from pre-training."""
    from groundwatch.demo.data import make_rows

    rows = make_rows(7)
    for client in rows.clients:
        if client.name in query and "city" in query.lower():
            return {"answer": client.city}
    return {"answer": "I don't know."}
