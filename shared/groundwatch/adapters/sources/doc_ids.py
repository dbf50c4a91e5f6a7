"""Relevant documents of generated semantic groups from a user's row → document mapping.

Reads the mapping file (YAML or JSON: see :mod:`groundwatch.core.generation.doc_ids`) and traces
each group's answer to the rows it reads through a read-only connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.provenance import group_facts
from groundwatch.core.generation.doc_ids import DocIdMap, doc_ids_for, validate_doc_id_map
from groundwatch.core.generation.sql_gate import ReadGate
from groundwatch.core.model import SemanticGroup
from groundwatch.errors import ConfigError, parse_error_line


def read_doc_id_map(path: Path) -> DocIdMap:
    """The mapping in ``path`` (ConfigError naming the file when it is malformed)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: {parse_error_line(e)}") from e
    try:
        return validate_doc_id_map(data)
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from e


def annotate_doc_ids(
    url: str,
    groups: Sequence[SemanticGroup],
    mapping: DocIdMap,
    policy: SourcePolicy | None = None,
) -> list[SemanticGroup]:
    """Copies of ``groups`` with ``relevant_doc_ids`` from the rows their answers read (a group
    whose answer cannot be traced, or reads no mapped table, keeps what it had)."""
    engine = readonly_engine(url, policy=policy)
    try:
        with engine.connect() as conn:
            schema = introspect(conn, profile=False)
            gate = ReadGate(schema)
            out = []
            for g in groups:
                docs = doc_ids_for(group_facts(conn, schema, g.sql, g.params, gate), mapping)
                out.append(g.model_copy(update={"relevant_doc_ids": docs}) if docs else g)
            return out
    finally:
        engine.dispose()
