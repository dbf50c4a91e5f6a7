"""`groundwatch run --source`: each cycle re-reads the SQL truth from the source database, so a
fact changed at the source and followed by the endpoint is no knowledge gap (without it, `run`
judged the endpoint's new answer against the answer generated before the change)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.integration._http_rag import answers_of, serve

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("groundwatch"))
CAPITALS = {
    "Aland": "Mariehamn", "Borduria": "Szohod", "Carpania": "Tiranov", "Dorvia": "Elmstad",
    "Estoria": "Valmont", "Freedonia": "Fredville", "Genovia": "Pyrus", "Hidalgo": "Corazon",
}  # fmt: skip


def _run(dataset: Path, targets: Path, store: Path, *extra: str) -> dict[str, Any]:
    out = store.with_suffix(".json")
    proc = subprocess.run(
        [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet",
         "--json", str(out), "--database-url", f"sqlite:///{store}", *extra],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(orjson.loads(out.read_bytes()))


def _robust(report: dict[str, Any]) -> set[int]:
    """Robust groups per cohort (a set: the same in every cohort when it has one value)."""
    return {int(c["robust_groups"]) for c in report["cohorts"].values()}


def _source_and_dataset(tmp_path: Path) -> tuple[Path, Path]:
    """The capitals source database and the dataset `groundwatch gen` makes from it."""
    src = tmp_path / "src.db"
    con = sqlite3.connect(src)
    con.execute("CREATE TABLE country (name TEXT PRIMARY KEY, capital TEXT NOT NULL)")
    con.executemany("INSERT INTO country VALUES (?, ?)", CAPITALS.items())
    con.commit()
    con.close()
    dataset = tmp_path / "d.jsonl"
    gen = subprocess.run([CLI, "gen", "--db", f"sqlite:///{src}", "--out", str(dataset)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert gen.returncode == 0, gen.stderr[-2000:]
    return src, dataset


def test_a_changed_fact_the_endpoint_follows_is_no_gap_with_source(tmp_path: Path) -> None:
    src, dataset = _source_and_dataset(tmp_path)
    answers = answers_of(dataset, lambda _gid: True)  # the endpoint knows every fact
    changed = [q for q, a in answers.items() if a == "Szohod"]
    assert changed, "no question about Borduria's capital was generated"
    with serve(answers) as url:
        targets = tmp_path / "t.yaml"
        targets.write_text(f"targets:\n  - {{name: rag, type: http_json, url: '{url}'}}\n")
        first = _run(dataset, targets, tmp_path / "a.db", "--source", f"sqlite:///{src}")
        assert _robust(first) == {len(CAPITALS)}
        # the fact changes at the source, and the endpoint's knowledge base follows it
        con = sqlite3.connect(src)
        con.execute("UPDATE country SET capital = 'Newhaven' WHERE name = 'Borduria'")
        con.commit()
        con.close()
        answers.update(dict.fromkeys(changed, "Newhaven"))
        second = _run(dataset, targets, tmp_path / "a.db", "--source", f"sqlite:///{src}")
        assert _robust(second) == {len(CAPITALS)}  # judged against the truth re-read now
        stale = _run(dataset, targets, tmp_path / "b.db")  # the dataset's answers as generated
        # "Newhaven" against the old "Szohod": the right answer is not called right
        assert _robust(stale) == {len(CAPITALS) - 1}


def test_a_source_that_is_not_the_datasets_database_is_refused(tmp_path: Path) -> None:
    _, dataset = _source_and_dataset(tmp_path)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE unrelated (a INTEGER)").connection.commit()
    targets = tmp_path / "t.yaml"
    targets.write_text(
        "targets:\n  - {name: rag, type: http_json, url: 'http://127.0.0.1:9/q?q={query}'}\n"
    )
    for source, says in (
        (f"sqlite:///{other}", "the dataset's SQL does not run on it"),
        (f"sqlite:///{tmp_path / 'missing.db'}", "no such file"),
        ("not a url", "not a database URL"),
    ):
        proc = subprocess.run(
            [CLI, "run", "--dataset", str(dataset), "--targets", str(targets), "--once",
             "--source", source, "--database-url", f"sqlite:///{tmp_path / 's.db'}"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --source: ") and says in lines[0]
