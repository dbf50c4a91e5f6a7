"""A count said by its noun's determiner: "He has a pet." is one pet, "no visits" none."""

from __future__ import annotations

import pytest

from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.counts import said_count
from groundwatch.core.judging.normalize import fold
from groundwatch.core.model import AnswerType, Expected, Verdict

pytestmark = pytest.mark.unit

Q = "How many pets does owner 'Anders Nygaard' have?"


@pytest.mark.parametrize(
    ("answer", "count"),
    [
        ("Yes, Anders Nygaard has a pet.", 1),
        ("He has a single pet.", 1),
        ("He owns an adorable pet named Pusur.", 1),
        ("Anders Nygaard has no pets.", 0),
        ("He has no registered pets.", 0),
        ("He doesn't have a pet.", 0),
        ("There is not a single pet on record.", 0),
        # no count of the counted thing, or more than one said without a number
        ("He has a cat and a dog.", None),
        ("Anders Nygaard is a pet owner.", None),
        ("A pet's name is Pusur.", None),
        ("He has a pet and another pet.", None),
        ("He has several pets.", None),
        ("He has a pet, and no other animals.", 1),
        ("He has a lot of pets.", None),
        ("A couple of pets live with him.", None),
        # the pronoun alone says none of what is counted
        ("None.", 0),
        ("There are none.", 0),
        ("Anders Nygaard has none at all.", 0),
        ("None of the documents say.", None),
    ],
)
def test_the_count_a_determiner_says(answer: str, count: int | None) -> None:
    assert said_count(Q, fold(answer)) == count


def test_a_question_that_counts_nothing_reads_no_count() -> None:
    assert said_count("Breed of pet 'Balder'", fold("It is a pet.")) is None
    assert said_count("Number of categories of shop 'Nordic'", fold("It has a category.")) == 1


def _count(gold: str) -> Expected:
    return Expected(values=[gold], types=[AnswerType.NUMBER])


def test_an_article_answers_a_count_of_one_and_says_one_against_another() -> None:
    one = judge_deterministic(Q, _count("1"), "Yes, Anders Nygaard has a pet.")
    assert one.verdict is Verdict.CORRECT and one.reason.startswith("count_said")
    four = judge_deterministic(Q, _count("4"), "Anders Nygaard has a pet.")
    assert four.verdict is Verdict.INCORRECT and "said 1" in four.reason
    none = judge_deterministic(Q, _count("2"), "He has no pets at all.")
    assert none.verdict is Verdict.INCORRECT and "said 0" in none.reason
    # without the counted noun an answer with no number still says no count
    other = judge_deterministic(Q, _count("1"), "Anders Nygaard has a cat and a dog.")
    assert other.verdict is Verdict.INCORRECT and other.reason.startswith("number_missing")


def test_none_answers_a_count_of_zero_and_is_no_refusal_of_it() -> None:
    """A count of nothing is asked of an owner with no pets (generation makes those groups):
    "None." is its answer, and says 0 against any other count rather than refusing."""
    for answer in ("None.", "There are none.", "He has none."):
        zero = judge_deterministic(Q, _count("0"), answer)
        assert zero.verdict is Verdict.CORRECT and zero.reason.startswith("count_said"), answer
        two = judge_deterministic(Q, _count("2"), answer)
        assert two.verdict is Verdict.INCORRECT and "said 0" in two.reason, answer
    # to a question that counts nothing "None." stays a null answer
    other = judge_deterministic(
        "Breed of pet 'Balder'", Expected(values=["Beagle"], types=[AnswerType.TEXT]), "None."
    )
    assert other.verdict is Verdict.INCORRECT and other.reason.startswith("refusal")
