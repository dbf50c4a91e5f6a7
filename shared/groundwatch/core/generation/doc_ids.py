"""Relevant documents of a semantic group from the rows its SQL answer reads.

IR metrics (Recall/Precision@K, AP, RR, nDCG) need to know which documents of the corpus state a
group's answer. The demo corpus knows it (it was rendered from the database); for a user's corpus
the user knows how a database row maps to a document, and says it once per table:

* a template — ``projects: "project-{key}"`` — where ``{key}`` is the row's primary key (and
  ``{table}`` the table's name): one document per row;
* an explicit map — ``clients: {17: "acme-factsheet", 18: "globex-faq"}`` — for documents that
  are not named after their rows (a row absent from it has no document).

A group's relevant documents are the documents of every row its answer reads (traced through its
SQL, :func:`groundwatch.adapters.sources.provenance.group_facts`); a row of a table the mapping
does not name contributes none, so an empty list means "unknown", never "no document".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: table → a document-id template (``{key}``, ``{table}``) or an explicit row key → document id.
DocIdMap = Mapping[str, str | Mapping[str, str]]


def validate_doc_id_map(data: Any) -> dict[str, str | dict[str, str]]:
    """The mapping, checked: table names to a template string with ``{key}`` or to a map of row
    keys to document ids (keys compared as text). Raises ``ValueError`` saying what is wrong."""
    if not isinstance(data, Mapping) or not data:
        raise ValueError("a doc-id mapping is a non-empty map of table name to template or map")
    out: dict[str, str | dict[str, str]] = {}
    for table, spec in data.items():
        if not isinstance(table, str) or not table:
            raise ValueError(f"table name {table!r} is not a string")
        if isinstance(spec, str):
            if "{key}" not in spec:
                raise ValueError(f"{table}: template {spec!r} has no {{key}}")
            try:
                spec.format(key="k", table=table)
            except (KeyError, IndexError, ValueError) as e:
                raise ValueError(f"{table}: template {spec!r}: only {{key}} and {{table}}") from e
            out[table] = spec
        elif isinstance(spec, Mapping):
            out[table] = {str(k): str(v) for k, v in spec.items() if v is not None and str(v)}
        else:
            raise ValueError(f"{table}: expected a template string or a map, got {spec!r}")
    return out


def doc_ids_for(facts: Iterable[tuple[str, str, Any]], mapping: DocIdMap) -> list[str]:
    """The documents of the rows behind ``facts`` ((table, column, primary key) triples), sorted."""
    docs: set[str] = set()
    for table, _column, key in facts:
        spec = mapping.get(table)
        if spec is None or key is None:
            continue
        if isinstance(spec, str):
            docs.add(spec.format(key=key, table=table))
        else:
            doc = spec.get(str(key))
            if doc:
                docs.add(doc)
    return sorted(docs)
