"""The parsers under the typed tier: dates, numbers, refusals, normalization."""

from __future__ import annotations

from datetime import date

import pytest

from groundwatch.core.judging import judge_deterministic
from groundwatch.core.judging.dates import (
    DateMatch,
    Granularity,
    extract_dates,
    match_date,
    parse_gold_date,
)
from groundwatch.core.judging.gold import infer_type
from groundwatch.core.judging.normalize import fold, normalize, tokens
from groundwatch.core.judging.numbers import (
    NumberMatch,
    extract_numbers,
    match_number,
    parse_gold_number,
)
from groundwatch.core.judging.refusal import detect_refusal
from groundwatch.core.model import AnswerType, Expected, Verdict

pytestmark = pytest.mark.unit


def test_normalize_folds_case_accents_punctuation_articles() -> None:
    assert normalize("The  “Champs-Élysées”  Hotel!") == "champs elysees hotel"
    assert normalize("An apple, a day") == "apple day"
    assert tokens("Marie Curie’s lab") == ["marie", "curie", "s", "lab"]


@pytest.mark.parametrize(
    ("text", "first", "last", "gran"),
    [
        ("on 2023-04-01", date(2023, 4, 1), date(2023, 4, 1), Granularity.DAY),
        ("on April 1st, 2023", date(2023, 4, 1), date(2023, 4, 1), Granularity.DAY),
        ("the 1st day of April 2023", date(2023, 4, 1), date(2023, 4, 1), Granularity.DAY),
        ("by the end of June 2024", date(2024, 6, 1), date(2024, 6, 30), Granularity.MONTH),
        ("in Sept. 2024", date(2024, 9, 1), date(2024, 9, 30), Granularity.MONTH),
        ("in Q4 2024", date(2024, 10, 1), date(2024, 12, 31), Granularity.RANGE),
        ("in the first half of 2024", date(2024, 1, 1), date(2024, 6, 30), Granularity.RANGE),
        ("in the fall of 2024", date(2024, 9, 1), date(2024, 11, 30), Granularity.RANGE),
        ("in 1999", date(1999, 1, 1), date(1999, 12, 31), Granularity.YEAR),
    ],
)
def test_extract_dates_at_their_granularity(
    text: str, first: date, last: date, gran: Granularity
) -> None:
    (m,) = extract_dates(text)
    assert (m.first, m.last, m.granularity) == (first, last, gran)


def test_ambiguous_numeric_date_gives_both_readings() -> None:
    days = {m.first for m in extract_dates("on 03/04/2023")}
    assert days == {date(2023, 3, 4), date(2023, 4, 3)}
    assert {m.first for m in extract_dates("on 25/04/2023")} == {date(2023, 4, 25)}


def test_no_dates_in_plain_numbers() -> None:
    assert extract_dates("Building 42 has 7 floors") == []
    assert extract_dates("") == []


def test_match_date_outcomes() -> None:
    gold = date(2023, 4, 1)
    assert match_date(gold, extract_dates("April 1, 2023")) is DateMatch.FOUND
    assert match_date(gold, extract_dates("April 2023")) is DateMatch.PARTIAL
    assert match_date(gold, extract_dates("May 2023")) is DateMatch.CONFLICT
    assert match_date(gold, extract_dates("no date")) is DateMatch.ABSENT
    ignore = frozenset({date(2022, 1, 1)})
    assert match_date(gold, extract_dates("since 2022-01-01"), ignore=ignore) is DateMatch.ABSENT


def test_parse_gold_date() -> None:
    assert parse_gold_date("2023-04-01") == date(2023, 4, 1)
    assert parse_gold_date("2023-04-01 00:00:00") == date(2023, 4, 1)
    assert parse_gold_date("Marie Curie") is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234,567.5", 1234567.5),
        ("1.234.567,5", 1234567.5),
        ("12,5", 12.5),
        ("3.2 million", 3.2e6),
        ("$4.8M", 4.8e6),
        ("1.2k", 1200.0),
        ("-7", -7.0),
        ("twenty-one", 21.0),
    ],
)
def test_extract_numbers(text: str, value: float) -> None:
    (m,) = extract_numbers(text)
    assert m.value == pytest.approx(value)


def test_number_match_respects_precision_and_units() -> None:
    gold = parse_gold_number("384570")
    assert gold is not None
    assert match_number(gold, extract_numbers("385 thousand")) is NumberMatch.FOUND
    assert match_number(gold, extract_numbers("0.4 million")) is NumberMatch.APPROX
    assert match_number(gold, extract_numbers("384,571")) is NumberMatch.CONFLICT
    assert match_number(gold, extract_numbers("no numbers")) is NumberMatch.ABSENT
    kg = parse_gold_number("42 kg")
    assert kg is not None and kg.unit is not None
    assert match_number(kg, extract_numbers("42000 g")) is NumberMatch.FOUND
    assert match_number(kg, extract_numbers("42 km")) is NumberMatch.CONFLICT


@pytest.mark.parametrize(
    ("value", "typ"),
    [
        ("2023-04-01", AnswerType.DATE),
        ("384570", AnswerType.NUMBER),
        ("12.5%", AnswerType.NUMBER),
        ("Building 7", AnswerType.TEXT),
        ("Marie Curie", AnswerType.TEXT),
    ],
)
def test_infer_type(value: str, typ: AnswerType) -> None:
    assert infer_type(value) is typ


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "I do not know the answer to that.",
        "The passage does not contain this information.",
        "The provided context doesn't mention the start date.",
        "I'm sorry, but I couldn't find any information about that project.",
        "I'm sorry, but I'm unable to assist with your query.",
        "As an AI assistant, I don't have access to specific client information.",
        "The end date is not mentioned in the documents.",
        "There is no information about the supervisor.",
        "Unknown",
        "N/A",
        "It is not possible to determine the budget from the context.",
        "Sorry, the system doesn't know the answer.",
    ],
)
def test_refusals(text: str) -> None:
    assert detect_refusal(fold(text)) is not None
    assert detect_refusal(fold(text), tokens(text)) is not None


@pytest.mark.parametrize(
    "text",
    [
        "The director is Marie Curie.",
        "The project started on April 1, 2023 and is known for its design.",
        "Notably, the client is Blue Horizon Hotels.",
        "The manager, Alan Turing, knows the site well.",
    ],
)
def test_not_refusals(text: str) -> None:
    assert detect_refusal(fold(text), tokens(text)) is None


def test_refusal_counts_other_sentences() -> None:
    only = detect_refusal(fold("I don't know."))
    assert only is not None and only.other_sentences == 0
    more = detect_refusal(fold("I don't know. But quantum physics studies atoms."))
    assert more is not None and more.other_sentences == 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("كَتَبَ", "كتب"),  # Arabic harakat are optional diacritics
        ("Champs-Élysées", "champs elysees"),  # Latin accents
        ("Champs-E\u0301lyse\u0301es", "Champs-Élysées"),  # decomposed and precomposed
        ("한국어", "\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"),  # Hangul: syllables = jamo
        ("ＡＢＣ 東京", "abc 東京"),  # full-width forms
        ("שָׁלוֹם", "שלום"),  # Hebrew points
    ],
)
def test_fold_equal_across_scripts(a: str, b: str) -> None:
    assert normalize(a) == normalize(b)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("हिन्दी भाषा", 2),  # Devanagari vowel signs and virama are inside words
        ("كَتَبَ الدَّرْسَ", 2),
        ("ภาษาไทย ไม่ใช่", 2),  # Thai vowel signs and tone marks
        ("서울 특별시", 2),
        ("São Paulo", 2),
    ],
)
def test_a_mark_never_splits_a_word(text: str, words: int) -> None:
    assert len(tokens(text)) == words


def test_chinese_and_japanese_are_read_a_character_at_a_time() -> None:
    """No spaces between words: each character is a token, so a value is found inside a
    sentence and a different value is not."""
    assert tokens("東京都 大阪") == ["東", "京", "都", "大", "阪"]
    assert tokens("2024年 コーヒー") == ["2024", "年", "コ", "ー", "ヒ", "ー"]
    gold = Expected(values=["東京"])
    assert (
        judge_deterministic("Where is the head office?", gold, "本社は東京にあります。").verdict
        is Verdict.CORRECT
    )
    assert (
        judge_deterministic("Where is the head office?", gold, "本社は大阪にあります。").verdict
        is Verdict.UNDECIDED
    )


def test_letter_marks_are_kept_diacritics_dropped() -> None:
    # Indic vowel signs are letters: dropping them would make different words equal.
    assert normalize("कमल") != normalize("कोमल")
    assert normalize("हिन्दी") == normalize("हिन्दी".replace("\u094d", ""))  # virama: a diacritic
    assert normalize("NAÏVE café") == "naive cafe"
