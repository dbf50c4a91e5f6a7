"""The streaming write path (group records → orjson lines) writes what the model path writes.

``iter_group_records`` + ``group_record_line`` skip pydantic on the way to a JSONL file; these
tests hold that path to the model's: the same bytes per line, the same groups read back, and ids
and texts equal to the reference functions (``group_id_for``, ``form_id_for``, ``fill_text``) on
a database with text (quotes, braces, backslashes, accents), integer, real and date values,
one- and multi-placeholder templates, and list answers.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from groundwatch.adapters.db.datasets import (
    group_line,
    group_record_line,
    iter_jsonl,
    write_group_records,
)
from groundwatch.adapters.sources.connect import readonly_engine
from groundwatch.adapters.sources.generate import stream_group_records
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.port import SqlAlchemyPort
from groundwatch.adapters.template_files import parse_template_file
from groundwatch.core.generation import default_verbalizers, offline_text_templates
from groundwatch.core.generation.pipeline import (
    StageSummary,
    answer_in_question,
    balance,
    iter_group_records,
    iter_groups,
)
from groundwatch.core.generation.realize import (
    compile_percent,
    compile_pieces,
    compile_text,
    fill_compiled,
    fill_text,
)
from groundwatch.core.generation.rules import rule_templates
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.template_file import load_templates
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.model import (
    Expected,
    SemanticGroup,
    form_id_for,
    group_id_for,
    group_id_hasher,
)

pytestmark = pytest.mark.unit

COHORTS = ("short", "long")

#: multi-placeholder templates over every value type (text, date, integer, real)
TEMPLATES = """
version: 1
templates:
- sql: SELECT credit FROM clients WHERE city = :city AND segment = :segment
    AND since = :since
  on_multiple: drop
- sql: SELECT clients.name FROM clients JOIN managers
    ON clients.manager_id = managers.manager_id
    WHERE managers.name = :manager AND clients.city = :city
  on_multiple: drop
- sql: SELECT since FROM clients WHERE credit = :credit AND score = :score
  on_multiple: drop
- sql: SELECT name FROM clients WHERE segment = :segment
  on_multiple: drop
"""

NAMES = [
    "O'Brien & Sons",
    'The "Quoted" Firm',
    "Brace {0} Corp",
    "Back\\slash Ltd",
    "Zürich Łódź AG",
    "Tab\tCo",
    "Plain Company",
    "Ümlaut {} GmbH",
]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "records.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE managers (manager_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                               region TEXT NOT NULL);
        CREATE TABLE clients (client_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                              city TEXT NOT NULL, segment TEXT NOT NULL, since DATE NOT NULL,
                              credit INTEGER NOT NULL, score REAL NOT NULL,
                              manager_id INTEGER NOT NULL REFERENCES managers(manager_id));
        """
    )
    con.executemany(
        "INSERT INTO managers VALUES (?, ?, ?)",
        [(1, "Ann {x}", "North"), (2, 'Bö "B" Smith', "South"), (3, "Cy\\", "North")],
    )
    cities = ["Genève", "New {York}", "O'Hare"]
    rows = []
    for i, name in enumerate(NAMES * 3):
        rows.append(
            (
                i + 1,
                f"{name} {i}",
                cities[i % 3],
                "AB"[i % 2],
                f"20{10 + i % 7:02d}-0{1 + i % 9}-1{i % 10}",
                (i % 5) * 1000,
                [0.5, 12.25, 1e20, 3.0][i % 4],
                1 + i % 3,
            )
        )
    con.executemany("INSERT INTO clients VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


def _setup(conn: Any) -> tuple[SchemaInfo, list[SqlTemplate], dict[str, dict[str, list[str]]]]:
    schema = introspect(conn)
    loaded = load_templates(parse_template_file(TEMPLATES), schema)
    assert not loaded.rejected, loaded.rejected
    templates = [*rule_templates(schema), *loaded.templates]
    texts = offline_text_templates(templates, default_verbalizers(), list(COHORTS))
    return schema, templates, texts


def _both(
    db: Path, **kw: Any
) -> tuple[list[SemanticGroup], list[dict[str, Any]], StageSummary, StageSummary]:
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn, conn.begin():
            schema, templates, texts = _setup(conn)
            port = SqlAlchemyPort(conn)
            s_model, s_rec = StageSummary(), StageSummary()
            models = list(
                iter_groups(port, schema, templates, texts, cohorts=COHORTS, summary=s_model, **kw)
            )
            records = list(
                iter_group_records(
                    port, schema, templates, texts, cohorts=COHORTS, summary=s_rec, **kw
                )
            )
            return models, records, s_model, s_rec
    finally:
        engine.dispose()


@pytest.mark.parametrize("list_answers", [False, True])
def test_record_lines_are_the_model_lines_byte_for_byte(db: Path, list_answers: bool) -> None:
    models, records, s_model, s_rec = _both(db, list_answers=list_answers)
    assert len(models) == len(records) > 20
    sqls = {r["sql"] for r in records}
    assert len(sqls) >= 6  # rule templates and every multi-placeholder one produced groups
    assert any(len(r["params"]) == 3 for r in records)
    assert any(isinstance(v, float) for r in records for v in r["params"].values())
    if list_answers:
        assert s_rec.list_answers > 0
        assert any(len(r["answer"]["values"]) > 1 for r in records)
    assert s_model.as_dict() == s_rec.as_dict()
    for g, r in zip(models, records, strict=True):
        assert group_record_line(r) == group_line(g)
        # the defaults a record spells out are the model's own
        a = r["answer"]
        minimal = SemanticGroup(
            group_id=r["group_id"],
            dataset_id=r["dataset_id"],
            sql=r["sql"],
            params=r["params"],
            answer=Expected(
                values=a["values"],
                types=a["types"],
                candidates=a["candidates"],
                domain=a["domain"],
                attributes=a["attributes"],
                attribute_types=a["attribute_types"],
                attribute_sources=a["attribute_sources"],
                entity_domain=a["entity_domain"],
                entity_source=a["entity_source"],
            ),
            forms=r["forms"],
            template_id=r["template_id"],
        )
        assert group_line(minimal) == group_record_line(r)
    # and the file written from records reads back as the models
    buf = io.BytesIO()
    assert write_group_records(records, buf) == len(records)
    assert list(iter_jsonl(io.BytesIO(buf.getvalue()))) == models


def test_record_ids_and_texts_match_the_reference_functions(db: Path) -> None:
    """Independent of the fast path's own helpers: ids from ``group_id_for``/``form_id_for``, texts
    from the one-value-at-a-time ``fill_text`` of some chosen text template."""
    _, records, _, _ = _both(db)
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn, conn.begin():
            _, templates, texts = _setup(conn)
    finally:
        engine.dispose()
    by_sql = {t.sql: t for t in templates}
    for r in records:
        assert r["group_id"] == group_id_for(r["sql"], r["params"])
        t = by_sql[r["sql"]]
        for f in r["forms"]:
            assert f["form_id"] == form_id_for(r["group_id"], f["cohort"], f["text"])
            assert any(
                fill_text(tt, t, r["params"]) == f["text"]
                for tt in texts[t.template_id][f["cohort"]]
            )


@pytest.mark.parametrize(
    "params",
    [
        {"name": "O'Brien"},
        {"b": 2, "a": "Zürich {x}"},
        {"score": 12.25, "city": 'New "York"', "since": "2020-01-01"},
        {"x": None, "y": True, "z": 1e20},
    ],
)
def test_group_id_hasher_is_group_id_for(params: dict[str, Any]) -> None:
    sql = "SELECT  city\n FROM clients WHERE name = :name"
    assert group_id_hasher(sql)(params) == group_id_for(sql, params)


def test_compiled_fillers_fill_like_the_parts(db: Path) -> None:
    """``%`` and braces in the literal text survive; a value's own ``%`` or braces are not
    re-read; a placeholder used twice is filled twice."""
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn, conn.begin():
            _, templates, texts = _setup(conn)
    finally:
        engine.dispose()
    many = next(t for t in templates if len(t.slots) == 3)
    token = many.slots[0].grammar_token()
    for tt in [*texts[many.template_id]["short"], "{x} 100% '" + token + "' }" + token]:
        values = ["{0} %s %(0)s", "a}b{", "x"]
        by_slot = {str(i): v for i, v in enumerate(values)}
        assert compile_percent(tt, many) % by_slot == fill_compiled(compile_text(tt, many), values)
    one = next(t for t in templates if len(t.slots) == 1)
    token = one.slots[0].grammar_token()
    for tt in [*texts[one.template_id]["long"], token + " 5% {y} " + token]:
        value = "50% {0}"
        assert value.join(compile_pieces(tt, one)) == fill_compiled(compile_text(tt, one), [value])
    with pytest.raises(ValueError):
        compile_pieces(texts[many.template_id]["short"][0], many)


def test_a_line_orjson_cannot_encode_goes_through_the_model() -> None:
    record = orjson.loads(
        group_line(
            SemanticGroup.model_validate(
                {"group_id": "g", "sql": "SELECT 1", "answer": {"values": ["1"]}}
            )
        )
    )
    record["params"] = {"big": 2**70}
    line = group_record_line(record)
    assert json.loads(line)["params"] == {"big": 2**70}
    assert line.endswith(b"\n")


def test_streamed_records_written_to_a_file_read_back_as_the_groups(
    db: Path, tmp_path: Path
) -> None:
    models, _, _, _ = _both(db)
    out = tmp_path / "groups.jsonl"
    engine = readonly_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn, conn.begin():
            schema, templates, texts = _setup(conn)
            summary = StageSummary()
            records = stream_group_records(
                conn, schema, templates, texts, cohorts=COHORTS, summary=summary
            )
            assert write_group_records(records, out) == len(models) == summary.groups
    finally:
        engine.dispose()
    assert list(iter_jsonl(out)) == models
    assert out.read_bytes() == b"".join(group_line(g) for g in models)


def test_fills_whose_question_gives_the_answer_away_are_dropped_as_the_reference_says(
    tmp_path: Path,
) -> None:
    """The containment pre-check (and its memo per answer) drops exactly the fills the plain
    ``answer_in_question`` drops: answer inside the placeholder value, answer among the forms'
    words (repeated, so the memo is hit), a one-letter answer that only matches an article."""
    path = tmp_path / "shops.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE shops (shop_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                            city TEXT NOT NULL, segment TEXT NOT NULL);
        """
    )
    rows = [
        ("Paris Corner", "Paris", "A"),
        ("Lyon Hall", "Paris", "shop"),
        ("Nice Place", "Lyon", "shop"),
        ("Old Lyon Store", "Lyon", "B"),
        ("Harbour", "Nice", "shop"),
        ("Station Kiosk", "Nice", "A"),
        ("Bastille Deli", "Paris", "B"),
        ("Marseille Market", "Marseille", "A"),
    ]
    con.executemany("INSERT INTO shops (name, city, segment) VALUES (?, ?, ?)", rows * 1)
    con.commit()
    con.close()
    engine = readonly_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn, conn.begin():
            schema = introspect(conn)
            templates = [
                t for t in rule_templates(schema) if [s.column for s in t.slots] == ["name"]
            ]
            texts = offline_text_templates(templates, default_verbalizers(), list(COHORTS))
            summary = StageSummary()
            records = list(
                iter_group_records(
                    SqlAlchemyPort(conn),
                    schema,
                    templates,
                    texts,
                    cohorts=COHORTS,
                    summary=summary,
                )
            )
            expected_drops = 0
            for t in templates:
                chosen = {
                    c: balance(texts[t.template_id][c], 3, f"{t.template_id}:{c}") for c in COHORTS
                }
                col = t.selected[0].column
                for name, city, segment in rows:
                    answer = {"city": city, "segment": segment}.get(col)
                    if answer is None:
                        continue
                    forms = [
                        fill_text(tt, t, {"name": name}) for c in COHORTS for tt in chosen[c] or []
                    ]
                    if answer_in_question([answer], forms, [name]) is not None:
                        expected_drops += 1
    finally:
        engine.dispose()
    assert expected_drops >= 3  # the fixture has cases of both kinds
    assert summary.dropped_fills["answer_in_question"] == expected_drops
    kept = {(r["params"]["name"], r["answer"]["values"][0]) for r in records}
    assert ("Paris Corner", "Paris") not in kept  # the answer is in the placeholder value
    assert ("Station Kiosk", "A") in kept  # "A" is an article in the forms, not the answer
