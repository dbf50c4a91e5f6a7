"""The deterministic tier chain: which tier decides what, and what it leaves undecided."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwatch.core.judging import (
    DEFAULT_TIERS,
    NO_TIER,
    STALE,
    Decision,
    judge_deterministic,
    validate_tiers,
)
from groundwatch.core.judging.numbers import _ORDINAL_WORDS, _WORD_NUMBERS
from groundwatch.core.model import AnswerType, Expected, Verdict

pytestmark = pytest.mark.unit

C, I, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.UNDECIDED  # noqa: E741


def E(*values: str, **kw: object) -> Expected:
    return Expected(values=list(values), **kw)  # type: ignore[arg-type]


def judge(response: str | None, expected: Expected, query: str = "q?") -> Decision:
    return judge_deterministic(query, expected, response)


CASES = [
    # dates, every common written form, and what a coarser or different date gets
    ("It started on the 1st of April, 2023.", E("2023-04-01"), C, "typed"),
    ("April 1, 2023", E("2023-04-01"), C, "typed"),
    ("Apr. 1st 2023", E("2023-04-01"), C, "typed"),
    ("1 April 2023", E("2023-04-01"), C, "typed"),
    ("It began 2023/04/01.", E("2023-04-01"), C, "typed"),
    ("It began on 04/01/2023.", E("2023-04-01"), C, "typed"),  # month-first reading
    ("It began on 01.04.2023.", E("2023-04-01"), C, "typed"),  # day-first reading
    ("It started on April 1, 2023 and ends May 20, 2025.", E("2025-05-20"), C, "typed"),
    ("It began on April 2, 2023.", E("2023-04-01"), I, "typed"),
    ("It began on 2022-04-01.", E("2023-04-01"), I, "typed"),
    ("It began after the permits were approved.", E("2023-04-01"), I, "typed"),
    ("It began in April 2023.", E("2023-04-01"), U, NO_TIER),
    ("It began in the spring of 2023.", E("2023-04-01"), U, NO_TIER),
    ("It began in Q2 2023.", E("2023-04-01"), U, NO_TIER),
    ("It began in the second quarter of 2023.", E("2023-04-01"), U, NO_TIER),
    ("It began in Q3 2023.", E("2023-04-01"), I, "typed"),
    # the day without its year is no missing date; another day without a year still is wrong
    ("On April 1st.", E("2023-04-01"), U, NO_TIER),
    ("1 Apr", E("2023-04-01"), U, NO_TIER),
    ("the 1st of April", E("2023-04-01"), U, NO_TIER),
    ("On April 2nd.", E("2023-04-01"), I, "typed"),
    ("It began in 2021.", E("2023-04-01"), I, "typed"),
    ("1 Apr 2023", E("2023-04-01", types=[AnswerType.DATE]), C, "typed"),
    # numbers: separators, scale words, percent, units, rounding
    ("The attendance was 384,570.", E("384570"), C, "typed"),
    ("The attendance was 384 570.", E("384570"), C, "typed"),
    ("about 385 thousand", E("384570"), C, "typed"),
    ("about 380,000", E("384570"), U, NO_TIER),  # rounded, but 1.2 % off
    ("It was 400,123.", E("384570"), I, "typed"),
    ("The rate is 12.5%.", E("0.125"), C, "typed"),
    ("12.5 percent", E("12.5%"), C, "typed"),
    ("0.125", E("12.5%"), C, "typed"),
    ("$4.8 million", E("4800000"), C, "typed"),
    ("$4.8M", E("4800000"), C, "typed"),
    ("It weighs 42 kilograms.", E("42 kg"), C, "typed"),
    ("It weighs 42 lb.", E("42 kg"), I, "typed"),
    ("1.5 km", E("1500 m"), C, "typed"),
    ("There are twelve of them.", E("12"), C, "typed"),
    ("3.14", E("3.14159"), C, "typed"),
    ("None were counted.", E("7"), I, "typed"),
    ("The value is 1.234.567,5", E("1234567.5"), C, "typed"),
    # text: containment on word boundaries, echoes of the query, negation, token overlap
    ("The director is Marie Curie.", E("Marie Curie"), C, "contains"),
    ("The director is MARIE CURIE!", E("Marie Curie"), C, "contains"),
    ("The director is Mariee Curieux.", E("Marie Curie"), U, NO_TIER),
    ("The director is not Marie Curie.", E("Marie Curie"), I, "conflict"),  # denied
    # a denied date or number is wrong, as a denied name is; a bound or "not until" is no denial
    ("It was not 12.", E("12"), I, "typed"),
    ("Not 12 kg, it is 14 kg.", E("12"), I, "typed"),
    ("It is not 2013-04-10.", E("2013-04-10"), I, "typed"),
    ("It is 12 kg, not 14.", E("12"), C, "typed"),
    ("Born 2013-04-10, not 2013-04-11.", E("2013-04-10"), C, "typed"),
    ("It was not until 2013-04-10 that it opened.", E("2013-04-10"), C, "typed"),
    # a range with the gold number at one end states a range, not the value: nor a wrong one
    ("61-65 CHF", E("61"), U, NO_TIER),
    ("It costs 61 to 65 francs.", E("61"), U, NO_TIER),
    ("Somewhere between 61 and 65.", E("61"), U, NO_TIER),
    ("It is 61 (items 12-14).", E("61"), C, "typed"),  # a range elsewhere is no hedge
    ("Room 61-B costs 61.", E("61"), C, "typed"),
    ("Curie, Marie", E("Marie Curie"), C, "token_f1"),
    ("Pierre Dupont", E("Marie Curie"), U, NO_TIER),  # absent gold alone proves nothing
    ("Pierre Dupont", E("Marie Curie", candidates=[["Pierre Dupont"]]), I, "conflict"),
    ("Marie", E("Marie Curie"), U, NO_TIER),
    ("The champs elysees boutique hotel.", E("Champs-Élysées Boutique Hotel"), C, "exact"),
    ("Champs-Élysées Boutique Hotel", E("Champs-Elysees Boutique Hotel"), C, "exact"),
    # tuples: every part is required
    ("Blue Horizon Hotels is in Maldives.", E("Maldives", "Blue Horizon Hotels"), C, "contains"),
    ("Blue Horizon Hotels is in Sydney.", E("Maldives", "Blue Horizon Hotels"), U, NO_TIER),
    ("Blue Horizon Hotels is in Sydney.",
     E("Maldives", "Blue Horizon Hotels", candidates=[["Sydney", "Fiji"], []]), I, "conflict"),
    ("Blue Horizon Hotels is in Australia.", E("Maldives", "Blue Horizon Hotels"), I, "conflict"),
    ("Marie Curie, from 2023-04-01", E("Marie Curie", "2023-04-01"), C, "contains"),
    ("Marie Curie, from 2023-05-01", E("Marie Curie", "2023-04-01"), I, "typed"),
    # refusals are wrong for answerable probes, unless the gold is there too (then: undecided)
    ("I don't know.", E("Marie Curie"), I, "refusal"),
    ("The passage does not contain the director's name.", E("Marie Curie"), I, "refusal"),
    ("I'm sorry, but I'm unable to assist with your query.", E("Marie Curie"), I, "refusal"),
    ("I couldn't find any information about that project.", E("2023-04-01"), I, "refusal"),
    ("N/A", E("Marie Curie"), I, "refusal"),
    # a refusal followed by an answer is an answer (issue 29)
    ("I don't have access to records, but the director is Marie Curie.", E("Marie Curie"), C,
     "contains"),
    # empty
    ("", E("Marie Curie"), I, "empty"),
    ("   ", E("Marie Curie"), I, "empty"),
    (None, E("Marie Curie"), I, "empty"),
]  # fmt: skip


@pytest.mark.parametrize(("response", "expected", "verdict", "tier"), CASES)
def test_tier_chain(response: str | None, expected: Expected, verdict: Verdict, tier: str) -> None:
    d = judge(response, expected)
    assert (d.verdict, d.tier) == (verdict, tier), d.reason


def test_query_echo_is_not_evidence() -> None:
    q = "Find industry associated with 'EcoSpace Real Estate'."
    industry = E("Real Estate", candidates=[["Construction", "Mining", "Retail"]])
    # The gold occurs only inside the repeated entity name: no evidence; another industry is.
    echoed = judge("EcoSpace Real Estate is a construction firm.", industry, q)
    assert (echoed.verdict, echoed.code) == (I, "other_value")
    assert (
        "echo" in judge("EcoSpace Real Estate is a construction firm.", E("Real Estate"), q).reason
    )
    # Nothing but the echo: no answer given, but no other answer either.
    assert judge("Client profile: EcoSpace Real Estate", industry, q).verdict is U
    answered = judge("EcoSpace Real Estate works in real estate.", industry, q)
    assert answered.verdict is C


def test_query_date_repeated_is_not_a_conflict() -> None:
    q = "When did the project that started on 2022-01-10 end?"
    d = judge(
        "The project that started on January 10, 2022 ended on May 20, 2025.", E("2025-05-20"), q
    )
    assert d.verdict is C
    d = judge("The project started on January 10, 2022.", E("2025-05-20"), q)
    assert d.verdict is I  # no end date given at all


def test_stale_answer_is_incorrect_with_reason_stale() -> None:
    exp = E("Grace Hopper", stale_values=[["Alan Turing"]])
    d = judge("The manager is Alan Turing.", exp)
    assert (d.verdict, d.tier, d.reason) == (I, "stale", STALE)
    assert d.code == STALE
    assert judge("Grace Hopper took over from Alan Turing.", exp).verdict is C
    stale_date = E("2024-06-30", stale_values=[["2024-03-31"]])
    assert judge("It ends on March 31, 2024.", stale_date).reason == STALE
    assert judge("It ends on April 1, 2024.", stale_date).reason.startswith("date_mismatch")


@pytest.mark.parametrize(
    ("response", "verdict"),
    [
        ("Sorry, I don't know the answer.", C),
        ("The provided context does not mention quantum mechanics.", C),
        ("Quantum mechanics is the physics of very small things.", I),
        ("The context does not mention it. However, quantum mechanics studies atoms.", U),
        ("", I),
    ],
)
def test_unanswerable_only_an_explicit_refusal_is_right(response: str, verdict: Verdict) -> None:
    d = judge(response, Expected(answerable=False), "Explain quantum mechanics?")
    assert d.verdict is verdict, d.reason


OPTIONS = ["United States", "Canada", "Russia", "Germany"]


@pytest.mark.parametrize(
    ("gold", "response", "verdict"),
    [
        ("C", "C", C),
        ("C", "(C)", C),
        ("C", "The answer is C) Russia.", C),
        ("C", "Answer: c", C),
        ("Russia", "Russia hosted it.", C),
        ("C", "A nation in Europe: Russia.", C),  # the article "A" is not option A
        ("C", "B) Canada", I),
        ("C", "It was Germany.", I),
        ("C", "Either Canada or Russia.", U),
    ],
)
def test_multiple_choice(gold: str, response: str, verdict: Verdict) -> None:
    d = judge(
        response, E(gold, options=OPTIONS), "Which nation hosted the 2014 Winter Paralympics?"
    )
    assert d.verdict is verdict, d.reason


def test_tiers_are_configurable_and_validated() -> None:
    exp = E("Marie Curie")
    assert judge_deterministic("q", exp, "It is Marie Curie.", tiers=["exact"]).verdict is U
    assert judge_deterministic("q", exp, "Marie Curie", tiers=["exact"]).tier == "exact"
    only_refusal = judge_deterministic("q", exp, "I don't know", tiers=["refusal"])
    assert only_refusal.tier == "refusal"
    with pytest.raises(ValueError, match="unknown judging tier"):
        validate_tiers(["exact", "magic"])
    with pytest.raises(ValueError, match="unknown judging tier"):
        judge_deterministic("q", exp, "x", tiers=["magic"])
    assert set(DEFAULT_TIERS) >= {"refusal", "typed", "contains", "token_f1", "stale"}


def test_scores_carry_token_prf() -> None:
    d = judge("Marie Curie", E("Marie Curie"))
    assert d.scores.rules is not None and d.scores.rules.token_f1 == pytest.approx(1.0)
    d = judge("The director is Marie Curie", E("Marie Curie"))
    assert d.scores.rules is not None and d.scores.rules.token_recall == 1.0
    assert 0 < d.scores.rules.token_precision < 1
    assert d.scores.rules.stale_version is None
    # the stale tier says which earlier version it matched, beside the token overlap
    stale = judge("Alan Turing", E("Grace Hopper", stale_values=[["Ada"], ["Alan Turing"]]))
    assert stale.tier == "stale" and stale.scores.rules is not None
    assert stale.scores.rules.stale_version == 1 and stale.scores.rules.token_f1 == 0.0


#: Not stop words, not the words of a refusal ("It is Unclear." with the gold "Unclear" is
#: ambiguous: "is unclear" is how a model declines, so the judge leaves it undecided), and not
#: numbers written as words: the gold "Four" is the number 4, a typed gold, which an answer
#: stating no number misses (``number_missing``) as it would miss "4" — not free text.
_NOT_A_GOLD_WORD = (
    {"the", "and", "not", "nor", "non", "was", "are", "for", "with", "from"}
    | {"unknown", "unclear", "unavailable", "impossible", "unable"}
    | set(_WORD_NUMBERS)
    | set(_ORDINAL_WORDS)
)
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9).filter(
    lambda w: w not in _NOT_A_GOLD_WORD
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_WORDS, min_size=1, max_size=4), st.sampled_from(["{}", "It is {}.", "Answer: {}!"])
)
def test_gold_inside_a_sentence_is_correct(words: list[str], template: str) -> None:
    gold = " ".join(w.capitalize() for w in words)
    assert judge(template.format(gold), E(gold)).verdict is C


@pytest.mark.parametrize("gold", ["Billion", "Hundred", "Million Dollar Baby"])
def test_a_scale_word_without_a_count_is_a_name_not_a_number(gold: str) -> None:
    """'Billion' alone was read as 10^9 (hypothesis found it): its own sentence was
    number_missing. A number in words needs its count ("one billion")."""
    assert judge(f"It is {gold}.", E(gold)).verdict is C
    assert judge("It is 1000000000.", E("one billion")).verdict is C


_FORMATS = [
    lambda d: d.isoformat(),
    lambda d: f"{d:%B} {d.day}, {d.year}",
    lambda d: f"{d.day} {d:%B} {d.year}",
    lambda d: f"the {d.day}{_suffix(d.day)} of {d:%B}, {d.year}",
    lambda d: f"{d:%b}. {d.day} {d.year}",
]


def _suffix(day: int) -> str:
    if 10 <= day % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


@settings(max_examples=300, deadline=None)
@given(
    st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)),
    st.sampled_from(_FORMATS),
    st.integers(min_value=1, max_value=400),
)
def test_any_date_form_matches_and_other_days_do_not(day: date, fmt, shift: int) -> None:  # type: ignore[no-untyped-def]
    gold = E(day.isoformat())
    assert judge(f"It was on {fmt(day)}.", gold).verdict is C
    other = day + timedelta(days=shift)
    assert judge(f"It was on {fmt(other)}.", gold).verdict is I


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1000, max_value=10**9))
def test_numbers_with_thousands_separators(n: int) -> None:
    gold = E(str(n))
    assert judge(f"The total is {n:,}.", gold).verdict is C
    wrong = n + max(1, n // 10)
    wrong += wrong % 10 == 0  # "4,000" may be a rounding of 3,637: that is left undecided
    assert judge(f"The total is {wrong:,}.", gold).verdict is I


IND = ["Retailing", "Banking", "Mining", "Energy", "Hospitality", "Healthcare", "Real Estate"]
COUNTRIES = ["USA", "United Kingdom", "France", "Japan", "Canada"]


def _cands(gold: str, domain: list[str]) -> list[list[str]]:
    return [[c for c in domain if c != gold]]


@pytest.mark.parametrize(
    ("response", "gold", "domain", "verdict", "code"),
    [
        # paraphrases and variants of the gold are never wrong (issue 15)
        ("Walmart operates in the retail industry.", "Retailing", None, C, "stem_match"),
        ("Citigroup is an investment bank and financial services corporation.", "Banking", None,
         C, "stem_match"),
        ("It is headquartered in the United States.", "USA", None, C, "alias_match"),
        ("It is headquartered in the United States.", "USA", COUNTRIES, C, "alias_match"),
        ("United Kingdom", "United Kindom", None, C, "alias_match"),
        ("Northgate sits in the UK.", "United Kingdom", COUNTRIES, C, "alias_match"),  # acronym
        ("Ana is our CEO.", "Chief Executive Officer", None, C, "alias_match"),
        ("Der Sitz ist in Deutschland.", "Germany", None, C, "alias_match"),
        ("The director is Leonardo da Vinchi.", "Leonardo Da Vinci", None, C, "fuzzy_match"),
        ("Citigroup takes deposits and lends money.", "Banking", IND, U, NO_TIER),
        ("Pinnacle runs hospitals and clinics.", "Healthcare", IND, U, NO_TIER),  # stem of a rival
        # hedges are never right, nor conclusively wrong: the gold is among the candidates
        ("Either USA or UK.", "USA", None, U, NO_TIER),
        ("Either USA or UK.", "USA", COUNTRIES, U, NO_TIER),
        ("USA/UK", "USA", None, U, NO_TIER),
        ("It is probably mining, but it might be energy.", "Mining", IND, U, NO_TIER),
        ("The USA, or the United States of America.", "USA", COUNTRIES, C, "contains"),
        # positive evidence of another answer
        ("It works in energy.", "Mining", IND, I, "other_value"),
        ("It is headquartered in Japan.", "USA", None, I, "other_value"),
        ("It is headquartered in Japan.", "USA", COUNTRIES, I, "other_value"),
        ("It is not headquartered in the USA but in Canada.", "USA", COUNTRIES, I, "other_value"),
        ("It runs hotels, in hospitality rather than in real estate.", "Hospitality", IND, C,
         "contains"),
        ("It runs hotels in Leeds and York.", "Hospitality", IND, U, NO_TIER),
    ],
)  # fmt: skip
def test_issue_15_classes(
    response: str, gold: str, domain: list[str] | None, verdict: Verdict, code: str
) -> None:
    exp = E(gold, candidates=_cands(gold, domain)) if domain else E(gold)
    d = judge(response, exp, "Which one?")
    assert d.verdict is verdict, d.reason
    if verdict is not U:
        assert d.code == code, d.reason


def test_gold_inside_a_longer_rival_is_not_the_gold() -> None:
    titles = E("Engineer", candidates=[["Senior Engineer", "Analyst"]])
    assert judge("He is a Senior Engineer.", titles).verdict is I
    assert judge("He is an engineer on the team.", titles).verdict is C
    senior = E("Senior Engineer", candidates=[["Engineer", "Analyst"]])
    assert judge("She is a Senior Engineer.", senior).verdict is C
    assert judge("She is an engineer.", senior).verdict is I


@pytest.mark.parametrize(
    ("response", "gold", "verdict"),
    [
        ("He is 30 years old.", "31", I),  # one trailing zero is exact without a cue
        ("He is about 30 years old.", "31", U),
        ("He is 30 or 31 years old.", "31", U),
        ("The budget is 3 million euros.", "2500000", I),  # 20 % off is not a rounding
        ("The budget is about 3 million euros.", "2500000", U),
        ("It began on April 1, 2023 or April 2, 2023.", "2023-04-01", U),
    ],
)
def test_numbers_and_dates_hedges_and_rounding(response: str, gold: str, verdict: Verdict) -> None:
    assert judge(response, E(gold)).verdict is verdict


def test_list_gold_items_are_not_rivals_of_each_other() -> None:
    people = ["Marie Curie", "Alan Turing", "Grace Hopper"]
    exp = E("Marie Curie", "Alan Turing", candidates=[people, people])
    assert judge("Marie Curie and Alan Turing.", exp).verdict is C
    assert judge("Grace Hopper and Alan Turing.", exp).verdict is I
    assert judge("Marie Curie, Alan Turing and Grace Hopper.", exp).verdict is U


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=3), st.lists(_WORDS, min_size=1, max_size=3))
def test_absent_gold_without_rivals_is_never_incorrect(gold: list[str], other: list[str]) -> None:
    """Free text that does not name the gold, with no other evidence, is undecided — not wrong."""
    g, o = " ".join(gold), " ".join(other)
    d = judge(f"It is {o}.", E(g.title()))
    assert d.verdict is not I or d.tier in ("refusal", "conflict"), d.reason


def test_another_day_without_its_year_is_a_date_mismatch_not_a_missing_date() -> None:
    """The answer gives a date, only another day: the reason says so (it said date_missing)."""
    assert judge("On April 2nd.", E("2023-04-01")).reason.startswith("date_mismatch: gold")
    assert judge("It began after the permits.", E("2023-04-01")).reason.startswith("date_missing")
