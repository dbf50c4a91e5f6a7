"""Import of the GRAMMAR authors' Aurp results: the report reproduces their published tallies.

Must show (issue 5): on ``eval_results_results_{short,long}_balanced.json`` — 157 groups, 112
gap, 5 non-robust, 40 robust per cohort; accuracy 0.274 / 0.276; R 0.956 / 0.963
(``../shared/README.md``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from groundwatch.adapters.grammar_files import (
    ImportFormatError,
    load_evaluator_verdicts,
    load_grammar_results,
    load_likert_ratings,
)
from groundwatch.cli import report as report_cli
from groundwatch.core.model import Verdict
from groundwatch.report.build import build_report

pytestmark = pytest.mark.unit

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
AURP = SHARED / "data" / "grammar-aurp"
SHORT = AURP / "eval_results_results_short_balanced.json"
LONG = AURP / "eval_results_results_long_balanced.json"

# The authors' tallies (README table), and their Table 3 "context comparison" rows for Aurp.
AUTHORS = {
    "short": {
        "examples": 471,
        "groups": 157,
        "gap": 112,
        "non_robust": 5,
        "robust": 40,
        "accuracy": 0.274,
        "R": 0.956,
    },
    "long": {
        "examples": 471,
        "groups": 157,
        "gap": 112,
        "non_robust": 5,
        "robust": 40,
        "accuracy": 0.276,
        "R": 0.963,
    },
}


@pytest.fixture
def aurp() -> tuple[Path, Path]:
    if not (SHORT.exists() and LONG.exists()):
        pytest.skip(f"GRAMMAR Aurp results not found under {AURP} (../shared absent)")
    return SHORT, LONG


def app() -> typer.Typer:
    a = typer.Typer()
    report_cli.register(a)

    @a.command()
    def _other() -> None:  # a second command keeps typer in multi-command mode, like main.py
        pass

    return a


def check_against_authors(report: dict[str, Any]) -> None:
    for cohort, want in AUTHORS.items():
        c = report["cohorts"][cohort]
        assert c["examples"] == want["examples"]
        assert c["groups"] == want["groups"]
        assert c["gap_groups"] == want["gap"]
        assert c["non_robust_groups"] == want["non_robust"]
        assert c["robust_groups"] == want["robust"]
        assert c["pending_groups"] == 0
        assert round(c["accuracy"], 3) == want["accuracy"]
        assert round(c["refined_accuracy"], 3) == want["R"]
        assert c["acc_db"] == pytest.approx(1 - 112 / 157)
        assert c["lambda"] == pytest.approx(336 / 471)
        # the same 112 groups fail in both files: all of them are knowledge gaps
        assert (c["knowledge_gap_groups"], c["cohort_gap_groups"]) == (112, 0)
        assert c["attribution"]["gap"] == 336


def test_import_keeps_the_authors_grouping(aurp: tuple[Path, Path]) -> None:
    short = load_grammar_results(aurp[0], "short")
    assert len(short) == 471
    assert {o.group_forms for o in short} == {3}
    assert len({o.group_id for o in short}) == 157
    assert all(o.retrieval_ok is not None for o in short)
    raw = json.loads(aurp[0].read_text())
    # a null gpt_response (retrieval failed) keeps the file's "Incorrect"
    nulls = [o for o, e in zip(short, raw, strict=True) if e["gpt_response"] is None]
    assert nulls and all(o.verdict is Verdict.INCORRECT for o in nulls)
    assert short[0].probe_id == "grammar:short:0"


def test_report_equals_the_authors_tallies(aurp: tuple[Path, Path]) -> None:
    obs = load_grammar_results(aurp[0], "short") + load_grammar_results(aurp[1], "long")
    r = build_report(obs).to_json()
    check_against_authors(r)
    # Table 3 (Aurp, context comparison rows): retrieval accuracy 0.29 / 0.28, without gap
    # groups 1.00 / 0.98 — the authors' get_accuracy/get_robustness(for_retrieval=True)
    assert round(r["cohorts"]["short"]["retrieval_accuracy"], 2) == 0.29
    assert round(r["cohorts"]["long"]["retrieval_accuracy"], 2) == 0.28
    assert round(r["cohorts"]["short"]["refined_retrieval_accuracy"], 2) == 1.00
    assert round(r["cohorts"]["long"]["refined_retrieval_accuracy"], 2) == 0.98
    h = r["hypothesis"]
    assert h["mutual_gap_groups"] == 112 and h["groups_compared"] == 45
    assert not h["significant"]  # 0.956 vs 0.963 on 45 groups is no evidence either way
    assert h["lambda_balanced"]  # the balanced files: the same λ in both cohorts


def test_cli_report_from_grammar_results(aurp: tuple[Path, Path], tmp_path: Path) -> None:
    out, page = tmp_path / "report.json", tmp_path / "report.html"
    res = CliRunner().invoke(
        app(),
        [
            "report",
            "--grammar-results",
            f"short={aurp[0]}",
            "--grammar-results",
            f"long={aurp[1]}",
            "--json",
            str(out),
            "--html",
            str(page),
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(out.read_text())
    check_against_authors(report)
    assert set(report) >= {"cohorts", "hypothesis", "targets"}
    assert "GRAMMAR group report" in res.output and "157" in res.output
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_cli_two_targets_from_files(aurp: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        app(),
        [
            "report",
            "-g",
            f"a/short={aurp[0]}",
            "-g",
            f"b/short={aurp[0]}",
            "--json",
            str(out),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    tc = json.loads(out.read_text())["target_comparison"]["cohorts"]["short"]
    assert tc["improved_groups"] == tc["worsened_groups"] == 0
    assert tc["mcnemar"]["p_value"] == 1.0


def test_cli_rejects_bad_input(tmp_path: Path) -> None:
    res = CliRunner().invoke(app(), ["report"])
    assert res.exit_code != 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    res = CliRunner().invoke(app(), ["report", "-g", f"short={bad}"])
    assert res.exit_code == 2 and "expected a JSON list" in res.output
    res = CliRunner().invoke(app(), ["report", "-g", str(bad)])
    assert res.exit_code != 0


def test_loader_errors(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(json.dumps([{"query": "q", "query_tag": 1, "judgement": "Maybe"}]))
    with pytest.raises(ImportFormatError, match="neither"):
        load_grammar_results(f, "short")
    f.write_text(json.dumps([{"query": "q"}]))
    with pytest.raises(ImportFormatError, match="query_tag"):
        load_grammar_results(f, "short")
    f.write_text(json.dumps([{"query": "q", "query_tag": 1, "retrieval_judgement": 2}]))
    with pytest.raises(ImportFormatError, match="retrieval_judgement"):
        load_grammar_results(f, "short")
    f.write_text(
        json.dumps(
            [
                {"query": "q", "query_tag": 1, "gpt_response": None},
                {"query": "r", "query_tag": 1, "gpt_response": "x"},
            ]
        )
    )
    a, b = load_grammar_results(f, "short")
    assert a.verdict is Verdict.INCORRECT and b.verdict is Verdict.UNDECIDED
    assert a.retrieval_ok is None and a.group_forms == 2


def test_rating_and_evaluator_files(tmp_path: Path) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("probe_id,rating,bleu\np1,5,0.9\np2,1,\np3,3,0.4\n")
    human, metrics = load_likert_ratings(ratings)
    assert human == {"p1": 5.0, "p2": 1.0, "p3": 3.0}
    assert metrics == {"bleu": {"p1": 0.9, "p3": 0.4}}
    ratings.write_text("probe_id,rating\np1,7\n")
    with pytest.raises(ImportFormatError, match="Likert"):
        load_likert_ratings(ratings)
    ev = tmp_path / "ev.csv"
    ev.write_text("probe_id,verdict\np1,Correct\np2,0\np3,yes\n")
    assert load_evaluator_verdicts(ev) == {"p1": True, "p2": False, "p3": True}
    ev.write_text("probe_id,verdict\np1,perhaps\n")
    with pytest.raises(ImportFormatError):
        load_evaluator_verdicts(ev)


def test_cli_report_from_stored_run(tmp_path: Path) -> None:
    """``--run`` reads JudgementRow through SQLAlchemy (the CLI is outside the pure core)."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from groundwatch.adapters.db.models import Base, JudgementRow

    url = f"sqlite:///{tmp_path / 'gw.db'}"
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    t0 = datetime(2024, 5, 1, tzinfo=UTC)
    verdicts = {
        "g1": ["correct"] * 3,
        "g2": ["incorrect"] * 3,
        "g3": ["correct", "incorrect", "error"],
    }
    with Session(engine) as s:
        for run in ("r1", "r2"):
            for gid, vs in verdicts.items():
                for i, v in enumerate(vs):
                    s.add(
                        JudgementRow(
                            probe_id=f"{run}-{gid}-{i}",
                            run_id=run,
                            target="prod",
                            cohort="short",
                            scenario="factual",
                            dataset_id="d",
                            group_id=gid,
                            form_id=f"f{i}",
                            query="q",
                            verdict=v,
                            tier="exact",
                            expected={"values": ["x"]},
                            retrieved_ids=["d1"],
                            relevant_doc_ids=[],
                            group_forms=3,
                            probe_created_at=t0,
                            judged_at=t0 + timedelta(seconds=1),
                        )
                    )
        s.commit()
    engine.dispose()
    out = tmp_path / "run.json"
    res = CliRunner().invoke(
        app(),
        [
            "report",
            "--run",
            "r1",
            "--database-url",
            url,
            "--json",
            str(out),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    c = json.loads(out.read_text())["cohorts"]["short"]
    assert (c["examples"], c["errors"], c["gap_groups"], c["robust_groups"]) == (8, 1, 1, 1)
    assert c["non_robust_groups"] == 1 and c["attribution"]["lm"] == 1
    res = CliRunner().invoke(app(), ["report", "--run", "nope", "--database-url", url])
    assert res.exit_code == 2 and "no judgements" in res.output  # input error (exit codes)
