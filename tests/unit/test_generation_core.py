"""GRAMMAR-Gen core: naming, validation, rule templates, grouped queries, realizer, balancing."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from groundwatch.core.generation import (
    ColumnInfo,
    ForeignKeyInfo,
    RuleConfig,
    SchemaInfo,
    TableInfo,
    build_groups,
    default_verbalizers,
    offline_text_templates,
    realize,
    rule_templates,
    validate_sql,
    verbalizers_from_config,
)
from groundwatch.core.generation.grouped import group_rows, plan
from groundwatch.core.generation.naming import (
    attribute_label,
    entity_noun,
    humanize,
    is_name_like,
    is_surrogate_name,
    param_name,
    role_of_fk,
)
from groundwatch.core.generation.pipeline import balance
from groundwatch.core.generation.realize import word_count
from groundwatch.core.generation.sql_checks import rejection_code
from groundwatch.core.model import AnswerType
from groundwatch.errors import ConfigError, UnsafeSQL

pytestmark = pytest.mark.unit
T, N, D = AnswerType.TEXT, AnswerType.NUMBER, AnswerType.DATE


def test_humanized_names_read_like_words() -> None:
    assert humanize("SupervisorOrManager") == "supervisor or manager"
    assert humanize("start_date") == "start date"
    assert humanize("JobTitle") == "job title"
    assert humanize("CEOName") == "CEO name"
    assert entity_noun("project_reports") == "project report"
    assert entity_noun("companies") == "company"
    assert role_of_fk("director_id") == "director"
    assert role_of_fk("AccountManagerID") == "account manager"
    assert is_surrogate_name("client_id") and is_surrogate_name("id") and is_surrogate_name("uuid")
    assert not is_surrogate_name("name") and not is_surrogate_name("idea")
    assert is_name_like("Name") and is_name_like("project_title") and not is_name_like("job_title")
    taken: set[str] = set()
    assert [param_name("Name", taken), param_name("name", taken), param_name("Ünit", taken)] == [
        "name",
        "name_2",
        "unit",
    ]


def _schema() -> SchemaInfo:
    client = TableInfo(
        "Client",
        (
            ColumnInfo("ClientId", N, primary_key=True, distinct=4, non_null=4, unique=True),
            ColumnInfo("Name", T, distinct=4, non_null=4, unique=True),
            ColumnInfo("Location", T, distinct=3, non_null=4),
            ColumnInfo("Industry", T, distinct=2, non_null=4),
        ),
        primary_key=("ClientId",),
        rows=4,
        fd_violations={
            ("Name", "Location"): 0,
            ("Name", "Industry"): 0,
            ("Industry", "Name"): 2,
            ("Location", "Name"): 1,
        },
        pair_profile={("Location", "Industry"): (4, 4)},
    )
    project = TableInfo(
        "Project",
        (
            ColumnInfo("ProjectId", N, primary_key=True, distinct=3, non_null=3, unique=True),
            ColumnInfo("Name", T, distinct=3, non_null=3, unique=True),
            ColumnInfo("StartDate", D, distinct=3, non_null=3),
            ColumnInfo("client_id", N, distinct=2, non_null=3),
        ),
        primary_key=("ProjectId",),
        foreign_keys=(ForeignKeyInfo("client_id", "Client", "ClientId"),),
        rows=3,
        fd_violations={("Name", "StartDate"): 0},
    )
    return SchemaInfo((client, project), dialect="sqlite")


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("DELETE FROM Client", "not_a_select"),
        ("DROP TABLE Client", "not_a_select"),
        (
            "SELECT Location FROM Client WHERE Name = :n; DROP TABLE Client",
            "not_exactly_one_statement",
        ),
        (
            "SELECT Location FROM Client WHERE Name = :n; DELETE FROM Client",
            "not_exactly_one_statement",
        ),
        ("ATTACH DATABASE '/tmp/x.db' AS x", "not_a_select"),
        ("PRAGMA writable_schema = ON", "not_a_select"),
        ("INSERT INTO Client (Name) VALUES ('x')", "not_a_select"),
        ("UPDATE Client SET Name = 'x' WHERE Name = :n", "not_a_select"),
        ("SELECT * FROM Client WHERE Name = :n", "select_star"),
        ("SELECT Location FROM Client WHERE Name = :n FOR UPDATE", "forbidden_construct"),
        ("SELECT load_extension(Location) FROM Client WHERE Name = :n", "forbidden_construct"),
        (
            "SELECT Location FROM Client WHERE Name = (SELECT Name FROM Client WHERE Name = :n)",
            "forbidden_construct",
        ),
        (
            "WITH c AS (SELECT Name FROM Client) SELECT Name FROM c WHERE Name = :n",
            "forbidden_construct",
        ),
        ("SELECT Location INTO Other FROM Client WHERE Name = :n", "forbidden_construct"),
        ("SELECT Secret FROM Client WHERE Name = :n", "unknown_column"),
        ("SELECT Location FROM Supplier WHERE Name = :n", "unknown_table"),
        ("SELECT Location FROM other.Client WHERE Name = :n", "unknown_table"),
        ("SELECT Location FROM Client WHERE Name = ?", "placeholder_not_column_equality"),
        ("SELECT Location FROM Client WHERE Name = :n OR 1 = 1", "placeholder_not_column_equality"),
        ("SELECT Location FROM Client WHERE Name LIKE :n", "placeholder_not_column_equality"),
        ("SELECT Location FROM Client", "no_placeholder"),
        ("SELECT Name FROM Client WHERE Name = :n", "selects_condition_column"),
        ("SELECT ClientId FROM Client WHERE Name = :n", "surrogate_column"),
        ("SELECT Name FROM Project WHERE client_id = :c", "surrogate_column"),
        ("SELEC Location FROM", "parse_error"),
    ],
)
def test_unsafe_or_invalid_templates_are_rejected_with_a_reason(sql: str, code: str) -> None:
    with pytest.raises(UnsafeSQL) as info:
        validate_sql(sql, _schema())
    assert rejection_code(info.value) == code


def test_paper_template_becomes_named_parameters_and_back() -> None:
    t = validate_sql("SELECT Location FROM Client WHERE Name = '[Client.Name]';", _schema())
    assert t.sql == "SELECT Location FROM Client WHERE Name = :name"
    assert t.params == ("name",)
    assert t.slots[0].grammar_token() == "[Client.Name]"
    assert t.grammar_sql() == "SELECT Location FROM Client WHERE Name = '[Client.Name]';"
    assert t.answer_label == "location" and t.entity == "client"
    join = validate_sql(
        "SELECT c.Industry FROM Project AS p JOIN Client AS c ON p.client_id = c.ClientId "
        "WHERE p.Name = '[Project.Name]'",
        _schema(),
    )
    assert join.kind == "join" and join.tables == ("Project", "Client")


def test_rule_templates_follow_functional_dependencies_and_skip_ids() -> None:
    templates = rule_templates(_schema(), RuleConfig(reverse_joins=True))
    sqls = {t.sql for t in templates}
    # mixed-case names are quoted (PostgreSQL folds unquoted names to lower case)
    assert 'SELECT "Location" FROM "Client" WHERE "Name" = :name' in sqls
    assert 'SELECT "StartDate" FROM "Project" WHERE "Name" = :name' in sqls
    # two conditions that together single out a client, asking for its name
    assert (
        'SELECT "Name" FROM "Client" WHERE "Location" = :location AND "Industry" = :industry'
        in sqls
    )
    # one-hop join along the foreign key, the joined table aliased by the key's role
    assert (
        'SELECT client."Name" FROM "Project" JOIN "Client" AS client ON "Project".client_id = '
        'client."ClientId" WHERE "Project"."Name" = :name'
    ) in sqls
    for t in templates:
        for column in [r.column for r in t.selected] + [s.column for s in t.slots]:
            assert not is_surrogate_name(column) and column not in ("ClientId", "ProjectId")
    # Industry does not determine Name: no "name of the client in industry X" template
    assert not any('WHERE "Industry" = :industry' in s and "AND" not in s for s in sqls)


def test_grouped_query_and_row_grouping() -> None:
    schema = _schema()
    t = validate_sql("SELECT Name FROM Client WHERE Location = :location", schema)
    p = plan(t, schema)
    assert p.sql == (
        "SELECT gw_p0, MIN(gw_a0) AS gw_a0, COUNT(*) AS gw_n FROM (SELECT DISTINCT Location AS "
        "gw_p0, Name AS gw_a0 FROM Client WHERE NOT Location IS NULL) AS gw_d GROUP BY gw_p0 "
        "ORDER BY gw_p0"
    )
    fills = list(group_rows([("a", "x", 1), ("b", "y", 2), ("c", None, 1)], p))
    assert [(f.params, f.answer, f.n_answers) for f in fills] == [
        ({"location": "a"}, ("x",), 1),
        ({"location": "b"}, ("y",), 2),
        ({"location": "c"}, (None,), 1),
    ]
    # a declared-unique condition matches one row per fill: a plain scan, no grouping
    unique = plan(validate_sql("SELECT Location FROM Client WHERE Name = :name", schema), schema)
    assert unique.sql == (
        "SELECT Name AS gw_p0, Location AS gw_a0, 1 AS gw_n FROM Client WHERE NOT Name IS NULL"
    )
    join = plan(
        validate_sql(
            "SELECT c.Industry FROM Project AS p JOIN Client AS c ON p.client_id = c.ClientId "
            "WHERE p.Name = :name",
            schema,
        ),
        schema,
    )
    assert join.sql is not None and "GROUP BY" not in join.sql


@pytest.mark.parametrize(
    "cohort", ["short", "long", "interrogative", "directives", "formal", "casual"]
)
def test_six_verbalizers_give_enough_distinct_templates_with_exact_placeholders(
    cohort: str,
) -> None:
    schema = _schema()
    vs = default_verbalizers()
    for t in rule_templates(schema):
        texts = realize(t, vs[cohort])
        assert len(texts) >= 3 and len(set(texts)) == len(texts)
        for text in texts:
            assert {s.grammar_token() for s in t.slots} == {
                tok for tok in (s.grammar_token() for s in t.slots) if tok in text
            }
            assert "_" not in text.replace("[Client.", "").replace("[Project.", "") or "[" in text
            if cohort == "long":
                assert word_count(text) >= 30
            if cohort == "short":
                assert word_count(text) <= 12


def test_short_forms_are_fragments_and_names_are_humanized() -> None:
    t = validate_sql(
        "SELECT SupervisorOrManager FROM Employee WHERE Name = '[Employee.Name]'",
        SchemaInfo(
            (
                TableInfo(
                    "Employee",
                    (
                        ColumnInfo("Name", T, distinct=3, non_null=3, unique=True),
                        ColumnInfo("SupervisorOrManager", T, distinct=2, non_null=3),
                    ),
                    rows=3,
                ),
            )
        ),
    )
    texts = realize(t, default_verbalizers()["short"])
    assert "Supervisor or manager of '[Employee.Name]'" in texts


def test_verbalizers_extend_by_configuration() -> None:
    vs = verbalizers_from_config(
        {
            "terse": {
                "criteria": "Two words.",
                "patterns": ["{answer}? {ref}", "{ref}: {answer}", "{answer} — {ref}"],
            }
        }
    )
    assert set(default_verbalizers()) < set(vs)
    t = rule_templates(_schema())[0]
    assert len(realize(t, vs["terse"])) == 3
    with pytest.raises(ConfigError):
        verbalizers_from_config({"terse": {"patern": ["x"]}})


def test_balance_takes_exactly_k_and_is_deterministic() -> None:
    texts = [f"t{i}" for i in range(6)] + ["t0"]
    assert balance(texts, 3, "a") == balance(texts, 3, "a")
    assert len(balance(texts, 3, "a") or []) == 3
    assert balance(texts, 7, "a") is None


class SqlitePort:
    """A query port over sqlite3 (a fake of the SQLAlchemy adapter)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.statements: list[str] = []

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> Iterator[Sequence[Any]]:
        self.statements.append(sql)
        yield from self.conn.execute(sql, dict(params or {}))


@pytest.fixture
def port() -> Iterator[SqlitePort]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        """
        CREATE TABLE Client (ClientId INTEGER PRIMARY KEY, Name TEXT, Location TEXT, Industry TEXT);
        INSERT INTO Client VALUES (1, 'O''Brien & Söhne', 'Zürich', 'Retail'),
                                  (2, 'Acme', NULL, 'Retail'),
                                  (3, 'Dup', 'Oslo', 'Mining'), (4, 'Dup', 'Lima', 'Mining'),
                                  (5, NULL, 'Nowhere', 'Mining');
        """
    )
    yield SqlitePort(conn)
    conn.close()


def _client_schema() -> SchemaInfo:
    return SchemaInfo(
        (
            TableInfo(
                "Client",
                (
                    ColumnInfo(
                        "ClientId", N, primary_key=True, distinct=5, non_null=5, unique=True
                    ),
                    ColumnInfo("Name", T, distinct=4, non_null=4),
                    ColumnInfo("Location", T, distinct=4, non_null=4),
                    ColumnInfo("Industry", T, distinct=2, non_null=5),
                ),
                primary_key=("ClientId",),
                rows=5,
            ),
        )
    )


def test_pipeline_binds_values_drops_nulls_and_multiples_and_counts(port: SqlitePort) -> None:
    schema = _client_schema()
    t = validate_sql("SELECT Location FROM Client WHERE Name = :name", schema)
    texts = offline_text_templates([t], default_verbalizers(), ["short", "long"])
    res = build_groups(port, schema, [t], texts, k=3, cohorts=["short", "long"], dataset_id="x")
    assert [g.params for g in res.groups] == [{"name": "O'Brien & Söhne"}]
    g = res.groups[0]
    assert g.answer.values == ["Zürich"] and g.answer.types == [AnswerType.TEXT]
    assert all("'O'Brien & Söhne'" in f.text for f in g.forms)
    assert [len(g.forms_in(c)) for c in ("short", "long")] == [3, 3]
    s = res.summary
    assert s.dropped_fills["null_answer"] == 1 and s.dropped_fills["several_answers"] == 1
    assert s.combinations == 3 and s.queries == s.groups == 1 and s.sql_templates == 1
    # bound, never pasted: the value appears in no SQL text that ran
    assert not any("Brien" in sql for sql in port.statements)
    # one grouped query for the answers (plus one COUNT(DISTINCT) per placeholder)
    assert sum("gw_p0" in sql for sql in port.statements) == 1


def test_reject_policy_rejects_the_whole_template(port: SqlitePort) -> None:
    schema = _client_schema()
    t = validate_sql("SELECT Location FROM Client WHERE Name = :name", schema)
    from dataclasses import replace

    strict = replace(t, on_multiple="reject")
    texts = offline_text_templates([strict], default_verbalizers(), ["short"])
    res = build_groups(port, schema, [strict], texts, k=3, cohorts=["short"])
    assert res.groups == [] and res.summary.rejected_templates["several_answers"] == 1


def test_too_few_text_templates_reject_the_template(port: SqlitePort) -> None:
    schema = _client_schema()
    t = validate_sql("SELECT Location FROM Client WHERE Name = :name", schema)
    res = build_groups(
        port, schema, [t], {t.template_id: {"short": ["a '[Client.Name]'"]}}, k=3, cohorts=["short"]
    )
    assert res.groups == [] and res.summary.rejected_templates["too_few_text_templates"] == 1


def test_templates_the_rewrite_cannot_express_fall_back_to_bound_queries(port: SqlitePort) -> None:
    schema = _client_schema()
    t = validate_sql(
        "SELECT Location FROM Client WHERE Name = :name AND Industry = :industry LIMIT 1", schema
    )
    texts = offline_text_templates([t], default_verbalizers(), ["short"])
    res = build_groups(port, schema, [t], texts, k=3, cohorts=["short"])
    assert res.summary.per_combination_templates == 1
    assert {tuple(g.params.values()) for g in res.groups} == {
        ("O'Brien & Söhne", "Retail"),
        ("Dup", "Mining"),
    }
    assert res.summary.combinations == 3 * 2  # DISTINCT non-NULL names × industries


def test_multi_column_answers_are_tuples_with_types(port: SqlitePort) -> None:
    schema = SchemaInfo(
        (
            TableInfo(
                "Client",
                (
                    ColumnInfo(
                        "ClientId", N, primary_key=True, distinct=5, non_null=5, unique=True
                    ),
                    ColumnInfo("Name", T, distinct=4, non_null=4),
                    ColumnInfo("Location", T, distinct=4, non_null=4),
                    ColumnInfo("Industry", T, distinct=2, non_null=5),
                    ColumnInfo("ClientNo", N, distinct=5, non_null=5),
                ),
                primary_key=("ClientId",),
                rows=5,
            ),
        )
    )
    port.conn.execute("ALTER TABLE Client ADD COLUMN ClientNo INTEGER")
    port.conn.execute("UPDATE Client SET ClientNo = ClientId * 10")
    t = validate_sql("SELECT Location, ClientNo FROM Client WHERE Name = :name", schema)
    texts = offline_text_templates([t], default_verbalizers(), ["short"])
    res = build_groups(port, schema, [t], texts, k=3, cohorts=["short"])
    (g,) = [g for g in res.groups if g.params == {"name": "O'Brien & Söhne"}]
    assert g.answer.values == ["Zürich", "10"] and g.answer.types == [T, N]
    assert g.answer.text == "('Zürich', '10')"
    assert all("ocation and client number" in f.text for f in g.forms)


@pytest.mark.parametrize(
    ("column", "kind", "label"),
    [
        ("born", "number", "birth year"),
        ("born", "date", "birth date"),
        ("date_built", "date", "date built"),
        ("built", "number", "construction year"),
        ("born", "text", "born"),
        ("released", "date", "release date"),
        ("hired_on", "date", "hire date"),
        ("opened_on", "date", "opening date"),
        ("created_at", "date", "creation date"),
        ("founded", "number", "founding year"),
        ("born_on", "date", "birth date"),
        ("start_on", "date", "start date"),
        # a participle English has no listed noun for keeps it, which parses
        ("renovated", "date", "renovated date"),
        ("shortlisted_on", "date", "shortlisted date"),
        # a column that says its own time word is said as named
        ("founded_year", "number", "founded year"),
        ("date_hired", "date", "date hired"),
    ],
)
def test_a_column_named_by_a_participle_reads_as_its_event(
    column: str, kind: str, label: str
) -> None:
    """'Born for 'Chinua Achebe'', 'the hired date of the employee': a column named by a
    participle is its event's date or year, said by the event's noun where English has one."""
    assert attribute_label(column, kind) == label


@pytest.mark.parametrize(
    ("column", "kind", "label"),
    [
        ("weight_kg", AnswerType.NUMBER, "weight in kg"),
        ("price_usd", AnswerType.NUMBER, "price in usd"),
        ("size_in_kg", AnswerType.NUMBER, "size in kg"),
        ("kg", AnswerType.NUMBER, "kg"),
        ("name_kg", AnswerType.TEXT, "name kg"),
    ],
)
def test_a_numeric_column_named_with_its_unit_reads_in_that_unit(
    column: str, kind: AnswerType, label: str
) -> None:
    assert attribute_label(column, kind) == label


def test_an_event_with_no_object_is_asked_in_the_active(tmp_path: Path) -> None:
    """'when the member named 'Alice' was joined' (a new user's schema): a member joins, an
    employee is hired — the question follows the verb."""
    import sqlite3

    from groundwatch.adapters.sources.generate import generate_groups

    db = tmp_path / "club.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE member (id INTEGER PRIMARY KEY, name TEXT NOT NULL, joined DATE NOT NULL,"
        " hired DATE NOT NULL)"
    )
    con.executemany(
        "INSERT INTO member VALUES (?, ?, ?, ?)",
        [(i, f"Person {chr(65 + i)}", f"2021-03-{10 + i}", f"2020-01-{10 + i}") for i in range(9)],
    )
    con.commit()
    con.close()
    groups = generate_groups(f"sqlite:///{db}", k=7).groups
    texts = {g.sql.split()[1]: " ".join(f.text for f in g.forms).lower() for g in groups}
    assert "when did" in texts["joined"] and "was joined" not in texts["joined"]
    assert "was hired" in texts["hired"]
