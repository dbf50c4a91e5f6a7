"""The judge on answers written by real LLMs and readers (issue 29): each class of false
"incorrect" (and of false "correct") seen on people-judged answers, one test each."""

from __future__ import annotations

import pytest

from groundwatch.core.judging import Decision, judge_deterministic, prepare_gold
from groundwatch.core.model import AnswerType, ColumnDomain, Expected, Verdict

pytestmark = pytest.mark.unit

C, I, U = Verdict.CORRECT, Verdict.INCORRECT, Verdict.UNDECIDED  # noqa: E741


def E(*values: str, **kw: object) -> Expected:
    return Expected(values=list(values), **kw)  # type: ignore[arg-type]


def judge(response: str, expected: Expected, query: str = "Which one?") -> Decision:
    return judge_deterministic(query, expected, response)


CITIES = ["Calgary", "Winnipeg", "Lethbridge", "Edmonton", "Lisbon", "Tallinn"]


def _cands(gold: str, domain: list[str]) -> list[list[str]]:
    return [[c for c in domain if c != gold]]


@pytest.mark.parametrize(
    ("response", "gold", "verdict"),
    [
        ("Legislation is a statute or statutory law.", "Statute", C),
        ("Amabel means 'worthy of love' or 'lovable'.", "Worthy of love", C),
        (
            "The heart's pacemaker is the sinoatrial node or natural pacemaker.",
            "Sinoatrial node",
            C,
        ),
        ("The change is called evaporation or vaporization.", "Evaporation", C),
        ("Sherlock Holmes practices the science of detection or detective work.", "Detection", C),
    ],
)
def test_a_disjunction_of_restatements_is_no_hedge(
    response: str, gold: str, verdict: Verdict
) -> None:
    d = judge(response, E(gold))
    assert d.verdict is verdict, d.reason


def test_a_disjunction_is_a_hedge_only_between_rivals() -> None:
    # another value of the column, or another value of the gold's type (a country), is a rival
    lisbon = E("Lisbon", candidates=_cands("Lisbon", CITIES))
    # a hedge offers the gold among other candidates: never right, never conclusively wrong
    assert judge("Her office is in Lisbon or Tallinn.", lisbon).verdict is U
    assert judge("Her office is in Lisbon or Tallinn.", lisbon).reason.startswith("hedge")
    assert judge("Either USA or UK.", E("USA")).verdict is U
    # the other side is no value the database knows: no evidence of a hedge
    assert judge("Her office is in Lisbon or thereabouts, the old town.", lisbon).verdict is C
    # numbers: an alternative next to the gold hedges, a number elsewhere in the answer does not
    assert judge("The founder is 30 or 31 years old.", E("31")).reason.startswith("hedge")
    long = "Snake eyes is a throw of one on each die; the term likely dates from 1930."
    assert judge(long, E("1")).verdict is C


def test_a_compound_duration_is_one_amount() -> None:
    d = judge("The film runs 228 minutes or 3 hours and 48 minutes.", E("228"))
    assert d.verdict is C, d.reason
    assert judge("It runs 228 or 230 minutes.", E("228")).reason.startswith("hedge")


@pytest.mark.parametrize(
    ("response", "gold", "verdict"),
    [
        # a denial word inside a quoted or capitalised name denies nothing
        (
            "The song 'I Write Sins Not Tragedies' is by Panic! At The Disco.",
            "Panic! At The Disco",
            C,
        ),
        (
            'The song "I Write Sins Not Tragedies" is by Panic! At The Disco.',
            "Panic! At The Disco",
            C,
        ),
        ("I Write Sins Not Tragedies is by Panic! At The Disco.", "Panic! At The Disco", C),
        # a denial reaches no further than its clause
        ("It was not Paris; the capital was Lyon.", "Lyon", C),
        ("It was not Paris; the capital was Lyon.", "Paris", I),
        ("The director is not Marie Curie.", "Marie Curie", I),
        ("It is not headquartered in Lisbon.", "Lisbon", I),
    ],
)
def test_denials_are_scoped_to_their_clause_and_never_inside_a_name(
    response: str, gold: str, verdict: Verdict
) -> None:
    d = judge(response, E(gold))
    assert d.verdict is verdict, d.reason


def test_rivals_come_from_the_answer_not_from_the_question_restated() -> None:
    q = "Who did the United States fight in the War of 1812?"
    answer = "During the War of 1812, the United States fought against Great Britain."
    d = judge(answer, E("United Kingdom"), q)
    assert d.verdict is C, d.reason
    # the gold not named, the question's own country restated: no evidence either way
    d = judge(
        "During the War of 1812, the United States fought the British.", E("United Kingdom"), q
    )
    assert d.verdict is U, d.reason
    # a country the question does not name is still a rival
    d = judge("During the War of 1812, the United States fought France.", E("United Kingdom"), q)
    assert d.verdict is I and "france" in d.reason


@pytest.mark.parametrize(
    ("response", "gold", "verdict"),
    [
        ("The Jets have won the Super Bowl once.", "1", C),
        ("They have won it twice.", "2", C),
        ("There are seven of them.", "7", C),
        ("A dozen eggs were used.", "12", C),
        ("It was repealed by the 21st Amendment.", "21", C),
        ("Their first title came after they had won seven games.", "7", C),
        ("Pete Sampras was seeded 12th when he won his first US Open.", "twelve", C),
        ("The contest was first held in 1951.", "one thousand, nine hundred and fifty-one", C),
        ("They have won the Super Bowl twice.", "1", I),
    ],
)
def test_numbers_in_words_ordinals_and_counts(response: str, gold: str, verdict: Verdict) -> None:
    d = judge(response, E(gold))
    assert d.verdict is verdict, d.reason


@pytest.mark.parametrize(
    ("response", "expected", "verdict"),
    [
        ("It happened in the 1990s.", E("1996"), U),
        ("It happened in the nineties.", E("1996"), U),
        ("It happened in the late 19th century.", E("1898"), U),
        ("It happened in the 1800s.", E("1898"), U),
        ("It opened in the 1990s.", E("1996-05-01", types=[AnswerType.DATE]), U),
        ("It opened in the late 19th century.", E("1898-05-01", types=[AnswerType.DATE]), U),
        ("She was in her thirties.", E("35"), U),
        # a span that leaves the gold out still contradicts it
        ("It happened in the 1980s.", E("1996"), I),
        ("It opened in the 20th century.", E("1898-05-01", types=[AnswerType.DATE]), I),
    ],
)
def test_vague_temporal_answers_are_undecided_not_incorrect(
    response: str, expected: Expected, verdict: Verdict
) -> None:
    d = judge(response, expected)
    assert d.verdict is verdict, d.reason


def test_a_refusal_followed_by_an_answer_is_no_refusal() -> None:
    gold = E("Vanessa Redgrave")
    answer = (
        "I'm sorry, but I couldn't find any information about a person named Joey Richardson. "
        "However, there is an actress named Joely Richardson who is the daughter of actress "
        "Vanessa Redgrave."
    )
    assert judge(answer, gold, "Who is Joey Richardson's mother?").verdict is C
    answer = "I couldn't find that, but there is an actress named Joely Richardson."
    d = judge(answer, gold, "Who is Joey Richardson's mother?")
    assert d.verdict is U and "refusal_then_answer" in d.reason
    # a refusal with apology and advice after it is still a refusal
    answer = (
        "I'm sorry, but I couldn't find any specific information about a project called "
        "'Dubai Skyline Tower'. It's possible that the project name may be different. If you "
        "have any additional information, I'll be happy to help."
    )
    q = "Who directs the 'Dubai Skyline Tower' project?"
    assert judge(answer, E("Marie Curie"), q).verdict is I


def test_a_digit_inside_a_name_is_not_the_gold_number() -> None:
    d = judge("The office is at Qe 7 Bloco G, Brasilia.", E("7"), "How many staff does it have?")
    assert d.verdict is not C, d.reason
    d = judge("Apollo 11 Mission Control was in Houston.", E("7"), "How many staff?")
    assert d.verdict is not I or "11" not in d.reason
    # …unless the question asks for the number of that very name
    q = "Which highway was Revisited in a classic 60s album by Bob Dylan?"
    assert judge('"Highway 61 Revisited" is the album.', E("61"), q).verdict is C
    # a number standing as the answer's value is still read
    assert judge("It has 7 staff.", E("7"), "How many staff does it have?").verdict is C


@pytest.mark.parametrize(
    ("gold", "response", "verdict"),
    [
        ("1", "Yes, it has been discontinued.", C),
        ("1", "No.", I),
        ("0", "No, it is still sold.", C),
        ("0", "Yes.", I),
        ("yes", "1", C),
        ("no", "0", C),
        ("yes", "0", I),
        ("true", "Yes, it is.", C),
        ("False", "No, there is no record of that.", C),
        ("1", "It has been discontinued.", U),  # neither yes nor no: no evidence
    ],
)
def test_booleans_yes_no_one_zero_true_false_both_ways(
    gold: str, response: str, verdict: Verdict
) -> None:
    d = judge(response, E(gold), "Has the product been discontinued?")
    assert d.verdict is verdict, d.reason


def test_the_reason_never_names_a_rival_the_answer_does_not_hold() -> None:
    gold = E("Smith", candidates=[["Hughes", "Jones"]])
    d = judge("It was Hugh O'Reilly.", gold, "Who signed it?")
    assert d.verdict is U
    assert "Hughes" not in d.reason and "hughes" not in d.reason
    d = judge("It was Jones.", gold, "Who signed it?")
    assert d.verdict is I and "jones" in d.reason


@pytest.mark.parametrize(
    ("response", "gold", "verdict"),
    [
        ("0", "King", I),
        ("The answer is 42.", "Calgary", I),
        ("It was 2019-01-01.", "Calgary", I),
        ("Calgary had 42 visitors.", "Calgary", C),
        ("Stella Rimington was the first female head of MI5.", "Security Service", U),
        ("4", "Four pieces of fruit", U),  # the gold itself is a count
    ],
)
def test_an_answer_of_another_type_than_the_gold_is_wrong(
    response: str, gold: str, verdict: Verdict
) -> None:
    d = judge(response, E(gold), "What is the surname of employee 5?")
    assert d.verdict is verdict, d.reason


def test_a_reply_shorter_than_a_long_gold_is_judged_without_error() -> None:
    # the fuzzy window of a long gold used to run past the end of a two-word reply
    d = judge("Not in", E("Not in Education Employment"))
    assert d.verdict in (U, I)


# -- the whole answer column, the asked row's other values, "any of these" golds ---------------

CITY_DOMAIN = ColumnDomain.of(["Calgary", "Winnipeg", "Lethbridge", "Edmonton", "Red Deer"])


def test_every_value_of_the_column_is_evidence() -> None:
    q = "Which city does Robert King live in?"
    exp = E("Calgary", domain=[CITY_DOMAIN])
    d = judge("He lives in Winnipeg.", exp, q)
    assert (d.verdict, d.reason) == (I, "other_value: 'winnipeg' (gold 'Calgary')")
    assert judge("He lives in Calgary or Winnipeg.", exp, q).reason.startswith("hedge")
    assert judge("He lives in Calgary.", exp, q).verdict is C
    # the gold is never its own rival, whatever the domain holds
    assert judge("Calgary, Alberta.", exp, q).verdict is C
    # one matcher per domain, shared by every group of the template
    other = E("Edmonton", domain=[ColumnDomain.of(list(CITY_DOMAIN.values))])
    judge("Edmonton.", other, q)
    assert prepare_gold(other).domains[0] is prepare_gold(exp).domains[0]


def test_the_right_row_with_another_column_is_wrong() -> None:
    q = "What is Robert King's title?"
    exp = E("Sales Representative", attributes=["(71) 555-5598", "Lethbridge", "Edgeham Hollow"])
    d = judge("Robert King's phone is (71) 555-5598, his city is Lethbridge.", exp, q)
    assert d.verdict is I and d.reason.startswith("other_attribute"), d.reason
    assert judge("Robert King is a Sales Representative in Lethbridge.", exp, q).verdict is C
    # saying part of the gold another way is no conclusive miss
    assert judge("He is a sales rep based in Lethbridge.", exp, q).verdict is U


def test_any_of_the_alternatives_is_the_gold() -> None:
    exp = E("United Kingdom", alternatives=[["UK", "Great Britain"]])
    assert judge("Great Britain.", exp).verdict is C
    assert judge("The UK, or Great Britain.", exp).verdict is C  # two spellings: no hedge
    assert judge("Britain or France.", exp).reason.startswith("hedge")  # an alternative, hedged
    assert judge("France.", exp).verdict is I
    assert judge("It is 61.", E("sixty-one", alternatives=[["61"]])).verdict is C


@pytest.mark.parametrize(
    ("query", "response", "verdict"),
    [
        # the only claims are numbers once the words that report them are set aside
        ("'Fortuna' builder", "Fortuna is listed with 1969 and 31298.", I),
        ("Who built the ship Fortuna?", "The records give 31298 for Fortuna.", I),
        # the question's own words said another way ("ships" for "ship") are no claim either
        ("Who built the ship named Fortuna?", "The ships' list shows Fortuna with 1969.", I),
        # a word that may name the builder another way keeps it open
        ("Who built the ship Fortuna?", "Fortuna was listed in 1969 by a Papenburg yard.", U),
        ("Who built the ship Fortuna?", "Fortuna was built in 1969 by shipwrights.", U),
    ],
)
def test_type_evidence_sets_aside_what_the_question_said_and_the_reporting_words(
    query: str, response: str, verdict: Verdict
) -> None:
    d = judge(response, E("Meyer Werft"), query)
    assert d.verdict is verdict, d.reason
    if verdict is I:
        assert d.reason.startswith("type_mismatch"), d.reason


SHIP_ROW = {
    "attributes": ["Kockums", "1969", "31298", "1970-05-14"],
    "attribute_types": [AnswerType.TEXT, AnswerType.NUMBER, AnswerType.NUMBER, AnswerType.DATE],
}


def test_the_rows_other_numbers_and_dates_are_evidence() -> None:
    q = "Which port is the ship Fortuna registered in?"
    port = E("Bergen", **SHIP_ROW)
    d = judge("Fortuna is listed with 1969 and 31298.", port, q)
    assert (d.verdict, d.reason) == (I, "other_attribute: '1969', '31298' (gold 'Bergen')")
    d = judge("Fortuna was launched in 1969 and commissioned on 14 May 1970.", port, q)
    assert d.verdict is I and "1969" in d.reason and "1970" in d.reason, d.reason
    d = judge("It has a tonnage of 31,298 tonnes and was built by Kockums.", port, q)
    assert d.verdict is I and d.reason.startswith("other_attribute"), d.reason
    # the gold named beside the row's other values is the answer
    assert judge("Fortuna (1969, 31298 t) sails from Bergen.", port, q).verdict is C
    # another name beside them may be the gold said another way: no conclusion
    assert judge("Fortuna, launched in 1969, sails from Bjorgvin.", port, q).verdict is U
    # a number the question holds is the question's, a number word no value of the row
    assert (
        judge("Built 1969.", E("Bergen", **SHIP_ROW), "Which port, for the 1969 ship?").verdict is U
    )
    assert judge("Fortuna is one of the ships.", E("Bergen", attributes=["1"],
                 attribute_types=[AnswerType.NUMBER]), q).verdict is U  # fmt: skip
    # a numeric gold: the row's other numbers are named as such
    tonnage = E("31298", types=[AnswerType.NUMBER], attributes=["Kockums", "1969"],
                attribute_types=[AnswerType.TEXT, AnswerType.NUMBER])  # fmt: skip
    d = judge("Fortuna is listed with Kockums and 1969.", tonnage, "Tonnage of Fortuna?")
    assert (d.verdict, d.reason) == (I, "other_attribute: '1969' (gold '31298')")
    assert judge("31,298 tonnes; launched 1969.", tonnage, "Tonnage of Fortuna?").verdict is C
    # the gold's own value is never one of the row's other values
    same = E("1969", types=[AnswerType.NUMBER], attributes=["1969.0"],
             attribute_types=[AnswerType.NUMBER])  # fmt: skip
    assert prepare_gold(same).typed_attributes == ()


def test_the_rows_other_values_beside_another_name_decide_nothing() -> None:
    q = "What is Robert King's title?"
    exp = E("Vice President Sales", attributes=["Lethbridge", "(71) 555-5598"])
    # 'VP' may be the gold said another way: the city beside it proves nothing
    d = judge("Robert King lives in Lethbridge and is the company's VP.", exp, q)
    assert d.verdict is U and "other_attribute_beside: 'VP'" in d.reason, d.reason
    d = judge("Robert King lives in Lethbridge.", exp, q)
    assert d.verdict is I and d.reason.startswith("other_attribute"), d.reason
