"""A sentence-picking reader over a database of our own (issue 29): it always answers about the
right entity, and for some forms with a sentence that gives the entity's *other* attributes
("Robert King's phone is …, and his city is Lethbridge." asked for his title). Generated from
the database, probed through the embedded pipeline, judged by the rules alone: the wrong forms
are decided wrong (not left undecided), so the groups it answers both ways are non-robust."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.sources import generate_groups
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.model import SemanticGroup, Verdict
from groundwatch.core.tagging import GroupStatus, Tagger
from groundwatch.stages.runner.lanes import Runner

pytestmark = pytest.mark.unit

FIRST = ["Robert", "Nancy", "Andrew", "Janet", "Margaret", "Steven", "Laura", "Anne", "Michael",
         "Olivia", "Tomas", "Ingrid"]  # fmt: skip
LAST = ["King", "Davolio", "Fuller", "Leverling", "Peacock", "Buchanan", "Callahan", "Dodsworth",
        "Suyama", "Brandt", "Novak", "Larsen"]  # fmt: skip
TITLES = ["Sales Representative", "Vice President Sales", "Inside Sales Coordinator",
          "Sales Manager"]  # fmt: skip
CITIES = ["Lethbridge", "Calgary", "Winnipeg", "Kirkland", "Redmond"]
REGIONS = ["Western Prairies", "Pacific Northwest", "Great Lakes"]
COLUMNS = ("name", "title", "city", "phone", "region")
_SINGLE_ROW = re.compile(r"SELECT (\w+) FROM employees WHERE (\w+) = :(\w+)\s*;?\s*$", re.I)


def _rows() -> list[dict[str, str]]:
    return [
        {
            "name": f"{FIRST[i]} {LAST[i]}",
            "title": TITLES[i % len(TITLES)],
            "city": CITIES[(i * 3) % len(CITIES)],
            "phone": f"(71) 555-{4000 + 37 * i}",
            "region": REGIONS[(i * 5) % len(REGIONS)],
        }
        for i in range(len(FIRST))
    ]


def _database(path: Path) -> str:
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                "title TEXT NOT NULL, city TEXT NOT NULL, phone TEXT UNIQUE NOT NULL, "
                "region TEXT NOT NULL)"
            )
        )
        for i, row in enumerate(_rows()):
            conn.execute(
                text("INSERT INTO employees VALUES (:i, :name, :title, :city, :phone, :region)"),
                {"i": i + 1, **row},
            )
    engine.dispose()
    return url


class SentenceReader:
    """Answers every form with a sentence about the right row: the asked column's sentence for
    the first form of each cohort, a sentence of two *other* columns for the rest."""

    def __init__(self, groups: list[SemanticGroup]) -> None:
        rows = _rows()
        self.answers: dict[str, str] = {}
        self.wrong: set[str] = set()
        for g in groups:
            m = _SINGLE_ROW.match(g.sql.strip())
            assert m is not None
            asked, key, param = m.groups()
            row = next(r for r in rows if r[key] == str(g.params[param]))
            others = [c for c in COLUMNS if c not in (asked, key) and row[c] != row[asked]]
            seen: dict[str, int] = {}
            for f in g.forms:
                i = seen[f.cohort] = seen.get(f.cohort, -1) + 1
                who = row["name"] if key == "name" else f"The employee with {key} {row[key]}"
                if i == 0:
                    self.answers[f.text] = f"{who}'s {asked} is {row[asked]}."
                else:
                    a, b = others[(i - 1) % len(others)], others[i % len(others)]
                    self.answers[f.text] = f"{who}'s {a} is {row[a]}, and the {b} is {row[b]}."
                    self.wrong.add(f.text)

    def __call__(self, query: str) -> str:
        return self.answers[query]


def _single_row_groups(url: str) -> list[SemanticGroup]:
    groups = generate_groups(url, k=3, cohorts=("short", "long")).groups
    return [g for g in groups if _SINGLE_ROW.match(g.sql.strip()) and "text" in g.answer.types]


def _probe(groups: list[SemanticGroup], reader: SentenceReader) -> Tagger:
    async def go() -> Tagger:
        runner = Runner({"reader": CallableTarget(reader)}, {"reader": TargetLimits(concurrency=8)})
        pipeline = EmbeddedPipeline(groups, runner)
        await pipeline.start()
        try:
            result = await pipeline.run(1)
        finally:
            await pipeline.stop()
        return result.tagger

    return asyncio.run(go())


def recall_and_wrong_decided(groups: list[SemanticGroup]) -> tuple[float, float, int]:
    """(non-robust recall, share of the wrong forms decided wrong, wrong forms)."""
    reader = SentenceReader(groups)
    tagger = _probe(groups, reader)
    verdicts: dict[str, Any] = {}
    for o in tagger.counted_observations():
        verdicts[o.form_id] = o.verdict
    form_text = {f.form_id: f.text for g in groups for f in g.forms}
    wrong = [fid for fid, t in form_text.items() if t in reader.wrong]
    decided_wrong = sum(1 for fid in wrong if str(verdicts.get(fid)) == "incorrect")
    cohorts = [(g.group_id, c) for g in groups for c in {f.cohort for f in g.forms}]
    non_robust = sum(
        1 for gid, c in cohorts if tagger.status("reader", c, gid) is GroupStatus.NON_ROBUST
    )
    return non_robust / len(cohorts), decided_wrong / len(wrong), len(wrong)


def test_a_sentence_picking_reader_is_decided_wrong_and_non_robust(tmp_path: Path) -> None:
    groups = _single_row_groups(_database(tmp_path / "staff.db"))
    assert len(groups) >= 20
    # generation gave each group the asked row's other values and the column's whole domain
    assert all(g.answer.attributes for g in groups)
    recall, decided, wrong = recall_and_wrong_decided(groups)
    assert wrong >= 40
    assert decided >= 0.95, decided
    # every group is answered right by one form and wrong by the others in each cohort
    assert recall >= 0.95, recall


# -- a reader over two tables: the named row's other values of every type, through a join -------

LIBRARIES = [("Bodleian", "Oxford"), ("Marciana", "Venice"), ("Strahov", "Prague")]
#: title, author, pages, acquired (the book is in library i % 3)
BOOKS = [
    (f"Codex {w}", ["Ana Ruiz", "Li Wei", "Omar Haddad", "Eva Novak"][i % 4], 120 + 37 * i,
     dt.date(1961 + 2 * i, 1 + i % 12, 3 + i))
    for i, w in enumerate(["Aurelius", "Borgia", "Corvinus", "Dunstan", "Eadwine", "Falconer",
                           "Gervase", "Hildegard", "Isidore", "Jerome"])
]  # fmt: skip


def _library(path: Path) -> tuple[str, dict[str, dict[str, str]]]:
    """A database of books in libraries, and each named row's values by its name, as text."""
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    rows: dict[str, dict[str, str]] = {}
    with engine.begin() as conn:
        conn.execute(
            text("CREATE TABLE library (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                 "city TEXT NOT NULL)")
        )  # fmt: skip
        conn.execute(
            text("CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT UNIQUE NOT NULL, "
                 "library_id INTEGER NOT NULL REFERENCES library(id), author TEXT NOT NULL, "
                 "pages INTEGER NOT NULL, acquired DATE NOT NULL)")
        )  # fmt: skip
        for i, (name, city) in enumerate(LIBRARIES):
            conn.execute(
                text("INSERT INTO library VALUES (:i, :n, :c)"), {"i": i, "n": name, "c": city}
            )
            rows[name] = {"city": city}
        for i, (title, author, pages, acquired) in enumerate(BOOKS):
            conn.execute(
                text("INSERT INTO book VALUES (:i, :t, :l, :a, :p, :d)"),
                {"i": i, "t": title, "l": i % 3, "a": author, "p": pages, "d": acquired},
            )
            rows[title] = {"author": author, "pages": str(pages), "acquired": acquired.isoformat()}
    engine.dispose()
    return url, rows


def _say(value: str) -> str:
    """A value as a reader writes it: a day in words, a number with its thousands separator."""
    if len(value) == 10 and value[4] == "-":
        return dt.date.fromisoformat(value).strftime("%-d %B %Y")
    return f"{int(value):,}" if value.isdigit() else value


def test_a_reader_giving_the_named_rows_other_values_is_wrong_through_joins_and_aggregates(
    tmp_path: Path,
) -> None:
    url, rows = _library(tmp_path / "books.db")
    groups = generate_groups(url, k=3, cohorts=("short",)).groups
    decided: dict[str, list[str]] = {"single": [], "join": [], "aggregate": []}
    for g in groups:
        named = str(next(iter(g.params.values())))
        row = rows[named]
        gold = g.answer.values[0]
        others = [_say(v) for v in row.values() if v != gold]
        if not others:
            continue
        kind = (
            "aggregate"
            if "(" in g.sql.split("FROM")[0]
            else "join"
            if "JOIN" in g.sql
            else "single"
        )
        for i, f in enumerate(g.forms):
            right = judge_deterministic(
                f.text, g.answer, f"The records give {_say(gold)} for {named}."
            )
            assert right.verdict is Verdict.CORRECT, (g.sql, f.text, right.reason)
            wrong = [
                f"{named} is listed with {', '.join(others)}.",
                f"The records give {others[i % len(others)]} for {named}.",
                f"According to the catalogue, {named}: {' / '.join(others)}.",
            ][i % 3]
            d = judge_deterministic(f.text, g.answer, wrong)
            assert d.verdict is Verdict.INCORRECT, (g.sql, f.text, wrong, d.reason)
            decided[kind].append(d.reason.split(":")[0])
    # every kind of template met, and the rows' other values named as the reason where the gold
    # is a name (a number or date gold may be told wrong by its own mismatch first)
    assert all(decided.values()), {k: len(v) for k, v in decided.items()}
    assert set(decided["join"]) == {"other_attribute"}, decided["join"]
