"""How an answer is read before it is judged: a footnote glued to a number or to a full date's
year, and an answer that addresses nothing of the question (undecided for every answer type,
while a refusal stays a wrong answer)."""

from __future__ import annotations

import pytest

from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.citations import footnoted_numbers, read_citations
from groundwatch.core.judging.dates import date_part_spans
from groundwatch.core.model import AnswerType, ColumnDomain, Expected, Verdict

pytestmark = pytest.mark.unit

T, N, D = AnswerType.TEXT, AnswerType.NUMBER, AnswerType.DATE


# -- a footnote after a number ----------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "The records say 352.1 See the records.",
        "It is 352.3 The table lists it.",
        "The platform count is 352.12 Source: the timetable.",
    ],
)
def test_a_footnote_glued_to_the_gold_before_the_next_sentence_is_the_gold(said: str) -> None:
    d = judge_deterministic("Capacity of the train?", Expected(values=["352"], types=[N]), said)
    assert d.verdict is Verdict.CORRECT, d.reason


def test_a_footnote_glued_to_a_number_in_thousands_is_read_the_same() -> None:
    d = judge_deterministic(
        "Salary of the driver?", Expected(values=["70000"], types=[N]),
        "The records say 70,000.1 See the station records.",
    )  # fmt: skip
    assert d.verdict is Verdict.CORRECT, d.reason


def test_a_footnote_or_a_decimal_at_the_texts_end_is_neither() -> None:
    d = judge_deterministic("Capacity?", Expected(values=["352"], types=[N]), "It is 352.1")
    assert d.verdict is Verdict.UNDECIDED, d.reason
    assert d.reason.startswith("footnote_or_decimal: '352.1'"), d.reason


@pytest.mark.parametrize(
    ("gold", "said"),
    [
        ("352", "The line is 352.1 km long."),  # a measure: the decimal stays
        ("352", "The line is 352.1 Km long."),
        ("3", "The town has 3.5 Million people."),  # a scale word
        ("351", "The records say 352.1 See the records."),  # neither reading is the gold
        ("352", "The records say 352.1. See the records."),  # a decimal ending a sentence
    ],
)
def test_a_real_decimal_or_another_integer_stays_a_conflict(gold: str, said: str) -> None:
    d = judge_deterministic("How long?", Expected(values=[gold], types=[N]), said)
    assert d.verdict is Verdict.INCORRECT, d.reason
    assert d.reason.startswith("number_mismatch"), d.reason


def test_footnoted_numbers_names_the_shape_only() -> None:
    assert footnoted_numbers("The records say 352.1 See the records.") == [(352, "352.1", False)]
    assert footnoted_numbers("It is 352.12") == [(352, "352.12", True)]
    assert footnoted_numbers("It is 352.125 See.") == []
    assert footnoted_numbers("It is 3.5 Million.") == []
    assert footnoted_numbers("It is 1.352.1 See.") == []
    assert footnoted_numbers("It is 70,000.1 See.") == [(70000, "70,000.1", False)]
    assert footnoted_numbers("It is 1,70,000.1 See.") == []  # no thousands grouping


# -- a footnote glued to a full date's year ---------------------------------------------------


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("It is 4 February 20012, according to the documents.",
         "It is 4 February 2001, according to the documents."),
        ("It is February 4, 20012.", "It is February 4, 2001."),
        ("It opened on 4th Feb. 20013.", "It opened on 4th Feb. 2001."),
        # no footnote: a five-digit number that goes on with words, or no month before it
        ("In May 20012 people came.", "In May 20012 people came."),
        ("The code is 20012.", "The code is 20012."),
    ],
)  # fmt: skip
def test_a_footnote_glued_to_a_dates_year_is_dropped(written: str, read: str) -> None:
    assert read_citations(written) == read


def test_a_full_date_with_a_footnote_on_its_year_is_the_date() -> None:
    gold = Expected(values=["2001-02-04"], types=[D])
    q = "When was 'Luca Brennan' hired?"
    right = judge_deterministic(q, gold, "It is 4 February 20012, according to the documents.")
    assert right.verdict is Verdict.CORRECT, right.reason
    wrong = judge_deterministic(q, gold, "It is 4 February 19992, according to the documents.")
    assert wrong.verdict is Verdict.INCORRECT, wrong.reason


# -- an answer that addresses nothing of the question -----------------------------------------

_OFF = "Trains are a pleasant way to see the countryside."
_GOLDS = [
    ("Home city of 'Luca Brennan'?", Expected(values=["Aarhus"], types=[T])),
    ("Salary for 'Luca Brennan'?", Expected(values=["63750"], types=[N])),
    ("When was 'Luca Brennan' hired?", Expected(values=["2001-02-04"], types=[D])),
]


@pytest.mark.parametrize(("query", "gold"), _GOLDS)
def test_an_unrelated_sentence_is_off_topic_for_every_answer_type(
    query: str, gold: Expected
) -> None:
    for said in (_OFF, "Thanks for asking! Our team is always happy to help with questions."):
        d = judge_deterministic(query, gold, said)
        assert d.verdict is Verdict.UNDECIDED, (said, d.reason)
        assert d.reason.startswith("off_topic:"), (said, d.reason)


@pytest.mark.parametrize(("query", "gold"), _GOLDS)
def test_a_refusal_stays_a_wrong_answer(query: str, gold: Expected) -> None:
    d = judge_deterministic(query, gold, "I don't know.")
    assert d.verdict is Verdict.INCORRECT and d.reason.startswith("refusal"), d.reason


@pytest.mark.parametrize(
    "said",
    [
        "It is not in the documents.",  # a denial answers the question, wrongly
        "Luca Brennan is paid well by the operator.",  # the question's entity
        "The salary is paid every month, they say.",  # the asked attribute's word
        "Trains are pleasant, says Greta Moretti.",  # a name of its own
        "Cork.",  # a bare value is an answer
    ],
)
def test_an_answer_that_addresses_the_question_is_no_off_topic(said: str) -> None:
    d = judge_deterministic("Salary for 'Luca Brennan'?", Expected(values=["63750"], types=[N]),
                            said)  # fmt: skip
    assert d.verdict is Verdict.INCORRECT, (said, d.reason)
    assert d.reason.startswith("number_missing"), (said, d.reason)


def test_a_vague_answer_of_the_asked_type_is_no_off_topic() -> None:
    gold = Expected(values=["2023-04-01"], types=[D])
    d = judge_deterministic(
        "When did the project start?", gold, "It began after the permits were approved."
    )
    assert d.verdict is Verdict.INCORRECT and d.reason.startswith("date_missing"), d.reason
    # a question without words of its own has nothing to be off the topic of
    d = judge_deterministic("?", gold, _OFF)
    assert d.verdict is Verdict.INCORRECT and d.reason.startswith("date_missing"), d.reason


# -- a full date's day is no number --------------------------------------------------------------


@pytest.mark.parametrize(
    "said", ["8 November 2024.", "November 8, 2024.", "It was on the 8th of November 2024."]
)
def test_a_dates_day_is_not_the_number_asked(said: str) -> None:
    d = judge_deterministic(
        "Number of origins of the line?", Expected(values=["8"], types=[N]), said
    )
    assert d.verdict is Verdict.INCORRECT, d.reason


@pytest.mark.parametrize(
    ("gold", "said"),
    [
        ("8", "On 8 November 2024 there were 8 origins."),  # the count beside a date
        ("1998", "It was founded on 3 March 1998."),  # a year asked as a number
    ],
)
def test_numbers_beside_or_as_a_dates_year_still_count(gold: str, said: str) -> None:
    d = judge_deterministic("Origins of the line?", Expected(values=[gold], types=[N]), said)
    assert d.verdict is Verdict.CORRECT, d.reason


def test_date_part_spans_names_days_and_months_only() -> None:
    text = "from 8 november 2024 to 2024-11-09, not 12/03/2020"
    assert [text[a:b] for a, b in date_part_spans(text)] == ["8", "11", "09", "12", "03"]
    assert date_part_spans("it is 8, since may") == []


# -- a bare number for a code --------------------------------------------------------------------

_CODES = ColumnDomain.of(["RT-101", "RT-177", "RT-212", "Building 7"])


@pytest.mark.parametrize(
    ("gold", "said", "verdict"),
    [
        ("RT-177", "It is 2, according to the documents.", Verdict.INCORRECT),
        ("RT-177", "It is 177.", Verdict.UNDECIDED),  # the code said short
        ("Building 7", "It is 8.", Verdict.INCORRECT),
        ("Building 7", "7", Verdict.UNDECIDED),
    ],
)
def test_a_bare_number_is_no_code_where_the_column_holds_codes_only(
    gold: str, said: str, verdict: Verdict
) -> None:
    exp = Expected(values=[gold], types=[T], domain=[_CODES])
    d = judge_deterministic("Which train runs the first trip?", exp, said)
    assert d.verdict is verdict, d.reason


def test_a_bare_number_may_be_a_quantity_said_another_way_without_the_database() -> None:
    # no domain, or a column that also holds bare numbers: the number may be the gold
    for exp in (
        Expected(values=["11 years and 302 days"], types=[T]),
        Expected(values=["RT-177"], types=[T], domain=[ColumnDomain.of(["RT-177", "42"])]),
    ):
        d = judge_deterministic("How old was he?", exp, "He was 15.")
        assert d.verdict is Verdict.UNDECIDED, d.reason


# -- a number or a date where a name is asked, the question's words said in another form ----------


@pytest.mark.parametrize(
    "said",
    [
        "1245 — that is the diagnosis of Henrik Berg and Molly.",
        "According to our records, Henrik Berg and Molly's diagnosis is 2025-07-03.",
    ],
)
def test_a_number_or_date_for_a_name_is_wrong_beside_the_questions_words_reworded(
    said: str,
) -> None:
    q = "Diagnosing for visit of vet 'Henrik Berg' in pet 'Molly'"
    d = judge_deterministic(q, Expected(values=["heart murmur"], types=[T]), said)
    assert d.verdict is Verdict.INCORRECT, d.reason
    assert d.reason.startswith("type_mismatch"), d.reason
