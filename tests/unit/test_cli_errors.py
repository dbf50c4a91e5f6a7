"""Issue 31: errors a person can act on — one line, the field path, the closest known name, the
allowed range; usage errors exit 2, and a feature that needs an LLM with none configured stops at
once (it retried for 97 s, wrote nothing and exited 0)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwatch.adapters.db.datasets import read_jsonl
from groundwatch.cli.main import app
from groundwatch.core.scenarios.spec import parse_scenario
from groundwatch.errors import ConfigError
from groundwatch.report.build import report_from_tagger
from groundwatch.report.gate import parse_rule, scope_errors
from tests.unit.test_group_results import tagger

pytestmark = pytest.mark.unit


def one_error_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, output
    assert "Traceback" not in output and "pydantic.dev" not in output
    return lines[0]


def _group_line() -> dict[str, object]:
    return {
        "group_id": "g1",
        "sql": "SELECT city FROM people WHERE name = :name",
        "params": {"name": "Ann"},
        "answer": {"values": ["Oslo"], "types": ["text"]},
        "forms": [{"form_id": "f1", "cohort": "short", "text": "City of Ann?"}],
    }


def test_a_bad_dataset_line_is_one_line_with_the_field_path(tmp_path: Path) -> None:
    good = _group_line()
    bad = _group_line() | {"answr": {"values": ["x"]}}
    bad["forms"] = [{"form_id": "f1", "cohort": 7, "text": "City?"}]
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError) as caught:
        read_jsonl(path)
    message = str(caught.value)
    assert message == (
        "line 2: not a semantic group: forms[0].cohort: Input should be a valid string;"
        " answr: unknown key (did you mean 'answer'?)"
    )
    targets = tmp_path / "t.yaml"
    targets.write_text("targets: [{name: t, type: callable, callable: 'x:y'}]\n")
    res = CliRunner().invoke(app, ["run", "--dataset", str(path), "--targets", str(targets),
                                   "--once", "--database-url", f"sqlite:///{tmp_path}/s.db"])  # fmt: skip
    assert res.exit_code == 2
    assert one_error_line(res.output).endswith("answr: unknown key (did you mean 'answer'?)")


def test_a_scenario_file_names_the_closest_key() -> None:
    from groundwatch.adapters.scenario_files import builtin_scenarios

    data = builtin_scenarios()["S1"].model_dump(mode="json", exclude_none=True)
    data["prompting"]["stratgy"] = data["prompting"].pop("strategy")
    with pytest.raises(
        ConfigError, match=r"prompting.stratgy: unknown key \(did you mean 'strategy'"
    ):
        parse_scenario(data, "x.yaml")


def test_gen_options_before_the_templates_subcommand_are_its_options(tmp_path: Path) -> None:
    db = tmp_path / "co.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
    con.executemany(
        "INSERT INTO people (name, city) VALUES (?, ?)",
        [(f"Person {i}", ["Oslo", "Lima", "Riga"][i % 3]) for i in range(30)],
    )
    con.commit()
    con.close()
    out = tmp_path / "t.yaml"
    res = CliRunner().invoke(
        app, ["gen", "--db", f"sqlite:///{db}", "templates", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "SELECT" in out.read_text()
    res = CliRunner().invoke(app, ["gen", "templates", "--out", str(out)])
    assert res.exit_code == 2 and "give exactly one of --db, --demo" in res.output


def test_fail_under_out_of_range_and_unknown_figure_are_refused() -> None:
    with pytest.raises(ValueError, match=r"acc_db=1.5: out of range \(allowed: 0 to 1\)"):
        parse_rule("long:acc_db=1.5", "min")
    with pytest.raises(ValueError, match=r"out of range \(allowed: at least 0\)"):
        parse_rule("gap_groups=-1", "max")
    with pytest.raises(ValueError, match=r"unknown figure 'acc_bd' \(did you mean 'acc_db'\?\)"):
        parse_rule("acc_bd=0.9", "min")
    assert parse_rule("gap_groups=12", "max").threshold == 12


def test_a_threshold_scoped_to_an_unknown_cohort_is_a_usage_error() -> None:
    rules = [parse_rule("lon:acc_db=0.9", "min"), parse_rule("prod/short:acc_db=0.9", "min")]
    errors = scope_errors(rules, {"t": ["short", "long"]})
    assert errors == [
        "--fail-under lon:acc_db >= 0.9: no cohort 'lon' (did you mean 'long'?); cohorts: long,"
        " short",
        "--fail-under prod/short:acc_db >= 0.9: no target 'prod'; targets: t",
    ]
    from groundwatch.cli.outputs import finish

    report = report_from_tagger(tagger())
    code = finish(report, rules=[parse_rule("xyz:acc_db=0.9", "min")], quiet=True)
    assert code == 2


def test_demo_refuses_a_misnamed_cohort_with_exit_2() -> None:
    res = CliRunner().invoke(app, ["demo", "--quiet", "--fail-under", "xyz:acc_db=0.9"])
    assert res.exit_code == 2
    assert "no cohort 'xyz'" in one_error_line(res.output)
    res = CliRunner().invoke(app, ["demo", "--quiet", "--fail-under", "long:acc_db=1.5"])
    assert res.exit_code == 2 and "out of range" in res.output


def _entry(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """(exit code, stderr) of the console entry ``groundwatch`` on ``argv``."""
    from groundwatch.cli.main import main

    monkeypatch.setattr("sys.argv", ["groundwatch", *argv])
    with pytest.raises(SystemExit) as ended:
        main()
    return int(ended.value.code or 0), capsys.readouterr().err


def test_an_option_the_chosen_mode_ignores_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(_group_line()) + "\n")
    targets = tmp_path / "t.yaml"
    targets.write_text("targets: [{name: t, type: callble, callable: 'x:y'}]\n")
    base = ["run", "--dataset", str(dataset), "--targets", str(targets)]
    cases = {
        ("--once", "--interval", "5"): "--interval goes with a continuous run, not with --once",
        ("--once", "--host", "0.0.0.0", "--port", "9000"): "--host, --port go with a continuous",
        ("--runs", "3"): "--runs goes with --once",
    }
    for extra, message in cases.items():
        code, err = _entry([*base, *extra], monkeypatch, capsys)
        assert code == 2, err
        assert message in one_error_line(err) and len(err.splitlines()) == 1
    code, err = _entry(["demo", "--quiet", "--port", "9000"], monkeypatch, capsys)
    assert code == 2
    assert "--port goes with --continuous" in one_error_line(err)
    # a setting from the environment is no contradiction typed here: the run goes on to the
    # targets file (whose misspelt type is the error), not to a refusal of --api-token
    monkeypatch.setenv("GW_API_TOKEN", "secret")
    code, err = _entry([*base, "--once"], monkeypatch, capsys)
    assert code == 2
    line = one_error_line(err)
    assert "api-token" not in line and "callble" in line


def test_an_llm_feature_without_an_llm_stops_at_once(tmp_path: Path) -> None:
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps({"d1": "Acme Robotics is based in Oslo."}))
    started = time.monotonic()
    res = CliRunner().invoke(
        app, ["gen", "--scenarios", "all", "--corpus", str(corpus), "--out", str(tmp_path / "s")]
    )
    assert res.exit_code == 2 and time.monotonic() - started < 30
    line = one_error_line(res.output)
    assert "needs an LLM" in line and "GW_LLM_BASE_URL" in line
    assert not (tmp_path / "s").exists()


def test_the_llm_judge_without_an_llm_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from groundwatch.app.bootstrap import load_judge

    monkeypatch.setenv("GW_JUDGE_LLM_ENABLED", "true")
    with pytest.raises(ConfigError, match=r"GW_JUDGE_LLM_ENABLED .* needs an LLM"):
        load_judge()
    monkeypatch.setenv("GW_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_judge().llm is not None


def test_a_misspelt_setting_variable_is_warned_about() -> None:
    from groundwatch.cli.settings_doc import unknown_variables

    lines = unknown_variables(
        {"GW_JUDGE_LLM_ENABLE": "true", "GW_DATABASE_URL": "sqlite://", "GW_TEST_X": "1",
         "GW_DEBUG": "1", "PATH": "/bin"}
    )  # fmt: skip
    assert lines == [
        "GW_JUDGE_LLM_ENABLE is not a groundwatch setting (did you mean 'GW_JUDGE_LLM_ENABLED'?);"
        " it is ignored"
    ]
    assert unknown_variables({"HOME": "/root"}) == []


def test_a_ratings_file_names_what_is_wrong(tmp_path: Path) -> None:
    from groundwatch.adapters.grammar_files import ImportFormatError, load_likert_ratings

    bad = tmp_path / "r.csv"
    bad.write_text("probe_id,ratng\nabc,3\n")
    with pytest.raises(ImportFormatError, match=r"got \['probe_id', 'ratng'\] \(rating: is it"):
        load_likert_ratings(bad)
    results = tmp_path / "short.json"
    results.write_text(json.dumps([{"query": "q", "query_tag": 1, "judgement": "Correct"}]))
    res = CliRunner().invoke(app, ["report", "-g", f"short={results}", "--ratings", "missing.csv"])
    assert res.exit_code == 2
    assert one_error_line(res.output) == "error: missing.csv: No such file or directory"


@pytest.mark.parametrize("command", ["report", "groups"])
def test_the_window_setting_is_read_and_checked_by_the_reading_commands(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GW_WINDOW_RUNS, the README's equivalent of --window-runs, was ignored by run, report,
    groups and show: 'abc' and -1 exited 0 with a window of one cycle."""
    for bad in ("abc", "-1"):
        monkeypatch.setenv("GW_WINDOW_RUNS", bad)
        result = CliRunner().invoke(app, [command])
        assert result.exit_code == 2, result.output
        assert "GW_WINDOW_RUNS" in result.output


def test_a_line_that_is_no_json_names_one_line_and_its_column(tmp_path: Path) -> None:
    """'line 4: not JSON: … line 2 column 1 (char 27)' named two lines: orjson's own count
    within the one line it was given."""
    path = tmp_path / "d.jsonl"
    good = json.dumps(_group_line())
    path.write_text(f"{good}\n\n{good}\n" + '{"group_id": "g2", "sql": "x"\n')
    with pytest.raises(ValueError) as err:
        read_jsonl(path)
    assert str(err.value) == "line 4, column 30: not JSON: unexpected end of data"
