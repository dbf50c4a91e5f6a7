"""Import/export in the GRAMMAR tool's formats, checked on the authors' Aurp files."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path

import pytest

from groundwatch.adapters.db.datasets import import_grammar_dir, read_grammar_dir
from groundwatch.core.generation import default_verbalizers, offline_text_templates
from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.grammar_format import (
    dump_sql_templates,
    dump_text_templates,
    import_qa_data,
    parse_entity_key,
    schema_from_sql,
    split_id_columns,
    sql_templates_in_order,
)
from groundwatch.core.generation.sql_checks import validate_sql
from groundwatch.errors import ConfigError

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


# --- the authors' repository layout ------------------------------------------------------------


def _with_ids(sql: str, extra: str) -> str:
    head, _, rest = sql.partition(" FROM ")
    return f"{head}, {extra} FROM {rest}"


def _repo_layout(aurp: Path, root: Path, *, plain_sql: bool = True) -> Path:
    """The Aurp files as the authors' repository holds them: one folder per generator, plus the
    ``_with_ids`` SQL templates (each projects its condition column after the answer)."""
    raw = json.loads((aurp / "SQLTemplateGenerator_sql_templates.json").read_text())
    with_ids = {k: [_with_ids(s, "Name") for s in v] for k, v in raw.items()}
    for folder in ("SQLTemplateGenerator", "TextTemplateGenerator", "QADataGenerator"):
        (root / folder).mkdir(parents=True)
    if plain_sql:
        (root / "SQLTemplateGenerator" / "sql_templates.json").write_text(json.dumps(raw))
    (root / "SQLTemplateGenerator" / "sql_templates_with_ids.json").write_text(json.dumps(with_ids))
    for c in ("short", "long"):
        (root / "TextTemplateGenerator" / f"{c}.json").write_bytes(
            (aurp / f"TextTemplateGenerator_{c}.json").read_bytes()
        )
        (root / "QADataGenerator" / f"{c}_with_ids.json").write_bytes(
            (aurp / f"QADataGenerator_{c}_with_ids.json").read_bytes()
        )
    return root


def test_repository_layout_reproduces_the_flat_import(aurp: Path, tmp_path: Path) -> None:
    flat = import_grammar_dir(aurp, ("short", "long"))
    repo = read_grammar_dir(_repo_layout(aurp, tmp_path / "aurp"), ("short", "long"))
    assert repo.skipped == {"several_answers": 0, "unmatched": 0}
    assert [g.model_dump() for g in repo.groups] == [g.model_dump() for g in flat]
    # only the _with_ids SQL file (it projects the condition column: once a rejection)
    ids_only = read_grammar_dir(
        _repo_layout(aurp, tmp_path / "ids", plain_sql=False), ("short", "long")
    )
    assert [g.group_id for g in ids_only.groups] == [g.group_id for g in flat]
    assert split_id_columns("SELECT Industry, Name FROM Client WHERE Name = '[Client.Name]';") == (
        "SELECT Industry FROM Client WHERE Name = '[Client.Name]';",
        [("Client", "Name")],
    )


def test_repository_root_and_missing_files_fail_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "benchmarks" / "spider" / "SQLTemplateGenerator").mkdir(parents=True)
    with pytest.raises(ConfigError, match="pass one of them"):
        read_grammar_dir(tmp_path / "benchmarks", ("short",))
    with pytest.raises(ConfigError, match="no such directory"):
        read_grammar_dir(tmp_path / "nope", ("short",))


SPIDER_SQL = {
    "('company',)": [
        "SELECT Industry FROM company WHERE Name = '[company.Name]';",
        "SELECT Headquarters FROM company WHERE Name = '[company.Name]';",
    ],
    "('people',)": ["SELECT Nationality FROM people WHERE Name = '[people.Name]';"],
    "('company', 'people')": [
        "SELECT e.Year_working FROM employment e JOIN company c ON e.Company_ID = c.Company_ID "
        "JOIN people p ON e.People_ID = p.People_ID WHERE c.Name = '[company.Name]' AND "
        "p.Name = '[people.Name]';"
    ],
}
SPIDER_IDS = {
    "('company',)": [
        "SELECT Industry, Company_ID FROM company WHERE Name = '[company.Name]';",
        "SELECT Headquarters, Company_ID FROM company WHERE Name = '[company.Name]';",
    ],
    "('people',)": ["SELECT Nationality, People_ID FROM people WHERE Name = '[people.Name]';"],
    "('company', 'people')": [
        "SELECT e.Year_working, e.Company_ID, e.People_ID FROM employment e JOIN company c ON "
        "e.Company_ID = c.Company_ID JOIN people p ON e.People_ID = p.People_ID WHERE c.Name = "
        "'[company.Name]' AND p.Name = '[people.Name]';"
    ],
}
SPIDER_TEXTS = {
    SPIDER_SQL["('company',)"][0]: ["Industry of '[company.Name]'.", "'[company.Name]' sector"],
    SPIDER_SQL["('company',)"][1]: ["Where is '[company.Name]' based?", "HQ of '[company.Name]'"],
    SPIDER_SQL["('people',)"][0]: ["Nationality of '[people.Name]'", "'[people.Name]' country"],
    SPIDER_SQL["('company', 'people')"][0]: [
        "Years '[people.Name]' worked at '[company.Name]'",
        "How long was '[people.Name]' at '[company.Name]'?",
    ],
}


def _spider_like(tmp_path: Path) -> tuple[Path, str]:
    """A benchmark folder in the authors' spider layout, written from our company_employee
    database the way their tool writes it: QA rows are the ``_with_ids`` query's rows (answer and
    record ids), text queries include paraphrases that are in no text-template file."""
    from .gen_schemas import build

    url = build("company_employee", tmp_path)
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    root = tmp_path / "spider"
    for folder in ("SQLTemplateGenerator", "TextTemplateGenerator", "QADataGenerator"):
        (root / folder).mkdir(parents=True)
    (root / "SQLTemplateGenerator" / "sql_templates.json").write_text(json.dumps(SPIDER_SQL))
    (root / "SQLTemplateGenerator" / "sql_templates_with_ids.json").write_text(
        json.dumps(SPIDER_IDS)
    )
    (root / "TextTemplateGenerator" / "short.json").write_text(json.dumps(SPIDER_TEXTS))
    qa_ids, qa_plain = [], []
    for sql, ids in zip(
        sql_templates_in_order(SPIDER_SQL), sql_templates_in_order(SPIDER_IDS), strict=True
    ):
        tokens = re.findall(r"'\[(\w+)\.(\w+)\]'", sql)
        names = [[r[0] for r in con.execute(f"SELECT DISTINCT {c} FROM {t}")] for t, c in tokens]
        with_ids: list[list[object]] = []
        plain: list[list[object]] = []
        for combo in itertools.product(*names):
            bound = ids
            for (t, c), v in zip(tokens, combo, strict=True):
                bound = bound.replace(f"'[{t}.{c}]'", "'" + v.replace("'", "''") + "'")
            rows = [
                tuple(float(x) if isinstance(x, int) else x for x in r) for r in con.execute(bound)
            ]
            if not rows:
                continue
            texts = []
            for tt in SPIDER_TEXTS[sql]:
                for (t, c), v in zip(tokens, combo, strict=True):
                    tt = tt.replace(f"[{t}.{c}]", v)
                texts.append(tt)
            texts.append(f"paraphrase nobody templated #{len(with_ids)}")
            with_ids.append([repr(rows), texts])
            plain.append([repr([r[:1] for r in rows]), texts])
        qa_ids.append(with_ids)
        qa_plain.append(plain)
    qa_ids.append([["[('stray', 1.0)]", ["a text of no template"]]])
    (root / "QADataGenerator" / "short_with_ids.json").write_text(json.dumps(qa_ids))
    (root / "QADataGenerator" / "long.json").write_text(json.dumps(qa_plain))
    (root / "TextTemplateGenerator" / "long.json").write_text(json.dumps(SPIDER_TEXTS))
    con.close()
    return root, url


def test_spider_shaped_repository_reproduces_its_groups(tmp_path: Path) -> None:
    root, url = _spider_like(tmp_path)
    res = read_grammar_dir(root, ("short", "long"))
    # the stray list is reported, not fatal
    assert res.skipped["unmatched"] == 1 and res.examples["unmatched"]
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    n_entries = sum(
        len(x) for x in json.loads((root / "QADataGenerator" / "long.json").read_text())
    )
    assert len(res.groups) == n_entries
    years = [g for g in res.groups if "Year_working" in g.sql]
    assert len(years) == 8 and all(len(g.params) == 2 for g in years)
    for g in res.groups:
        assert len(g.forms_in("short")) == 3 and len(g.forms_in("long")) == 3
        rows = con.execute(g.sql, g.params).fetchall()
        assert [format_value(v) for v in rows[0]] == g.answer.values, (g.sql, g.params)
    con.close()
