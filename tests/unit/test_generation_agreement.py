"""How a column's name is said: a plural noun agrees with its verb, a number named by one is a
count, a place qualified by what it is to the row is no place the row is in, a link's ends named
by their roles are facts of its row, and long forms compare the rows of a table, not a role.

An invented lending schema, so no rule for any dev schema's words can pass these."""

from __future__ import annotations

import re
import sqlite3

import pytest

from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.core.generation import default_verbalizers
from groundwatch.core.generation.naming import attribute_label, is_plural_noun
from groundwatch.core.generation.realize import word_count
from groundwatch.core.model import AnswerType, SemanticGroup

pytestmark = pytest.mark.unit
COHORTS = tuple(default_verbalizers())
#: a filled value, one word however many it has
_VALUE = re.compile(r"'[^']*'")


@pytest.mark.parametrize(
    ("column", "kind", "label"),
    [
        ("pages", AnswerType.NUMBER, "number of pages"),
        ("seat_rows", AnswerType.NUMBER, "number of seat rows"),
        ("categories", AnswerType.NUMBER, "number of categories"),
        ("pages", AnswerType.TEXT, "pages"),  # a list of pages, not a count
        ("duration_minutes", AnswerType.NUMBER, "duration minutes"),  # a measure in a unit
        ("sales", AnswerType.NUMBER, "sales"),  # an amount
        ("status", AnswerType.NUMBER, "status"),
        ("number_of_pages", AnswerType.NUMBER, "number of pages"),
        ("total_pages", AnswerType.NUMBER, "total pages"),
    ],
)
def test_a_number_named_by_a_plural_noun_is_a_count(
    column: str, kind: AnswerType, label: str
) -> None:
    assert attribute_label(column, kind) == label


def test_plural_nouns_are_told_from_singular_ones_ending_in_s() -> None:
    assert all(map(is_plural_noun, ["passengers", "interests", "categories", "boxes"]))
    assert not any(map(is_plural_noun, ["status", "address", "analysis", "series", "bus", "gas"]))


@pytest.fixture(scope="module")
def lending(tmp_path_factory: pytest.TempPathFactory) -> list[SemanticGroup]:
    """Members (a birth country, a country, interests), books (pages) and loans between two
    members, a lender and a borrower: one table referenced twice, by role."""
    db = tmp_path_factory.mktemp("lending") / "lending.db"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE member (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
        " birth_country TEXT NOT NULL, country TEXT NOT NULL, interests TEXT NOT NULL);"
        "CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT UNIQUE NOT NULL,"
        " pages INTEGER NOT NULL);"
        "CREATE TABLE loan (id INTEGER PRIMARY KEY,"
        " lender_id INTEGER NOT NULL REFERENCES member(id),"
        " borrower_id INTEGER NOT NULL REFERENCES member(id), lent DATE NOT NULL,"
        " copies INTEGER NOT NULL);"
    )
    countries = ["Chile", "Kenya", "Norway", "Japan", "Peru", "Ghana", "Spain"]
    hobbies = ["chess", "birds", "jazz", "maps", "tea"]
    con.executemany(
        "INSERT INTO member VALUES (?, ?, ?, ?, ?)",
        [(i + 1, f"Person {chr(65 + i)} Marsh", countries[i % 7], countries[i * 3 % 7],
          hobbies[i % 5]) for i in range(10)],
    )  # fmt: skip
    con.executemany(
        "INSERT INTO book VALUES (?, ?, ?)",
        [(i + 1, f"Volume {i}", 100 + 37 * i) for i in range(8)],
    )
    con.executemany(
        "INSERT INTO loan VALUES (?, ?, ?, ?, ?)",
        [(i + 1, 1 + i % 10, 1 + (i * 3 + 1) % 10, f"2021-0{1 + i % 9}-1{i % 9}", 1 + i % 4)
         for i in range(14)],
    )  # fmt: skip
    con.commit()
    con.close()
    return generate_groups(f"sqlite:///{db}", k=3, cohorts=COHORTS).groups


def _texts(groups: list[SemanticGroup], column: str) -> list[str]:
    return [f.text for g in groups if re.search(rf"\b{column}\b", g.sql) for f in g.forms]


def test_a_qualified_place_is_asked_as_a_fact_a_bare_one_as_where(
    lending: list[SemanticGroup],
) -> None:
    """ "in which birth country is the member" says the member is in it; "in which country" of a
    member's own country is where the member is."""
    born = " ".join(_texts(lending, "birth_country"))
    assert (
        born and "which birth country is the" not in born and "in which birth country" not in born
    )
    assert "in which country" in " ".join(_texts(lending, "country")).lower()


def test_a_plural_name_agrees_with_its_verb(lending: list[SemanticGroup]) -> None:
    said = _texts(lending, "interests")
    assert said and not any(re.search(r"interests (is|'s)\b|'s the interests|is the interests", t)
                            for t in said)  # fmt: skip
    assert any(re.search(r"interests are\b|are the interests", t) for t in said)


def test_a_count_is_asked_as_a_count_in_every_cohort(lending: list[SemanticGroup]) -> None:
    """ "confirm its pages", "which number of pages is recorded": neither fits a count."""
    said = [t for g in lending if g.sql.split()[1] == "pages" for t in (f.text for f in g.forms)]
    assert said
    for t in said:
        assert re.search(r"number of pages|how many pages", t, re.I), t
        assert not re.search(r"\b(which|what) number of\b", t, re.I), t


def test_ends_named_by_role_are_facts_of_the_link_row(lending: list[SemanticGroup]) -> None:
    """A loan between a lender and a borrower: "the loan with the lender named X and the borrower
    named Y", never "loan of lender X in borrower Y"; the long forms compare members."""
    own = [g for g in lending if g.sql.startswith("SELECT loan.") and "COUNT" not in g.sql]
    assert own
    for g in own:
        for f in g.forms:
            assert not re.search(r"\b(of|in) (the )?(lender|borrower)\b", f.text), f.text
            assert re.search(r"loan with (the )?(lender|borrower)", f.text), f.text
    by_role = [f.text for g in lending if "AS lender" in g.sql for f in g.forms]
    assert by_role and not any(re.search(r"the (lenders|borrowers)\b", t) for t in by_role)


def test_every_form_stays_in_its_cohort(lending: list[SemanticGroup]) -> None:
    """The wording changes keep each form in its linguistic form: long forms long, short ones
    short, interrogatives questions, directives without a question mark."""
    for g in lending:
        by = {c: [f.text for f in g.forms if f.cohort == c] for c in COHORTS}
        assert all(by.values()), g.sql
        assert all(word_count(t) >= 30 for t in by["long"])
        assert all(len(_VALUE.sub("X", t).split()) <= 14 for t in by["short"]), by["short"]
        assert all(t.endswith("?") for t in by["interrogative"])
        assert all(t.endswith(".") and "?" not in t for t in by["directives"])
