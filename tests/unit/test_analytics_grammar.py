"""Import of the GRAMMAR authors' Aurp results: the report reproduces their published tallies.

Must show (issue 5): on ``eval_results_results_{short,long}_balanced.json`` — 157 groups, 112
gap, 5 non-robust, 40 robust per cohort; accuracy 0.274 / 0.276; R 0.956 / 0.963
(``../shared/README.md``).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
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
from groundwatch.core.tagging import Observation
from groundwatch.report.build import build_report
from groundwatch.report.text import render_text

pytestmark = pytest.mark.unit

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
AURP = SHARED / "data" / "grammar-aurp"
SHORT = AURP / "eval_results_results_short_balanced.json"
LONG = AURP / "eval_results_results_long_balanced.json"
#: Every text query the generator made (314 short, 257 long), retrieval judgements only.
SHORT_ALL = AURP / "eval_results_results_short.json"
LONG_ALL = AURP / "eval_results_results_long.json"

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


def test_the_balanced_files_give_table_3_rows(aurp: tuple[Path, Path]) -> None:
    """002 Table 3, Aurp: "remove gap groups" 0.95 / 0.96 (R) and 1 / 0.98 (context comparison);
    "balance gap examples" 0.27 / 0.27 (accuracy) and 0.29 / 0.28 (context comparison). The
    balanced files already have three forms in every group, so balancing changes nothing."""
    obs = load_grammar_results(aurp[0], "short") + load_grammar_results(aurp[1], "long")
    t = build_report(obs).targets["grammar"]
    b = t.balanced
    assert b is not None and b.available and b.forms_per_group == 3
    assert (b.groups, b.mutual_gap_groups, b.retrieval_groups) == (157, 112, 157)
    for cohort, acc, ret in (("short", 129 / 471, 135 / 471), ("long", 130 / 471, 132 / 471)):
        side = b.sides[cohort]
        assert side.accuracy == pytest.approx(acc) == t.cohorts[cohort].accuracy
        assert side.retrieval_accuracy == pytest.approx(ret)
        assert side.lambda_ == pytest.approx(336 / 471)


@pytest.fixture
def aurp_all() -> tuple[Path, Path]:
    if not (SHORT_ALL.exists() and LONG_ALL.exists()):
        pytest.skip(f"GRAMMAR Aurp unbalanced results not found under {AURP}")
    return SHORT_ALL, LONG_ALL


def test_unbalanced_files_give_retrieval_accuracy_not_answer_accuracy(
    aurp_all: tuple[Path, Path],
) -> None:
    """The files carry the authors' retrieval judgements but no answer judgements: retrieval
    accuracy 90/314 and 132/257 — Table 3's Aurp baseline "context comparison" cells, 0.29 and
    0.51 — and answer accuracy unavailable, not 0."""
    short = load_grammar_results(aurp_all[0], "short")
    long = load_grammar_results(aurp_all[1], "long")
    assert (len(short), len(long)) == (314, 257)
    assert {o.verdict for o in short + long} == {Verdict.UNDECIDED}
    r = build_report(short + long)
    c = r.cohorts
    assert (c["short"].retrieval_judged, c["long"].retrieval_judged) == (314, 257)
    assert c["short"].retrieval_accuracy == pytest.approx(90 / 314)
    assert c["long"].retrieval_accuracy == pytest.approx(132 / 257)
    assert round(c["short"].retrieval_accuracy, 2) == 0.29
    assert round(c["long"].retrieval_accuracy, 2) == 0.51
    for n in c.values():
        assert n.accuracy is None and n.acc_db is None and n.refined_accuracy is None
        assert n.lambda_ is None and n.examples == 0 and n.pending_groups == 0
        assert n.retrieval_judged_by == {"given": n.retrieval_judged}
    text = render_text(r)
    assert "Answer accuracy unavailable for grammar/short, grammar/long" in text
    assert "0.287 (n=314)" in text and "0.514 (n=257)" in text
    # balancing the unequal forms per group (2 short; 1 or 3 long) gives the balanced files'
    # figures: Table 3 "balance gap examples" × "context comparison", 0.29 / 0.28
    b = r.targets["grammar"].balanced
    assert b is not None and b.available
    assert (b.forms_per_group, b.groups, b.retrieval_groups) == (3, 0, 157)
    assert b.sides["short"].retrieval_accuracy == pytest.approx(135 / 471)
    assert b.sides["long"].retrieval_accuracy == pytest.approx(132 / 471)
    assert b.sides["short"].accuracy is None


def test_balancing_unequal_forms_recovers_the_balanced_figures(aurp: tuple[Path, Path]) -> None:
    """The balanced files thinned to 1–3 forms per group and cohort at random (so λ differs:
    unbalanced sampling, as in 000 Table 3): the balanced accuracy comes back to the authors'
    0.27 / 0.28 with equal λ, while the plain accuracy does not."""
    obs = load_grammar_results(aurp[0], "short") + load_grammar_results(aurp[1], "long")
    rng = random.Random(1)
    by: dict[tuple[str, str], list[Observation]] = {}
    for o in obs:
        by.setdefault((o.cohort, o.group_id), []).append(o)
    thinned = []
    for key in sorted(by):
        n = rng.choice([1, 2, 3])
        thinned += [replace(o, group_forms=n) for o in by[key][:n]]
    t = build_report(thinned, compare=("short", "long"), balance_seed=1).targets["grammar"]
    lam = {c: n.lambda_ for c, n in t.cohorts.items()}
    assert lam["short"] is not None and lam["long"] is not None
    assert abs(lam["short"] - lam["long"]) > 0.02  # unbalanced
    b = t.balanced
    assert b is not None and b.seed == 1 and b.forms_per_group == 3
    assert b.sides["short"].lambda_ == b.sides["long"].lambda_ == pytest.approx(112 / 157)
    assert b.sides["short"].accuracy == pytest.approx(129 / 471, abs=0.01)
    assert b.sides["long"].accuracy == pytest.approx(130 / 471, abs=0.01)
    assert b.sides["short"].retrieval_accuracy == pytest.approx(135 / 471, abs=0.01)
    assert b.sides["long"].retrieval_accuracy == pytest.approx(132 / 471, abs=0.01)


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
    # no judgement in the file: not judged, whatever the response (never "wrong" by default)
    assert a.verdict is Verdict.UNDECIDED and b.verdict is Verdict.UNDECIDED
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

    from groundwatch.adapters.db.tables import Base, JudgementRow

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
