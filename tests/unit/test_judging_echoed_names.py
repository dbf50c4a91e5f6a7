"""An answer that echoes the asked entity's name: the gold inside that name is the subject of
the sentence (or the object of a refusal), not the answer's claim; and a database value made
of function words is named only as a name is written."""

from __future__ import annotations

import pytest

from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.gold import build_domain_index
from groundwatch.core.model import AnswerType, ColumnDomain, Expected, Verdict

pytestmark = pytest.mark.unit

T = AnswerType.TEXT

SURNAMES = ColumnDomain(
    id="owner.last_name", values=["Holm", "Dahl", "Rønning", "Strand", "Berg"], complete=True
)


def _surname(gold: str) -> Expected:
    return Expected(values=[gold], types=[T], domain=[SURNAMES])


def _asked(first: str) -> str:
    return f"Surname for owner with first name '{first}' and city 'Bodo'"


@pytest.mark.parametrize(
    ("first", "gold"), [("Karin", "Holm"), ("Magnus", "Rønning"), ("Ola", "Berg")]
)
def test_a_refusal_naming_the_entity_in_full_is_a_refusal(first: str, gold: str) -> None:
    said = f"I could not find anything about {first} {gold} in the documents I have."
    d = judge_deterministic(_asked(first), _surname(gold), said)
    assert d.verdict is Verdict.INCORRECT and d.tier == "refusal", d.reason


def test_a_refusal_beside_the_gold_as_its_answer_is_undecided() -> None:
    # the gold is offered, not echoed as part of the name: neither an answer refused nor given
    d = judge_deterministic(
        _asked("Karin"), _surname("Holm"), "I could not find it in my documents; perhaps Holm."
    )
    assert d.verdict is Verdict.UNDECIDED, d.reason


def test_the_gold_in_the_echoed_name_before_another_claim_is_no_answer() -> None:
    for said in ("The last name of Thea Dahl is 1.", "The surname of Thea Dahl is Strand."):
        d = judge_deterministic(_asked("Thea"), _surname("Dahl"), said)
        assert d.verdict is not Verdict.CORRECT, (said, d.reason)


@pytest.mark.parametrize(
    "said",
    [
        "Thea Dahl.",
        "Her last name is Dahl.",
        "It's Thea Dahl",
        "The last name of Thea Dahl is Dahl.",
        "Thea Dahl is her full name.",
    ],
)
def test_the_gold_stated_with_the_echoed_name_stays_correct(said: str) -> None:
    d = judge_deterministic(_asked("Thea"), _surname("Dahl"), said)
    assert d.verdict is Verdict.CORRECT, d.reason


# -- a value made of function words ---------------------------------------------------------------

NAMES = ColumnDomain(id="pet.name", values=["Balder", "Is", "Luna", "Rex"], complete=True)
BREEDS = ColumnDomain(
    id="pet.breed",
    values=["Border Collie", "Beagle", "Husky"],
    complete=True,
    kin=["Is"],
    kin_sources=["pet.pet_name"],
)


def test_a_function_word_value_is_marked_as_named_only_as_written() -> None:
    idx = build_domain_index(NAMES)
    assert [idx.raws[k] for k in sorted(idx.cased)] == ["Is"]


def test_a_function_word_value_is_not_named_by_the_lowercase_word() -> None:
    e = Expected(values=["Border Collie"], types=[T], domain=[BREEDS], entity_domain=NAMES)
    d = judge_deterministic("'Balder' breed", e, "The breed of Balder is Border Collie.")
    assert d.verdict is Verdict.CORRECT, d.reason


@pytest.mark.parametrize(
    "said",
    ["The breed of Balder is Border Collie, like Is.", "It is Border Collie or 'Is'."],
)
def test_a_function_word_value_written_as_a_name_is_named(said: str) -> None:
    e = Expected(values=["Border Collie"], types=[T], domain=[BREEDS])
    d = judge_deterministic("'Balder' breed", e, said)
    assert d.verdict is not Verdict.CORRECT, d.reason


@pytest.mark.parametrize(
    ("query", "gold", "said"),
    [
        (
            "In the TV cartoon of The Addams Family who was the voice of Gomez?",
            "John Astin",
            "In the TV cartoon of The Addams Family, John Astin was the voice of Gomez.",
        ),
        (
            "Which ex-World Heavyweight Champion boxer joined Celebrity Big Brother?",
            "Evander Holyfield",
            "The former heavyweight champion Evander Holyfield was in Celebrity Big Brother.",
        ),
    ],
)
def test_the_gold_as_the_subject_answering_who_stays_correct(
    query: str, gold: str, said: str
) -> None:
    # beside the question's words only across a comma or a lowercase word, and the copula's
    # complement restates the question: the subject is the answer
    d = judge_deterministic(query, Expected(values=[gold], types=[T]), said)
    assert d.verdict is Verdict.CORRECT, d.reason


@pytest.mark.parametrize(
    "said",
    [
        "0 — that is the last name of Thea Dahl.",
        "According to our records, Thea Dahl's last name is thea.dahl30@example.no.",
        "The last name of Thea Dahl is Bodo.",
    ],
)
def test_the_echoed_name_beside_another_value_in_any_order_is_no_answer(said: str) -> None:
    d = judge_deterministic(_asked("Thea"), _surname("Dahl"), said)
    assert d.verdict is not Verdict.CORRECT, d.reason


def _genre(gold: str) -> Expected:
    return Expected(
        values=[gold],
        types=[T],
        entity_domain=ColumnDomain.of(["978-3-7237-8634-5", "978-8-2343-0742-3"]),
        entity_source="book.isbn",
        attributes=["Tove"],
        attribute_types=[T],
        attribute_sources=["member.first_name"],
    )


@pytest.mark.parametrize(
    "said",
    [
        # the key's column named beside its value, the name as a possessive, a key's own digits
        "I'm sorry, I could not find that information about the book with ISBN 978-3-7237-8634-5.",
        "I'm sorry, I could not find that information about Freya Dufour's loan.",
        "I'm sorry, I could not find anything about the member with e-mail m1008@inbox.test.",
    ],
)
def test_a_refusal_restating_which_row_it_means_is_a_refusal(said: str) -> None:
    q = "What is the genre of '978-3-7237-8634-5' for 'Freya Dufour' ('m1008@inbox.test')?"
    d = judge_deterministic(q, _genre("poetry"), said)
    assert d.verdict is Verdict.INCORRECT and d.tier == "refusal", d.reason


def test_the_keys_column_named_beside_another_attribute_is_no_other_name() -> None:
    q = "What is the genre of '978-3-7237-8634-5'?"
    said = "For the book with ISBN 978-3-7237-8634-5, the member first name is Tove."
    d = judge_deterministic(q, _genre("poetry"), said)
    assert d.verdict is Verdict.INCORRECT and "other_attribute" in d.reason, d.reason
