"""Vague answers are no conclusive evidence: the gold among several candidates, or a range of
values at or near the gold, leaves the rules undecided (a reader, or the LLM tier, may weigh
it); a range far from the gold is still another value."""

from __future__ import annotations

import pytest

from groundwatch.core.judging import Decision, judge_deterministic
from groundwatch.core.model import Expected, Verdict

pytestmark = pytest.mark.unit

C, I, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.UNDECIDED  # noqa: E741


def judge(response: str, gold: str, **kw: object) -> Decision:
    return judge_deterministic("Which one?", Expected(values=[gold], **kw), response)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        # a number offered with another one next to it
        ("A gale is designated as a force 8 or force 9 wind on that scale.", "8"),
        ("The founder is 30 or 31 years old.", "31"),
        ("It is probably 12, though it might be 14.", "12"),
        # a date offered with another one
        ("It began on April 1, 2023 or April 2, 2023.", "2023-04-01"),
        # a name offered with another value of its kind (another country)
        ("Either USA or UK.", "USA"),
        ("It is headquartered in the USA or possibly Canada.", "USA"),
    ],
)
def test_the_gold_among_several_candidates_is_undecided(response: str, gold: str) -> None:
    d = judge(response, gold)
    assert d.verdict is U, d.reason
    assert "hedge" in d.reason


def test_a_hedge_between_column_values_is_undecided_and_names_the_other() -> None:
    exp = {"candidates": [["Tallinn", "Riga"]]}
    d = judge("Her office is in Lisbon or Tallinn.", "Lisbon", **exp)
    assert d.verdict is U and "tallinn" in d.reason
    # without the gold, the other value alone is still conclusive
    assert judge("Her office is in Tallinn.", "Lisbon", **exp).verdict is I


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        ("61-65 CHF", "61"),  # the gold at one end
        ("Somewhere between 61 and 65.", "65"),
        ("It costs 61 to 65 francs.", "63"),  # the gold inside
        ("It had between 1,000 and 1,200 contestants.", "1132"),
        # beside the range by less than its width: a vague answer near the gold
        ("The median salary was between £174,000 and £184,000 that year.", "£186k"),
        ("It was between 174 and 184 thousand pounds.", "186000"),
    ],
)
def test_a_range_at_or_near_the_gold_is_undecided(response: str, gold: str) -> None:
    d = judge(response, gold)
    assert d.verdict is U, d.reason
    assert "range" in d.reason


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        ("It was built between 1900 and 1910.", "1950"),  # far beyond one width
        ("It costs 61 to 65 francs.", "90"),
        # an abbreviated second end is no span from 81 to 1976
        ("He served from 1976-81 in that post.", "1950"),
    ],
)
def test_a_range_far_from_the_gold_is_another_value(response: str, gold: str) -> None:
    d = judge(response, gold)
    assert d.verdict is I, d.reason


def test_a_range_elsewhere_in_the_answer_leaves_the_gold_stated() -> None:
    assert judge("It is 61 (items 12-14).", "61").verdict is C
