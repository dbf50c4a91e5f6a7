"""The deterministic judge's fast paths give what their slow equivalents give, on any input.

Each shortcut on the judge's hot path (a per-gold index of the rivals, an identity cache of the
gold, a dict of stems, a bytes pre-check for capitalised words, a decision built without its
dataclass ``__init__``) must be invisible in the verdicts, tiers, reasons and scores: these
properties compare each against the plain computation over generated inputs that mix names,
rivals, acronyms, negations, hedges, numbers, dates, lists, non-ASCII text and empty answers.
"""

from __future__ import annotations

import dataclasses
import pickle
import re
from typing import Any
from unittest.mock import patch

from hypothesis import example, given, settings
from hypothesis import strategies as st

from groundwatch.core.judging import tiers
from groundwatch.core.judging.citations import read_citations
from groundwatch.core.judging.decision import Decision
from groundwatch.core.judging.gold import _key, _prepare, gold_key, prepare_gold
from groundwatch.core.judging.tiers import TIERS, ParsedResponse, judge_deterministic
from groundwatch.core.judging.variants import stem, stems
from groundwatch.core.model import AnswerType, ColumnDomain, Expected, Verdict
from groundwatch.stages.judge.tiered import JudgeCounters

WORDS = [
    "Marie", "Curie", "marie curie", "Paris", "United Kingdom", "United Kindom", "UK", "USA",
    "the United States", "Germany", "München", "東京", "Zürich", "CEO", "chief executive officer",
    "retail", "Retailing", "banks", "Bank", "Senior Engineer", "Engineer", "not", "isn't", "or",
    "either", "possibly", "rather than", "unlike", "no", "1898", "30", "31", "3.5 million", "42%",
    "2024-01-05", "January 5, 2024", "5 January 2024", "2023", "I don't know", "cannot answer",
    "a", "the", "is", "was", ",", ".", "/", "(", ")", "é", "Ελλάδα", "Россия", "हिन्दी", "",
]  # fmt: skip
VALUES = [
    "Marie Curie", "Paris", "United Kingdom", "Germany", "München", "東京", "Retailing", "Bank",
    "Engineer", "Senior Engineer", "chief executive officer", "1898", "30", "3.5 million",
    "2024-01-05", "Zürich", "USA",
]  # fmt: skip

text = st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join)
values = st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True)


@st.composite
def expected(draw: Any) -> Expected:
    vals = draw(values)
    cands = [draw(st.lists(st.sampled_from(VALUES), max_size=6, unique=True)) for _ in vals]
    return Expected(
        values=vals,
        types=draw(st.sampled_from([[], [AnswerType.TEXT] * len(vals)])),
        answerable=draw(st.booleans()) or True,
        stale_values=draw(st.sampled_from([[], [[VALUES[0]] * len(vals)]])),
        candidates=draw(st.sampled_from([[], cands])),
    )


def _judge(query: str, gold: Any, response: str) -> tuple[Any, ...]:
    ev = ParsedResponse(query, gold, response)
    for tier in TIERS.values():
        d = tier(ev)
        if d is not None:
            return d.verdict, d.tier, d.reason, d.scores
    return Verdict.UNDECIDED, "none", tuple(ev.notes)


@settings(max_examples=400, deadline=None)
@given(expected(), text, text)
@example(Expected(values=["Retailing"], candidates=[["Bank"]]), "", "the banks")  # by stem
@example(Expected(values=["Paris"], candidates=[["chief executive officer"]]), "", "the CEO")
@example(Expected(values=["Marie Curie"], candidates=[["Paris"]]), "", "Not Paris, Marie Curie")
def test_rival_index_walks_what_the_plain_walk_finds(exp: Expected, query: str, resp: str) -> None:
    gold = prepare_gold(exp)
    # Index sets holding every word, stem and capitalised word of this response: the pre-filters
    # never rule anything out, so every rival and every acronym is walked, as before the index.
    ev = ParsedResponse(query, gold, resp)
    everything = ev.tok_set | ev.stem_set | ev.upper_words
    slow = dataclasses.replace(
        gold,
        lookups=tuple(
            dataclasses.replace(
                lk,
                last_words=everything,
                stem_lasts=everything,
                initials=everything | lk.initials,
            )
            for lk in gold.lookups
        ),
    )
    assert _judge(query, gold, resp) == _judge(query, slow, resp), (exp, query, resp)


@settings(max_examples=300, deadline=None)
@given(expected(), text, st.one_of(text, st.just(""), st.just("   "), st.none()))
def test_identity_cache_judges_as_a_fresh_copy(exp: Expected, query: str, resp: Any) -> None:
    copy = Expected(**exp.model_dump())
    assert gold_key(exp) == gold_key(copy) == _key(copy)
    assert prepare_gold(exp) is _prepare(*_key(copy))
    assert judge_deterministic(query, exp, resp) == judge_deterministic(query, copy, resp)
    assert judge_deterministic(query, exp, resp) == judge_deterministic(query, exp, resp)


@settings(deadline=None)
@given(st.text())
def test_capitalised_words_pre_check(response: str) -> None:
    ev = ParsedResponse("", prepare_gold(Expected(values=["x"])), response)
    # over the text as the judge reads it: citation markers dropped ("AA¹" is the word AA)
    read = read_citations(response)
    plain = frozenset(w.lower() for w in re.findall(r"\b[A-Z]{2,}\b", read))
    assert ev.upper_words == plain


def test_capitalised_words_with_a_lone_surrogate() -> None:
    ev = ParsedResponse("", prepare_gold(Expected(values=["x"])), "the \ud800 UK and NASA")
    assert ev.upper_words == {"uk", "nasa"}


@settings(deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=8))))
def test_stems_match_the_stemmer(toks: list[str]) -> None:
    assert stems(toks) == [stem(t) for t in toks]
    assert stems(toks) == [stem(t) for t in toks]  # the second time from the dict


def test_decision_made_is_the_dataclass() -> None:
    made = Decision.made(Verdict.CORRECT, "contains", "contains: 'x'", {"token_f1": 1.0})
    plain = Decision(Verdict.CORRECT, "contains", "contains: 'x'", {"token_f1": 1.0})
    assert made == plain and repr(made) == repr(plain) and vars(made) == vars(plain)
    assert pickle.loads(pickle.dumps(made)) == plain
    assert Decision.made(Verdict.UNDECIDED, "none", "r") == Decision(Verdict.UNDECIDED, "none", "r")
    try:
        made.tier = "x"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a made decision must stay frozen")


@settings(deadline=None)
@given(st.one_of(st.text(), st.text().map(lambda t: "judge_error" + t)))
def test_counters_count_judge_errors_by_code(reason: str) -> None:
    counters = JudgeCounters()
    decision = Decision.made(Verdict.UNDECIDED, "none", reason)
    counters.record(decision)
    assert counters.judge_errors == (decision.code == "judge_error")


STEM_WORDS = [
    "Engineer", "Engineers", "engineering", "Senior", "Seniors", "senior engineers", "Bank",
    "Banks", "banking", "Retail", "Retailing", "Paris", "Parisian", "the", "or", "not", "is", ",",
]  # fmt: skip
STEM_VALUES = [
    "Engineer", "Engineers", "Senior Engineer", "Seniors Engineer", "Bank", "Banks", "Banking",
    "Retailing", "Paris", "Retail",
]  # fmt: skip


@st.composite
def with_domain(draw: Any) -> Expected:
    vals = draw(st.lists(st.sampled_from(STEM_VALUES), min_size=1, max_size=2, unique=True))
    dom = draw(st.lists(st.sampled_from(STEM_VALUES), min_size=1, max_size=8, unique=True))
    alts = [draw(st.lists(st.sampled_from(STEM_VALUES), max_size=1)) for _ in vals]
    return Expected(
        values=vals,
        domain=[ColumnDomain.of(sorted({*dom, v})) for v in vals],
        alternatives=[[a for a in alt if a != v] for alt, v in zip(alts, vals, strict=True)],
    )


@settings(max_examples=400, deadline=None)
@given(with_domain(), st.lists(st.sampled_from(STEM_WORDS), max_size=10).map(" ".join))
@example(
    Expected(values=["Engineer"], domain=[ColumnDomain.of(["Engineer", "Bank"])]),
    "engineers and the Engineer",
)
@example(
    Expected(values=["Senior Engineer"], domain=[ColumnDomain.of(["Senior Engineer", "Seniors Engineer"])]),
    "senior engineer, not seniors engineers",
)  # fmt: skip
def test_stem_search_shortcuts_find_what_the_full_search_finds(exp: Expected, resp: str) -> None:
    """The stem search skipped where every word with a gold stem is the gold's own word, and the
    domain walk skipped where only the gold's own words are hit: the same decisions as always
    searching and walking."""
    gold = prepare_gold(exp)
    fast = _judge("", gold, resp)
    slow_gold = dataclasses.replace(
        gold, domain_own=tuple((frozenset(), frozenset()) for _ in gold.domain_own)
    )
    with patch.object(tiers, "_stems_add_nothing", lambda ev, part: False):
        slow = _judge("", slow_gold, resp)
    assert fast == slow, (exp, resp)


NUMBER_PIECES = [
    "0", "1", "7", "19", "1971", "2018", "30", "000", ",", ".", " ", "\u00a0", "-", "+", "$", "£",
    "%", "k", " m", " km", "thousand", "about ", "over", "est.", "~", "≈", "c.", "more than ",
    "the year ", "x", "a", "19th", "1990s", "'90s", "first", "nineties", "centur", "ninth",
    "one", "/", "\n",
]  # fmt: skip
number_text = st.lists(st.sampled_from(NUMBER_PIECES), max_size=12).map("".join)


@settings(max_examples=600, deadline=None)
@given(number_text)
@example("about 300 people")
@example("roughly\n 4,000 staff since 1990s and ~40")
def test_number_reader_shortcuts_read_what_the_patterns_read(t: str) -> None:
    """Numbers searched from their first digit, the approximation cue gated by what the text
    before must end with, the rare gate by its pieces, plain digits parsed directly: what the
    patterns themselves find, everywhere."""
    from groundwatch.core.judging import numbers as n

    assert [(m.span(), m.groupdict()) for m in n._numbers_written(t)] == [
        (m.span(), m.groupdict()) for m in n._NUM.finditer(t)
    ]
    for end in range(len(t) + 1):
        cue = t[:end].rstrip().endswith(n._APPROX_ENDS) and n._APPROX_CUE.search(t, 0, end)
        assert bool(cue) == (n._APPROX_CUE.search(t, 0, end) is not None), (t, end)
    assert (n._has_piece(t, n._RARE_PIECES) and n._RARE_GATE.search(t) is not None) == (
        n._RARE_GATE.search(t) is not None
    )
    for m in n._NUM.finditer(t):
        assert n._digits_value(m["num"]) == _digits_value_in_full(m["num"])


def _digits_value_in_full(raw: str) -> tuple[float, float]:
    """The digit reader without its shortcut for plain digits: every separator rule tried."""
    s = raw.replace("\u00a0", " ").replace("\u202f", " ").replace("\u2009", " ")
    if re.fullmatch(r"\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?", s):
        s = s.replace(".", "").replace(",", ".")
    elif re.fullmatch(r"\d+,\d{1,2}", s):
        s = s.replace(",", ".")
    else:
        s = s.replace(",", "").replace(" ", "")
    if "." in s:
        return float(s), 10.0 ** -(len(s) - s.index(".") - 1)
    trailing = len(s) - len(s.rstrip("0")) if s.strip("0") else 0
    return float(s), 10.0**trailing


@settings(max_examples=400, deadline=None)
@given(text)
@example("N/A")
@example(" none. ")
@example("-")
def test_refusal_trigger_test_first_finds_every_refusal(t: str) -> None:
    """The tokens' trigger test comes before the null-answer test: every null answer with a
    token has a trigger among them, so the refusals found are those of the full test."""
    from groundwatch.core.judging.normalize import fold, tokens
    from groundwatch.core.judging.refusal import _NULL_ANSWERS, _TRIGGERS, detect_refusal

    for null in _NULL_ANSWERS:
        assert not tokens(null) or not _TRIGGERS.isdisjoint(tokens(null)), null
    f = fold(t)
    assert detect_refusal(f, tokens(f, folded=True)) == detect_refusal(f)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([*VALUES, "united kindom", "marie curei"]), text)
@example("united kingdom", "the united kindom or the united kingdon")  # a tie: the first wins
def test_fuzzy_window_in_one_call_is_the_window_loop(gold: str, resp: str) -> None:
    """The near-spelling windows scored in one matcher call: the window the loop over them
    finds (the first of equally similar ones)."""
    from rapidfuzz import fuzz

    from groundwatch.core.judging.normalize import normalize, tokens
    from groundwatch.core.judging.variants import FUZZY_MIN_CHARS, FUZZY_SCORE, fuzzy_window

    norm, toks = normalize(gold), tokens(resp)
    best: tuple[int, int, float] | None = None
    if len(norm) >= FUZZY_MIN_CHARS and not any(ch.isdigit() for ch in norm):
        n = norm.count(" ") + 1
        for size in {max(1, n - 1), n, n + 1}:
            for i in range(len(toks) - size + 1):
                score = fuzz.ratio(norm, " ".join(toks[i : i + size]), score_cutoff=FUZZY_SCORE)
                if score and (best is None or score > best[2]):
                    best = (i, i + size, score)
    assert fuzzy_window(norm, toks) == best


@settings(max_examples=400, deadline=None)
@given(number_text)
@example("between 3 and 4")
@example("3 to 4")
def test_range_test_split_is_the_alternation(t: str) -> None:
    joined = re.compile(r"\d\s*(?:-|–|—|to\b)\s*[$£€¥]?\s?\d|\bbetween\b")
    assert tiers._has_range(t) == (joined.search(t) is not None)
    assert tiers._has_range(t + " between") == (joined.search(t + " between") is not None)


def test_reading_named_is_the_dataclass() -> None:
    fast = tiers.Reading.named(tiers.Level.SURFACE, [(1, 2)])
    assert dataclasses.asdict(fast) == dataclasses.asdict(
        tiers.Reading(level=tiers.Level.SURFACE, spans=[(1, 2)])
    )
    assert fast == tiers.Reading(level=tiers.Level.SURFACE, spans=[(1, 2)])
