"""Generation on schemas unlike the demo's: link tables, child rows, aggregates, steering, the
template file round trip, and how the offline realizer reads (issue 19)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from groundwatch.adapters.db.datasets import read_jsonl
from groundwatch.adapters.sources import generate_groups
from groundwatch.cli.gen import register
from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.pipeline import GenerationResult
from groundwatch.core.generation.steering import Steering
from groundwatch.core.model import SemanticGroup
from groundwatch.demo import demo_generation

from . import gen_schemas

pytestmark = pytest.mark.unit
K = 3


@pytest.fixture(scope="module")
def urls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("schemas")
    return {name: gen_schemas.build(name, d) for name in gen_schemas.SCHEMAS}


@pytest.fixture(scope="module")
def results(urls: dict[str, str]) -> dict[str, GenerationResult]:
    return {name: generate_groups(url, k=K) for name, url in urls.items()}


def _rows(url: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return [tuple(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def test_link_table_templates_join_through_it_with_answers_from_the_db(
    urls: dict[str, str], results: dict[str, GenerationResult]
) -> None:
    res = results["company_employee"]
    links = [t for t in res.templates if "employment" in t.tables]
    own = [t for t in links if any(s.column == "Year_working" for s in t.selected)]
    assert own, [t.sql for t in res.templates]
    (years,) = own
    assert len(years.slots) == 2 and {s.table for s in years.slots} == {"company", "people"}
    assert " JOIN company" in years.sql and " JOIN people" in years.sql
    # the other shapes through the link: each end from the other, counts over it
    assert any(t.kind == "link" and len(t.slots) == 1 for t in links)
    assert any(t.kind == "aggregate" and "COUNT(DISTINCT" in t.sql for t in links)
    by_template = {t.template_id: t for t in res.templates}
    year_groups = [g for g in res.groups if g.template_id == years.template_id]
    assert len(year_groups) == 8  # every employment row: (company, person) is its primary key
    g = next(x for x in year_groups if x.params["person_name"] == "Ines Carvalho")
    assert g.answer.values == ["9"] and g.answer.types == ["number"]
    assert any("'Cobalt Motors'" in f.text and "'Ines Carvalho'" in f.text for f in g.forms)
    # every answer of every template is what its SQL returns for the group's values
    for g in res.groups:
        t = by_template[str(g.template_id)]
        rows = {
            tuple(format_value(v) for v in r)
            for r in _rows(urls["company_employee"], g.sql, g.params)
        }
        if len(g.answer.values) == len(t.selected):
            assert rows == {tuple(g.answer.values)}, (g.sql, g.params)


def test_every_answer_of_every_test_schema_is_the_databases(
    urls: dict[str, str], results: dict[str, GenerationResult]
) -> None:
    for name, res in results.items():
        assert res.groups, name
        for g in res.groups:
            rows = {tuple(format_value(v) for v in r) for r in _rows(urls[name], g.sql, g.params)}
            assert rows == {tuple(g.answer.values)}, (name, g.sql, g.params, rows)


def test_tables_without_a_naming_column_are_reached_and_aggregated(
    results: dict[str, GenerationResult],
) -> None:
    shop = results["shop"]
    tables = {t for tpl in shop.templates for t in tpl.tables}
    assert {"invoices", "readings", "orders", "order_items"} <= tables
    sqls = [t.sql for t in shop.templates]
    # composite key (sensor, day): the reading of a named sensor on a day
    assert any("readings.celsius" in s and "taken_on = :taken_on" in s for s in sqls)
    assert any(s.startswith("SELECT COUNT(*) FROM invoices") for s in sqls)
    assert any(s.startswith("SELECT MAX(orders.order_date)") for s in sqls)
    # count of orders per customer, checked by hand
    t = next(x for x in shop.templates if x.sql.startswith("SELECT COUNT(*) FROM orders"))
    g = next(
        x
        for x in shop.groups
        if x.template_id == t.template_id and x.params["customer_name"] == "Birch Outfitters"
    )
    assert g.answer.values == ["2"]
    music = results["music"]
    assert any(t.kind == "chain" for t in music.templates)


def test_several_answers_become_list_answers_only_when_asked(urls: dict[str, str]) -> None:
    plain = generate_groups(urls["shop"], k=K)
    listed = generate_groups(urls["shop"], k=K, list_answers=True)
    assert plain.summary.dropped_fills["several_answers"] > 0
    assert listed.summary.list_answers > 0
    lists = [g for g in listed.groups if len(g.answer.values) > 1 and g.sql.count(":") == 1]
    assert lists
    for g in lists:
        rows = sorted(format_value(r[0]) for r in _rows(urls["shop"], g.sql, g.params))
        assert sorted(g.answer.values) == rows and len(set(g.answer.types)) == 1


def test_dropped_fills_are_reported_with_examples(results: dict[str, GenerationResult]) -> None:
    s = results["shop"].summary.as_dict()
    for reason, n in s["dropped_fills"].items():
        examples = s["dropped_examples"][reason]
        assert n > 0 and 1 <= len(examples) <= 5, reason
        assert all("sql" in e for e in examples)


def _projected_and_filtered(sql: str) -> set[str]:
    return {m.lower() for m in re.findall(r'"?(\w+)"?\s*(?:=|\)|,| FROM)', sql)}


def test_excluded_columns_are_never_projected_or_filtered(urls: dict[str, str]) -> None:
    res = generate_groups(
        urls["company_employee"], k=K, steering=Steering(exclude_columns=("people.*Name",))
    )
    assert res.templates
    for t in res.templates:
        used = [(s.table, s.column) for s in t.selected] + [(s.table, s.column) for s in t.slots]
        assert ("people", "Name") not in used, t.sql
        assert 'people."Name"' not in t.sql and "Graduation_College" not in t.sql
    # people lost its naming column; employment is still counted from the company side
    assert any(t.kind == "aggregate" and "employment" in t.tables for t in res.templates)


def test_pii_preset_excludes_personal_columns_by_name_and_value(urls: dict[str, str]) -> None:
    res = generate_groups(urls["shop"], k=K, steering=Steering(pii=True))
    used = {(s.table, s.column) for t in res.templates for s in t.selected} | {
        (s.table, s.column) for t in res.templates for s in t.slots
    }
    for col in ("email", "phone", "birth_date", "street"):
        assert ("customers", col) not in used
    # "contact" holds e-mail addresses under an innocent name: caught by its values
    assert ("customers", "contact") not in used
    assert ("customers", "city") in used and ("customers", "name") in used
    for g in res.groups:
        assert "@" not in g.answer.text and "+44" not in g.answer.text


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command()
    def noop() -> None:  # a second command keeps "gen" a subcommand
        pass

    return app


def test_template_file_round_trip_with_edits_and_rejections(
    cli: typer.Typer, urls: dict[str, str], tmp_path: Path
) -> None:
    url = urls["company_employee"]
    path = tmp_path / "templates.yaml"
    res = CliRunner().invoke(cli, ["gen", "templates", "--db", url, "--out", str(path)])
    assert res.exit_code == 0, res.output
    data = yaml.safe_load(path.read_text())
    entries = data["templates"]
    assert entries and all("sql" in e and "text" in e for e in entries)
    # unchanged file → the same groups as generating directly
    direct = generate_groups(url, k=K)
    out0 = tmp_path / "same.jsonl"
    res = CliRunner().invoke(
        cli, ["gen", "--db", url, "--templates", str(path), "--out", str(out0)]
    )
    assert res.exit_code == 0, res.output
    assert {g.group_id for g in read_jsonl(out0)} == {g.group_id for g in direct.groups}
    # edit: delete one template, add a hand-written one and two invalid ones
    deleted = entries.pop(0)
    entries.append(
        {
            "sql": "SELECT Nationality FROM people WHERE Graduation_College = '[people.Graduation_College]'",
            "text": {
                "short": [
                    "nationality, college '[people.Graduation_College]'",
                    "x '[people.Graduation_College]'",
                    "y '[people.Graduation_College]'",
                ]
            },
        }
    )
    entries.append({"sql": "DELETE FROM people WHERE Name = :name"})
    entries.append({"sql": "SELECT Age FROM people WHERE Nickname = :nick"})
    several = (
        "SELECT p.Name FROM employment AS e JOIN company AS c ON e.Company_ID = c.Company_ID "
        "JOIN people AS p ON e.People_ID = p.People_ID WHERE c.Name = '[company.Name]'"
    )
    entries.append({"sql": several})
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "edited.jsonl"
    res = CliRunner().invoke(
        cli, ["gen", "--db", url, "--templates", str(path), "--out", str(out), "--json"]
    )
    assert res.exit_code == 0, res.output
    groups = read_jsonl(out)
    sqls = {g.sql for g in groups}
    assert deleted["sql"] not in sqls
    hand = [g for g in groups if "Graduation_College = :graduation_college" in g.sql]
    assert hand and all(len(g.forms_in("short")) == K for g in hand)
    assert "not_a_select" in res.output and "unknown_column" in res.output
    # hand-written templates promise one answer: two people work at Cobalt Motors
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["rejected_templates"]["several_answers"] == 1
    (example,) = summary["rejected_examples"]["several_answers"]
    assert "FROM employment AS e JOIN company AS c" in example["sql"]
    assert not any(g.sql.startswith('SELECT p."Name"') for g in groups)


def test_cli_steering_and_json_summary(
    cli: typer.Typer, urls: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "o.jsonl"
    res = CliRunner().invoke(
        cli,
        [
            "gen",
            "--db",
            urls["shop"],
            "--pii",
            "--exclude-tables",
            "sensors,readings",
            "--key-ratio",
            "0.8",
            "--allow-list-answers",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    groups = read_jsonl(out)
    assert groups and not any("readings" in g.sql or "sensors" in g.sql for g in groups)
    assert not any("email" in g.sql or "birth_date" in g.sql for g in groups)
    assert "dropped fill [" in res.output


# --- how the offline realizer reads -----------------------------------------------------------

BROKEN = [
    (r"\bwhat the \w+ed of\b", "a bare participle asked for ('what the released of')"),
    (r"\bthe \w+ed of the\b", "a bare participle as a noun"),
    (r"\b(\w+) \1\b", "a doubled word"),
    (
        r"\bthe (?:\w+ )?(?:listing|link|mapping|employment)s? (?:named|titled)\b",
        "a link row named",
    ),
    (r"\bthe \w+ (?:on|at|in) of\b", "a date column read as 'issued on of'"),
    (r"\bpeoples\b|\bpersons\b", "a wrong plural"),
    (r"\b\w+s and are linked\b", "a dangling clause ('the companies and are linked')"),
    (r",,|, ,|\s[,.?]", "stray punctuation"),
    (r"management|colleagues|company information|review meeting", "corporate boilerplate"),
]


@pytest.fixture(scope="module")
def every_schema(
    results: dict[str, GenerationResult], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[SemanticGroup]]:
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    _, demo = demo_generation(K, ("short", "long"), url=f"sqlite:///{db}")
    out = {name: r.groups for name, r in results.items()}
    out["demo"] = demo.groups
    return out


def test_no_form_reads_like_the_known_broken_phrasings(
    every_schema: dict[str, list[SemanticGroup]],
) -> None:
    for name, groups in every_schema.items():
        for g in groups:
            for f in g.forms:
                text = re.sub(r"'[^']*'", "'X'", f.text)  # values are data, not our wording
                for pattern, why in BROKEN:
                    assert not re.search(pattern, text, re.IGNORECASE), (name, why, f.text)


def test_no_answer_inside_its_own_question(every_schema: dict[str, list[SemanticGroup]]) -> None:
    for name, groups in every_schema.items():
        assert groups
        for g in groups:
            shown = [str(v).casefold() for v in g.params.values()]
            for v in g.answer.values:
                low = v.casefold()
                for s in shown:
                    assert not re.search(rf"(?<!\w){re.escape(low)}(?!\w)", s), (name, g.sql, v)
                if len(low) >= 4:
                    for f in g.forms:
                        assert low not in f.text.casefold(), (name, f.text, v)


def test_long_forms_use_the_schemas_own_words(results: dict[str, GenerationResult]) -> None:
    music = results["music"]
    longs = [f.text for g in music.groups for f in g.forms_in("long")]
    assert longs and all(len(re.sub(r"'[^']*'", "X", t).split()) >= 30 for t in longs)
    joined = " ".join(longs).lower()
    assert "albums" in joined and "tracks" in joined
    for word in ("project", "client", "employee", "company"):
        assert word not in joined


def test_generator_service_settings_steer_generation(urls: dict[str, str]) -> None:
    from groundwatch.app.datasets import service_dataset
    from services.generator.settings import GeneratorSettings

    settings = GeneratorSettings(
        dataset="source",
        source_url=urls["shop"],
        pii=True,
        exclude_tables=["sensors"],
        exclude_columns=["products.price"],
        key_ratio=0.8,
        allow_list_answers=True,
    )
    groups, source = service_dataset(settings)
    assert groups and source == urls["shop"]
    for g in groups:
        assert not re.search(r"email|phone|birth_date|street|contact|sensors|price", g.sql), g.sql
    assert any(len(g.answer.values) > 1 for g in groups)  # list answers kept


def test_latest_date_of_child_rows_names_the_child_not_the_parent(tmp_path: Path) -> None:
    """MAX(pets.birth_date) per owner is the latest *pet* birth date, not the owner's own."""
    db = tmp_path / "vet.db"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE owners(owner_id INTEGER PRIMARY KEY, owner_name TEXT, city TEXT);"
        "CREATE TABLE pets(pet_id INTEGER PRIMARY KEY, pet_name TEXT, birth_date DATE,"
        " owner_id INTEGER REFERENCES owners(owner_id));"
    )
    con.executemany(
        "INSERT INTO owners VALUES (?, ?, ?)",
        [(i, f"Owner {c}", f"City {c}") for i, c in enumerate("ABCDEF", 1)],
    )
    con.executemany(
        "INSERT INTO pets VALUES (?, ?, ?, ?)",
        [(i, f"Pet {i}", f"201{i % 10}-0{i % 9 + 1}-1{i % 9}", i % 6 + 1) for i in range(1, 19)],
    )
    con.commit()
    con.close()
    res = generate_groups(f"sqlite:///{db}", k=K)
    (t,) = [x for x in res.templates if x.sql.startswith("SELECT MAX(pets.birth_date)")]
    assert t.answer_label == "latest pet birth date"


def test_no_aggregate_over_a_name_two_rows_share(tmp_path: Path) -> None:
    """Two owners named 'Owner 1': COUNT(*) of pets by owner name would pool both into one
    answer that is neither's, so that name's fills are dropped (``shared_name``) — and only
    they: the other owners' counts keep the template (issue 32: it used to be dropped whole)."""

    def build(name: str, dup: bool) -> GenerationResult:
        db = tmp_path / name
        con = sqlite3.connect(db)
        con.executescript(
            "CREATE TABLE owners(owner_id INTEGER PRIMARY KEY, owner_name TEXT, city TEXT);"
            "CREATE TABLE pets(pet_id INTEGER PRIMARY KEY, pet_name TEXT, birth_date DATE,"
            " owner_id INTEGER REFERENCES owners(owner_id));"
        )
        owners = [(i, f"Owner {i}", f"City {i % 5}") for i in range(1, 21)]
        if dup:
            owners.append((21, "Owner 1", "City 9"))
        con.executemany("INSERT INTO owners VALUES (?, ?, ?)", owners)
        con.executemany(
            "INSERT INTO pets VALUES (?, ?, ?, ?)",
            [(i, f"Pet {i}", f"2015-01-{i:02d}", i % len(owners) + 1) for i in range(1, 29)],
        )
        con.commit()
        con.close()
        return generate_groups(f"sqlite:///{db}", k=K)

    def by_owner(res: GenerationResult) -> list[str]:
        return [t.sql for t in res.templates if t.kind == "aggregate" and ":owner_" in t.sql]

    assert by_owner(build("distinct.db", dup=False))
    shared = build("shared.db", dup=True)
    assert by_owner(shared)
    assert shared.summary.dropped_fills["shared_name"] >= 1
    by_name = [
        g
        for g in shared.groups
        if g.template_id
        in {t.template_id for t in shared.templates if t.kind == "aggregate" and ":owner_" in t.sql}
    ]
    assert by_name and all(g.params["owner_owner_name"] != "Owner 1" for g in by_name)
    for g in by_name:
        if g.sql.startswith("SELECT COUNT(*)"):
            rows = _rows(f"sqlite:///{tmp_path / 'shared.db'}", g.sql, g.params)
            assert [format_value(r[0]) for r in rows] == g.answer.values
