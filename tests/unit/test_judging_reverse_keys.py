"""The rows that reference the named row (one foreign key away, the other way round) are its
evidence too: a reader that picked the sentence of a club's player answers a question about the
club with the player's values, a wrong answer that says where its value came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.sources import generate_groups
from groundwatch.core.generation.candidates import (
    AMBIGUOUS_ROW,
    REFERENCING_ROWS,
    AttributesQuery,
    referencing_attributes,
)
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.model import MAX_ATTRIBUTES, AnswerType, Verdict

pytestmark = pytest.mark.unit

T, N = AnswerType.TEXT, AnswerType.NUMBER
_CLUBS = [("Harbour Rovers", "Tallinn"), ("Valley United", "Riga"), ("Northgate", "Vilnius")]
_PLAYERS = [
    ("Ilse Maarand", "keeper", 0), ("Pia Roosna", "winger", 0), ("Kai Tamm", "striker", 0),
    ("Eha Kask", "libero", 0), ("Mart Lepp", "sweeper", 0),  # five players: more than the bound
    ("Anu Ozola", "keeper", 1), ("Juris Berzins", "winger", 1),
    ("Ruta Jonaite", "striker", 2),
]  # fmt: skip


def _clubs(path: Path, *, reverse: bool = False) -> str:
    """Clubs and their players: a player's row references its club, the club references nothing
    (``reverse``: the players stored in the other order)."""
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE club (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                          "city TEXT NOT NULL)"))  # fmt: skip
        conn.execute(text("CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                          "position TEXT NOT NULL, club_id INTEGER NOT NULL REFERENCES club(id))"))  # fmt: skip
        for i, (n, c) in enumerate(_CLUBS):
            conn.execute(text("INSERT INTO club VALUES (:i, :n, :c)"), {"i": i, "n": n, "c": c})
        for i, (n, p, c) in enumerate(_PLAYERS[::-1] if reverse else _PLAYERS):
            conn.execute(
                text("INSERT INTO player VALUES (:i, :n, :p, :c)"), {"i": i, "n": n, "p": p, "c": c}
            )
    engine.dispose()
    return url


@pytest.fixture(scope="module")
def clubs(tmp_path_factory: pytest.TempPathFactory) -> list:  # type: ignore[type-arg]
    return generate_groups(
        _clubs(tmp_path_factory.mktemp("clubs") / "c.db"), k=1, cohorts=("short",)
    ).groups


def _city_of(clubs: list, club: str):  # type: ignore[no-untyped-def,type-arg]
    return next(
        g
        for g in clubs
        if club in g.params.values() and g.sql.split("FROM")[0].strip().endswith("city")
        and "FROM club" in g.sql
    )  # fmt: skip


def test_a_referencing_rows_value_is_the_other_attribute_it_came_from(
    clubs: list,  # type: ignore[type-arg]
) -> None:
    g = _city_of(clubs, "Valley United")
    sources = dict(zip(g.answer.attributes, g.answer.attribute_sources, strict=True))
    assert sources.get("Anu Ozola") == "player.name", sources
    assert sources.get("winger") == "player.position", sources
    q = g.forms[0].text
    d = judge_deterministic(q, g.answer, "It is Anu Ozola.")
    assert d.verdict is Verdict.INCORRECT, d.reason
    assert d.reason.startswith("other_attribute:") and "from player.name" in d.reason, d.reason
    right = judge_deterministic(q, g.answer, "Valley United plays in Riga.")
    assert right.verdict is Verdict.CORRECT, right.reason


def test_the_referencing_rows_are_bounded_per_entity_and_stable(
    clubs: list,  # type: ignore[type-arg]
    tmp_path: Path,
) -> None:
    g = _city_of(clubs, "Harbour Rovers")
    names = [a for a, s in zip(g.answer.attributes, g.answer.attribute_sources, strict=True)
             if s == "player.name"]  # fmt: skip
    assert len(names) == REFERENCING_ROWS, names  # five players, three kept
    assert set(names) <= {p for p, _, c in _PLAYERS if c == 0}
    # the rows kept are the database's to say, not the order it returns them in
    again = generate_groups(
        _clubs(tmp_path / "again.db", reverse=True), k=1, cohorts=("short",)
    ).groups
    assert set(_city_of(again, "Harbour Rovers").answer.attributes) == set(g.answer.attributes)


def test_referencing_values_keep_the_groups_bound_and_skip_an_ambiguous_key() -> None:
    own = tuple(f"v{i}" for i in range(MAX_ATTRIBUTES - 2))
    rows_map = {
        ("A",): (own, (T,) * len(own), ("t.c",) * len(own)),
        ("B",): AMBIGUOUS_ROW,  # a key two rows share: no one row
        ("C",): ((), (), ()),  # a row that states nothing else: its referencing rows only
    }
    query = AttributesQuery("", 1, (T, N), ("r.name", "r.size"))
    rows = [("A", f"name{i}", i) for i in range(10)] + [("B", "x", 1), (None, "y", 2)]
    rows += [("C", "solo", 7), ("D", "unknown key", 8)]
    referencing_attributes(rows_map, rows, query)
    values, kinds, sources = rows_map[("A",)]
    assert len(values) == MAX_ATTRIBUTES and values[: len(own)] == own
    assert len(kinds) == len(sources) == MAX_ATTRIBUTES
    assert set(sources[len(own) :]) <= {"r.name", "r.size"}
    assert rows_map[("B",)] is AMBIGUOUS_ROW
    assert rows_map[("C",)] == (("solo", "7"), (T, N), ("r.name", "r.size"))
    assert ("D",) not in rows_map


def test_referencing_values_keep_the_templates_bound() -> None:
    rows_map = {(k,): (("own",), (T,), ("t.c",)) for k in "ABC"}
    query = AttributesQuery("", 1, (T,), ("r.name",))
    referencing_attributes(rows_map, [(k, f"n{k}") for k in "ABC"], query, max_values=5)
    assert sum(len(v[0]) for v in rows_map.values()) == 5


def _with_agents(path: Path) -> str:
    """Clubs whose players each have an agent (a player's row names its agent and its club)."""
    url = _clubs(path)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE agent (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)"))
        conn.execute(text("INSERT INTO agent VALUES (1, 'Mirta Saar'), (2, 'Oskar Vaher')"))
        conn.execute(text("ALTER TABLE player ADD COLUMN agent_id INTEGER REFERENCES agent(id)"))
        conn.execute(text("UPDATE player SET agent_id = 1 + id % 2"))
    engine.dispose()
    return url


def test_the_rows_a_referencing_row_names_are_evidence_two_keys_away(tmp_path: Path) -> None:
    groups = generate_groups(_with_agents(tmp_path / "a.db"), k=1, cohorts=("short",)).groups
    g = _city_of(groups, "Northgate")  # one player, Ruta Jonaite (id 7): agent 2
    sources = dict(zip(g.answer.attributes, g.answer.attribute_sources, strict=True))
    assert sources.get("Ruta Jonaite") == "player.name", sources
    assert sources.get("Oskar Vaher") == "agent.name", sources
    assert "Mirta Saar" not in sources  # another player's agent: not this club's
    d = judge_deterministic(g.forms[0].text, g.answer, "The records say Oskar Vaher.")
    assert d.verdict is Verdict.INCORRECT, d.reason
    assert "from agent.name" in d.reason, d.reason
