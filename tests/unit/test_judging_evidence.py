"""The database as the judge's evidence, and a claim read as a person reads it: one test per class
of answer a sentence-picking reader gives (the entity's neighbour's value, another entity's value
of the asked kind, the gold inside a longer value), and of how an answer is written (citation
markers, glued footnotes, "this one", a count's 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from groundwatch.adapters.sources import generate_groups
from groundwatch.core.generation.candidates import kind_word
from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.citations import read_citations
from groundwatch.core.model import AnswerType, ColumnDomain, Expected, Verdict

pytestmark = pytest.mark.unit

T, N = AnswerType.TEXT, AnswerType.NUMBER


# -- the right entity's neighbour, one or two foreign keys away --------------------------------


def _music(path: Path) -> str:
    """Artists, their labels, albums and tracks: an album is one key from its artist and two
    from the artist's label; employees and customers both have a city."""
    url = f"sqlite:///{path}"
    engine = create_engine(url)
    with engine.begin() as conn:
        for ddl in (
            "CREATE TABLE label (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)",
            "CREATE TABLE artist (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
            "label_id INTEGER NOT NULL REFERENCES label(id))",
            "CREATE TABLE album (id INTEGER PRIMARY KEY, title TEXT UNIQUE NOT NULL, "
            "artist_id INTEGER NOT NULL REFERENCES artist(id), genre TEXT NOT NULL)",
            "CREATE TABLE employee (id INTEGER PRIMARY KEY, last_name TEXT UNIQUE NOT NULL, "
            "city TEXT NOT NULL)",
            "CREATE TABLE customer (id INTEGER PRIMARY KEY, full_name TEXT UNIQUE NOT NULL, "
            "billing_city TEXT NOT NULL)",
        ):
            conn.execute(text(ddl))
        labels = ["Harmonia Mundi", "Deutsche Grammophon", "Nonesuch"]
        artists = ["Kent Nagano", "Martha Argerich", "Kronos Quartet", "Anne Akiko Meyers"]
        genres = ["Classical", "Opera", "Chamber", "Soundtrack"]
        for i, n in enumerate(labels):
            conn.execute(text("INSERT INTO label VALUES (:i, :n)"), {"i": i, "n": n})
        for i, n in enumerate(artists):
            conn.execute(
                text("INSERT INTO artist VALUES (:i, :n, :l)"), {"i": i, "n": n, "l": i % 3}
            )
        for i, t in enumerate(["Seven Deadly Sins", "Gaspard", "Black Angels", "Air", "Nocturnes",
                               "Quartets", "Mirrors", "Elegies"]):  # fmt: skip
            conn.execute(
                text("INSERT INTO album VALUES (:i, :t, :a, :g)"),
                {"i": i, "t": t, "a": i % 4, "g": genres[(i * 3) % 4]},
            )
        for i, (n, c) in enumerate([("Peacock", "Calgary"), ("Callahan", "Lethbridge"),
                                    ("King", "Edmonton"), ("Fuller", "Calgary")]):  # fmt: skip
            conn.execute(text("INSERT INTO employee VALUES (:i, :n, :c)"), {"i": i, "n": n, "c": c})
        for i, (n, c) in enumerate([("Ladislav Kovacs", "Budapest"), ("Eva Novak", "Prague"),
                                    ("Luis Rojas", "Santiago"), ("Mia Berg", "Oslo")]):  # fmt: skip
            conn.execute(text("INSERT INTO customer VALUES (:i, :n, :c)"), {"i": i, "n": n, "c": c})
    engine.dispose()
    return url


@pytest.fixture(scope="module")
def music(tmp_path_factory: pytest.TempPathFactory) -> list:  # type: ignore[type-arg]
    return generate_groups(
        _music(tmp_path_factory.mktemp("music") / "m.db"), k=1, cohorts=("short",)
    ).groups


def test_the_entitys_neighbour_two_keys_away_is_the_other_attribute_it_came_from(
    music: list,  # type: ignore[type-arg]
) -> None:
    genre = [g for g in music if g.sql.split("FROM")[0].strip().endswith("genre")]
    assert genre, [g.sql for g in music]
    g = next(x for x in genre if x.params and "Seven Deadly Sins" in x.params.values())
    sources = dict(zip(g.answer.attributes, g.answer.attribute_sources, strict=True))
    # the album's artist (one key away) and the artist's label (two) are the album's evidence
    assert sources["Kent Nagano"] == "artist.name"
    assert sources["Harmonia Mundi"] == "label.name"
    q = g.forms[0].text
    for said, where in (
        ("The artist of the album Seven Deadly Sins is Kent Nagano.", "artist.name"),
        ("Seven Deadly Sins was released on Harmonia Mundi [2].", "label.name"),
    ):
        d = judge_deterministic(q, g.answer, said)
        assert d.verdict is Verdict.INCORRECT, (said, d.reason)
        assert d.reason.startswith("other_attribute:") and f"from {where}" in d.reason, d.reason
    right = judge_deterministic(q, g.answer, f"The album's genre is {g.answer.values[0]}.")
    assert right.verdict is Verdict.CORRECT, right.reason


def test_another_entitys_value_of_the_asked_kind_is_wrong_and_says_whose(
    music: list,  # type: ignore[type-arg]
) -> None:
    city = next(g for g in music if "Peacock" in g.params.values() and "city" in g.sql)
    dom = city.answer.domain[0]
    assert dom is not None and "Budapest" in dom.kin
    assert dict(zip(dom.kin, dom.kin_sources, strict=True))["Budapest"] == "customer.billing_city"
    said = "The city of the customer Ladislav Kovacs (postal code H-1073) is Budapest."
    d = judge_deterministic(city.forms[0].text, city.answer, said)
    assert d.verdict is Verdict.INCORRECT, d.reason
    assert "from customer.billing_city" in d.reason, d.reason
    right = judge_deterministic(city.forms[0].text, city.answer, "Peacock works in Calgary.")
    assert right.verdict is Verdict.CORRECT, right.reason


def test_an_answer_about_another_entity_is_wrong_and_the_gold_said_of_it_is_no_claim(
    music: list,  # type: ignore[type-arg]
) -> None:
    g = next(
        x
        for x in music
        if "Seven Deadly Sins" in x.params.values()
        and x.sql.split("FROM")[0].strip().endswith("genre")
    )
    assert g.answer.entity_domain is not None and g.answer.entity_source == "album.title"
    q, gold = g.forms[0].text, g.answer.values[0]
    d = judge_deterministic(q, g.answer, "The album Gaspard was recorded by Martha Argerich.")
    assert d.verdict is Verdict.INCORRECT, d.reason
    assert d.reason.startswith("other_entity: 'gaspard' from album.title"), d.reason
    # the gold said of another album answers that album's question, not this one's
    said_of_other = judge_deterministic(q, g.answer, f"The genre of the album Gaspard is {gold}.")
    assert said_of_other.verdict is not Verdict.CORRECT, said_of_other.reason
    both = f"Seven Deadly Sins is {gold}, as is Gaspard."
    assert judge_deterministic(q, g.answer, both).verdict is Verdict.CORRECT


def test_a_number_counts_only_where_it_is_said_of_the_asked_entity() -> None:
    e = Expected(
        values=["4"],
        types=[N],
        entity_domain=ColumnDomain.of(["Optics", "Syntax", "Cosmology"]),
        entity_source="course.title",
    )
    q = "How many credits does the course Optics carry?"
    other = judge_deterministic(q, e, "The course Syntax carries 4 credits.")
    assert other.verdict is not Verdict.CORRECT and "said_of_other_entity" in other.reason
    assert judge_deterministic(q, e, "Optics carries 4 credits.").verdict is Verdict.CORRECT
    assert judge_deterministic(q, e, "It carries 4 credits.").verdict is Verdict.CORRECT
    assert judge_deterministic(q, e, "Syntax carries 5 credits.").verdict is Verdict.INCORRECT


def test_a_column_s_kind_is_the_word_its_name_ends_with() -> None:
    assert kind_word("BillingCity") == kind_word("ship_city") == kind_word("city") == "city"
    assert kind_word("LastName") == "name"


# -- a claim is a whole mention -----------------------------------------------------------------


def test_the_gold_inside_a_longer_value_of_the_database_is_no_mention_of_it() -> None:
    e = Expected(
        values=["Physics"],
        types=[T],
        attributes=["Quantum Physics"],
        attribute_sources=["course.title"],
    )
    d = judge_deterministic(
        "What is the prerequisite of Optics?", e, "The prerequisite is Quantum Physics."
    )
    assert d.verdict is Verdict.INCORRECT and "from course.title" in d.reason, d.reason
    ok = judge_deterministic("What is the prerequisite of Optics?", e, "It is Physics.")
    assert ok.verdict is Verdict.CORRECT, ok.reason


def test_the_gold_said_only_inside_the_questions_words_is_no_answer() -> None:
    e = Expected(
        values=["Seven Deadly Sins"],
        types=[T],
        attributes=["Kent Nagano"],
        attribute_sources=["artist.name"],
    )
    q = "Which track is on the album 'Weill: The Seven Deadly Sins'?"
    d = judge_deterministic(q, e, "The album 'Weill: The Seven Deadly Sins' is by Kent Nagano.")
    assert d.verdict is Verdict.INCORRECT and "from artist.name" in d.reason, d.reason


def test_this_one_is_a_pronoun_not_the_number_one() -> None:
    e = Expected(values=["1"], types=[N])
    q = "How many courses does Ann Lee teach?"
    scripted = "Thanks for asking! Our team is always happy to help with questions like this one."
    d = judge_deterministic(q, e, scripted)
    # no number, and nothing of the question either: off the topic, not a count of 1
    assert d.verdict is Verdict.UNDECIDED and d.reason.startswith("off_topic:"), d.reason
    for said in ("Ann Lee teaches one course.", "Only one.", "1"):
        assert judge_deterministic(q, e, said).verdict is Verdict.CORRECT, said


def test_a_count_of_one_is_no_yes_or_no() -> None:
    e = Expected(values=["1"], types=[N])
    count = "How many courses does Ann Lee teach?"
    assert judge_deterministic(count, e, "Yes.").verdict is Verdict.INCORRECT
    assert judge_deterministic(count, e, "She teaches none.").verdict is not Verdict.CORRECT
    # a flag asked as a yes/no question still reads its 1 as a yes
    flag = "Is the course Optics discontinued?"
    assert judge_deterministic(flag, e, "Yes, it is.").verdict is Verdict.CORRECT


# -- citations -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("laid by Jacob and John Brett in 18501.", "laid by Jacob and John Brett in 1850."),
        ("The project began in2011as a pilot.", "The project began in 2011 as a pilot."),
        ("It hosted the World Cup in 1994⁶", "It hosted the World Cup in 1994"),
        ("A square has4 lines of symmetry.", "A square has 4 lines of symmetry."),
        ("It is Paris [1].", "It is Paris."),
        ("It is Paris [1, 3].", "It is Paris."),
        ("It is Paris[1]and more.", "It is Paris and more."),
        ("Brett¹and Jacob", "Brett and Jacob"),
        ("It is Paris【4†source】.", "It is Paris."),
        ("It is Paris (2).", "It is Paris."),
        ("Brett1 and Jacob2 laid it.", "Brett and Jacob laid it."),
        ("It was in Paris.1 Then", "It was in Paris. Then"),
        # what is no marker stays as written
        ("The flat is 42 m² big.", "The flat is 42 m² big."),
        ("(1) the port of Oslo", "(1) the port of Oslo"),
        ("An A320 flew in the 1990s.", "An A320 flew in the 1990s."),
        ("The town has 18501 people.", "The town has 18501 people."),
        # an address's digits are its characters
        ("Write to anders.foss2@example.no.", "Write to anders.foss2@example.no."),
        ("See https://shop2.example.com/a3 now", "See https://shop2.example.com/a3 now"),
        ("Visit shop2.example.com today.", "Visit shop2.example.com today."),
    ],
)
def test_citation_markers_are_read_as_a_person_reads_them(written: str, read: str) -> None:
    assert read_citations(written) == read


@pytest.mark.parametrize(
    ("gold", "said"),
    [
        ("1850", "The cable was laid by Jacob and John Brett in 18501."),
        ("2011", "The programme began in2011as a pilot."),
        ("1994", "The USA hosted the World Cup in 1994⁶"),
        ("3", "An equilateral triangle has3 lines of symmetry [2]."),
        ("1994", "The USA hosted the World Cup in 1994 (1)."),
    ],
)
def test_a_cited_number_is_the_number_not_a_conflict(gold: str, said: str) -> None:
    d = judge_deterministic("When or how many?", Expected(values=[gold], types=[N]), said)
    assert d.verdict is Verdict.CORRECT, d.reason


def test_a_cited_wrong_number_is_still_wrong() -> None:
    d = judge_deterministic(
        "When?", Expected(values=["1850"], types=[N]), "It was laid in 18581 [1]."
    )
    assert d.verdict is Verdict.INCORRECT, d.reason


def test_kin_values_are_part_of_the_domains_identity() -> None:
    a = ColumnDomain.of(["Calgary"], kin=["Oslo"], kin_sources=["customer.city"])
    b = ColumnDomain.of(["Calgary"])
    assert a.id != b.id


def test_an_e_mail_address_the_row_holds_is_its_other_attribute() -> None:
    # the address holds the owner's name and a digit glued to it: no footnote on "foss"
    e = Expected(
        values=["Trondheim"],
        types=[AnswerType.TEXT],
        attributes=["anders.foss2@example.no"],
        attribute_types=[AnswerType.TEXT],
        attribute_sources=["owner.email"],
    )
    q = "In which city does the owner Anders Foss live?"
    d = judge_deterministic(q, e, "You can reach Anders Foss at anders.foss2@example.no.")
    assert d.verdict is Verdict.INCORRECT and "owner.email" in d.reason, d.reason


def test_a_name_written_with_its_number_is_no_footnote() -> None:
    """'City3' is what the database calls it: the gold's and the question's own spelling of a
    word with its number is a name, while an unnamed 'Brett1' is still Brett with a footnote."""
    from groundwatch.core.judging.citations import numbered_names, read_citations

    keep = numbered_names("What is the capital of Country3?", "City3")
    assert read_citations("The capital is City3.", keep) == "The capital is City3."
    assert read_citations("The capital of Country3 is City3.", keep) == (
        "The capital of Country3 is City3."
    )
    assert read_citations("laid by Jacob and John Brett1 in 1850.", keep) == (
        "laid by Jacob and John Brett in 1850."
    )


def test_a_rivals_numbered_name_is_another_value_not_a_footnote() -> None:
    """'City5' for Country1 (gold 'City1') names another capital: conclusively wrong, not
    'City' with footnote 5 and undecided."""
    from groundwatch.core.judging import judge_deterministic
    from groundwatch.core.model import Expected

    cities = [f"City{i}" for i in range(8)]
    gold = Expected(values=["City1"], candidates=[[c for c in cities if c != "City1"]])
    said = judge_deterministic("What is the capital of Country1?", gold, "The capital is City5.")
    assert said.verdict.value == "incorrect", said
    right = judge_deterministic("What is the capital of Country1?", gold, "The capital is City1.")
    assert right.verdict.value == "correct", right
