"""Relevant documents for a user's corpus: a row → document mapping per table (``gen --doc-ids``)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from groundwatch.core.generation.doc_ids import doc_ids_for, validate_doc_id_map

pytestmark = pytest.mark.unit


def test_templates_and_explicit_maps() -> None:
    mapping = validate_doc_id_map(
        {"projects": "project-{key}", "clients": {17: "acme-factsheet", "18": "globex-faq"}}
    )
    facts = [
        ("projects", "budget", 3),
        ("projects", "name", 3),  # one row, one document, however many columns are read
        ("clients", "name", 17),
        ("clients", "name", 99),  # not in the explicit map: no document
        ("employees", "name", 5),  # a table the mapping does not name: no document
    ]
    assert doc_ids_for(facts, mapping) == ["acme-factsheet", "project-3"]
    assert doc_ids_for([], mapping) == []


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({}, "non-empty"),
        ({"projects": "project"}, "no {key}"),
        ({"projects": "p-{key}-{owner}"}, "only {key} and {table}"),
        ({"projects": 3}, "template string or a map"),
    ],
)
def test_bad_mappings_say_what_is_wrong(data: object, error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("{", r"\{").replace("}", r"\}")):
        validate_doc_id_map(data)


def test_gen_with_doc_ids_traces_each_answer_to_its_rows(tmp_path: Path) -> None:
    from groundwatch.cli.main import app
    from groundwatch.demo import build_demo

    domain = build_demo(workdir=tmp_path)
    # the demo corpus's own row → document map, as a user would write it for theirs
    mapping: dict[str, dict[int, str]] = {}
    for (table, key), doc in domain.home_docs.items():
        mapping.setdefault(table, {})[key] = doc
    map_file = tmp_path / "doc_ids.yaml"
    map_file.write_text(yaml.safe_dump(mapping))
    out = tmp_path / "groups.jsonl"
    res = CliRunner().invoke(
        app,
        [
            "gen",
            "--db",
            domain.db_url,
            "--doc-ids",
            str(map_file),
            "--out",
            str(out),
            "--forms",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "relevant documents from" in res.output
    groups = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    with_docs = [g for g in groups if g["relevant_doc_ids"]]
    assert len(with_docs) > len(groups) / 2
    assert all(d in domain.home_docs.values() for g in with_docs for d in g["relevant_doc_ids"])
    bad = CliRunner().invoke(app, ["gen", "--demo", "--doc-ids", str(map_file), "--out", str(out)])
    assert bad.exit_code != 0 and "--doc-ids goes with --db" in bad.output
