"""The domain core imports no Kafka, HTTP, database driver, ORM, LLM SDK or metrics client, reads
no file and no environment; the wire contracts import only the core.

import-linter (``make lint``) enforces the layers between groundwatch's own packages; this test
also covers what import-linter cannot see: file and environment reads inside the core."""

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
    "httptools",
    "uvloop",
    "fastapi",
    "starlette",
    "uvicorn",
    "openai",
    "prometheus_client",
    "pydantic_settings",
    "yaml",
    "groundwatch.contracts",
    "groundwatch.adapters",
    "groundwatch.runtime",
    "groundwatch.stages",
    "groundwatch.report",
    "groundwatch.cli",
    "services",
}
#: Calls that read files or the environment: the core receives data, adapters read it.
IO_CALLS = {"open", "read_text", "read_bytes", "glob", "rglob", "iterdir", "getenv", "files"}
IO_NAMES = {"environ"}


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


def _package_data(path: Path, lineno: int) -> bool:
    """A read of an installed data package's own files (pycountry's translations), marked
    ``# package data`` on its line: deterministic like an import, no user file, no environment."""
    return "# package data" in path.read_text().splitlines()[lineno - 1]


def io_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            )
            if name in IO_CALLS and not _package_data(path, node.lineno):
                found.append(f"line {node.lineno}: {name}()")
        elif isinstance(node, ast.Attribute) and node.attr in IO_NAMES:
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_core_reads_no_file_and_no_environment() -> None:
    offenders = [
        f"{f.relative_to(CORE)} {hit}" for f in sorted(CORE.rglob("*.py")) for hit in io_calls(f)
    ]
    assert not offenders, "\n".join(offenders)


def test_contracts_import_only_the_core() -> None:
    contracts = CORE.parent / "contracts.py"
    allowed_own = ("groundwatch.core", "groundwatch.errors")
    bad = [
        m
        for m in imported_modules(contracts)
        if (m.startswith("groundwatch") and not m.startswith(allowed_own))
        or any(
            m == f or m.startswith(f + ".") for f in FORBIDDEN if not f.startswith("groundwatch")
        )
    ]
    assert not bad, bad
