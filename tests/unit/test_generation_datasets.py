"""Datasets: JSONL export/import, storage through SQLAlchemy, and the ``groundwatch gen`` CLI."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
import typer
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from groundwatch.adapters.db.datasets import (
    iter_jsonl,
    load_groups,
    read_jsonl,
    save_groups,
    write_jsonl,
)
from groundwatch.adapters.db.tables import AnswerVersionRow, Base, Dataset
from groundwatch.cli.gen import register
from groundwatch.core.model import AnswerType, Expected, SemanticGroup, TextForm
from groundwatch.demo import demo_dataset

pytestmark = pytest.mark.unit


def _group(gid: str, value: str = "Zürich") -> SemanticGroup:
    return SemanticGroup(
        group_id=gid,
        dataset_id="d",
        sql="SELECT city FROM clients WHERE name = :name",
        params={"name": "O'Brien"},
        answer=Expected(values=[value], types=[AnswerType.TEXT]),
        forms=[
            TextForm(form_id=f"{gid}-{c}-{i}", cohort=c, text=f"{c} {i} 'O'Brien'")
            for c in ("short", "long")
            for i in range(2)
        ],
        relevant_doc_ids=["client-o-brien"],
        template_id="t1",
    )


def test_jsonl_round_trip_keeps_everything() -> None:
    groups = [_group("g1"), _group("g2", "Łódź")]
    buf = io.BytesIO()
    assert write_jsonl(groups, buf) == 2
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2
    first = orjson.loads(lines[0])
    assert {"group_id", "sql", "params", "answer", "forms"} <= set(first)
    assert first["forms"][0] == {
        "form_id": "g1-short-0",
        "cohort": "short",
        "text": "short 0 'O'Brien'",
    }
    assert read_jsonl(io.BytesIO(buf.getvalue() + b"\n")) == groups
    with pytest.raises(ValueError, match="line 1"):
        list(iter_jsonl(io.BytesIO(b'{"group_id": 1}\n')))


def test_save_and_load_through_sqlalchemy(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'gw.sqlite'}")
    Base.metadata.create_all(engine)
    groups = [_group("g1"), _group("g2")]
    with Session(engine) as s:
        save_groups(s, Dataset(dataset_id="d", name="demo", cohorts=["short", "long"]), groups)
        s.commit()
    with Session(engine) as s:  # saving again replaces, never duplicates
        save_groups(s, Dataset(dataset_id="d", name="demo"), groups)
        s.commit()
        loaded = load_groups(s, "d")
        # forms come back ordered by cohort and form id (the table keeps no position)
        assert [
            g.model_copy(update={"forms": sorted(g.forms, key=lambda f: (f.cohort, f.form_id))})
            for g in groups
        ] == loaded
        assert s.query(AnswerVersionRow).count() == 2
        assert load_groups(s, "other") == []
    engine.dispose()


def test_demo_groups_survive_storage(tmp_path: Path) -> None:
    _, groups = demo_dataset(k=3, url=f"sqlite:///{tmp_path / 'demo.sqlite'}")
    engine = create_engine(f"sqlite:///{tmp_path / 'gw.sqlite'}")
    Base.metadata.create_all(engine)
    with Session(engine) as s:
        save_groups(s, Dataset(dataset_id="demo", name="demo"), groups)
        s.commit()
        loaded = load_groups(s, "demo")
    engine.dispose()
    key = {g.group_id: g for g in groups}
    assert len(loaded) == len(groups)
    for g in loaded:
        assert g.answer == key[g.group_id].answer
        assert sorted(f.form_id for f in g.forms) == sorted(
            f.form_id for f in key[g.group_id].forms
        )


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command()
    def noop() -> None:  # a second command keeps "gen" a subcommand
        """Nothing."""

    return app


def test_cli_gen_demo_writes_jsonl_and_prints_the_stage_summary(
    cli: typer.Typer, tmp_path: Path
) -> None:
    out = tmp_path / "demo.jsonl"
    docs = tmp_path / "docs.json"
    res = CliRunner().invoke(
        cli,
        [
            "gen",
            "--demo",
            "--cohorts",
            "short,formal",
            "--forms",
            "2",
            "--out",
            str(out),
            "--docs-out",
            str(docs),
        ],
    )
    assert res.exit_code == 0, res.output
    groups = read_jsonl(out)
    assert groups and all(len(g.forms_in("formal")) == 2 for g in groups)
    assert all(g.relevant_doc_ids for g in groups)
    assert "SQL templates used (M)" in res.output and "semantic groups" in res.output
    assert "injected gaps" in res.output
    assert len(orjson.loads(docs.read_bytes())) > 40


def test_cli_gen_dry_run_prints_templates_only(cli: typer.Typer, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["gen", "--demo", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "SELECT industry FROM clients WHERE name = :name" in res.output
    assert "short: Industry of '[clients.name]'" in res.output
    assert "semantic groups" not in res.output


def test_cli_gen_rejects_bad_arguments(cli: typer.Typer, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["gen", "--out", str(tmp_path / "x.jsonl")]).exit_code != 0
    assert runner.invoke(cli, ["gen", "--demo"]).exit_code != 0  # no --out
    bad = runner.invoke(cli, ["gen", "--demo", "--cohorts", "shouty", "--out", "x"])
    assert bad.exit_code != 0
    missing = runner.invoke(
        cli,
        [
            "gen",
            "--db",
            f"sqlite:///{tmp_path / 'none.sqlite'}",
            "--out",
            str(tmp_path / "o.jsonl"),
        ],
    )
    assert missing.exit_code == 2


def test_cli_gen_imports_grammar_files(cli: typer.Typer, tmp_path: Path) -> None:
    aurp = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "grammar-aurp"
    if not aurp.exists():
        pytest.skip(f"GRAMMAR Aurp data not found at {aurp}")
    out = tmp_path / "aurp.jsonl"
    res = CliRunner().invoke(cli, ["gen", "--grammar", str(aurp), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(read_jsonl(out)) == 157
