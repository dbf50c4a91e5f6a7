"""`groundwatch judge-agreement` on the GRAMMAR authors' Aurp results, and on crafted files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from groundwatch.cli import judge_agreement
from groundwatch.cli.judge_agreement import load_results, measure_agreement
from groundwatch.core.model import Verdict
from groundwatch.errors import GroundwatchError

pytestmark = pytest.mark.unit

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
AURP = SHARED / "data" / "grammar-aurp"


def _aurp_files() -> list[Path]:
    # The balanced files carry the RAG responses and GPT judgements; the unbalanced ones only
    # retrieval judgements (no response to judge).
    files = sorted(AURP.glob("eval_results_*_balanced.json"))
    if not files:
        pytest.skip(f"GRAMMAR Aurp result files not found under {AURP}")
    return files


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """test root"""

    judge_agreement.register(app)
    return app


def test_must_show_coverage_and_agreement_on_aurp() -> None:
    items = [i for f in _aurp_files() for i in load_results(f)]
    report = measure_agreement(items)
    assert report.items == sum(1 for i in items if i.response is not None)
    assert report.skipped == sum(1 for i in items if i.response is None)
    assert report.items > 200
    assert report.coverage >= 0.80, report.to_json()
    assert report.agreement >= 0.95, report.to_json()
    # both kinds of verdict are decided, not only the easy "correct" ones
    assert report.confusion[("incorrect", "incorrect")] >= 5


def test_cli_prints_and_writes_json(tmp_path: Path) -> None:
    files = _aurp_files()
    out = tmp_path / "agreement.json"
    result = CliRunner().invoke(_app(), ["judge-agreement", *map(str, files), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "coverage" in result.output
    data = json.loads(out.read_text())
    assert {"coverage", "agreement", "decided", "items"} <= data.keys()
    assert data["coverage"] >= 0.8 and data["agreement"] >= 0.95
    assert data["decided"] == sum(sum(v for k, v in row.items() if k != "undecided")
                                  for row in data["confusion"].values())  # fmt: skip


def _write(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(rows))
    return path


def test_response_forms_string_list_null(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            {"query": "Who?", "answer": "Ada", "gpt_response": "Ada.", "judgement": "Correct"},
            {"query": "Who?", "answer": "Ada", "gpt_response": ["It is", "Ada."],
             "judgement": "Correct"},
            {"query": "Who?", "answer": "Ada", "gpt_response": None, "judgement": "Incorrect"},
            {"query": "Who?", "answer": "Ada", "gpt_response": "I don't know.",
             "judgement": "Correct"},  # the file's judge was wrong here: a disagreement
        ],
    )  # fmt: skip
    report = measure_agreement(load_results(path))
    assert (report.items, report.skipped, report.decided, report.agreed) == (3, 1, 3, 2)
    assert report.agreement == pytest.approx(2 / 3)
    assert report.confusion[("correct", "incorrect")] == 1
    (item, decision) = report.disagreements[0]
    assert item.judgement is Verdict.CORRECT and decision.tier == "refusal"


def test_bad_files_are_reported(tmp_path: Path) -> None:
    bad = _write(tmp_path, [{"query": "q", "judgement": "Maybe"}])
    with pytest.raises(GroundwatchError, match="Correct"):
        load_results(bad)
    result = CliRunner().invoke(_app(), ["judge-agreement", str(bad)])
    assert result.exit_code == 2
    result = CliRunner().invoke(_app(), ["judge-agreement", str(bad), "--tiers", "magic"])
    assert result.exit_code == 2


def test_cli_dry_run_estimates_llm_spend_for_the_undecided(tmp_path: Path) -> None:
    files = _aurp_files()
    out = tmp_path / "a.json"
    result = CliRunner().invoke(
        _app(), ["judge-agreement", *map(str, files), "--dry-run", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "nothing was sent" in result.output
    data = json.loads(out.read_text())
    undecided = data["items"] - data["decided"]
    assert 0 < data["llm_dry_run"]["calls"] <= undecided
    assert data["llm_dry_run"]["tokens"] > 50 * data["llm_dry_run"]["calls"]
