"""``groundwatch traffic unmatched``: match rate and unmatched shapes of a file of questions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from groundwatch.cli.main import app
from tests.unit.traffic_questions import FLEET


def _dataset(tmp_path: Path) -> Path:
    db = tmp_path / "fleet.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(FLEET)
    out = tmp_path / "fleet.jsonl"
    res = CliRunner().invoke(app, ["gen", "--db", f"sqlite:///{db}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_unmatched_lists_the_frequent_shapes(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    records = tmp_path / "traffic.jsonl"
    lines = [
        "Rotterdam berths",
        "which ship is the fastest",
        "Which ship is the fastest?",
        "is Rotterdam bigger than Busan",
        json.dumps({"target": "shipbot", "question": "captain of Cape Kestrel", "answer": "x"}),
    ]
    records.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(app, ["traffic", "unmatched", str(dataset), str(records), "--json"])
    assert res.exit_code == 0, res.output
    view = json.loads(res.output)
    assert view["records"] == 5 and view["matched"] == 2
    assert view["shapes"][0] == {"shape": "which ship is the fastest", "count": 2}
    assert {"shape": "is {} bigger than {}", "count": 1} in view["shapes"]


def test_bad_records_and_missing_arguments_say_one_line(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"target": "shipbot"}\n')
    res = CliRunner().invoke(app, ["traffic", "unmatched", str(dataset), str(bad)])
    assert res.exit_code == 2 and "bad.jsonl:1: question" in res.output
    res = CliRunner().invoke(app, ["traffic", "unmatched"])
    assert res.exit_code == 2 and "give DATASET and RECORDS" in res.output
