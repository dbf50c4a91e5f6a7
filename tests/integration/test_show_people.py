"""``show`` prints a person's verdict (who, when, the note) beside the judge's, as the view does,
and ``groups`` counts a group as the view's page does: ``show`` printed the judge's
"incorrect" beside its reason for an answer a person had marked right in the view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db import human_verdicts as hv
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.app.store import open_store
from groundwatch.app.view import StoreReads
from groundwatch.cli.main import app
from groundwatch.report.groups import group_results
from tests.integration._retention_series import write_series

pytestmark = pytest.mark.integration

#: the series' group whose first form of each cohort the judge marked incorrect
GROUP = "g00000"
FORM = "g00000-short-0"


@pytest.fixture
def marked_store(tmp_path: Path) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    engine = make_engine(url)
    create_schema(engine)
    write_series(engine, cycles=1, groups=3)
    with engine.connect() as conn:
        probe = str(
            conn.execute(select(JudgementRow.probe_id).where(JudgementRow.form_id == FORM)).scalar()
        )
    assert hv.judge_verdict(engine, probe) == "incorrect"
    hv.add(engine, probe, "correct", "the  rounding is\nright", "ada", "incorrect")
    engine.dispose()
    return url, probe


def test_show_prints_the_persons_verdict_beside_the_judges(
    marked_store: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, probe = marked_store
    monkeypatch.delenv("GW_DATABASE_URL", raising=False)
    res = CliRunner().invoke(app, ["show", GROUP, "--database-url", url])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert any(line.startswith("people: 1 answer marked in the view (1 unlike") for line in lines)
    (row,) = [line for line in lines if FORM.split("-")[1] in line and "correct (ada, " in line]
    assert "incorrect" in row.split("correct (ada, ")[0]  # the judge's, before the person's
    assert "  short " + FORM + ": ada: the rounding is right" in lines
    others = [line for line in lines if "(ada, " in line]
    assert others == [row]  # the other forms carry no person

    res = CliRunner().invoke(app, ["show", GROUP, "--database-url", url, "--json", "-"])
    assert res.exit_code == 0, res.output
    forms = {f["probe_id"]: f for g in _json_list(res.output) for f in g["forms"]}
    person = forms[probe]["person"]
    assert forms[probe]["verdict"] == "correct"  # what the tallies count
    assert (person["verdict"], person["who"], person["judge"]) == ("correct", "ada", "incorrect")
    assert person["at"].endswith("Z") and person["note"] == "the  rounding is\nright"
    assert all(f["person"] is None for p, f in forms.items() if p != probe)


def test_groups_counts_a_marked_group_as_the_views_page(
    marked_store: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = marked_store
    monkeypatch.delenv("GW_DATABASE_URL", raising=False)
    monkeypatch.delenv("GW_WINDOW_RUNS", raising=False)
    res = CliRunner().invoke(app, ["groups", "--database-url", url, "--json", "-"])
    assert res.exit_code == 0, res.output
    listed = {g["group_id"]: g for g in json.loads(res.output)["groups"]}[GROUP]

    store = open_store(url, "--database-url")
    try:
        reads = StoreReads(store, None, 1)()
        _, (viewed,) = group_results(reads.tagger, evidence=reads.evidence, group_id=GROUP)
    finally:
        store.close()
    keys = ("status", "cohort_status", "correct", "incorrect", "errors", "undecided")
    assert {k: listed[k] for k in keys} == {k: getattr(viewed, k) for k in keys}
    assert listed["cohort_status"]["short"] == "robust"  # the person's correction counted
    assert listed["correct"] == 5 and listed["incorrect"] == 1


def _json_list(text: str) -> list[dict[str, object]]:
    data = json.loads(text)
    return data if isinstance(data, list) else [data]
