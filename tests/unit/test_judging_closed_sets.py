"""Closed vocabularies: a gold that is a month, weekday, planet, zodiac sign, continent, US
state, colour, chemical element, decade or ordinal is contradicted by an answer naming another member instead; a member inside a longer name,
an everyday word, or the question's own context contradicts nothing."""

from __future__ import annotations

import pytest

from groundwatch.core.judging import Decision, judge_deterministic
from groundwatch.core.judging.closed_sets import closed_sets, find_members, member_of
from groundwatch.core.judging.normalize import tokens
from groundwatch.core.model import Expected, Verdict

pytestmark = pytest.mark.unit

C, I, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.UNDECIDED  # noqa: E741


def judge(response: str, gold: str, query: str = "Which one is it?") -> Decision:
    return judge_deterministic(query, Expected(values=[gold]), response)


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        ("It was renamed in the month of May.", "April"),
        ("February", "December"),
        ("The market is held every Thursday.", "Tuesday"),
        ("Jupiter. Its moons are named after characters.", "Uranus"),
        ("She was born on November 22, which makes her a Sagittarius.", "Scorpio"),
        ("The species is found only in South America.", "Africa"),
        ("The last state to do so was Mississippi, in 1966.", "Utah"),
        ("It is in North Carolina.", "South Carolina"),
        ("The bottom stripe is blue.", "Red"),
        ("White.", "Orange"),
        ("The second most common gas is nitrogen.", "Oxygen"),
        ("Argon is the second most common gas.", "Oxygen"),
        ("Stereo records first went on sale in the 1950s.", "Thirties"),
        ("She was born in the forties.", "1930s"),
        ("She came third.", "Second"),
        ("He finished 4th.", "2nd"),
    ],
)
def test_another_member_of_the_gold_set_is_incorrect(response: str, gold: str) -> None:
    d = judge(response, gold)
    assert d.verdict is I, d.reason
    assert "other_value" in d.reason


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        # a member inside a longer name
        ("The album came out on Mercury Records.", "Venus"),
        ("He grew up in Kansas City.", "Ohio"),
        ("It was written by Leo Tolstoy.", "Aries"),
        ("The charity Cancer Research UK funds it.", "Virgo"),
        ("The team moved to New York City.", "Texas"),
        ("She sailed round South Africa.", "Asia"),
        # an everyday word, not a member
        ("It may be the largest one.", "June"),
        ("May be the largest one, but nobody knows.", "June"),
        ("The troops march at dawn.", "April"),
        ("The soil, or earth, is red.", "Mars"),
        # a lowercase set's member capitalised mid-sentence is a name's
        ("The fairy tale is Snow White.", "Red"),
        ("He sailed the Black Sea.", "Green"),
        ("It was sold by Orange in France.", "Blue"),
        ("The gas is Carbon Dioxide.", "Oxygen"),
        # a member denied
        ("The answer is not Mars.", "Venus"),
        # an ordinal that is an everyday word, part of a date or of a century
        ("Wait a second, it was gone.", "Fourth"),
        ("At first nobody knew.", "Third"),
        ("He was born on 12th June 1491.", "Eighth"),
        ("He was born on June 12th.", "Eighth"),
        ("It is celebrated on the 4th of July.", "Eighth"),
        ("It was built in the fifth century.", "Third"),
        # the gold's decade in another century is no other decade
        ("Records went on sale in the 1830s.", "Thirties"),
    ],
)
def test_a_member_that_is_not_the_answers_claim_decides_nothing(response: str, gold: str) -> None:
    d = judge(response, gold)
    assert d.verdict is not I, d.reason


def test_a_member_the_question_names_is_context() -> None:
    d = judge("Mars is smaller than it.", "Venus", query="Which planet is larger than Mars?")
    assert d.verdict is not I, d.reason


def test_a_member_the_question_names_in_any_case_is_context() -> None:
    query = "What colour is the number on the door? White, Yellow or Brown?"
    assert judge("Brown", "White", query=query).verdict is not I


def test_the_gold_named_among_other_members_is_read_as_before() -> None:
    d = judge("April. The months in order are April, August, December and February.", "April")
    assert d.verdict is C, d.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("September", ("month", "september")),
        ("Saturday", ("weekday", "saturday")),
        ("Neptune", ("planet", "neptune")),
        ("Scorpius", ("zodiac sign", "scorpio")),
        ("Australasia", ("continent", "oceania")),
        ("New Mexico", ("us state", "new mexico")),
        ("Grey", ("colour", "grey")),
        ("Gray", ("colour", "grey")),
        ("Sulfur", ("chemical element", "sulphur")),
        ("1960s", ("decade", "sixties")),
        ("7th", ("ordinal", "seventh")),
        ("Twelfth", ("ordinal", "twelfth")),
        ("The Sixties", ("decade", "sixties")),
        # a planet, left out of the elements; an everyday word, in no set
        ("Mercury", ("planet", "mercury")),
        ("Gold", None),
        # not a member: a country too, a city, a longer value
        ("Georgia", None),
        ("Washington", None),
        ("Mercury Records", None),
        ("Paris", None),
    ],
)
def test_membership_is_of_the_whole_value(value: str, expected: tuple[str, str] | None) -> None:
    assert member_of(value) == expected


def test_without_the_raw_spans_nothing_is_found() -> None:
    toks = tokens("It is in Ohio.", folded=True)
    assert find_members(closed_sets()["us state"], toks, "It is in Ohio.", None) == []


def test_every_set_is_closed_under_its_own_members() -> None:
    for s in closed_sets().values():
        assert len(set(s.members.values())) >= 6, s.name
        assert s.common_words <= s.members.keys(), s.name
