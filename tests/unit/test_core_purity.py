"""The domain core imports no Kafka, HTTP, database driver, ORM, LLM SDK or metrics client."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CORE = Path(__file__).resolve().parents[2] / "shared" / "groundwatch" / "core"
FORBIDDEN = {
    "aiokafka",
    "kafka",
    "confluent_kafka",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "psycopg2",
    "sqlite3",
    "httpx",
    "requests",
    "aiohttp",
    "fastapi",
    "starlette",
    "uvicorn",
    "openai",
    "prometheus_client",
    "groundwatch.adapters.bus",
    "groundwatch.adapters.db",
    "groundwatch.adapters.llm",
    "groundwatch.runtime.service",
    "groundwatch.runtime.consume",
    "groundwatch.adapters.targets",
    "groundwatch.adapters.sources",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_is_pure() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert files, "core package not found"
    offenders = []
    for f in files:
        for mod in imported_modules(f):
            if any(mod == bad or mod.startswith(bad + ".") for bad in FORBIDDEN):
                offenders.append(f"{f.relative_to(CORE)} imports {mod}")
    assert not offenders, "\n".join(offenders)
