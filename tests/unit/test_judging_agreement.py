"""`groundwatch judge-agreement` on the GRAMMAR authors' Aurp results, and on crafted files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from groundwatch.cli import judge_agreement
from groundwatch.cli.judge_agreement import load_results, measure_agreement
from groundwatch.core.judging import judge_deterministic
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


DEV_SET = Path(__file__).resolve().parents[1] / "data" / "judging" / "dev_set.json"
#: Classes whose answers say the gold another way: never to be called wrong.
_SAYS_THE_GOLD = {"variant", "paraphrase", "hypernym", "alias", "misspelling"}


def test_dev_set_agreement_precision_and_the_hard_rules() -> None:
    items = load_results(DEV_SET)
    assert len(items) >= 100 and all(i.kind and i.full is not None for i in items)
    report = measure_agreement(items)
    assert report.agreement >= 0.95, report.to_json()["disagreements"]
    # the classes the rules must leave to a reader (paraphrase, hypernym, hedge: the gold among
    # other candidates is no conclusive claim either way) keep coverage below 1
    assert report.coverage >= 0.70, report.to_json()
    assert (report.precision(Verdict.INCORRECT) or 0) >= 0.95
    assert (report.precision(Verdict.CORRECT) or 0) >= 0.95
    for item in items:
        d = judge_deterministic(item.query, item.expected, item.response)
        if item.kind == "hedge":
            assert d.verdict is not Verdict.CORRECT, (item.response, d.reason)
        if item.kind in _SAYS_THE_GOLD and item.judgement is Verdict.CORRECT:
            assert d.verdict is not Verdict.INCORRECT, (item.response, d.reason)


def test_cli_reports_per_file_precision_and_classes(tmp_path: Path) -> None:
    out = tmp_path / "dev.json"
    result = CliRunner().invoke(
        _app(), ["judge-agreement", str(DEV_SET), str(DEV_SET), "--json", str(out), "--show", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "precision of 'incorrect'" in result.output and "by item class" in result.output
    data = json.loads(out.read_text())
    (name,) = data["per_file"]  # the same file twice is one file's report
    per = data["per_file"][name]
    assert {"precision_correct", "precision_incorrect", "confusion", "coverage"} <= per.keys()
    assert set(per["by_class"]) >= {"hedge", "paraphrase", "wrong_value", "list", "partial"}
    said_incorrect = (
        per["confusion"]["correct"]["incorrect"] + per["confusion"]["incorrect"]["incorrect"]
    )
    assert per["precision_incorrect"] == per["confusion"]["incorrect"]["incorrect"] / said_incorrect


def test_expected_field_must_be_valid(tmp_path: Path) -> None:
    bad = _write(tmp_path, [{"query": "q", "expected": {"values": "x", "nope": 1},
                             "gpt_response": "x", "judgement": "Correct"}])  # fmt: skip
    with pytest.raises(GroundwatchError, match="expected"):
        load_results(bad)


EVOUNA_TQ = SHARED / "data" / "evouna-tq" / "TQ.json"
#: The rules before issue 29 on the same halves (each "/" alternative judged alone: correct if
#: any alternative was, incorrect only if all were): coverage per system and half.
COVERAGE_BEFORE = {
    ("fid", "dev"): 0.752, ("gpt35", "dev"): 0.721, ("chatgpt", "dev"): 0.772,
    ("gpt4", "dev"): 0.822, ("newbing", "dev"): 0.856,
    ("fid", "held_out"): 0.749, ("gpt35", "held_out"): 0.728, ("chatgpt", "held_out"): 0.782,
    ("gpt4", "held_out"): 0.837, ("newbing", "held_out"): 0.869,
}  # fmt: skip


def test_evouna_per_system_and_half() -> None:
    if not EVOUNA_TQ.exists():
        pytest.skip(f"EVOUNA TriviaQA file not found at {EVOUNA_TQ}")
    from groundwatch.cli.judge_agreement import measure_per_file

    per = measure_per_file(load_results(EVOUNA_TQ))
    assert len(per) == 10
    for (system, half), before in COVERAGE_BEFORE.items():
        r = per[f"TQ.json {system} {half}"]
        assert r.items > 900
        assert r.coverage >= before, (system, half, r.coverage)
        assert r.agreement >= 0.95, (system, half, r.agreement)
        incorrect = r.precision(Verdict.INCORRECT) or 1.0
        # on the dev half the target; the held-out half keeps within people's own label noise
        # (pure refusals some of them marked right)
        assert incorrect >= (0.90 if half == "dev" else 0.85), (system, half, incorrect)


def test_evouna_files_are_read_per_system_with_any_of_golds(tmp_path: Path) -> None:
    rows = [
        {"question": "Which country?", "golden_answer": "United Kingdom/UK/Great Britain (island)",
         "answer_fid": "Great Britain", "judge_fid": True,
         "answer_gpt4": "France", "judge_gpt4": False, "improper": False},
        {"question": "Set aside?", "golden_answer": "x", "answer_fid": "x", "judge_fid": True,
         "improper": True},
        {"question": "Which film?", "golden_answer": "Cancer (disease)/Malignant cancer/Cancer",
         "answer_fid": "", "judge_fid": False, "improper": False},
    ]  # fmt: skip
    path = _write(tmp_path, rows)  # type: ignore[arg-type]
    items = load_results(path)
    assert [(i.file.split()[1], i.response) for i in items] == [
        ("fid", "Great Britain"), ("gpt4", "France"), ("fid", None)
    ]  # fmt: skip
    uk = items[0].expected
    assert uk.values == ["United Kingdom"] and uk.alternatives == [["UK", "Great Britain"]]
    assert items[2].expected.values == ["Cancer"]  # the name the other alternatives elaborate
    report = measure_agreement(items)
    assert (report.items, report.skipped, report.agreed) == (2, 1, 2)
    result = CliRunner().invoke(_app(), ["judge-agreement", str(path), "--show", "0"])
    assert result.exit_code == 0 and "results.json fid" in result.output


def test_each_incorrect_is_counted_by_the_tier_that_said_it(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [
        # a refusal the reference calls right: a label to read, counted under its tier
        {"query": "Who?", "answer": "Ada", "gpt_response": "I don't know.", "judgement": "Correct"},
        {
            "query": "Who?",
            "answer": "Ada",
            "gpt_response": "I don't know.",
            "judgement": "Incorrect",
        },
        {
            "query": "How many?",
            "answer": "12",
            "gpt_response": "It is 14.",
            "judgement": "Incorrect",
        },
        {"query": "Who?", "answer": "Ada", "gpt_response": "Ada.", "judgement": "Correct"},
    ]
    out = tmp_path / "a.json"
    result = CliRunner().invoke(
        _app(), ["judge-agreement", str(_write(tmp_path, rows)), "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "'incorrect' by tier (reference agrees / said): refusal 1/2, typed 1/1" in result.output
    data = json.loads(out.read_text())
    by_tier = data["incorrect_by_tier"]
    assert by_tier == {"refusal": {"correct": 1, "incorrect": 1},
                       "typed": {"correct": 0, "incorrect": 1}}  # fmt: skip
    said = data["confusion"]["correct"]["incorrect"] + data["confusion"]["incorrect"]["incorrect"]
    assert sum(sum(v.values()) for v in by_tier.values()) == said
