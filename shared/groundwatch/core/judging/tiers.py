"""The deterministic tier chain: cheap rules first, each deciding only what it can decide.

Every tier looks at the same :class:`Evidence` (the response folded, normalized and parsed once,
lazily) and returns a :class:`Decision` (correct or incorrect, with its evidence) or ``None``
("undecided here") — in which case the next tier is asked. A tier that sees conflicting evidence
(a refusal that still names the gold answer, a coarser date, a negated name) leaves a note and
passes; if no tier decides, the chain's answer is ``undecided`` carrying those notes, and the LLM
tier (outside the pure core) may take it from there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date
from difflib import SequenceMatcher
from enum import StrEnum
from functools import lru_cache

from groundwatch.core.judging.dates import (
    DateMatch,
    DateMention,
    extract_dates_from_tokens,
    match_date,
)
from groundwatch.core.judging.decision import NO_TIER, STALE, Decision
from groundwatch.core.judging.gold import Gold, GoldPart, prepare_gold
from groundwatch.core.judging.normalize import STOPWORDS, fold, padded, tokens
from groundwatch.core.judging.numbers import (
    NumberMatch,
    NumberMention,
    extract_numbers,
    match_number,
)
from groundwatch.core.judging.refusal import Refusal, detect_refusal
from groundwatch.core.model import Expected, Verdict

#: A rounded number within 1 % of the gold value counts as the value.
NUMBER_REL_TOL = 0.01
#: token_f1 tier: all gold tokens present and at least this share of the response is gold tokens.
TOKEN_PRECISION_FOR_CORRECT = 0.5

_NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "t", "non", "without", "nobody"})


class PartStatus(StrEnum):
    FOUND = "found"
    PARTIAL = "partial"  # a coarser date / an approximate number consistent with gold
    CONFLICT = "conflict"  # a different date / number
    ECHO = "echo"  # only where the response repeats the query's own words
    NEGATED = "negated"  # "… is not Marie Curie"
    ABSENT = "absent"


class Evidence:
    """The response as every tier needs it, computed at most once and only when asked."""

    __slots__ = (
        "_dates",
        "_numbers",
        "_q_dates",
        "_q_numbers",
        "_qpad",
        "_qtoks",
        "_refusal",
        "_statuses",
        "folded",
        "gold",
        "norm",
        "notes",
        "pad",
        "query",
        "response",
        "toks",
    )

    def __init__(self, query: str, gold: Gold, response: str) -> None:
        self.query = query
        self.gold = gold
        self.response = response
        self.folded = fold(response)
        self.toks = tokens(self.folded, folded=True)
        self.norm = " ".join(self.toks)
        self.pad = padded(self.norm)
        self.notes: list[str] = []
        self._qpad: str | None = None
        self._qtoks: list[str] | None = None
        self._refusal: Refusal | bool | None = False
        self._dates: list[DateMention] | None = None
        self._numbers: list[NumberMention] | None = None
        self._q_dates: frozenset[date] | None = None
        self._q_numbers: frozenset[float] | None = None
        # keyed by id(): the part tuples live in the cached Gold, and hashing them is not free
        self._statuses: dict[int, list[PartStatus]] = {}

    # -- lazily computed views -------------------------------------------------------------
    @property
    def query_toks(self) -> list[str]:
        if self._qtoks is None:
            self._qtoks = tokens(self.query)
        return self._qtoks

    @property
    def query_pad(self) -> str:
        if self._qpad is None:
            self._qpad = padded(" ".join(self.query_toks))
        return self._qpad

    @property
    def refusal(self) -> Refusal | None:
        if self._refusal is False:
            self._refusal = detect_refusal(self.folded, self.toks)
        return self._refusal  # type: ignore[return-value]

    @property
    def dates(self) -> list[DateMention]:
        if self._dates is None:
            self._dates = extract_dates_from_tokens(self.toks)
        return self._dates

    @property
    def numbers(self) -> list[NumberMention]:
        if self._numbers is None:
            self._numbers = extract_numbers(self.folded, folded=True)
        return self._numbers

    def query_days(self) -> frozenset[date]:
        if self._q_dates is None:
            self._q_dates = frozenset(
                m.first for m in extract_dates_from_tokens(self.query_toks) if m.first == m.last
            )
        return self._q_dates

    def query_numbers(self) -> frozenset[float]:
        if self._q_numbers is None:
            self._q_numbers = frozenset(m.value for m in extract_numbers(self.query))
        return self._q_numbers

    # -- per-part evidence -----------------------------------------------------------------
    def statuses(self, parts: tuple[GoldPart, ...]) -> list[PartStatus]:
        cached = self._statuses.get(id(parts))
        if cached is None:
            cached = [self._status(p) for p in parts]
            self._statuses[id(parts)] = cached
        return cached

    def _status(self, part: GoldPart) -> PartStatus:
        # The query's own dates/numbers only matter when they would turn into a conflict, so the
        # query is parsed only then.
        if part.day is not None:
            dm = match_date(part.day, self.dates)
            if dm is DateMatch.CONFLICT:
                dm = match_date(part.day, self.dates, ignore=self.query_days())
            return _DATE_STATUS[dm]
        if part.number is not None:
            nm = match_number(part.number, self.numbers, rel_tol=NUMBER_REL_TOL)
            if nm is NumberMatch.CONFLICT:
                nm = match_number(
                    part.number, self.numbers, rel_tol=NUMBER_REL_TOL, ignore=self.query_numbers()
                )
            return _NUMBER_STATUS[nm]
        return self.contains(part.norm, part.needle, part.last_word)

    def contains(self, gold_norm: str, needle: str = "", last_word: str = "") -> PartStatus:
        """Containment on word boundaries, discounting echoes of the query and negations."""
        if not gold_norm:
            return PartStatus.ABSENT
        needle = needle or padded(gold_norm)
        pad = self.pad
        i = pad.find(needle)
        if i < 0:
            return PartStatus.ABSENT
        # the query is tokenized only if it can contain the gold text at all
        last_word = last_word or gold_norm.rsplit(" ", 1)[-1]
        in_query = last_word in fold(self.query) and needle in self.query_pad
        saw_echo = saw_negated = False
        while i >= 0:
            end = i + len(needle) - 1  # index of the space after the match
            before = pad[max(0, i - 60) : i].split()[-3:]
            after_space = pad.find(" ", end + 1)
            nxt = pad[end + 1 : after_space] if after_space > end else ""
            if in_query and (
                (before and padded(f"{before[-1]} {gold_norm}") in self.query_pad)
                or (nxt and padded(f"{gold_norm} {nxt}") in self.query_pad)
            ):
                saw_echo = True
            elif not _NEGATORS.isdisjoint(before):
                saw_negated = True
            else:
                return PartStatus.FOUND
            i = pad.find(needle, i + 1)
        return (
            PartStatus.NEGATED
            if saw_negated
            else PartStatus.ECHO
            if saw_echo
            else PartStatus.ABSENT
        )


_DATE_STATUS = {
    DateMatch.FOUND: PartStatus.FOUND,
    DateMatch.PARTIAL: PartStatus.PARTIAL,
    DateMatch.CONFLICT: PartStatus.CONFLICT,
    DateMatch.ABSENT: PartStatus.ABSENT,
}
_NUMBER_STATUS = {
    NumberMatch.FOUND: PartStatus.FOUND,
    NumberMatch.APPROX: PartStatus.PARTIAL,
    NumberMatch.CONFLICT: PartStatus.CONFLICT,
    NumberMatch.ABSENT: PartStatus.ABSENT,
}


def token_prf(gold: frozenset[str], response_tokens: Sequence[str]) -> tuple[float, float, float]:
    """Token precision/recall/F1 of the gold content tokens against the response (set-based)."""
    resp = set(response_tokens) - STOPWORDS
    if not gold or not resp:
        return 0.0, 0.0, 0.0
    common = len(gold & resp)
    if common == 0:
        return 0.0, 0.0, 0.0
    p, r = common / len(resp), common / len(gold)
    return p, r, 2 * p * r / (p + r)


# -- the tiers --------------------------------------------------------------------------------
Tier = Callable[[Evidence], Decision | None]


def _ok(tier: str, reason: str) -> Decision:
    return Decision(Verdict.CORRECT, tier, reason)


def _wrong(tier: str, reason: str) -> Decision:
    return Decision(Verdict.INCORRECT, tier, reason)


def tier_refusal(ev: Evidence) -> Decision | None:
    """An explicit refusal: right for an unanswerable probe, wrong for an answerable one."""
    ref = ev.refusal
    if not ev.gold.answerable:
        if ref is None:
            return _wrong("refusal", "answered_unanswerable: no explicit refusal")
        if ref.other_sentences == 0:
            return _ok("refusal", f"explicit_refusal: {ref.phrase!r}")
        ev.notes.append(f"refusal_with_other_content: {ref.phrase!r}")
        return None
    if ref is None:
        return None
    found = [s for s in ev.statuses(ev.gold.parts) if s in (PartStatus.FOUND, PartStatus.PARTIAL)]
    if found:
        ev.notes.append(f"refusal_with_gold: {ref.phrase!r}")
        return None
    return _wrong("refusal", f"refusal: {ref.phrase!r}")


def tier_exact(ev: Evidence) -> Decision | None:
    g = ev.gold
    if g.answerable and g.norm and ev.norm == g.norm:
        return _ok("exact", "exact_match")
    return None


def tier_stale(ev: Evidence) -> Decision | None:
    """An earlier answer version, but not the current one: outdated, not a gap."""
    g = ev.gold
    if not g.answerable or not g.stale:
        return None
    if all(s is PartStatus.FOUND for s in ev.statuses(g.parts)):
        return None
    for idx, version in enumerate(g.stale):
        if all(s is PartStatus.FOUND for s in ev.statuses(version)):
            d = Decision(Verdict.INCORRECT, "stale", STALE, {"stale_version_index": float(idx)})
            return d
    return None


_LETTER_ALONE = re.compile(r"^\W*\(?([a-z])\)?\W*$")
_LETTER_LEAD = re.compile(r"^\W*\(?([a-z])[).:]\s")
_LETTER_SAID = re.compile(
    r"\b(?:option|answer|choice|letter)(?:\s+is)?\s*[:\-]?\s*\(?([a-z])\)?(?![a-z'])"
)


def tier_options(ev: Evidence) -> Decision | None:
    """Multiple choice (RAGProbe S3): the chosen letter or option text against the gold option."""
    g = ev.gold
    if not g.answerable or not g.options or g.correct_option is None:
        return None
    letters = {o.letter: i for i, o in enumerate(g.options)}
    chosen: set[int] = set()
    for rx in (_LETTER_ALONE, _LETTER_LEAD):
        m = rx.match(ev.folded)
        if m and m[1] in letters:
            chosen.add(letters[m[1]])
    for m in _LETTER_SAID.finditer(ev.folded):
        if m[1] in letters:
            chosen.add(letters[m[1]])
    for i, o in enumerate(g.options):
        if ev.contains(o.part.norm) is PartStatus.FOUND:
            chosen.add(i)
    if not chosen:
        return None
    gold_letter = g.options[g.correct_option].letter
    if chosen == {g.correct_option}:
        return _ok("options", f"chose_gold_option: {gold_letter}")
    if g.correct_option not in chosen:
        picked = ",".join(sorted(g.options[i].letter for i in chosen))
        return _wrong("options", f"chose_other_option: {picked} (gold {gold_letter})")
    ev.notes.append("several_options_named")
    return None


def tier_typed(ev: Evidence) -> Decision | None:
    """Dates compared as dates, numbers as numbers; text parts by containment."""
    g = ev.gold
    if g.correct_option is not None:
        return None  # a multiple-choice answer is the options tier's to decide
    if not g.answerable or not g.has_typed:
        return None
    statuses = ev.statuses(g.parts)
    for part, st in zip(g.parts, statuses, strict=True):
        if not part.typed:
            continue
        kind = "date" if part.day is not None else "number"
        if st is PartStatus.CONFLICT:
            return _wrong("typed", f"{kind}_mismatch: gold {part.raw!r}")
        if st is PartStatus.ABSENT:
            return _wrong("typed", f"{kind}_missing: gold {part.raw!r}")
    if all(s is PartStatus.FOUND for s in statuses):
        if ev.refusal is not None:
            return None  # the refusal tier left its note
        return _ok("typed", "typed_match: " + ", ".join(repr(p.raw) for p in g.parts))
    for part, st in zip(g.parts, statuses, strict=True):
        if part.typed and st is PartStatus.PARTIAL:
            kind = "coarser_date" if part.day is not None else "approximate_number"
            ev.notes.append(f"{kind}: gold {part.raw!r}")
    return None


def _free_text_statuses(ev: Evidence) -> list[PartStatus] | None:
    """Each gold part's status in the response, or None when a free-text tier has nothing to
    decide (multiple choice is the options tier's; unanswerable is the refusal tier's)."""
    g = ev.gold
    if g.correct_option is not None or not g.answerable or not g.parts:
        return None
    return ev.statuses(g.parts)


def tier_contains(ev: Evidence) -> Decision | None:
    """Every gold part contained in the response on word boundaries."""
    statuses = _free_text_statuses(ev)
    if statuses is None:
        return None
    g = ev.gold
    if all(s is PartStatus.FOUND for s in statuses):
        if ev.refusal is not None:
            return None
        return _ok("contains", "contains: " + ", ".join(repr(p.raw) for p in g.parts))
    for part, st in zip(g.parts, statuses, strict=True):
        if st in (PartStatus.ECHO, PartStatus.NEGATED):
            ev.notes.append(f"gold_{st.value}: {part.raw!r}")
    return None


def tier_token_f1(ev: Evidence) -> Decision | None:
    """Token overlap per text part: none of its words → wrong; all, in a short reply → right."""
    statuses = _free_text_statuses(ev)
    if statuses is None:
        return None
    g = ev.gold
    all_right = True
    for part, st in zip(g.parts, statuses, strict=True):
        if st is PartStatus.FOUND:
            continue
        if st is PartStatus.ECHO and not part.typed:
            # The gold's words occur only where the response repeats the question ("Client
            # profile: Ironvale Mining Cooperative" for the industry "Mining"): no evidence of
            # the answer at all, the same as the gold being absent.
            return _wrong("token_f1", f"gold_only_in_echo: {part.raw!r}")
        if part.typed or st in (PartStatus.ECHO, PartStatus.NEGATED) or not part.content:
            all_right = False
            continue
        p, r, _ = token_prf(part.content, ev.toks)
        if r == 0.0:
            near = _near_miss(part.content, ev.toks)
            if near is None:
                return _wrong("token_f1", f"gold_tokens_absent: {part.raw!r}")
            all_right = False
            ev.notes.append(f"near_miss: {near!r} for gold {part.raw!r}")
            continue
        if not (r == 1.0 and p >= TOKEN_PRECISION_FOR_CORRECT):
            all_right = False
            ev.notes.append(f"partial_overlap: {part.raw!r} recall={r:.2f} precision={p:.2f}")
    if all_right and ev.refusal is None:
        return _ok("token_f1", "all_gold_tokens")
    return None


#: A response word this similar to a gold word may be a misspelling of it, not another answer.
NEAR_MISS_RATIO = 0.8


def _near_miss(gold: frozenset[str], response_tokens: Sequence[str]) -> str | None:
    """Response words that look like misspellings of most gold words ("Curiee" for "Curie").

    At least half of the gold words must have a look-alike: one similar word in a longer name
    ("Centre" against "Palisade Data Centres") is another answer, not a misspelling. Only asked
    on the way to an ``incorrect`` verdict, so its cost is off the hot path.
    """
    resp = set(response_tokens)
    alike: list[str] = []
    for g in gold:
        if len(g) < 4 or g.isdigit():
            continue
        for t in resp:
            if (
                t[0] == g[0]
                and abs(len(t) - len(g)) <= 2
                and SequenceMatcher(None, g, t).ratio() >= NEAR_MISS_RATIO
            ):
                alike.append(t)
                break
    if alike and 2 * len(alike) >= len(gold):
        return " ".join(sorted(alike))
    return None


def tier_empty(ev: Evidence) -> Decision | None:
    if not ev.norm:
        if ev.gold.correct_option is not None and _LETTER_ALONE.match(ev.folded):
            return None  # "A" alone normalizes to nothing (an article), yet picks option A
        return _wrong("empty", "empty_response")
    return None


TIERS: dict[str, Tier] = {
    "empty": tier_empty,
    "refusal": tier_refusal,
    "exact": tier_exact,
    "stale": tier_stale,
    "options": tier_options,
    "typed": tier_typed,
    "contains": tier_contains,
    "token_f1": tier_token_f1,
}
#: The order matters: a refusal is settled before any containment, a stale answer is named before
#: the typed tier would call it a plain mismatch.
DEFAULT_TIERS: tuple[str, ...] = tuple(TIERS)


def validate_tiers(tiers: Sequence[str]) -> tuple[str, ...]:
    """The tier names, checked; raises ``ValueError`` naming an unknown one."""
    unknown = [t for t in tiers if t not in TIERS]
    if unknown:
        raise ValueError(f"unknown judging tier(s) {unknown}; known: {list(TIERS)}")
    return tuple(tiers)


def judge_deterministic(
    query: str, expected: Expected, response: str | None, *, tiers: Sequence[str] | None = None
) -> Decision:
    """Run the deterministic tiers in order; the first that decides wins.

    Returns ``undecided`` (tier ``"none"``) with the notes of the tiers that saw conflicting
    evidence when none decides. ``scores`` always carries token precision/recall/F1 of the whole
    gold answer against the response, the Oro et al. syntactic metrics, for analysis.
    """
    gold = prepare_gold(expected)
    names = DEFAULT_TIERS if tiers is None else tiers
    if response is None or not response.strip():
        if "empty" in names:
            return Decision(Verdict.INCORRECT, "empty", "empty_response", _ZERO_SCORES.copy())
        return Decision(Verdict.UNDECIDED, NO_TIER, "empty_response", _ZERO_SCORES.copy())
    ev = Evidence(query, gold, response)
    p, r, f = token_prf(gold.content, ev.toks)
    scores = {"token_precision": p, "token_recall": r, "token_f1": f}
    for tier in _chain(tuple(names)):
        decision = tier(ev)
        if decision is not None:
            decision.scores.update(scores)
            return decision
    reason = "; ".join(ev.notes) if ev.notes else "no_tier_decided"
    return Decision(Verdict.UNDECIDED, NO_TIER, reason, scores)


@lru_cache(maxsize=64)
def _chain(names: tuple[str, ...]) -> tuple[Tier, ...]:
    return tuple(TIERS[n] for n in validate_tiers(names))


_ZERO_SCORES = {"token_precision": 0.0, "token_recall": 0.0, "token_f1": 0.0}
