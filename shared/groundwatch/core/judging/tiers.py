"""The deterministic tier chain: cheap rules first, each deciding only what it can decide.

Every tier looks at the same :class:`ParsedResponse` (the response folded, normalized and parsed
once, lazily) and returns a :class:`Decision` (correct or incorrect, with its evidence) or ``None``
("undecided here") — in which case the next tier is asked. A tier that sees conflicting evidence
(a refusal that still names the gold answer, a coarser date, a negated name) leaves a note and
passes; if no tier decides, the chain's answer is ``undecided`` carrying those notes, and the LLM
tier (outside the pure core) may take it from there.

``incorrect`` needs positive evidence of a different answer: a conflicting date or number, a
refusal, the gold negated, another value of the answer's column (a grounded candidate, or another
country when the gold is one), the named row's values in other columns and nothing else, or an
answer of another type than the gold. A vague answer is no evidence either way: the gold offered
among other candidates ("8 or 9"), or a range at or near it ("between 174,000 and 184,000" for
186,000), is left undecided with a note. That the gold's words are absent is no evidence
either: the response may say it another way ("the retail industry" for *Retailing*), so a
free-text answer without any of it stays ``undecided``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from enum import IntEnum, StrEnum
from functools import lru_cache

from groundwatch.core.judging.aliases import CountryMention, country_of, find_countries
from groundwatch.core.judging.citations import footnoted_numbers, numbered_names, read_citations
from groundwatch.core.judging.clauses import asked_entity_text, has_boundary
from groundwatch.core.judging.closed_sets import MemberMention, closed_sets, find_members
from groundwatch.core.judging.counts import said_count
from groundwatch.core.judging.dates import (
    DateMatch,
    DateMention,
    date_part_spans,
    extract_dates_from_tokens,
    match_date,
    yearless_days,
)
from groundwatch.core.judging.decision import NO_TIER, STALE, Decision
from groundwatch.core.judging.gold import DomainIndex, Gold, GoldPart, RivalLookup, prepare_gold
from groundwatch.core.judging.normalize import (
    ARTICLES,
    STOPWORDS,
    fold,
    folded_tokens,
    padded,
    tokens,
    word_around,
)
from groundwatch.core.judging.numbers import (
    NumberMatch,
    NumberMention,
    extract_numbers,
    match_number,
    parse_gold_number,
)
from groundwatch.core.judging.refusal import Refusal, detect_refusal
from groundwatch.core.judging.variants import fuzzy_window, stems
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.scores import RulesScores, Scores

#: A rounded number within 1 % of the gold value counts as the value.
NUMBER_REL_TOL = 0.01
#: token_f1 tier: all gold tokens present and at least this share of the response is gold tokens.
TOKEN_PRECISION_FOR_CORRECT = 0.5

_NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "t", "non", "without", "nobody"})
#: Negators that deny what follows them ("is not Marie Curie", "isn't"); "no" is left out, as it
#: is as often an answer to the question ("No, it is Marie Curie") as a denial.
_DENIALS = frozenset({"not", "never", "neither", "nor", "t", "non"})
#: "rather than X": X is set aside, not asserted.
_CONTRASTS = frozenset({("rather", "than"), ("instead", "of"), ("other", "than")})
#: "not only X": X is affirmed.
_NOT_ONLY = frozenset({"only", "just", "merely", "solely", "simply"})
#: Words that make an answer uncertain: with another value named next to the gold, a hedge.
#: The words that make what a refusal goes on to say a guess, not an answer.
_TENTATIVE = frozenset(
    {"possibly", "perhaps", "maybe", "might", "probably", "likely", "unsure", "uncertain"}
)
_HEDGE_WORDS = frozenset(
    {"or", "either", "possibly", "perhaps", "maybe", "might", "probably", "likely", "unsure",
     "uncertain", "whether", "unclear"}
)  # fmt: skip
#: What may follow "or" without being another answer ("30 or so", "X, or rather X").
_NOT_AN_ALTERNATIVE = frozenset(
    {"rather", "so", "thereabouts", "more", "less", "similar", "something", "else", "otherwise",
     "not", "at", "about", "around", "approximately", "also", "even"}
)  # fmt: skip


class _KnownNames:
    """Words the judge knows as names, for :func:`read_citations`: what the question and the gold
    write with a number ("City3"), and the last words of every value the gold's rivals and
    domains hold ("City5" is a rival's name, not "City" with footnote 5). Looked up only for a
    word glued to a number, so the sets are not merged, and read only then: most answers carry
    no marker, and :func:`read_citations` returns them before it asks."""

    __slots__ = ("_gold", "_named", "_query")

    def __init__(self, query: str, gold: Gold) -> None:
        self._query = query
        self._gold = gold
        self._named: frozenset[str] | None = None

    @property
    def named(self) -> frozenset[str]:
        if self._named is None:
            self._named = numbered_names(self._query, *(p.raw for p in self._gold.parts))
        return self._named

    def __contains__(self, word: object) -> bool:
        g = self._gold
        return (
            word in self.named
            or any(word in lookup.last_words for lookup in g.lookups)
            or any(word in d.last_words for d in g.domains if d is not None)
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self.named)

    def __len__(self) -> int:
        return len(self.named)


class PartStatus(StrEnum):
    FOUND = "found"
    PARTIAL = "partial"  # a coarser date / an approximate number consistent with gold
    CONFLICT = "conflict"  # a different date / number
    ECHO = "echo"  # only where the response repeats the query's own words
    NEGATED = "negated"  # "… is not Marie Curie"
    ABSENT = "absent"


class ParsedResponse:
    """The response as every tier needs it, computed at most once and only when asked."""

    # The lazily computed views start as class attributes: a judgement sets only the few it
    # reads (most read two or three of the ten), not every one of them in ``__init__``.
    _refusal: Refusal | bool | None = False
    _dates: list[DateMention] | None = None
    _numbers: list[NumberMention] | None = None
    _stems: list[str] | None = None
    _stem_pad: str | None = None
    _stem_set: frozenset[str] | None = None
    _countries: list[CountryMention] | None = None
    _upper: frozenset[str] | None = None
    _raw_spans: list[tuple[int, int]] | bool | None = False
    _members: tuple[str, list[MemberMention]] | None = None
    #: the entity column's values named, kept where the asked entity is named beside others
    _entity_occ: list[_Occurrence] | None = None
    #: set by the refusal tier: the gold offered tentatively beside a refusal, no tier's to call
    refusal_hedged: bool = False

    def __init__(self, query: str, gold: Gold, response: str) -> None:
        self.query = query
        self.gold = gold
        # citation markers dropped and glued numbers set apart first: every view reads this text
        self.response = response = read_citations(response, _KnownNames(query, gold))
        self.folded, toks = folded_tokens(response)
        self.toks = toks
        self.norm = norm = " ".join(toks)
        self.pad = f" {norm} "  # padded(norm), without the call
        # made at once, not on first use: nearly every judgement reads it, several times
        self.tok_set = frozenset(toks)
        #: the distinct tokens without stopwords (token precision/recall, read by every judgement)
        self.content_set = self.tok_set - STOPWORDS
        self.notes: list[str] = []
        # keyed by id(): the part tuples live in the cached Gold, and hashing them is not free
        self._statuses: dict[int, list[PartStatus]] = {}
        self._readings: dict[int, Reading] = {}

    # -- lazily computed views -------------------------------------------------------------
    # The query's views are cached on the query text (see :func:`_query_toks`): like the gold, a
    # query is probe data judged every cycle for every target, not a response. Read from those
    # caches each time (a C-level look-up), not kept here: most judgements read a view once.
    @property
    def query_toks(self) -> list[str]:
        return _query_toks(self.query)

    @property
    def query_pad(self) -> str:
        return _query_pad(self.query)

    @property
    def stems(self) -> list[str]:
        if self._stems is None:
            self._stems = stems(self.toks)
        return self._stems

    @property
    def stem_pad(self) -> str:
        if self._stem_pad is None:
            self._stem_pad = padded(" ".join(self.stems))
        return self._stem_pad

    @property
    def stem_set(self) -> frozenset[str]:
        if self._stem_set is None:
            self._stem_set = frozenset(self.stems)
        return self._stem_set

    @property
    def query_folded(self) -> str:
        return _query_folded(self.query)

    @property
    def query_stem_pad(self) -> str:
        return _query_stem_pad(self.query)

    @property
    def upper_words(self) -> frozenset[str]:
        """Words written in capitals ("CEO", "UK"), lowercased: where an acronym may stand."""
        if self._upper is None:
            r = self.response
            # A capitalised word needs two capitals in a row: most responses have none, and
            # finding that out by bytes.translate is a fraction of the word-boundary pattern.
            self._upper = (
                frozenset(w.lower() for w in _UPPER_WORD.findall(r))
                if b"UU" in r.encode("utf-8", "surrogatepass").translate(_CAPITALS)
                else frozenset()
            )
        return self._upper

    @property
    def raw_spans(self) -> list[tuple[int, int]] | None:
        """Each token's character span in the response as written (None when the tokens cannot
        be lined up with the text, e.g. after Unicode folding changed its length): what the
        rare checks that need case and punctuation (a denial inside a name, a clause boundary)
        read. Computed on first use only."""
        if self._raw_spans is False:
            self._raw_spans = _raw_token_spans(self.response, len(self.toks))
        return self._raw_spans  # type: ignore[return-value]

    def query_countries(self) -> frozenset[str]:
        """Codes of the countries the query names: restated context, never a rival answer."""
        return _query_countries(self.query)

    def members(self, set_name: str) -> list[MemberMention]:
        """Members of the closed set ``set_name`` the response names on their own."""
        if self._members is None or self._members[0] != set_name:
            toks = self.toks
            spans = _ascii_spans(self.response, len(toks))
            found = find_members(closed_sets()[set_name], toks, self.response, spans)
            self._members = (set_name, found)
        return self._members[1]

    def countries(self, gold_code: str | None) -> list[CountryMention]:
        """Countries the response names (computed for the first country part's code)."""
        if self._countries is None:
            self._countries = find_countries(self.toks, self.response, gold_code=gold_code)
        return self._countries

    def reading(self, index: int) -> Reading:
        """How the response names text part ``index`` of the gold and its rivals (cached)."""
        r = self._readings.get(index)
        if r is None:
            r = read_part(self, index)
            self._readings[index] = r
        return r

    @property
    def refusal(self) -> Refusal | None:
        if self._refusal is False:
            self._refusal = detect_refusal(self.folded, self.toks)
        return self._refusal  # type: ignore[return-value]

    @property
    def dates(self) -> list[DateMention]:
        if self._dates is None:
            norm = self.norm  # decades and centuries are looked for only where they may be
            vague = "0s" in norm or "century" in norm or "ties " in self.pad
            self._dates = extract_dates_from_tokens(self.toks, vague=vague)
        return self._dates

    @property
    def numbers(self) -> list[NumberMention]:
        """The numbers the response states as values: a digit inside a name or an address ("Qe 7
        Bloco G", "Apollo 11 Mission") is a word of that name, and a full date's day or month
        ("8 November 2024") a part of that date, neither the gold nor a rival."""
        if self._numbers is None:
            found = extract_numbers(self.folded, folded=True)
            if found and self.response.isascii():
                asked = _query_tok_set(self.query)
                found = [n for n in found if not _inside_name(self.response, n, asked)]
            if found and (parts := date_part_spans(self.folded)):
                found = [n for n in found if not _in_spans(n.span, parts)]
            self._numbers = found
        return self._numbers

    def query_days(self) -> frozenset[date]:
        return _query_days(self.query)

    def query_numbers(self) -> frozenset[float]:
        return _query_numbers(self.query)

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
            status = _NUMBER_STATUS[nm]
            if nm is NumberMatch.CONFLICT and "." in self.response:
                status = self._footnoted(part, status)
            if status is not PartStatus.FOUND and part.alts:
                status = self._alt_status(part, status)
            return status
        status = self.contains(part.norm, part.needle, part.last_word)
        if status is not PartStatus.FOUND and part.alts:
            status = self._alt_status(part, status)
        return status

    def _footnoted(self, part: GoldPart, status: PartStatus) -> PartStatus:
        """A conflicting number read again where a footnote may be glued to it: the integer gold
        with a one- or two-digit fraction before the next sentence ("352.1 See the records" for
        352) is the gold; at the text's end the decimal and the footnote are alike, so neither
        (see :func:`footnoted_numbers`). A real decimal ("352.1 km") stays the conflict."""
        gold = part.number
        if gold is None or gold.percent or gold.value != int(gold.value):
            return status
        for value, said, at_end in footnoted_numbers(self.response):
            if value == gold.value:
                if not at_end:
                    return PartStatus.FOUND
                self.notes.append(f"footnote_or_decimal: {said!r} (gold {part.raw!r})")
                return PartStatus.PARTIAL
        return status

    def _alt_status(self, part: GoldPart, status: PartStatus) -> PartStatus:
        """FOUND when any of the gold's alternatives is named (a typed one as typed)."""
        for alt in part.alts:
            if alt.typed:
                if self._status(replace(alt, alts=())) is PartStatus.FOUND:
                    return PartStatus.FOUND
            elif alt.last_word in self.tok_set and (
                self.contains(alt.norm, alt.needle, alt.last_word) is PartStatus.FOUND
            ):
                return PartStatus.FOUND
        return status

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
        in_query = last_word in self.query_folded and needle in self.query_pad
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


# One single-argument cache per view: ``lru_cache`` keys a lone ``str`` argument on the string
# itself, where a ``(query, view)`` key would build and hash a tuple on every look-up.
#: Queries each view keeps. A query comes back for every target within the same stretch of a
#: cycle, and in the next cycle only after every other query: a cycle larger than the bound gets
#: no hits from the second, so the bound is sized for the first and for datasets that fit whole
#: (the demo's 2,352 probes). At 16,384 the seven views held ~30 MB of a 100k-probe cycle (a
#: long query's tokens are 30-odd strings; a 50k cycle's peak RSS 397 -> 383 MB at 4,096),
#: for hits a 4,096 bound gets as well.
QUERY_VIEWS = 4096


@lru_cache(maxsize=QUERY_VIEWS)
def _query_toks(query: str) -> list[str]:
    """The query's tokens (shared by every judgement of the query: callers never mutate it)."""
    return tokens(query)


@lru_cache(maxsize=QUERY_VIEWS)
def _query_tok_set(query: str) -> frozenset[str]:
    return frozenset(_query_toks(query))


@lru_cache(maxsize=QUERY_VIEWS)
def _query_folded(query: str) -> str:
    """The query folded (cached per query text)."""
    return fold(query)


@lru_cache(maxsize=QUERY_VIEWS)
def _query_pad(query: str) -> str:
    """The query's tokens, padded (cached per query text)."""
    return padded(" ".join(_query_toks(query)))


@lru_cache(maxsize=QUERY_VIEWS)
def _query_stem_pad(query: str) -> str:
    """The query's stems, padded (cached per query text)."""
    return padded(" ".join(stems(_query_toks(query))))


@lru_cache(maxsize=QUERY_VIEWS)
def _query_days(query: str) -> frozenset[date]:
    """The single days the query names (its own dates are no conflicting evidence)."""
    return frozenset(
        m.first for m in extract_dates_from_tokens(_query_toks(query)) if m.first == m.last
    )


@lru_cache(maxsize=QUERY_VIEWS)
def _query_members(query: str, set_name: str) -> frozenset[str]:
    """The members of a closed set the query names (cached per query text)."""
    toks = _query_toks(query)
    found = find_members(closed_sets()[set_name], toks, query, None, guarded=False)
    return frozenset(m.member for m in found)


#: Non-ASCII punctuation with an ASCII stand-in of one character, so a text's token spans can
#: be lined up where it is all that keeps the text from being ASCII (no-break spaces, quotes).
_ASCII_STANDIN = str.maketrans("\u00a0\u2018\u2019\u201c\u201d\u2013\u2014", " ''\"\"--")


def _ascii_spans(text: str, n: int) -> list[tuple[int, int]] | None:
    """:func:`_raw_token_spans` of ``text`` with its common non-ASCII punctuation read as ASCII."""
    return _raw_token_spans(text if text.isascii() else text.translate(_ASCII_STANDIN), n)


@lru_cache(maxsize=QUERY_VIEWS)
def _query_countries(query: str) -> frozenset[str]:
    """The countries the query names (cached per query text)."""
    return frozenset(m.code for m in find_countries(_query_toks(query), query, gold_code=None))


_RAW_WORD = re.compile(r"[A-Za-z0-9]+")
#: The words on either side of a bare number, as written.
_WORD_BEFORE = re.compile(r"([A-Za-z][\w'’]*)[ \u00a0]+$")
_WORD_AFTER = re.compile(r"[ \u00a0]+([A-Za-z][\w'’]*|[A-Z0-9]{1,3}\b)")
#: Capitalised words that start a phrase rather than belong to a name ("In 1996 The …").
_LEAD_WORDS = frozenset(
    {"in", "on", "at", "by", "since", "from", "to", "for", "of", "the", "and", "or", "about",
     "around", "over", "under", "after", "before", "until", "is", "was", "are", "were", "it",
     "its", "it's", "only", "just", "number", "no", "total", "approximately"}
)  # fmt: skip


def _in_spans(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """Whether a number's digits (its span may take in the spaces around them) lie in one of
    ``spans``."""
    a, b = span
    return any(s < b and a < e for s, e in spans)


def _inside_name(text: str, n: NumberMention, query: frozenset[str] = frozenset()) -> bool:
    """A bare number between two words of a name ("Qe 7 Bloco G", "Apollo 11 Mission"): both
    neighbours capitalised (or a short code), neither a word that starts a phrase. Unless the
    question asks about that name ("Which highway was Revisited …?": "Highway 61 Revisited"
    answers with its number)."""
    if n.unit is not None or n.percent or n.vague is not None or n.ordinal:
        return False
    a, b = n.span
    raw = text[a:b]
    if not raw.strip().isdigit():
        return False
    # the match may take in the spaces around the digits
    a, b = a + len(raw) - len(raw.lstrip()), a + len(raw.rstrip())
    # cheap first: a letter must stand one space before and a capital or digit one space after
    if a < 2 or not text[a - 2].isalpha() or b + 1 >= len(text) or not text[b + 1].isupper():
        return False
    before = _WORD_BEFORE.search(text, max(0, a - 64), a)  # a word is near: no scan from 0
    after = _WORD_AFTER.match(text, b)
    if before is None or after is None:
        return False
    left, right = before[1], after[1]
    if left.lower() in query or right.lower() in query:
        return False
    return (
        left[0].isupper()
        and right[0].isupper()
        and left.lower() not in _LEAD_WORDS
        and right.lower() not in _LEAD_WORDS
    )


def _raw_token_spans(response: str, n: int) -> list[tuple[int, int]] | None:
    """Character spans of the response's tokens, as :func:`tokens` splits an ASCII text (runs of
    letters and digits, articles dropped); None when that does not give ``n`` tokens."""
    if not response.isascii():
        return None
    spans = [m.span() for m in _RAW_WORD.finditer(response) if m[0].lower() not in ARTICLES]
    return spans if len(spans) == n else None


@lru_cache(maxsize=QUERY_VIEWS)
def _query_numbers(query: str) -> frozenset[float]:
    """The numbers the query names (its own numbers are no conflicting evidence)."""
    return frozenset(m.value for m in extract_numbers(query))


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


class Level(IntEnum):
    """How a value is named in the response, most exact first (a lower level wins a tie)."""

    SURFACE = 0  # its normalized words, in order
    ALIAS = 1  # another name of the same country
    STEM = 2  # a morphological variant of its words ("retail" for "Retailing")
    FUZZY = 3  # a near spelling of a long value ("United Kingdom" for "United Kindom")
    TOKENS = 4  # all its content words, in any order ("Curie, Marie")


#: Reason code of a correct verdict reached at each level.
_LEVEL_CODE = {
    Level.SURFACE: "contains",
    Level.ALIAS: "alias_match",
    Level.STEM: "stem_match",
    Level.FUZZY: "fuzzy_match",
    Level.TOKENS: "all_gold_tokens",
}


#: One naming of a value in the response: ``(owner, level, start, end, name)``; owner -1 = the
#: gold part, k >= 0 = rival k, -2 = another country; name = the rival's raw value / the
#: country's code. A plain tuple: a judgement builds several, and a dataclass's ``__init__``
#: costs more than the look-ups that find them.
_Occurrence = tuple[int, Level, int, int, str]
_OWNER, _LEVEL, _START, _END, _NAME = range(5)


@dataclass
class Reading:
    """One text part of the gold, as the response names it (see :func:`read_part`).

    ``level`` is the best level the gold is named at outside echoes of the query, denials and
    longer rival names (None: not named); ``rivals`` are other values of the answer's column (or
    other countries) the response names, ``proven_rivals`` those named other than by a shared
    stem; ``hedge`` the evidence that the response hedges between the gold and something else.
    """

    # immutable defaults, not a list factory per field: a reading is made per text part judged
    level: Level | None = None
    spans: Sequence[tuple[int, int]] = ()
    rivals: Sequence[str] = ()
    proven_rivals: Sequence[str] = ()  # named exactly or by alias
    #: where the database holds a rival when it is another column's value, by the rival's words
    rival_sources: tuple[tuple[str, str], ...] = ()
    denied: bool = False
    hedge: str | None = None
    #: the asked row's other values the response gives (its own words)
    attributes: Sequence[str] = ()
    #: where each of ``attributes`` came from ("artist.name"; "" where unknown), aligned
    attribute_sources: Sequence[str] = ()
    #: the tokens other values (the row's, its neighbours', the column's) stand on: a gold word
    #: there is a word of that longer value ("Physics" in *Quantum Physics*), not the gold's
    covered: frozenset[int] = frozenset()

    @classmethod
    def named(cls, level: Level, spans: list[tuple[int, int]]) -> Reading:
        """``Reading(level=level, spans=spans)``, built without ``__init__``: the usual reading
        (the gold named, nothing else) is made for most judgements, and the fields it leaves
        at their defaults are read from the class (every default is immutable)."""
        r = object.__new__(cls)
        r.__dict__.update(level=level, spans=spans)
        return r


def _spans(pad: str, needle: str) -> list[tuple[int, int]]:
    """Token spans ``[start, end)`` where ``needle`` (padded) occurs in ``pad`` (padded)."""
    out: list[tuple[int, int]] = []
    width = needle.count(" ") - 1
    i = pad.find(needle)
    while i >= 0:
        start = pad.count(" ", 0, i)
        out.append((start, start + width))
        i = pad.find(needle, i + 1)
    return out


def _is_echo(ev: ParsedResponse, start: int, end: int, *, by_stem: bool = False) -> bool:
    """The span only repeats the query: it occurs there together with a neighbouring word.

    Compared word for word, or stem for stem for a value found by its stem.
    """
    if by_stem:
        words, space = ev.stems, ev.query_stem_pad
        if words[end - 1] not in space:
            return False  # cheap: the query's stems cannot contain the span at all
    else:
        if ev.toks[end - 1] not in ev.query_folded:
            return False  # cheap: the query cannot contain the span at all
        words, space = ev.toks, ev.query_pad
    if padded(" ".join(words[start:end])) not in space:
        return False
    return (start > 0 and padded(" ".join(words[start - 1 : end])) in space) or (
        end < len(words) and padded(" ".join(words[start : end + 1])) in space
    )


def _is_denied(toks: Sequence[str], start: int, ev: ParsedResponse | None = None) -> bool:
    """A denial among the two content words before the span ("is not X", "isn't X", "is not
    based in X"), unless it is "not only X"; or a contrast right before it ("rather than X",
    "instead of X", "unlike X").

    With the evidence at hand the denial is scoped as written: it must stand in the span's own
    clause (no comma, semicolon or sentence end between them: "It was not Paris, Lyon was the
    capital" denies Paris, not Lyon) and must not be a word of a name ("The song 'I Write Sins
    Not Tragedies' is by Panic! At The Disco" denies nothing)."""
    j = start - 1
    while j >= 0 and start - j <= 2 and toks[j] in STOPWORDS and toks[j] not in _DENIALS:
        j -= 1  # "rather than in X"
    if (j >= 1 and (toks[j - 1], toks[j]) in _CONTRASTS) or (j >= 0 and toks[j] == "unlike"):
        return ev is None or _scoped(ev, j, start)
    content = 0
    copula = False
    for j in range(start - 1, max(-1, start - 5), -1):
        if toks[j] in _DENIALS:
            if j + 1 < start and toks[j + 1] in _NOT_ONLY:
                return False
            return ev is None or _scoped(ev, j, start)
        if toks[j] in _COPULAS:
            copula = True
        elif toks[j] not in STOPWORDS:
            if copula:
                # "had war not intervened was Berlin": the span is another clause's predicate
                return False
            content += 1
            if content == 2:
                return False
    return False


_COPULAS = frozenset({"is", "was", "are", "were", "be", "been"})
#: The words without which :func:`_is_denied` finds no denial: a denial, "unlike", or a
#: contrast's first word ("rather than", "instead of", "other than").
_DENIAL_CUES = _DENIALS | {"unlike"} | {a for a, _ in _CONTRASTS}


#: What ends a clause between a denial and what it would deny.
_CLAUSE_END = re.compile(r"[,;:.!?()\[\]\n]|\s[-–—]\s")


def _scoped(ev: ParsedResponse, j: int, start: int) -> bool:
    """Whether the denial word at token ``j`` denies the span starting at token ``start``: same
    clause, and the denial is no word of a quoted or capitalised name."""
    if not _DENIALS.isdisjoint(ev.query_toks):
        # "Which grand slam did he not win?" — "He did not win the French Open" answers it
        return False
    spans = ev.raw_spans
    if spans is None:
        return True  # the text cannot be lined up: the denial stands, as before
    text = ev.response
    a, b = spans[j]
    if _CLAUSE_END.search(text, b, spans[start][0]):
        return False
    word = text[a:b]
    if word[:1].isupper() and (j > 0 and not _CLAUSE_END.search(text, spans[j - 1][1], a)):
        # "Sins Not Tragedies": a capitalised denial inside a sentence is a word of a title
        return False
    line_start = text.rfind("\n", 0, a) + 1
    before = text[line_start:a]
    # inside quotes: an odd number of double quotes (or of quote marks that open a word) before
    if before.count('"') % 2 == 1 or (before.count("“") > before.count("”")):
        return False
    singles = len(re.findall(r"(?:^|(?<=\s))['‘]", before)) - len(
        re.findall(r"['’](?=\s|[.,;:!?]|$)", before)
    )
    return singles <= 0


_UPPER_WORD = re.compile(r"\b[A-Z]{2,}\b")
#: ASCII capitals to "U", every other byte to a space (UTF-8 continuation bytes included).
_CAPITALS = bytes(85 if 65 <= c <= 90 else 32 for c in range(256))


def _value_occurrences(
    ev: ParsedResponse, part: GoldPart, owner: int, levels: tuple[Level, ...]
) -> list[_Occurrence]:
    out: list[_Occurrence] = []
    if Level.SURFACE in levels and part.last_word in ev.tok_set:
        raw = part.raw
        out += [(owner, Level.SURFACE, a, b, raw) for a, b in _spans(ev.pad, part.needle)]
    stem_last = part.stem_last
    if stem_last and Level.STEM in levels and stem_last in ev.stem_set:
        raw = part.raw
        out += [(owner, Level.STEM, a, b, raw) for a, b in _spans(ev.stem_pad, part.stem_needle)]
    return out


def _stems_add_nothing(ev: ParsedResponse, part: GoldPart) -> bool:
    """Whether every word of the response whose stem is one of the gold's words' stems is that
    very word (counted: the tokens with the stem are as many as the tokens with the word), so a
    match of the gold's stems is a match of its words."""
    pairs = part.word_stems
    if not pairs:
        return False
    toks, st = ev.toks, ev.stems
    for w, s in pairs:  # noqa: SIM110 — a loop, not all() over a generator: a word or two
        if st.count(s) != toks.count(w):
            return False
    return True


def read_part(ev: ParsedResponse, index: int) -> Reading:
    """Find the gold text part ``index`` and its rivals in the response, and settle overlaps.

    Every naming of the gold or of a rival is an occurrence (a token span at a level). Echoes of
    the query are dropped. Then the occurrences claim their tokens, most exact level first and
    longer first within a level, so that "Senior Engineer" is the rival and not also the gold
    *Engineer*, and a word matched exactly wins over the same word matched by its stem; two
    owners tied on the same span at the same level cancel out. Denied occurrences claim their
    tokens but count for nothing but the denial.

    Each kind of naming has its own finder, asked only when the gold has what it looks for
    (a domain, the row's other values, rivals, a country, a closed set, initials).
    """
    g = ev.gold
    part = g.parts[index]
    rivals = g.rivals[index] if index < len(g.rivals) else ()
    dom = g.domains[index] if index < len(g.domains) else None
    occ = _gold_occurrences(ev, part, stemmed=bool(rivals) or dom is not None)
    lookup = g.lookups[index]
    if dom is not None:
        # the usual answer names no value of the column but the gold's own: the words and stems
        # it shares with the domain end gold spellings only (the finder's own first tests, here
        # so that the usual answer does not pay for the call)
        own = g.domain_own[index]
        tok_set, lasts = ev.tok_set, dom.last_words
        if not (tok_set.isdisjoint(lasts) or tok_set & lasts <= own[0]) or not (
            (stem_set := ev.stem_set).isdisjoint(dom.stem_lasts)
            or stem_set & dom.stem_lasts <= own[1]
        ):
            occ += _domain_occurrences(ev, dom, g.gold_norms, own, restated=False)
    if g.attributes and not ev.tok_set.isdisjoint(g.attribute_last_words):
        # the values the question names are left out at once (dropped below anyway), except
        # for a closed set's gold, whose other members are looked for only where nothing else
        # is named
        occ += _attribute_occurrences(ev, g, restated=part.member is not None)
    # Most rivals are named nowhere in the response: two set intersections against the rivals'
    # last words and last stems (indexed once per gold) rule them all out; only when one may be
    # named are the rivals walked, in order, as the occurrence search needs.
    if rivals and not (
        ev.tok_set.isdisjoint(lookup.last_words) and ev.stem_set.isdisjoint(lookup.stem_lasts)
    ):
        occ += _rival_occurrences(ev, rivals)
    if part.country is not None or lookup.rival_codes:
        occ += _country_occurrences(ev, part, lookup.rival_codes, rivals=bool(rivals))
    if part.member is not None and not rivals and not occ:
        # looked for only where the gold is not named (an answer that names it and other
        # members, "the months in order are April, August, …", is read as before)
        occ = _member_occurrences(ev, part)
    # an acronym is looked for only when the response writes some value's initials in capitals
    if lookup.initials and not lookup.initials.isdisjoint(upper := ev.upper_words):
        occ += _acronym_occurrences(ev, lookup, upper)
    # the gold named once, the usual reading, is no rival: the scan is skipped
    if (
        occ
        and (rivals or dom is not None or g.attributes)
        and (len(occ) > 1 or not -2 <= occ[0][0] < 0)
    ):
        occ = _without_restated(ev, occ)
    if occ:
        occ = _without_echoes(ev, occ)
    if len(occ) == 1:  # the common case: one naming, nothing to settle
        o = occ[0]
        accepted = occ
        # the claims are read only where the gold is named by no occurrence
        claimed = {} if o[0] == -1 else dict.fromkeys(range(o[2], o[3]), (o[0], o[1], o[2], o[3]))
    else:
        accepted, claimed = _settle_claims(occ)
    return _reading(ev, part, dom, accepted, claimed)


def _gold_occurrences(ev: ParsedResponse, part: GoldPart, *, stemmed: bool) -> list[_Occurrence]:
    """Where the response names the gold part or one of its spellings: word for word, and by
    stem where that can matter (``stemmed``: a rival's or a domain value's stem may hide the
    gold's), or where the words are not found."""
    occ: list[_Occurrence]
    if part.last_word in ev.tok_set:  # _value_occurrences at the surface, inlined (hot path)
        raw = part.raw
        occ = [(-1, Level.SURFACE, a, b, raw) for a, b in _spans(ev.pad, part.needle)]
    else:
        occ = []
    for alt in part.alts:  # any of the gold's spellings is the gold
        occ += _value_occurrences(ev, alt, -1, (Level.SURFACE,))
    if occ and (not stemmed or _stems_add_nothing(ev, part)):
        # Found by its words, and nothing needs the stems (no rival or domain value may hide
        # the gold), or every word of the response with a stem of the gold's is that very
        # word: wherever the stems match, the words match (and those spans are dropped below),
        # so the stem search is skipped — the common case of a correct answer.
        return occ
    # The response is stemmed only when something needs it (here: the words are not found,
    # or another value's stem may hide the gold's): the hot path of the judge skips it.
    by_stem = _value_occurrences(ev, part, -1, (Level.STEM,))
    for alt in part.alts:
        by_stem += _value_occurrences(ev, alt, -1, (Level.STEM,))
    if by_stem and occ:
        # The gold's stem on a span its words were found on claims nothing (the surface
        # occurrence holds those tokens) nor ties with a rival (the gold's come first in a
        # level); and if that surface occurrence is an echo, so is the stem (the query's
        # stems hold what its words hold). Dropped here, a gold named once is settled
        # without sorting or the claim loop.
        found = {(o[2], o[3]) for o in occ}
        by_stem = [o for o in by_stem if (o[2], o[3]) not in found]
    occ += by_stem
    return occ


def _attribute_occurrences(
    ev: ParsedResponse, g: Gold, *, restated: bool = True
) -> list[_Occurrence]:
    """The asked row's other values the response names word for word; without ``restated``,
    not those the question names as written (the question's context, which
    :func:`_without_restated` drops: a value's words are its naming's words, so whether the
    question restates it is known without its spans)."""
    occ: list[_Occurrence] = []
    tok_set = ev.tok_set
    qf: str | None = None
    qpad = ""
    for k, attr in enumerate(g.attributes):
        if attr.last_word in tok_set:
            if not restated:
                if qf is None:
                    qf, qpad = ev.query_folded, ev.query_pad
                if attr.last_word in qf and attr.needle in qpad:
                    continue
            occ += _value_occurrences(ev, attr, _ATTRIBUTE - k, (Level.SURFACE,))
    return occ


_ALL_LEVELS = (Level.SURFACE, Level.STEM)


def _rival_occurrences(ev: ParsedResponse, rivals: tuple[GoldPart, ...]) -> list[_Occurrence]:
    """The grounded candidates the response names, word for word or by stem, in their order."""
    occ: list[_Occurrence] = []
    tok_set, stem_set = ev.tok_set, ev.stem_set
    for k, rival in enumerate(rivals):
        if rival.last_word in tok_set or (rival.stem_last and rival.stem_last in stem_set):
            occ += _value_occurrences(ev, rival, k, _ALL_LEVELS)
    return occ


def _country_occurrences(
    ev: ParsedResponse, part: GoldPart, rival_codes: dict[str, str], *, rivals: bool
) -> list[_Occurrence]:
    """The countries the response names: the gold's (by any alias), a rival's, or — for a
    country gold without grounded candidates — another country, the conflicting value of the
    type. The question's own countries are context, not rivals."""
    occ: list[_Occurrence] = []
    asked = ev.query_countries()
    golds = part.countries
    for m in ev.countries(part.country):
        if m.code in golds:
            occ.append((-1, Level.ALIAS, m.start, m.end, m.code))
        elif m.code in asked:
            continue
        elif m.code in rival_codes:
            occ.append((0, Level.ALIAS, m.start, m.end, rival_codes[m.code]))
        elif part.country is not None and not rivals:
            name = " ".join(ev.toks[m.start : m.end])
            occ.append((-2, Level.ALIAS, m.start, m.end, name))
    return occ


def _member_occurrences(ev: ParsedResponse, part: GoldPart) -> list[_Occurrence]:
    """A closed set's other members, named on their own: conflicting values of the type."""
    assert part.member is not None
    occ: list[_Occurrence] = []
    set_name, golds = part.member[0], part.members
    asked = _query_members(ev.query, set_name)
    for mm in ev.members(set_name):
        if mm.member not in golds and mm.member not in asked:
            name = " ".join(ev.toks[mm.start : mm.end])
            occ.append((-2, Level.ALIAS, mm.start, mm.end, name))
    return occ


def _acronym_occurrences(
    ev: ParsedResponse, lookup: RivalLookup, upper: frozenset[str]
) -> list[_Occurrence]:
    """Values (the gold's or a rival's) the response writes by their initials, in capitals."""
    occ: list[_Occurrence] = []
    for owner, raw, short in lookup.acronyms:
        if short not in upper:
            continue
        occ += [(owner, Level.ALIAS, j, j + 1, raw) for j, t in enumerate(ev.toks) if t == short]
    return occ


def _without_restated(ev: ParsedResponse, occ: list[_Occurrence]) -> list[_Occurrence]:
    """``occ`` without the rivals (and the row's other values) the question itself names: the
    question's context restated ("During the War of 1812, the United States fought …"), not the
    answer's claim. A rival whose last word the query does not hold is none (one substring
    test)."""
    toks, qf = ev.toks, ev.query_folded
    if any(o[0] < -2 or o[0] >= 0 for o in occ if toks[o[3] - 1] in qf):
        qpad = ev.query_pad
        return [
            o
            for o in occ
            if -2 <= o[0] < 0
            or toks[o[3] - 1] not in qf
            or padded(" ".join(toks[o[2] : o[3]])) not in qpad
        ]
    return occ


def _without_echoes(ev: ParsedResponse, occ: list[_Occurrence]) -> list[_Occurrence]:
    """``occ`` without the namings that only repeat the query, in claiming order."""
    # _is_echo's own first test, inlined: a word the query does not hold is no echo
    qf, toks = ev.query_folded, ev.toks
    if len(occ) == 1:  # the usual case: one naming, nothing to sort
        o = occ[0]
        if (o[1] is not Level.STEM and toks[o[3] - 1] not in qf) or not _is_echo(
            ev, o[2], o[3], by_stem=o[1] is Level.STEM
        ):
            return occ
        return []
    occ = [
        o
        for o in occ
        if (o[1] is not Level.STEM and toks[o[3] - 1] not in qf)
        or not _is_echo(ev, o[2], o[3], by_stem=o[1] is Level.STEM)
    ]
    if len(occ) > 1:
        occ.sort(key=_occ_order)
    return occ


_Claim = tuple[int, Level, int, int]


def _settle_claims(
    occ: list[_Occurrence],
) -> tuple[list[_Occurrence], dict[int, _Claim]]:
    """The occurrences that hold their tokens, claimed in order (most exact, longest first),
    and which occurrence holds each token. The same value again claims nothing; the gold and a
    rival tied on one span at one level are neither evidence (two other values tied on one
    span, a kin value that is also the row's neighbour's, are evidence both: the first holds)."""
    claimed: dict[int, _Claim] = {}
    accepted: list[_Occurrence] = []
    cancelled: set[tuple[int, int]] = set()
    for o in occ:
        owner, level, start, end = o[0], o[1], o[2], o[3]
        holders = {claimed[t] for t in range(start, end) if t in claimed}
        if not holders:
            accepted.append(o)
            for t in range(start, end):
                claimed[t] = (owner, level, start, end)
        elif all(h[0] == owner for h in holders):
            continue  # the same value again (e.g. its stem under its surface form)
        elif any(
            h[1] == level and (h[2], h[3]) == (start, end) and -1 in (owner, h[0]) for h in holders
        ):
            cancelled.add((start, end))
    if cancelled:
        accepted = [o for o in accepted if (o[2], o[3]) not in cancelled]
    return accepted, claimed


def _reading(
    ev: ParsedResponse,
    part: GoldPart,
    dom: DomainIndex | None,
    accepted: list[_Occurrence],
    claimed: dict[int, _Claim],
) -> Reading:
    """The :class:`Reading` of the settled occurrences: the gold's level (or its near spelling,
    or all its words, where no occurrence names it), its denial, the rivals, the row's other
    values, and the hedge."""
    # one C-level set test before the denial check proper: most answers deny nothing
    deny = not ev.tok_set.isdisjoint(_DENIAL_CUES)
    if not deny and len(accepted) == 1 and accepted[0][0] == -1:
        # the usual reading: the gold named once, nothing else, no denial (and no rival to
        # hedge with)
        o = accepted[0]
        return Reading.named(o[1], [(o[2], o[3])])
    g = ev.gold
    r = Reading()
    toks = ev.toks
    gold_occ = [o for o in accepted if o[0] == -1]
    affirmed = [o for o in gold_occ if not _is_denied(toks, o[2], ev)] if deny else gold_occ
    r.denied = bool(gold_occ) and not affirmed
    # the usual reading names the gold alone: nothing else to sort out
    others = [o for o in accepted if o[0] != -1] if len(gold_occ) < len(accepted) else []
    rival_occ = [
        o for o in others if o[0] > _ATTRIBUTE and not (deny and _is_denied(toks, o[2], ev))
    ]
    if others and g.attributes:
        _read_attributes(ev, r, others)
    if rival_occ:
        _read_rivals(ev, r, dom, rival_occ)
    if affirmed:
        r.level = affirmed[0][1] if len(affirmed) == 1 else min(o[1] for o in affirmed)
        r.spans = [(o[2], o[3]) for o in affirmed]
    elif not gold_occ:
        _read_unnamed_gold(ev, part, r, claimed)
    if r.level is not None:
        r.hedge = _hedge(ev, part, r, rival_occ)
    return r


def _read_attributes(ev: ParsedResponse, r: Reading, others: list[_Occurrence]) -> None:
    """The row's other values the response gives, where the database holds them, and the
    tokens the other values stand on."""
    g = ev.gold
    said_attrs = [o for o in others if o[0] <= _ATTRIBUTE]
    r.covered = frozenset(t for o in others for t in range(o[2], o[3]))
    r.attributes = [_said(ev, o) for o in said_attrs]
    if g.attribute_sources:
        r.attribute_sources = [g.attribute_sources[_ATTRIBUTE - o[0]] for o in said_attrs]


def _read_rivals(
    ev: ParsedResponse, r: Reading, dom: DomainIndex | None, rival_occ: list[_Occurrence]
) -> None:
    """The rivals named, by the answer's own words (a reason never names what the answer does
    not say), those proven (not by a shared stem alone), and where the database holds them."""
    r.rivals = list(dict.fromkeys(_said(ev, o) for o in rival_occ))
    # A stem shared with a rival blocks a "correct" but proves nothing: derivation changes
    # meaning ("hospitals" and *Hospitality* share the stem "hospit").
    r.proven_rivals = list(dict.fromkeys(_said(ev, o) for o in rival_occ if o[1] is not Level.STEM))
    if dom is not None and dom.sources:
        r.rival_sources = tuple(
            (_said(ev, o), src)
            for o in rival_occ
            if o[0] >= _DOMAIN and (src := dom.sources[o[0] - _DOMAIN])
        )


def _read_unnamed_gold(
    ev: ParsedResponse, part: GoldPart, r: Reading, claimed: dict[int, _Claim]
) -> None:
    """The gold named by no occurrence: a near spelling on words no exact value (gold or
    rival) has claimed, or all its content words in a short enough reply."""
    fz = fuzzy_window(part.norm, ev.toks)
    if (
        fz is not None
        and claimed.keys().isdisjoint(range(fz[0], fz[1]))
        and not _is_echo(ev, fz[0], fz[1])
        and not _is_denied(ev.toks, fz[0], ev)
    ):
        r.level, r.spans = Level.FUZZY, [(fz[0], fz[1])]
    if r.level is None and part.content and len(part.content) > 1:
        p, rec, _ = _prf(part.content, ev.content_set)
        if rec == 1.0 and p >= TOKEN_PRECISION_FOR_CORRECT:
            r.level = Level.TOKENS


#: Owners of occurrences beyond the gold (-1), another country (-2) and candidates (0…): the
#: asked row's other values count down from here, domain values up from :data:`_DOMAIN`.
_ATTRIBUTE = -10
_DOMAIN = 1 << 20


def _domain_occurrences(
    ev: ParsedResponse,
    dom: DomainIndex,
    gold_norms: frozenset[str],
    own: tuple[frozenset[str], frozenset[str]],
    *,
    restated: bool = True,
    by_stem: bool = True,
) -> list[_Occurrence]:
    """The column's values the response names: the words whose value ends there (one set
    intersection with the response's words), then the whole value looked for; the gold's own
    spellings are never rivals.

    Without ``restated``, a naming whose words the question holds as written is left out here,
    as :func:`read_part` drops it (the question's context restated), before it costs the echo
    tests, the sort and the claims; without ``by_stem``, only the values named word for word."""
    out: list[_Occurrence] = []
    tok_set = ev.tok_set
    # the question's views are read only for a value the response names in full (few do)
    qf: str | None = "" if restated else None
    qpad = ""
    # most answers name no other value: one allocation-free test rules the domain out
    hits = () if tok_set.isdisjoint(dom.last_words) else tok_set & dom.last_words
    if hits and hits <= own[0]:
        hits = ()  # the gold's own words only (the common case of a correct answer)
    pad = ev.pad
    for w in sorted(hits) if len(hits) > 1 else hits:  # sorted: the same reason on every run
        for k in dom.by_last[w]:
            needle = dom.needles[k]
            # most values ending in a word of the response are not named in full: one
            # substring test, before the value's other tests and its spans
            if needle not in pad or needle[1:-1] in gold_norms:
                continue
            if qf is None:
                qf, qpad = ev.query_folded, ev.query_pad
            if qf and w in qf and needle in qpad:
                continue  # every span of it is the question's words restated
            raw = dom.raws[k]
            out += [
                (_DOMAIN + k, Level.SURFACE, a, b, raw)
                for a, b in _spans(pad, needle)
                if k not in dom.cased or _written_as_name(ev, a, b)
            ]
    if not by_stem:
        return out
    stem_set = ev.stem_set
    stem_hits = () if stem_set.isdisjoint(dom.stem_lasts) else stem_set & dom.stem_lasts
    if stem_hits and stem_hits <= own[1]:
        stem_hits = ()
    for w in sorted(stem_hits) if len(stem_hits) > 1 else stem_hits:
        for k in dom.by_stem_last[w]:
            if dom.stem_needles[k] not in ev.stem_pad or dom.needles[k][1:-1] in gold_norms:
                continue
            if qf is None:
                qf, qpad = ev.query_folded, ev.query_pad
            raw = dom.raws[k]
            toks = ev.toks
            out += [
                (_DOMAIN + k, Level.STEM, a, b, raw)
                for a, b in _spans(ev.stem_pad, dom.stem_needles[k])
                if not (qf and toks[b - 1] in qf and padded(" ".join(toks[a:b])) in qpad)
                and (k not in dom.cased or _written_as_name(ev, a, b))
            ]
    return out


def _written_as_name(ev: ParsedResponse, start: int, end: int) -> bool:
    """Whether the words at tokens ``[start, end)`` are written as a name: quoted, or capitalised
    where a sentence does not start. What a value made of function words needs to count as
    named (see :attr:`DomainIndex.cased`); False where the text cannot be lined up with its
    tokens (the lowercase word is the likelier reading)."""
    spans = ev.raw_spans
    if spans is None:
        return False
    text = ev.response
    a, b = spans[start][0], spans[end - 1][1]
    before, after = text[a - 1 : a], text[b : b + 1]
    if before and after and before in _OPEN_QUOTES and after in _CLOSE_QUOTES:
        return True
    return text[a].isupper() and not _SENTENCE_START.search(text, 0, a)


_OPEN_QUOTES = frozenset("'\"‘“«")
_CLOSE_QUOTES = frozenset("'\"’”»")


def _occ_order(o: _Occurrence) -> tuple[Level, int]:
    """Most exact level first, longer first within a level (a stable sort keeps the rest)."""
    return (o[1], o[2] - o[3])


def _hedge(
    ev: ParsedResponse, part: GoldPart, r: Reading, rival_occ: list[_Occurrence]
) -> str | None:
    """Evidence that the response hedges between the gold and another answer.

    A disjunction is a hedge only when its other side is a rival — another value of the answer's
    column, or another value of the gold's type (another country for a country): "USA or UK"
    hedges, but "a statute or statutory law", "the sinoatrial node or natural pacemaker" say the
    gold twice, and a side the database cannot place is no evidence either way. A rival named
    next to the gold in a response with a hedging word ("possibly", "might") is a hedge too.
    """
    if not rival_occ:
        return None
    toks = ev.toks
    rival_tokens = {t for o in rival_occ for t in range(o[2], o[3])}
    for a, b in r.spans:
        sides: list[range] = []
        if b < len(toks) and toks[b] == "or":
            sides.append(range(b + 1, min(len(toks), b + 5)))
        if a > 0 and toks[a - 1] == "or":
            sides.append(range(max(0, a - 5), a - 1))
        if a > 0 and toks[a - 1] == "either":
            nxt = next((j for j in range(b, min(len(toks), b + 3)) if toks[j] == "or"), None)
            if nxt is not None:
                sides.append(range(nxt + 1, min(len(toks), nxt + 5)))
        for side in sides:
            words = [j for j in side if toks[j] not in STOPWORDS]
            if not words or toks[words[0]] in _NOT_AN_ALTERNATIVE:
                continue
            named = [o for o in rival_occ if o[2] in side]
            if named and not rival_tokens.isdisjoint(side):
                return f"disjunction: {_said(ev, named[0])!r}"
    if "/" in ev.folded and (other := _slash_alternative(ev, part, rival_occ)) is not None:
        return f"alternative: {other!r}"
    if not _HEDGE_WORDS.isdisjoint(ev.tok_set):
        return f"hedged_with: {', '.join(repr(_said(ev, o)) for o in rival_occ[:3])}"
    return None


def _said(ev: ParsedResponse, o: _Occurrence) -> str:
    """The words of the response an occurrence stands on: what a reason names, so it never names
    a value the answer does not hold (a rival found by a shared stem, "Hughes" for "Hugh")."""
    return " ".join(ev.toks[o[2] : o[3]])


_SLASH_SIDE = re.compile(r"[^\W_][^/.,;:!?()\n]*")


def _slash_alternative(
    ev: ParsedResponse, part: GoldPart, rival_occ: list[_Occurrence]
) -> str | None:
    """The other side of "gold/other" or "other/gold" when it names a rival."""
    words = part.norm.split()
    if not words:
        return None
    rival_norms = {_said(ev, o) for o in rival_occ}
    gold_rx = r"[\W_]+".join(re.escape(w) for w in words)
    sides = [
        m.group(1)
        for m in re.finditer(rf"(?<![^\W_]){gold_rx}\s*/\s*({_SLASH_SIDE.pattern})", ev.folded)
    ]
    sides += [
        " ".join(m.group(1).split()[-3:])
        for m in re.finditer(rf"([^/.,;:!?()\n]*[^\W_])\s*/\s*{gold_rx}(?![^\W_])", ev.folded)
    ]
    for other in sides:
        if _same_value(part, other):
            continue
        pad = padded(" ".join(tokens(other, folded=True)))
        for named in rival_norms:
            if padded(named) in pad:
                return named
    return None


def _same_value(part: GoldPart, text: str) -> bool:
    norm = " ".join(tokens(text, folded=True))
    if not norm or norm in _NOT_AN_ALTERNATIVE:
        return True
    if any(padded(n) in padded(norm) for n in part.norms):
        return True
    return part.country is not None and country_of(text) in part.countries


def token_prf(gold: frozenset[str], response_tokens: Sequence[str]) -> tuple[float, float, float]:
    """Token precision/recall/F1 of the gold content tokens against the response (set-based)."""
    return _prf(gold, set(response_tokens) - STOPWORDS)


def _prf(gold: frozenset[str], resp: frozenset[str] | set[str]) -> tuple[float, float, float]:
    """:func:`token_prf` against the response's content-token set."""
    if not gold or not resp:
        return 0.0, 0.0, 0.0
    common = len(gold & resp)
    if common == 0:
        return 0.0, 0.0, 0.0
    p, r = common / len(resp), common / len(gold)
    return p, r, 2 * p * r / (p + r)


# -- the tiers --------------------------------------------------------------------------------
Tier = Callable[[ParsedResponse], Decision | None]


def _ok(tier: str, reason: str) -> Decision:
    return Decision.made(Verdict.CORRECT, tier, reason)


def _wrong(tier: str, reason: str) -> Decision:
    return Decision.made(Verdict.INCORRECT, tier, reason)


def tier_refusal(ev: ParsedResponse) -> Decision | None:
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
    parts = ev.gold.parts
    if len(parts) == 1 and _truth_value(ev, parts[0]) is not None and _said_boolean(ev) is not None:
        return None  # "No, there is no record of it": a yes/no answer, the typed tier's
    if len(parts) == 1 and parts[0].number is not None and said_count(ev.query, ev.folded) == 0:
        return None  # "None." to how many visits: a count of none, the typed tier's
    named = _named_after(ev, ref.span[1])
    found = [s for s in ev.statuses(ev.gold.parts) if s in (PartStatus.FOUND, PartStatus.PARTIAL)]
    if found:
        if _gold_only_in_echoed_names(ev) and (
            named is None or _named_after(ev, ref.span[1], skip=_gold_words(ev)) is None
        ):
            # "I could not find anything about Karin Holm": the gold is a word of the asked
            # entity's name as the answer echoes it (the question's "Karin" beside it), the
            # object of the refusal, not a value offered — a refusal, wrong like any other
            return _wrong("refusal", f"refusal_naming_entity: {ref.phrase!r}")
        if named is None or not ev.tok_set.isdisjoint(_TENTATIVE):
            # the gold stated beside the refusal ("I could not find it; perhaps Holm"): a
            # person calls that neither an answer given nor one refused
            ev.notes.append(f"refusal_with_gold: {ref.phrase!r}")
            ev.refusal_hedged = True
        return None
    if named is not None:
        # "I couldn't find X. However, there is an actress named Joely Richardson …": a refusal
        # followed by an answer is an answer, judged as one (by the tiers after this one)
        ev.notes.append(f"refusal_then_answer: {ref.phrase!r} then {named!r}")
        return None
    return _wrong("refusal", f"refusal: {ref.phrase!r}")


def _refusal_stands(ev: ParsedResponse) -> bool:
    """A refusal that is the answer: one not followed by an answer after all."""
    ref = ev.refusal
    return ref is not None and _named_after(ev, ref.span[1]) is None


#: A word that names something: capitalised, or a number on its own (the digits of a key,
#: "m1008@inbox.test", are that key's)
_NAMING_WORD = re.compile(r"[A-Z][\w'’-]*|(?<![\w@.])\d[\d.,]*")
_POSSESSIVE = re.compile(r"['’]s$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"“(]\s*)$")


def _named_after(ev: ParsedResponse, start: int, skip: frozenset[str] = frozenset()) -> str | None:
    """The first name or number the response gives after its refusal phrase that the question
    does not hold — an answer after all ("…, however there is an actress named Joely
    Richardson"); None when what follows is apology, advice or the question's own words ("If
    you have more details about 'Dubai Skyline Tower', I'll be happy to help"), or the words of
    ``skip``."""
    text = ev.response
    if not text.isascii():  # offsets of the folded text are the response's only for ASCII
        return None if not ev.refusal or not ev.refusal.other_sentences else "another sentence"
    # the question's words, and the words of the column and table the asked entity is named
    # by: "… about the book with ISBN 978-…" restates which book, it offers no answer
    query = frozenset(ev.query_toks) | _entity_words(ev.gold.entity_source)
    for m in _NAMING_WORD.finditer(text, start):
        word = m[0]
        low = _POSSESSIVE.sub("", word.lower().rstrip(".,"))  # "Dufour's loan": the name
        if low in ("i", "i'm", "i'll", "i've", "i'd", "ai") or low in ARTICLES:
            continue
        if query.issuperset(toks := tokens(low, folded=True)) or (toks and skip.issuperset(toks)):
            continue  # the question's own words (or the ones the caller has placed)
        if word[0].isupper() and _SENTENCE_START.search(text, 0, m.start()):
            continue  # a sentence's first word is capitalised whatever it is
        return word
    return None


@lru_cache(maxsize=QUERY_VIEWS)
def _query_names(query: str) -> frozenset[str]:
    """The words of the values the question quotes (its slot values: "first name 'Karin' and
    city 'Bodo'"), folded, without function words. Only quoted ones: a capitalised question word
    is as often a word of the answer's own longer name ("the Rolling Stones song Angie" → "Angie
    Bowie", "Girl with a Pearl…" → "Pearl Earring"), where the gold beside it is the claim."""
    words: list[str] = []
    for m in _QUOTED.finditer(query):
        words += tokens(m[1])
    return frozenset(words) - STOPWORDS


_QUOTED = re.compile(r"(?:^|(?<=[\s(]))['‘\"“]([^'’\"”]+)['’\"”](?=$|[\s.,;:!?)])")


def _gold_words(ev: ParsedResponse) -> frozenset[str]:
    """Every token of the gold's text parts and their spellings."""
    return frozenset(t for p in ev.gold.parts for v in (p, *p.alts) for t in v.needle.split())


def _in_echoed_name(ev: ParsedResponse, start: int, end: int) -> bool:
    """Whether the gold at tokens ``[start, end)`` stands beside a slot value of the question
    ("Karin Holm" for a question naming 'Karin'): a word of the entity's full name as the answer
    echoes it, not a value stated on its own."""
    names = _query_names(ev.query) - _gold_words(ev)
    toks = ev.toks
    return (start > 0 and toks[start - 1] in names and _one_name(ev, start - 1)) or (
        end < len(toks) and toks[end] in names and _one_name(ev, end - 1)
    )


def _one_name(ev: ParsedResponse, j: int) -> bool:
    """Whether tokens ``j`` and ``j + 1`` are written as words of one name: both capitalised,
    nothing but a space between ("Karin Holm", not "Family, John Astin" nor "champion Evander
    Holyfield"). True where the text cannot be lined up with its tokens (the words alone)."""
    spans = _name_spans(ev)
    if spans is None:
        return True
    text = ev.response
    (a, b), (c, _) = spans[j], spans[j + 1]
    return text[a].isupper() and text[c].isupper() and text[b:c].isspace()


def _gold_only_in_echoed_names(ev: ParsedResponse) -> bool:
    """Whether the response names the gold's text parts somewhere and every such naming is a
    word of an echoed name (see :func:`_in_echoed_name`)."""
    g = ev.gold
    if not g.parts or any(p.typed for p in g.parts):
        return False
    spans = [s for p in g.parts for v in (p, *p.alts) for s in _spans(ev.pad, v.needle)]
    return bool(spans) and all(_in_echoed_name(ev, a, b) for a, b in spans)


def _name_spans(ev: ParsedResponse) -> list[tuple[int, int]] | None:
    """:attr:`ParsedResponse.raw_spans`, also for a text with non-ASCII characters where each
    letter stays one letter and every other one is a space ("Rønning", "0 — that is"): what the
    name tests read (a word's first letter's case, what stands between two words)."""
    spans = ev.raw_spans
    if spans is None and not ev.response.isascii():
        plain = "".join(
            c if c.isascii() else ("X" if c.isupper() else "x") if c.isalnum() else " "
            for c in ev.response
        )
        spans = _raw_token_spans(plain, len(ev.toks))
    return spans


def _inside_address(ev: ParsedResponse, start: int, end: int) -> bool:
    """Whether the tokens ``[start, end)`` are written inside an e-mail address or a link
    ("thea.dahl30@example.no"): a part of that word, not a mention of their own."""
    spans = _name_spans(ev)
    if spans is None:
        return False
    word = word_around(ev.response, spans[start][0], spans[end - 1][1])
    return "@" in word or "://" in word


def _subject_not_claim(ev: ParsedResponse, start: int, end: int) -> bool:
    """Whether the gold at ``[start, end)`` is only a word of the entity's echoed name while its
    sentence states another value: "The last name of Thea Dahl is 1.", "Maja Eide's last name
    is maja.eide30@example.no", "0 — that is the last name of Liv Lie." The other value is a
    number, an address, or a capitalised word past the sentence's first, neither the gold nor the
    question restated (a question word counts only when the words around it are not the
    question's too: "John Astin was the voice of Gomez" restates "voice of Gomez"). "Thea Dahl.",
    "It's Thea Dahl" and "Thea Dahl is her full name" state no other value: the gold stays the
    claim. Without the text's case and punctuation (see :attr:`ParsedResponse.raw_spans`) a
    name cannot be told apart: False."""
    spans = _name_spans(ev)
    if spans is None or not _in_echoed_name(ev, start, end):
        return False
    toks, text = ev.toks, ev.response
    lo, hi = start, end
    while lo > 0 and not _SENTENCE_GAP.search(text, spans[lo - 1][1], spans[lo][0]):
        lo -= 1
    while hi < len(toks) and not _SENTENCE_GAP.search(text, spans[hi - 1][1], spans[hi][0]):
        hi += 1
    gold = _gold_words(ev)
    asked, qpad = _query_tok_set(ev.query), ev.query_pad
    claim = False
    for j in range(lo, hi):
        if start - 1 <= j <= end:
            continue  # the echoed name: the gold and the question's word beside it
        if _inside_address(ev, j, j + 1):
            claim = True  # an address is a value of its own, whatever its words
            continue
        t = toks[j]
        if t in gold:
            return False  # the gold said on its own as well
        if not (any(c.isdigit() for c in t) or (j > lo and text[spans[j][0]].isupper())):
            continue
        if t in STOPWORDS:
            continue
        if t in asked and (
            (j > 0 and f" {toks[j - 1]} {t} " in qpad)
            or (j + 1 < len(toks) and f" {t} {toks[j + 1]} " in qpad)
        ):
            continue  # the question's words restated
        claim = True
    return claim


#: What ends a sentence between two tokens (a full stop inside "maja.eide30" does not).
_SENTENCE_GAP = re.compile(r"[.!?;]\s|\n")


def tier_exact(ev: ParsedResponse) -> Decision | None:
    g = ev.gold
    if (
        g.answerable
        and g.norm
        and (
            ev.norm == g.norm
            or (len(g.parts) == 1 and g.parts[0].alts and ev.norm in g.parts[0].norms)
        )
    ):
        return _ok("exact", "exact_match")
    return None


def tier_stale(ev: ParsedResponse) -> Decision | None:
    """An earlier answer version, but not the current one: outdated, not a gap."""
    g = ev.gold
    if not g.answerable or not g.stale:
        return None
    if all(s is PartStatus.FOUND for s in ev.statuses(g.parts)):
        return None
    for idx, version in enumerate(g.stale):
        if all(s is PartStatus.FOUND for s in ev.statuses(version)):
            return Decision.made(
                Verdict.INCORRECT, "stale", STALE, Scores(rules=RulesScores(0.0, 0.0, 0.0, idx))
            )
    return None


_LETTER_ALONE = re.compile(r"^\W*\(?([a-z])\)?\W*$")
_LETTER_LEAD = re.compile(r"^\W*\(?([a-z])[).:]\s")
_LETTER_SAID = re.compile(
    r"\b(?:option|answer|choice|letter)(?:\s+is)?\s*[:\-]?\s*\(?([a-z])\)?(?![a-z'])"
)


def tier_options(ev: ParsedResponse) -> Decision | None:
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


def tier_typed(ev: ParsedResponse) -> Decision | None:
    """Dates compared as dates, numbers as numbers; a hedge between the gold and another value,
    or a range at or near the gold, is undecided. An answer with text parts is left to the text
    tiers once its typed parts match."""
    g = ev.gold
    if g.correct_option is not None:
        return None  # a multiple-choice answer is the options tier's to decide
    if not g.answerable:
        return None
    if len(g.parts) == 1 and _truth_value(ev, g.parts[0]) is not None:
        flag = _said_boolean(ev)
        if flag is not None:
            part = g.parts[0]
            if flag is part.boolean:
                return _ok("typed", f"boolean_match: gold {part.raw!r}")
            return _wrong("typed", f"boolean_mismatch: gold {part.raw!r}")
        if not g.has_typed:
            return None
        if ev.statuses(g.parts)[0] is PartStatus.ABSENT:
            # a 0/1 flag asked as a yes/no question: no number is no missing number
            ev.notes.append(f"no_yes_or_no: gold {g.parts[0].raw!r}")
            return None
    if not g.has_typed:
        return None
    statuses = ev.statuses(g.parts)
    for part, st in zip(g.parts, statuses, strict=True):
        if not part.typed:
            continue
        kind = "date" if part.day is not None else "number"
        if st is PartStatus.CONFLICT:
            if part.number is not None and (span := _range_near(ev, part)) is not None:
                ev.notes.append(f"range_near_gold: {span!r} for gold {part.raw!r}")
                return None
            if g.typed_attributes and (typed := _stated_typed_attributes(ev)):
                # the named row's other numbers ("listed with 1963 and Kockums" for its tonnage)
                return _wrong("typed", _other_attribute_reason(typed, part))
            return _wrong("typed", f"{kind}_mismatch: gold {part.raw!r}")
        if st is PartStatus.ABSENT:
            days = yearless_days(ev.toks) if part.day is not None else ()
            if part.day is not None and (part.day.month, part.day.day) in days:
                # "February 7th" for 2024-02-07: the day without its year, not a missing date
                ev.notes.append(f"date_without_year: gold {part.raw!r}")
                return None
            if days:  # "March 3rd" for 2024-02-07: a date is given, another day, whatever year
                return _wrong("typed", f"date_mismatch: gold {part.raw!r} (a day without its year)")
            said = said_count(ev.query, ev.folded) if part.number is not None else None
            if part.number is not None and said is not None:
                # "He has a pet." for how many pets: one, said by its article
                if said == part.number.value:
                    return _ok("typed", f"count_said: {said} for gold {part.raw!r}")
                return _wrong("typed", f"number_mismatch: gold {part.raw!r} (said {said})")
            if _off_topic(ev):
                ev.notes.append(f"off_topic: gold {part.raw!r}")
                return None
            return _wrong("typed", f"{kind}_missing: gold {part.raw!r}")
        if st is not PartStatus.FOUND:
            continue
        # one C-level set test before the denial check proper: most answers deny nothing
        if not _DENY_TRIGGERS.isdisjoint(ev.tok_set) and _typed_denied(ev, part):
            return _wrong("typed", f"{kind}_denied: gold {part.raw!r}")
        if (vague := _typed_vague(ev, part)) is not None:
            # several candidates, or a span of values, with the gold among them: no conclusive
            # claim either way (a reader may weigh it; people often accept it)
            ev.notes.append(vague)
            return None
    if all(s is PartStatus.FOUND for s in statuses):
        if _refusal_stands(ev) or not all(p.typed for p in g.parts):
            return None  # the refusal tier left its note / the text parts are the text tiers'
        if (who := _other_entity(ev)) is not None:
            # the gold's number or day, said of another entity: no claim about the asked one
            ev.notes.append(f"said_of_other_entity: {who}")
            return None
        return _ok("typed", f"typed_match: {g.raws}")
    for part, st in zip(g.parts, statuses, strict=True):
        if part.typed and st is PartStatus.PARTIAL:
            kind = "coarser_date" if part.day is not None else "approximate_number"
            ev.notes.append(f"{kind}: gold {part.raw!r}")
    return None


#: A question that asks for a count: its gold 1 or 0 is a number, never a yes or a no.
_COUNT_QUESTION = re.compile(r"\bhow (?:many|often|much)\b|\b(?:number|count|total) of\b|\bcount\b")


@lru_cache(maxsize=QUERY_VIEWS)
def _asks_count(query: str) -> bool:
    return _COUNT_QUESTION.search(fold(query)) is not None


def _truth_value(ev: ParsedResponse, part: GoldPart) -> bool | None:
    """The gold as a yes or a no (a flag's 1 or "true"), or None: a count's 1 ("How many
    courses …?") is the number 1, and "Yes" does not answer it."""
    if part.boolean is None or (part.number is not None and _asks_count(ev.query)):
        return None
    return part.boolean


#: How an answer says yes or no as its first word, or as the whole answer.
_YES = frozenset({"yes", "yeah", "yep", "true", "correct", "affirmative", "indeed"})
_NO = frozenset({"no", "nope", "false", "negative"})


def _said_boolean(ev: ParsedResponse) -> bool | None:
    """The yes or no an answer leads with ("Yes, it has been discontinued." → True; "No." →
    False; "1" alone → True), or None when it does not say one."""
    toks = ev.toks
    if not toks:
        return None
    first = toks[0]
    if first in _YES:
        return True
    if first in _NO:
        # "No, it is Marie Curie" answers no; "no longer …", "no one …" do not
        return False if len(toks) == 1 or toks[1] not in ("longer", "one", "more") else None
    if len(toks) == 1 and first in ("1", "0"):
        return first == "1"
    return None


#: Words after a denial that make it a bound or a time, not a denial of the value ("not more
#: than 12", "not until 2023-04-01").
_BOUND_WORDS = frozenset(
    {"more", "less", "fewer", "over", "under", "above", "below", "later", "earlier", "before",
     "after", "until", "till", "since", "exceeding", "quite", "exactly"}
)  # fmt: skip


#: Any word :func:`_may_deny` needs (a superset: a quick test that most answers fail).
_DENY_TRIGGERS = _DENIALS | {"unlike"} | {w for pair in _CONTRASTS for w in pair if w != "than"}


def _may_deny(tok_set: frozenset[str] | set[str]) -> bool:
    """Whether :func:`_is_denied` could say yes anywhere in the text: a denial word, "unlike",
    or both words of a contrast ("rather than", "instead of", "other than"). Checked first so
    that the usual answer, with "of" but no "instead", costs a few set lookups."""
    if not _DENIALS.isdisjoint(tok_set) or "unlike" in tok_set:
        return True
    return any(a in tok_set and b in tok_set for a, b in _CONTRASTS)


def _typed_denied(ev: ParsedResponse, part: GoldPart) -> bool:
    """Every mention of the gold date/number is denied ("it was not 12", "not 2023-04-01, …"),
    as a denied name is: "not X" states that X is not the answer."""
    if not _may_deny(ev.tok_set):
        return False
    if part.day is not None:
        starts = [m.span[0] for m in ev.dates if match_date(part.day, [m]) is DateMatch.FOUND]
    elif part.number is not None:
        folded = ev.folded
        starts = [
            len(tokens(folded[: n.span[0]], folded=True))
            for n in ev.numbers
            if match_number(part.number, [n], rel_tol=NUMBER_REL_TOL) is NumberMatch.FOUND
        ]
    else:
        return False
    toks = ev.toks
    return bool(starts) and all(
        _is_denied(toks, s, ev) and _BOUND_WORDS.isdisjoint(toks[max(0, s - 3) : s]) for s in starts
    )


#: A range of two numbers: "61-65", "61–65", "61 to 65", "from 61 to 65", "between 61 and 65".
_NUMBER = r"\d+(?:[.,]\d+)?"
_MONEY = r"(?:[$£€¥]\s?)?"  # a currency sign before an end: "£174,000 to £184,000"
_RANGE = re.compile(
    rf"(?<![\w.,/-]){_MONEY}(?P<a>{_NUMBER})\s*(?:-|–|—|to)\s*{_MONEY}(?P<b>{_NUMBER})"
    rf"(?![\w/]|[.,-]\d)"
    rf"|\bbetween\s+{_MONEY}(?P<c>{_NUMBER})\s+and\s+{_MONEY}(?P<d>{_NUMBER})\b"
)


def _typed_vague(ev: ParsedResponse, part: GoldPart) -> str | None:
    """The note for a found gold date/number that the answer offers only as one of several
    candidates ("force 8 or force 9") or as an end of a range ("61-65"), else None."""
    if not _HEDGE_WORDS.isdisjoint(ev.tok_set) and (other := _typed_hedge(ev, part)) is not None:
        return f"hedge: {other} next to gold {part.raw!r}"
    if part.number is not None and (span := _typed_range(ev, part)) is not None:
        return f"range: {span!r} for gold {part.raw!r}"
    return None


def _ranges(folded: str) -> list[tuple[int, int, str, float, float]]:
    """Every rising range of two numbers in the text: (start, end, text, low, high). A second
    end below the first is an abbreviation ("1976-81"), not a span from 81 to 1976."""
    found: list[tuple[int, int, str, float, float]] = []
    for m in _RANGE.finditer(folded):
        a, b = (m["a"], m["b"]) if m["a"] is not None else (m["c"], m["d"])
        lo, hi = parse_gold_number(a), parse_gold_number(b)
        if lo is not None and hi is not None and lo.value < hi.value:
            found.append((m.start(), m.end(), m.group(0), lo.value, hi.value))
    return found


def _range_near(ev: ParsedResponse, part: GoldPart) -> str | None:
    """A range in the answer that the gold number lies in, or beside it by less than the range's
    own width ("between £174,000 and £184,000" for £186k), if any.

    A range says the value is uncertain by about its width: one that brackets the gold, or
    misses it by less than that, is a vague answer near the gold, not a conclusive other value.
    The ends are compared after the number reader's own scaling of each end (thousands, "k")
    against the gold's value, and also as written when the answer scales the whole range."""
    if part.number is None or not _has_range(ev.folded):
        return None
    gold = part.number.value
    read = [n.value for n in ev.numbers]
    for _, _, text, lo, hi in _ranges(ev.folded):
        # "174 to 184 thousand": the reader scales the last end; the range is in thousands
        factors = {1.0} | {f for v in read for e in (lo, hi) if e and (f := _scale_of(v / e))}
        for factor in factors:
            a, b = lo * factor, hi * factor
            if 2 * a - b <= gold <= 2 * b - a:  # within one width of either end
                return text
    return None


#: The scales a number reader applies to a written number ("174 thousand", "3.5 million").
_SCALES = (1e3, 1e6, 1e9, 1e12)


def _scale_of(ratio: float) -> float:
    """The scale ``ratio`` is (within float error), or 0.0."""
    return next((s for s in _SCALES if abs(ratio - s) <= 1e-9 * s), 0.0)


def _typed_range(ev: ParsedResponse, part: GoldPart) -> str | None:
    """The range every mention of the gold number sits in as one end ("61-65" for 61), if so.

    A range states that the value is somewhere between its ends, not that it is the gold value;
    the number reader sees only the range's first end (it does not read "-65" after a digit as
    a number, which keeps ids and dates whole), so without this "61-65" read as "61"."""
    if part.number is None or not _has_range(ev.folded):
        return None
    ranges: list[tuple[int, int, str]] = []
    for m in _RANGE.finditer(ev.folded):
        a, b = (m["a"], m["b"]) if m["a"] is not None else (m["c"], m["d"])
        ends = [parse_gold_number(x) for x in (a, b)]
        if None not in ends and ends[0] != ends[1]:
            ranges.append((m.start(), m.end(), m.group(0)))
    if not ranges:
        return None
    found = [
        n
        for n in ev.numbers
        if match_number(part.number, [n], rel_tol=NUMBER_REL_TOL) is NumberMatch.FOUND
    ]
    inside = [next((r for s, e, r in ranges if s <= n.span[0] < e), None) for n in found]
    return inside[0] if inside and None not in inside else None


#: What a range needs: two numbers joined by a dash or "to", or "between". Two patterns, not
#: one alternation: a pattern that starts with a digit is searched for by its first character,
#: where the alternation is tried at every position of the text.
_RANGE_JOINED = re.compile(r"\d\s*(?:-|–|—|to\b)\s*[$£€¥]?\s?\d")
_BETWEEN = re.compile(r"\bbetween\b")


def _has_range(folded: str) -> bool:
    return _RANGE_JOINED.search(folded) is not None or (
        "between" in folded and _BETWEEN.search(folded) is not None
    )


def _typed_hedge(ev: ParsedResponse, part: GoldPart) -> str | None:
    """A conflicting date/number offered as an alternative to the gold one ("30 or 31", "April 1
    or possibly April 2"): next to a mention of the gold, joined by "or" or a hedging word. A
    number elsewhere in a long answer ("…since 1930, likely …") is no alternative."""
    if _HEDGE_WORDS.isdisjoint(ev.tok_set):
        return None
    toks = ev.toks
    if part.day is not None:
        ignore = ev.query_days()
        gold_at = [m.span for m in ev.dates if match_date(part.day, [m]) is DateMatch.FOUND]
        for m in ev.dates:
            if match_date(part.day, [m], ignore=ignore) is DateMatch.CONFLICT and any(
                _offered_instead(toks[min(g[1], m.span[1]) : max(g[0], m.span[0])]) for g in gold_at
            ):
                return repr(m.first.isoformat())
    elif part.number is not None:
        q = ev.query_numbers()
        folded = ev.folded
        gold_at = [
            n.span
            for n in ev.numbers
            if match_number(part.number, [n], rel_tol=NUMBER_REL_TOL) is NumberMatch.FOUND
        ]
        for n in ev.numbers:
            if (
                n.value not in q
                and match_number(part.number, [n], rel_tol=NUMBER_REL_TOL) is NumberMatch.CONFLICT
                and any(
                    _offered_instead(
                        tokens(folded[min(g[1], n.span[1]) : max(g[0], n.span[0])], folded=True),
                        "/" in folded[min(g[1], n.span[1]) : max(g[0], n.span[0])],
                    )
                    for g in gold_at
                )
            ):
                return repr(f"{n.value:g}")
    return None


def _offered_instead(between: Sequence[str], slash: bool = False) -> bool:
    """Whether the words between two values offer one as an alternative to the other."""
    return len(between) <= 4 and (slash or not _HEDGE_WORDS.isdisjoint(between))


def _free_text_statuses(ev: ParsedResponse) -> list[PartStatus] | None:
    """Each gold part's status in the response, or None when a free-text tier has nothing to
    decide (multiple choice is the options tier's; unanswerable is the refusal tier's)."""
    g = ev.gold
    if g.correct_option is not None or not g.answerable or not g.parts:
        return None
    return ev.statuses(g.parts)


def _found(ev: ParsedResponse, tier: str, worst: Level) -> Decision | None:
    """Correct when every part is named at ``worst`` or better and nothing else is; the gold
    named next to a rival, hedged or not, is left undecided with a note (several candidates
    are not the answer's claim, nor a wrong one)."""
    g = ev.gold
    if g.correct_option is not None or not g.answerable or not g.parts:
        return None  # as :func:`_free_text_statuses`: not a free-text tier's to decide
    # Only a typed part's status is read here: a text part is judged by its reading, so its
    # containment test is left to whichever tier needs it (most answers never do).
    statuses = ev.statuses(g.parts) if g.has_typed else None
    levels: list[Level] = []
    rivals: list[str] = []
    for i, part in enumerate(g.parts):
        if part.typed:
            if statuses is None or statuses[i] is not PartStatus.FOUND:
                return None
            if (vague := _typed_vague(ev, part)) is not None:
                ev.notes.append(vague)
                return None
            continue
        r = ev.reading(i)
        if r.level is None or r.level > worst:
            return None
        if r.hedge is not None:
            # the gold offered as one of several candidates: not the answer's claim, nor wrong
            ev.notes.append(f"hedge: {r.hedge} (gold {part.raw!r})")
            return None
        if (
            r.spans
            and all(_inside_address(ev, a, b) or _subject_not_claim(ev, a, b) for a, b in r.spans)
            and not all(_inside_address(ev, a, b) for a, b in r.spans)
        ):
            # the gold only as a word of the entity's echoed name (and of an address), the
            # subject of another claim
            ev.notes.append(f"gold_as_subject: {part.raw!r}")
            return None
        levels.append(r.level)
        rivals += r.rivals
    if rivals:
        ev.notes.append(f"gold_with_other_value: {', '.join(map(repr, rivals[:3]))}")
        return None
    if ev.refusal_hedged or (
        (ref := ev.refusal) is not None and _named_after(ev, ref.span[1]) is None
    ):
        return None  # the refusal stands (see :func:`_refusal_stands`): the tier left its note
    if (who := _other_entity(ev)) is not None:
        ev.notes.append(f"said_of_other_entity: {who}")
        return None
    code = _LEVEL_CODE[max(levels)] if levels else "contains"
    return _ok(tier, f"{code}: {g.raws}")


def tier_contains(ev: ParsedResponse) -> Decision | None:
    """Every gold part contained in the response on word boundaries (and no rival named)."""
    d = _found(ev, "contains", Level.SURFACE)
    if d is None and (statuses := _free_text_statuses(ev)) is not None:
        for part, st in zip(ev.gold.parts, statuses, strict=True):
            if st in (PartStatus.ECHO, PartStatus.NEGATED):
                ev.notes.append(f"gold_{st.value}: {part.raw!r}")
    return d


def tier_variant(ev: ParsedResponse) -> Decision | None:
    """Every gold part named as another country alias, a morphological variant of its words, or a
    near spelling of a long value — and no rival named."""
    return _found(ev, "variant", Level.FUZZY)


def tier_conflict(ev: ParsedResponse) -> Decision | None:
    """Positive evidence of another answer for a text part the response does not name: another
    value of its column (a grounded candidate, or another country), or the gold denied."""
    statuses = _free_text_statuses(ev)
    if statuses is None:
        return None
    g = ev.gold
    for i, part in enumerate(g.parts):
        if part.typed:
            continue
        r = ev.reading(i)
        if r.level is not None:
            continue
        if r.proven_rivals:
            named = ", ".join(map(repr, r.proven_rivals[:3]))
            from_ = dict(r.rival_sources)
            where = ", ".join(
                dict.fromkeys(src for v in r.proven_rivals[:3] if (src := from_.get(v)))
            )
            # another entity's value of the asked kind names the column it came from
            at = f" from {where}" if where else ""
            return _wrong("conflict", f"other_value: {named}{at} (gold {part.raw!r})")
        if r.rivals:
            ev.notes.append(f"rival_stem_only: {', '.join(map(repr, r.rivals[:3]))}")
        if r.denied:
            return _wrong("conflict", f"gold_denied: {part.raw!r}")
        said = [
            *zip(r.attributes, r.attribute_sources or [""] * len(r.attributes), strict=True),
            *_stated_typed_attributes(ev),
        ]
        stated = [a for a, _ in said]
        if stated and not _overlaps(ev, part, r.covered, _source_words(r.attribute_sources)):
            # the right row, other columns: "Robert King's phone is …, his city is Lethbridge" or
            # "Fortuna is listed with 1969 and 31298" asked for his title / its builder names
            # values the database holds for that row, and not the one asked — unless the answer
            # also names something else, which may be the gold said another way
            other = _other_name(ev, stated)
            if other is None:
                return _wrong("conflict", _other_attribute_reason(said, part))
            ev.notes.append(f"other_attribute_beside: {other!r}")
        if len(g.parts) == 1 and (claim := _typed_claim(ev, part)) is not None:
            return _wrong("conflict", f"type_mismatch: {claim!r} for gold {part.raw!r}")
        if (who := _other_entity(ev)) is not None:
            # another entity's sentence: "The level of the course Volcanology is …" asked about
            # the course Game Theory
            return _wrong("conflict", f"other_entity: {who} (gold {part.raw!r})")
    return None


def _other_entity(ev: ParsedResponse) -> str | None:
    """The other entity an answer is about, with where the database names it ("'volcanology'
    from course.title"): it names a value of the column the question names its entity by,
    outside the question's words and the gold's, and never the question's own entity. None
    when it names none, or names the asked one too."""
    g = ev.gold
    dom = g.entity
    if dom is None or ev.tok_set.isdisjoint(dom.last_words):
        return None
    # the usual answer names the asked entity, whose words the question holds: one set test,
    # unless a last word it shares with the question ends several values (every e-mail's
    # "org", a family's surname), where another value may end in it too
    common = ev.tok_set & dom.last_words
    if common <= _query_tok_set(ev.query) and all(len(dom.by_last[w]) == 1 for w in common):
        return None
    qpad = ev.query_pad
    others: list[tuple[str, int, int]] = []
    occ = _domain_occurrences(ev, dom, g.gold_norms, _NO_OWN, by_stem=False)
    for o in occ:
        if o[1] is not Level.SURFACE:
            continue
        said = _said(ev, o)
        if f" {said} " in qpad:
            # the question's own entity is named: the answer is about it too (beside another,
            # the asked entity's clauses are read: :func:`_asked_entity_answer`)
            if len(occ) > 1:
                ev._entity_occ = occ
            return None
        others.append((said, o[2], o[3]))
    if not others:
        return None
    gold_spans = {
        t for p in g.parts for v in (p, *p.alts) for a, b in _spans(ev.pad, v.needle)
        for t in range(a, b)
    }  # fmt: skip
    named = [
        said
        for said, a, b in others
        if gold_spans.isdisjoint(range(a, b)) and not _is_denied(ev.toks, a, ev)
    ]
    if not named:
        return None
    others = [(n, 0, 0) for n in named]
    where = f" from {g.entity_source}" if g.entity_source else ""
    return f"{others[0][0]!r}{where}"


_NO_OWN: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def _other_attribute_reason(said: Sequence[tuple[str, str]], part: GoldPart) -> str:
    """The reason of an answer that gave the entity's (or its neighbours') other values: the
    values as said, and where the database holds them ("from artist.name"), then the gold."""
    named = dict.fromkeys(said)
    values = ", ".join(repr(v) for v in dict.fromkeys(v for v, _ in named))
    sources = ", ".join(dict.fromkeys(src for _, src in list(named)[:3] if src))
    where = f" from {sources}" if sources else ""
    return f"other_attribute: {values}{where} (gold {part.raw!r})"


def _stated_typed_attributes(ev: ParsedResponse) -> list[tuple[str, str]]:
    """The named row's other numbers and dates the response states, as it writes them, with
    where the database holds them: a number of the same value written in digits (a number word
    is as often an article: "one of the ships"), a date to the day; never one the question
    itself holds."""
    g = ev.gold
    if not g.typed_attributes or _HAS_DIGIT.search(ev.norm) is None:
        return []
    out: list[tuple[str, str]] = []
    src = g.typed_sources
    if g.attribute_numbers:
        values = g.attribute_numbers
        folded = ev.folded
        for n in ev.numbers:
            if n.value not in values or n.vague is not None or n.ordinal or n.percent:
                continue
            said = folded[n.span[0] : n.span[1]].strip()
            if _HAS_DIGIT.search(said) is not None and n.value not in ev.query_numbers():
                out.append((said, src.get(n.value, "")))
    if g.attribute_days and not ev.tok_set.isdisjoint(g.attribute_years):
        asked = ev.query_days()
        for m in ev.dates:
            if m.first == m.last and m.first in g.attribute_days and m.first not in asked:
                out.append((" ".join(ev.toks[m.span[0] : m.span[1]]), src.get(m.first, "")))
    return out


#: A word written with a capital (a name, or a sentence's first word).
_CAPITALISED = re.compile(r"(?<![\w'’])[^\W\d_][\w'’-]*")


def _other_name(ev: ParsedResponse, stated: Sequence[str]) -> str | None:
    """A capitalised word of the response beyond the question's words, the row's values it
    states (``stated``) and the words an answer wraps a value in — a name that may be the gold
    said another way ("… and is its VP" for *Vice President Sales*); None when there is none. A
    sentence's first word is capitalised whatever it is, so it is no name here."""
    text = ev.response
    known = set(ev.query_toks) | _entity_words(ev.gold.entity_source)
    for value in stated:
        known.update(value.split())
    for m in _CAPITALISED.finditer(text):
        word = m[0]
        if not word[0].isupper() or _SENTENCE_START.search(text, 0, m.start()):
            continue
        words = tokens(word)
        if all(
            w in known
            or w in STOPWORDS
            or w in _WRAPPING
            or w in _FRAMING
            or w in ARTICLES
            or w in _MONTH_WORDS  # "commissioned in May 1970": a date's month, no name
            for w in words
        ):
            continue
        return word
    return None


@lru_cache(maxsize=QUERY_VIEWS)
def _entity_words(source: str | None) -> frozenset[str]:
    """The words of the table and column the question names its entity by ("book.isbn" → book,
    isbn): an answer says which row it means with them ("the book with ISBN …")."""
    return _source_words([source]) if source else frozenset()


def _source_words(sources: Sequence[str]) -> frozenset[str]:
    """The words of the tables and columns values came from ("voyage.cargo" → voyage, cargo):
    an answer that states a value says what it is ("The cargo of the voyage … is grain")."""
    if not any(sources):
        return frozenset()
    return frozenset(w for src in sources if src for w in tokens(_CAMEL_OR_SNAKE.sub(" ", src)))


_CAMEL_OR_SNAKE = re.compile(r"[._]|(?<=[a-z0-9])(?=[A-Z])")


def _overlaps(
    ev: ParsedResponse,
    part: GoldPart,
    covered: frozenset[int] = frozenset(),
    framing: frozenset[str] = frozenset(),
) -> bool:
    """Whether the response shares any content word (or its stem) with the gold or one of its
    alternatives: an answer that says part of the gold another way is no conclusive miss. The
    words of other values the response names (``covered``) and the words it repeats from the
    question are not the answer's own: "Physics" inside *Quantum Physics*, or the album's title
    restated, say no part of the gold; nor do the names of the columns stated (``framing``)."""
    if covered or framing or not ev.tok_set.isdisjoint(ev.query_toks):
        query = set(ev.query_toks) | framing
        own = [t for i, t in enumerate(ev.toks) if i not in covered and t not in query]
        content: frozenset[str] | set[str] = set(own) - STOPWORDS
        stem_set: frozenset[str] | set[str] = set(stems(own))
    else:
        content, stem_set = ev.content_set, ev.stem_set
    for p in (part, *part.alts):
        if not p.content.isdisjoint(content):
            return True
        if not frozenset(stems(sorted(p.content))).isdisjoint(stem_set):
            return True
    return False


#: Words an answer wraps its value in ("The answer is 42.", "It is approximately 3 units").
_WRAPPING = frozenset(
    {"answer", "value", "result", "total", "number", "count", "approximately", "about",
     "around", "roughly", "exactly", "equals", "equal", "there", "has", "have", "had", "he",
     "she", "they", "i", "think", "believe", "here", "so", "just", "only", "which", "who",
     "we", "our", "my", "us"}
)  # fmt: skip
_MONTH_WORDS = frozenset(
    {"january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
     "sept", "oct", "nov", "dec"}
)  # fmt: skip


_HAS_DIGIT = re.compile(r"\d")


#: A token that is a number as written (digits, a decade, a rank), not a code like "MI5".
_NUMERIC_TOKEN = re.compile(r"\d+(?:s|st|nd|rd|th)?")
_DIGIT_RUN = re.compile(r"\d+")
_HAS_LETTER = re.compile(r"[^\W\d_]")


#: Words by which an answer reports a value without being one ("Fortuna is listed with 1969",
#: "the records give 31298"): no claim of their own.
_FRAMING = frozenset(
    {"list", "lists", "listed", "listing", "give", "gives", "given", "gave", "show", "shows",
     "shown", "showed", "state", "states", "stated", "say", "says", "said", "read", "reads",
     "record", "records", "recorded", "note", "notes", "noted", "mention", "mentions",
     "mentioned", "report", "reports", "reported", "registered", "entered", "entry", "entries",
     "appear", "appears", "appeared", "indicate", "indicates", "indicated", "documents",
     "document", "documented", "database", "data", "table", "information", "according",
     "source", "sources", "figure", "figures", "put", "puts"}
)  # fmt: skip


def _names_only(domain: DomainIndex) -> bool:
    """Whether a complete domain's own values (not its kin) all hold a letter: a column of codes
    or names, where a bare number names none of them."""
    if not domain.complete:
        return False
    own = (
        domain.raws
        if not domain.sources
        else [r for r, s in zip(domain.raws, domain.sources, strict=False) if not s]
    )
    return bool(own) and all(_HAS_LETTER.search(r) is not None for r in own)


#: The shortest stem a stem of the question may echo by its start (the stemmer cuts
#: "diagnosis" to "diagnosi" and "diagnosing" to "diagnos"): shorter ones are too common.
_ECHO_STEM = 6


def _stem_echo(stem: str, query_stems: str) -> bool:
    """Whether ``stem`` is a word of the question said in another form: one of the two stems
    begins with the other, both at least :data:`_ECHO_STEM` long."""
    if len(stem) < _ECHO_STEM or stem[0].isdigit():
        return False
    return any(
        len(q) >= _ECHO_STEM and (stem.startswith(q) or q.startswith(stem))
        for q in query_stems.split()
    )


def _typed_claim(ev: ParsedResponse, part: GoldPart) -> str | None:
    """The number or date an answer gives as its only claim when the gold is a name ("0" for a
    surname, "The answer is 42." for a city, "Fortuna is listed with 1969 and 31298." for a
    builder): an answer of another type than the gold's is a wrong one. None when the gold
    itself is a number or can be a truth value, or when the answer says anything besides — what
    the question already said (its words, or their stems: "Fortuna's", "ships") and the words an
    answer wraps or reports a value in aside. A gold with digits is a code or a name ("RT-177")
    only where the database says so: its column's whole domain holds no value without a letter.
    Then a bare number that is none of its own digits ("2") contradicts it, one of them ("177":
    the code said short) does not; elsewhere ("11 years and 302 days", "4 a.m.") a number
    may be the gold said another way."""
    if part.boolean is not None:
        return None
    own: set[int] | None = None
    if _HAS_DIGIT.search(part.raw) is not None:
        domain = ev.gold.domains[0] if ev.gold.domains else None
        if domain is None or not _names_only(domain):
            return None
        own = {int(d) for d in _DIGIT_RUN.findall(part.raw)}
    elif extract_numbers(part.raw):
        return None  # "Four pieces of fruit", "Sixties"
    if not _HAS_DIGIT.search(ev.norm):  # a claim of another type holds digits: most answers none
        return None
    q = ev.query_pad
    at = [
        i
        for i, t in enumerate(ev.toks)
        if t not in STOPWORDS and t not in _WRAPPING and t not in _FRAMING and f" {t} " not in q
    ]
    toks = ev.toks
    if not all(_NUMERIC_TOKEN.fullmatch(toks[i]) for i in at):
        qs, st = ev.query_stem_pad, ev.stems  # an echo said another way: by its stem
        at = [i for i in at if f" {st[i]} " not in qs and not _stem_echo(st[i], qs)]
    claim = [toks[i] for i in at]
    if not claim or not all(_NUMERIC_TOKEN.fullmatch(t) or t in _MONTH_WORDS for t in claim):
        return None
    if all(t in _MONTH_WORDS for t in claim):
        return None  # "April" alone may be a name
    if own is not None and any(int(d) in own for t in claim for d in _DIGIT_RUN.findall(t)):
        return None
    return " ".join(claim)


def tier_token_f1(ev: ParsedResponse) -> Decision | None:
    """All content words of every text part, in any order, in a short reply → right. The gold's
    words being absent is *not* evidence of a wrong answer (a paraphrase has other words); the
    note says how much overlapped, for the LLM tier or a reader."""
    d = _found(ev, "token_f1", Level.TOKENS)
    if d is not None:
        return d
    statuses = _free_text_statuses(ev)
    if statuses is None:
        return None
    for i, part in enumerate(ev.gold.parts):
        if part.typed or not part.content or ev.reading(i).level is not None:
            continue
        p, r, _ = _prf(part.content, ev.content_set)
        ev.notes.append(
            (f"off_topic: gold {part.raw!r}" if _off_topic(ev) else f"gold_not_named: {part.raw!r}")
            if r == 0.0
            else f"partial_overlap: {part.raw!r} recall={r:.2f} precision={p:.2f}"
        )
    return None


#: Words (tokens) a sentence needs before it can be off the question's topic: a shorter answer
#: is a bare value ("Femur", "Assembly", "In a satchel"), an answer whatever its words.
_OFF_TOPIC_MIN_WORDS = 5
#: Words that refuse, deny or say nothing is known: an answer to the question, a wrong one.
_DENYING = _NEGATORS | frozenset(
    {"cannot", "unable", "unknown", "unclear", "unavailable", "impossible", "insufficient",
     "nothing", "none", "dont", "cant", "couldnt", "doesnt", "didnt", "wasnt", "isnt", "arent"}
)  # fmt: skip
#: Words that answer "when?" or "how many?" without a date or a number ("after the permits were
#: approved", "several hundred"): a vague answer of the asked type, not an unrelated sentence.
_TYPED_VAGUE = frozenset(
    {"after", "before", "since", "until", "till", "during", "when", "ago", "later", "earlier",
     "soon", "recently", "once", "many", "few", "several", "dozens", "hundreds", "thousands",
     "millions", "lots", "most", "more", "less", "fewer", "numerous", "countless"}
)  # fmt: skip


def _off_topic(ev: ParsedResponse) -> bool:
    """Whether the answer addresses nothing of the question: no word (or stem) of the question
    (its entity's names, the asked attribute's words, the values it names), no word of the gold,
    none of the evidence's values (the row's and its neighbours' other values, the column's
    other values, another entity's name), no number or date nor a vague word of the asked type
    ("after", "several"), no name of its own (a capitalised word past a sentence's start), and
    no refusal or denial ("I don't know", "not in the documents" answer the question, wrongly)
    — in a sentence (a bare value is an answer), to a question that has words to address.

    Such an answer ("Trains are a pleasant way to see the countryside.") is no claim about the
    asked value of any type, so it is undecided with its own reason, for a number or a date as
    for text: an endpoint that lost its data and answers unrelated sentences makes its groups
    unknown (and its undecided share rise), not knowledge gaps. Called only where no tier found
    any evidence, so its walks cost nothing on the usual answer."""
    if len(ev.toks) < _OFF_TOPIC_MIN_WORDS:
        return False  # "Femur", "A frog": a bare value is an answer, whatever its words
    toks = ev.tok_set
    query = _query_tok_set(ev.query) - STOPWORDS
    if not query or not toks.isdisjoint(query) or not toks.isdisjoint(_DENYING):
        return False
    g = ev.gold
    if not toks.isdisjoint(g.content) or ev.refusal is not None:
        return False
    if g.has_typed and not toks.isdisjoint(_TYPED_VAGUE):
        return False
    qs = ev.query_stem_pad
    if any(f" {st} " in qs for t, st in zip(ev.toks, ev.stems, strict=True) if t not in STOPWORDS):
        return False
    if ev.numbers or ev.dates or _other_name(ev, ()) is not None:
        return False
    for i, part in enumerate(g.parts):
        if not part.typed:
            r = ev.reading(i)
            if r.level is not None or r.rivals or r.attributes or r.covered or r.denied:
                return False
    if g.attributes and _attribute_occurrences(ev, g):
        return False
    return _other_entity(ev) is None


def tier_empty(ev: ParsedResponse) -> Decision | None:
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
    "variant": tier_variant,
    "conflict": tier_conflict,
    "token_f1": tier_token_f1,
}
#: The order matters: a refusal is settled before any containment, a stale answer is named before
#: the typed tier would call it a plain mismatch, and the gold named in any way is looked for
#: before a rival may call the answer wrong.
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
    # ``isspace`` is ``not strip()`` (the same white-space test) without copying the response
    if not response or response.isspace():
        if "empty" in names:
            return Decision.made(Verdict.INCORRECT, "empty", "empty_response", _NO_OVERLAP)
        return Decision.made(Verdict.UNDECIDED, NO_TIER, "empty_response", _NO_OVERLAP)
    ev = ParsedResponse(query, gold, response)
    scores = _overlap(gold.content, ev.content_set)
    for tier in _default_chain(gold) if tiers is None else _chain(tuple(names)):
        decision = tier(ev)
        if decision is not None:
            # a right answer that named the asked entity beside another (as the deciding tier's
            # :func:`_other_entity` saw): its own clauses decide
            if (
                ev._entity_occ is not None
                and decision.verdict is Verdict.CORRECT
                and (own := _asked_entity_answer(ev)) is not None
            ):
                return _of_asked_entity(query, expected, own, tiers, decision).scored(scores)
            stale = decision.scores.rules  # only the stale tier says which version it matched
            if stale is not None and scores.rules is not None:
                o = scores.rules
                scores = Scores(
                    rules=RulesScores(
                        o.token_precision, o.token_recall, o.token_f1, stale.stale_version
                    )
                )
            return decision.scored(scores)
    reason = "; ".join(dict.fromkeys(ev.notes)) if ev.notes else "no_tier_decided"
    undecided = Decision.made(Verdict.UNDECIDED, NO_TIER, reason, scores)
    if (own := _asked_entity_answer(ev)) is not None:
        return _of_asked_entity(query, expected, own, tiers, undecided).scored(scores)
    return undecided


def _asked_entity_answer(ev: ParsedResponse) -> str | None:
    """The answer's clauses about the asked entity, where it states values of the asked entity
    and of another one (a value of the column the question names its entity by) in clauses of
    their own: what the answer claims of the asked entity (see :mod:`.clauses`)."""
    g = ev.gold
    dom = g.entity
    if dom is None:
        return None
    occ = ev._entity_occ  # kept by :func:`_other_entity` where it saw both
    if occ is None:
        # most answers name no other entity: the set tests :func:`_other_entity` starts with
        if ev.tok_set.isdisjoint(dom.last_words):
            return None
        if (ev.tok_set & dom.last_words) <= _query_tok_set(ev.query):
            return None
    if not has_boundary(ev.response):
        return None  # one clause: nothing to split
    if occ is None:
        occ = _domain_occurrences(ev, dom, g.gold_norms, _NO_OWN, by_stem=False)
    qpad = ev.query_pad
    asked: set[str] = set()
    others: set[str] = set()
    for o in occ:
        if o[1] is Level.SURFACE:
            said = _said(ev, o)
            (asked if f" {said} " in qpad else others).add(f" {said} ")
    if not asked or not others:
        return None

    # the longest first, each taken out once found: "Cardiology" inside "Cardiology Annex" is
    # not named again
    mentions = sorted(asked | others, key=len, reverse=True)

    def names(clause: str) -> tuple[bool, bool, bool]:
        pad = f" {' '.join(folded_tokens(clause)[1])} "
        found_asked = found_other = False
        for m in mentions:
            if m in pad:
                pad = pad.replace(m, "  ")
                if m in asked:
                    found_asked = True
                else:
                    found_other = True
        return found_asked, found_other, not pad.isspace()

    return asked_entity_text(ev.response, names)


def _of_asked_entity(
    query: str, expected: Expected, own: str, tiers: Sequence[str] | None, whole: Decision
) -> Decision:
    """The judgement of the asked entity's clauses alone; where they decide nothing, the whole
    answer's undecided judgement, or undecided for a whole answer that was right only by the
    value it states of another entity."""
    d = judge_deterministic(query, expected, own, tiers=tiers)
    if d.decided:
        return Decision.made(d.verdict, d.tier, f"{d.reason} (in {own!r}, of the asked entity)")
    if whole.verdict is Verdict.UNDECIDED:
        return whole
    return Decision.made(
        Verdict.UNDECIDED, NO_TIER, f"gold_beside_other_entity: {whole.reason} ({own!r})"
    )


@lru_cache(maxsize=64)
def _chain(names: tuple[str, ...]) -> tuple[Tier, ...]:
    return tuple(TIERS[n] for n in validate_tiers(names))


_DEFAULT_CHAIN = _chain(DEFAULT_TIERS)


def _may_decide(tier: Tier, g: Gold) -> bool:
    """Whether ``tier`` can decide anything, or leave a note, for some response to ``g``: the
    tiers whose first tests are on the gold alone return None for every response otherwise."""
    if tier is tier_exact:
        return g.answerable and bool(g.norm)
    if tier is tier_stale:
        return g.answerable and bool(g.stale)
    if tier is tier_options:
        return g.answerable and bool(g.options) and g.correct_option is not None
    free_text = g.correct_option is None and g.answerable
    if tier is tier_typed:
        flag = len(g.parts) == 1 and g.parts[0].boolean is not None
        return free_text and (g.has_typed or flag)
    if tier in (tier_contains, tier_variant, tier_conflict, tier_token_f1):
        return free_text and bool(g.parts)
    return True


#: The default chain per gold, without the tiers that cannot decide for it (no stale versions,
#: no options, no typed part): a gold is judged for every form, target and cycle, so the chain
#: is worked out once, keyed by the gold's identity (the entry holds the gold, so its id is
#: not reused while cached; cleared when full).
_CHAINS: dict[int, tuple[Gold, tuple[Tier, ...]]] = {}
_CHAINS_MAX = 4096


def _default_chain(g: Gold) -> tuple[Tier, ...]:
    hit = _CHAINS.get(id(g))
    if hit is not None and hit[0] is g:
        return hit[1]
    chain = tuple(t for t in _DEFAULT_CHAIN if _may_decide(t, g))
    if len(_CHAINS) >= _CHAINS_MAX:
        _CHAINS.clear()
    _CHAINS[id(g)] = (g, chain)
    return chain


_NO_OVERLAP = Scores(rules=RulesScores(0.0, 0.0, 0.0))
#: (common, response, gold) content-token counts → the rules' scores: the ratios of a few small
#: counts, so a handful of objects serve every judgement (one per count triple, bounded).
_OVERLAPS: dict[tuple[int, int, int], Scores] = {}


def _overlap(gold: frozenset[str], resp: frozenset[str] | set[str]) -> Scores:
    """:func:`_prf` as the rules' scores, shared per count triple."""
    if not gold or not resp:
        return _NO_OVERLAP
    common = len(gold & resp)
    if common == 0:
        return _NO_OVERLAP
    key = (common, len(resp), len(gold))
    hit = _OVERLAPS.get(key)
    if hit is None:
        p, r = common / key[1], common / key[2]
        hit = Scores(rules=RulesScores(p, r, 2 * p * r / (p + r)))
        if len(_OVERLAPS) < 4096:
            _OVERLAPS[key] = hit
    return hit
