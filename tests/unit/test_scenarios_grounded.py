"""Offline ``groundwatch gen --scenarios all --demo``: at least ten valid items per scenario,
checked one by one against the demo database and corpus (SQL truth, no LLM)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer
from sqlalchemy import MetaData, String, create_engine, select, text
from typer.testing import CliRunner

from groundwatch.adapters.db.datasets import read_jsonl
from groundwatch.adapters.scenario_files import select_scenarios
from groundwatch.adapters.sources.scenarios import grounded_scenarios
from groundwatch.cli.gen import register
from groundwatch.core.generation.answers import format_value
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.gold import prepare_gold
from groundwatch.core.judging.normalize import fold, normalize
from groundwatch.core.model import AnswerType, SemanticGroup, Verdict
from groundwatch.core.scenarios.item_checks import supported
from groundwatch.core.scenarios.items import LETTERS
from groundwatch.demo import DemoDomain, build_demo

pytestmark = pytest.mark.unit

SEED = 7
SCENARIOS = ("S1", "S2", "S3", "S4", "S5", "S6")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[SemanticGroup], str]:
    app = typer.Typer()
    register(app)

    @app.command()
    def noop() -> None:  # a second command keeps "gen" a subcommand
        """Nothing."""

    out = tmp_path_factory.mktemp("scen") / "scenarios.jsonl"
    quality = out.with_suffix(".quality.json")
    res = CliRunner().invoke(
        app,
        ["gen", "--scenarios", "all", "--demo", "--seed", str(SEED), "--out", str(out),
         "--quality", str(quality)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert quality.exists()
    return read_jsonl(out), res.output


@pytest.fixture(scope="module")
def domain(tmp_path_factory: pytest.TempPathFactory) -> DemoDomain:
    """The same demo domain the command built (same seed), to check the items against."""
    return build_demo(seed=SEED, workdir=tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def db(domain: DemoDomain) -> Iterator[Any]:
    engine = create_engine(domain.db_url)
    with engine.connect() as conn:
        yield conn
    engine.dispose()


def by(items: list[SemanticGroup], scenario: str) -> list[SemanticGroup]:
    return [g for g in items if g.scenario == scenario]


def rows(conn: Any, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(text(sql), params).all()]


def test_at_least_ten_items_per_scenario_each_carrying_what_it_needs(
    generated: tuple[list[SemanticGroup], str],
) -> None:
    items, output = generated
    for s in SCENARIOS:
        assert len(by(items, s)) >= 10, (s, len(by(items, s)))
    assert len({g.group_id for g in items}) == len(items)
    for g in items:
        assert g.scenario in SCENARIOS
        (form,) = g.forms
        assert form.cohort == g.scenario and form.text.strip()
        assert g.provenance["source"] == "sql" and g.provenance["sql"] == g.sql
        assert g.provenance["expected_response"].strip()
        assert g.provenance["corpus_checked"] if g.scenario != "S6" else True
    assert "kept, dropped, valid" in output and "validity" in output


def test_ids_are_stable_across_runs(
    generated: tuple[list[SemanticGroup], str], domain: DemoDomain
) -> None:
    again = grounded_scenarios(
        domain.db_url, select_scenarios("all"), corpus=domain.documents, seed=SEED,
        dataset_id="default",
    )  # fmt: skip
    assert [g.group_id for g in again.items] == [g.group_id for g in generated[0]]


@pytest.mark.parametrize(("scenario", "kind"), [("S1", AnswerType.NUMBER), ("S2", AnswerType.DATE)])
def test_number_and_date_items_are_sql_truth_stated_by_a_document(
    generated: tuple[list[SemanticGroup], str],
    db: Any,
    domain: DemoDomain,
    scenario: str,
    kind: AnswerType,
) -> None:
    for g in by(generated[0], scenario):
        assert g.answer.types == [kind]
        assert [[format_value(v) for v in r] for r in rows(db, g.sql, g.params)] == [
            g.answer.values
        ]
        assert g.relevant_doc_ids
        doc = domain.documents[g.relevant_doc_ids[0]]
        assert supported(g.answer.values[0], doc, kind)
        assert all(fold(str(v)) in fold(doc) for v in g.params.values())


def test_multiple_choice_items_have_exactly_one_correct_option(
    generated: tuple[list[SemanticGroup], str], db: Any
) -> None:
    for g in by(generated[0], "S3"):
        options = g.answer.options
        assert options is not None and len(options) == 4
        assert len({normalize(o) for o in options}) == 4
        (truth,) = rows(db, g.sql, g.params)
        right = [
            i for i, o in enumerate(options) if normalize(o) == normalize(format_value(truth[0]))
        ]
        assert len(right) == 1, (options, truth)
        assert prepare_gold(g.answer).correct_option == right[0]
        letter = LETTERS[right[0]]
        assert g.provenance["correct_option"] == letter
        assert g.provenance["expected_response"] == f"{letter}) {options[right[0]]}"
        assert all(f"{LETTERS[i]}) {o}" in g.forms[0].text for i, o in enumerate(options))
        # distractors are other DISTINCT values of the answer's column
        table, column = g.provenance["distractors_from"].split()[-1].split(".")
        values = {
            format_value(r[0]) for r in rows(db, f"SELECT DISTINCT {column} FROM {table}", {})
        }
        assert set(options) <= values
        # and the judge agrees: the letter alone is right, another letter is wrong
        q = g.forms[0].text
        assert judge_deterministic(q, g.answer, letter).verdict is Verdict.CORRECT
        other = LETTERS[(right[0] + 1) % 4]
        assert judge_deterministic(q, g.answer, f"{other}").verdict is Verdict.INCORRECT


@pytest.mark.parametrize("scenario", ["S4", "S5"])
def test_multi_part_items_have_every_part_answerable_from_sql(
    generated: tuple[list[SemanticGroup], str], db: Any, scenario: str
) -> None:
    for g in by(generated[0], scenario):
        parts = g.provenance["parts"]
        assert 2 <= len(parts) <= 3
        values: list[str] = []
        for p in parts:
            got = rows(db, p["sql"], p["params"])
            assert [[format_value(v) for v in r] for r in got] == [p["values"]]
            values.extend(p["values"])
            assert p["question"] in g.forms[0].text
        assert g.answer.values == values and g.answer.answerable
        # the combined SQL returns every part in one row: the item keeps SQL truth
        assert [[format_value(v) for v in r] for r in rows(db, g.sql, g.params)] == [values]
        entities = [tuple(p["params"].values()) for p in parts]
        docs = [set(p["documents"]) for p in parts]
        if scenario == "S4":
            assert len(set(entities)) == 1
            assert set.intersection(*docs)  # one document states every part
        else:
            assert len(set(entities)) == len(entities)
            assert all(not (a & b) for i, a in enumerate(docs) for b in docs[i + 1 :])
        # completeness: answering every part is right, leaving one out is not
        q = g.forms[0].text
        full = " ".join(f"{v}." for v in values)
        assert judge_deterministic(q, g.answer, full).verdict is Verdict.CORRECT
        partial = " ".join(f"{v}." for v in values[:-1])
        assert judge_deterministic(q, g.answer, partial).verdict is not Verdict.CORRECT


def _all_text_values(conn: Any) -> set[str]:
    meta = MetaData()
    meta.reflect(conn)
    out: set[str] = set()
    for table in meta.tables.values():
        cols = [c for c in table.columns if isinstance(c.type, String)]
        for r in conn.execute(select(*cols)).all():
            out.update(fold(str(v)) for v in r if v is not None)
    return out


def test_unanswerable_items_ask_about_names_absent_from_database_and_corpus(
    generated: tuple[list[SemanticGroup], str], db: Any, domain: DemoDomain
) -> None:
    known = _all_text_values(db)
    corpus = [fold(t) for t in domain.documents.values()]
    names = []
    for g in by(generated[0], "S6"):
        assert not g.answer.answerable and g.answer.values == []
        name = g.provenance["absent_entity"]["value"]
        names.append(name)
        assert name in g.forms[0].text
        assert fold(name) not in known
        assert not any(fold(name) in doc for doc in corpus)
        assert rows(db, g.sql, g.params) == []
        assert set(g.provenance["checked_absent_in"]) == {"database", "corpus"}
        q = g.forms[0].text
        assert judge_deterministic(q, g.answer, "I don't know.").verdict is Verdict.CORRECT
        assert judge_deterministic(q, g.answer, "It is 2019-03-01.").verdict is Verdict.INCORRECT
    assert len(set(names)) == len(names)


def test_without_a_corpus_items_are_kept_and_marked_unchecked(tmp_path: Path) -> None:
    d = build_demo(seed=3, workdir=tmp_path)
    run = grounded_scenarios(d.db_url, select_scenarios("S1,S6"), seed=1, max_items=5)
    assert run.summary()["S1"]["kept"] == 5 and run.summary()["S6"]["kept"] == 5
    assert all(not g.provenance.get("chunks") for g in run.items)
    assert all(
        g.provenance["checked_absent_in"] == ["database"] for g in run.items if g.scenario == "S6"
    )


def test_cli_db_with_corpus_file_and_bad_arguments(tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)

    @app.command()
    def noop() -> None:
        """Nothing."""

    d = build_demo(seed=5, workdir=tmp_path)
    docs = tmp_path / "docs.json"
    docs.write_bytes(orjson.dumps(d.documents))
    out = tmp_path / "s.jsonl"
    runner = CliRunner()
    res = runner.invoke(
        app,
        ["gen", "--scenarios", "S3,S6", "--db", d.db_url, "--corpus", str(docs),
         "--per-scenario", "4", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    items = read_jsonl(out)
    assert [g.scenario for g in items].count("S3") == 4
    assert [g.scenario for g in items].count("S6") == 4
    assert all("corpus" in g.provenance["checked_absent_in"] for g in items if g.scenario == "S6")
    both = ["gen", "--scenarios", "S1", "--demo", "--corpus", str(docs), "--out", str(out)]
    assert runner.invoke(app, both).exit_code != 0
    assert runner.invoke(app, ["gen", "--scenarios", "S1", "--demo"]).exit_code != 0  # no --out
    unknown = runner.invoke(app, ["gen", "--scenarios", "S9", "--demo", "--out", str(out)])
    assert unknown.exit_code == 2 and "unknown scenarios" in unknown.output
