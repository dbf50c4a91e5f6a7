"""Import/export in the GRAMMAR tool's formats, checked on the authors' Aurp files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundwatch.adapters.db.datasets import import_grammar_dir
from groundwatch.core.generation import default_verbalizers, offline_text_templates
from groundwatch.core.generation.grammar_format import (
    dump_sql_templates,
    dump_text_templates,
    import_qa_data,
    parse_entity_key,
    schema_from_sql,
    sql_templates_in_order,
)
from groundwatch.core.generation.validation import validate_sql

pytestmark = pytest.mark.unit
AURP = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "grammar-aurp"


@pytest.fixture(scope="module")
def aurp() -> Path:
    if not (AURP / "QADataGenerator_short_with_ids.json").exists():
        pytest.skip(f"GRAMMAR Aurp data not found at {AURP}")
    return AURP


def test_importer_reproduces_157_groups_per_cohort_with_their_answers(aurp: Path) -> None:
    groups = import_grammar_dir(aurp, ("short", "long"))
    assert len(groups) == 157
    assert all(len(g.forms_in("short")) == 3 and len(g.forms_in("long")) == 3 for g in groups)
    # every answer agrees with the SQL truth the authors recorded in their evaluation results
    by_query: dict[str, str] = {}
    for cohort in ("short", "long"):
        for row in json.loads((aurp / f"eval_results_results_{cohort}_balanced.json").read_text()):
            by_query[row["query"]] = str(row["answer"])
    checked = 0
    for g in groups:
        for f in g.forms:
            if f.text in by_query:
                assert g.answer.text == by_query[f.text], (f.text, g.answer)
                checked += 1
    assert checked == 2 * 471
    # the eval files' semantic-group tags line up one to one with our group ids
    tags: dict[int, set[str]] = {}
    gid_of = {f.text: g.group_id for g in groups for f in g.forms}
    for row in json.loads((aurp / "eval_results_results_short_balanced.json").read_text()):
        tags.setdefault(row["query_tag"], set()).add(gid_of[row["query"]])
    assert len(tags) == 157 and all(len(v) == 1 for v in tags.values())
    dates = [g for g in groups if "StartDate" in g.sql]
    assert dates and all(g.answer.types == ["date"] for g in dates)
    assert all(":" in g.sql and "[" not in g.sql for g in groups)


def test_cohort_files_import_separately(aurp: Path) -> None:
    sqls = sql_templates_in_order(
        json.loads((aurp / "SQLTemplateGenerator_sql_templates.json").read_text())
    )
    assert len(sqls) == 10
    qa = json.loads((aurp / "QADataGenerator_long_with_ids.json").read_text())
    texts = json.loads((aurp / "TextTemplateGenerator_long.json").read_text())
    groups, skipped = import_qa_data(sqls, qa, "long", text_templates=texts)
    assert len(groups) == 157 and skipped == {"several_answers": 0, "unmatched": 0}
    # without text templates, lists are matched by file order, which the tool also uses
    by_order, _ = import_qa_data(sqls, qa, "long")
    assert [g.group_id for g in by_order] == [g.group_id for g in groups]


def test_export_round_trips_through_the_paper_format(aurp: Path) -> None:
    raw = json.loads((aurp / "SQLTemplateGenerator_sql_templates.json").read_text())
    assert parse_entity_key("('project', )") == ("project",)
    sqls = sql_templates_in_order(raw)
    schema = schema_from_sql(sqls)
    templates = [validate_sql(s, schema, origin="import", allow_surrogates=True) for s in sqls]
    dumped = dump_sql_templates(templates)
    assert sql_templates_in_order(dumped) == sqls
    assert set(dumped) == {"('client',)", "('employee',)", "('project',)"}
    texts = offline_text_templates(templates, default_verbalizers(), ["short"])
    tt = dump_text_templates(templates, texts, "short")
    assert set(tt) == set(sqls)
    assert (
        "Supervisor or manager of '[Employee.Name]'"
        in tt["SELECT SupervisorOrManager FROM Employee WHERE Name = '[Employee.Name]';"]
    )
