"""The gold answer prepared once per semantic group: normalized, typed, parsed.

Every text form of a group (and every target, every run) is judged against the same gold answer,
so the parsing is cached on the answer's content. Types come from generation when known; a value
without a type is typed by what it parses as, so a GRAMMAR result file (which carries no types)
still has its dates compared as dates.
"""

from __future__ import annotations

import re
import string
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import date
from functools import lru_cache
from typing import Any

from groundwatch.core.judging.aliases import country_of
from groundwatch.core.judging.closed_sets import member_of
from groundwatch.core.judging.dates import parse_gold_date
from groundwatch.core.judging.normalize import STOPWORDS, content_tokens, fold, normalize_cached
from groundwatch.core.judging.numbers import NumberMention, parse_gold_number, words_value
from groundwatch.core.judging.variants import stems
from groundwatch.core.model import AnswerType, ColumnDomain, Expected

#: A value that is nothing but a number (with separators, sign, percent, scale or unit) is typed
#: as a number; anything with more words stays text ("Building 7" is a name, not the number 7).
_NUMERIC_VALUE = re.compile(
    r"[$€£]?\s?[-+]?[\d.,\s\u00a0]*\d(?:\s?(?:%|percent|thousand|million|billion|k|m|bn|"
    r"kg|km|m|cm|mm|g|t|h|s|usd|eur|gbp|days?|hours?|weeks?))?"
)
_DATE_VALUE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}(?:[ t]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?z?)?")


@dataclass(frozen=True, slots=True)
class GoldPart:
    """One answer column of the gold answer."""

    raw: str
    norm: str
    type: AnswerType
    day: date | None
    number: NumberMention | None
    content: frozenset[str]
    typed: bool  # a parsed date or number, compared as such
    needle: str  # " norm ", for containment on word boundaries
    last_word: str  # cheap pre-check whether the query can contain the part at all
    stem_needle: str  # " stem stem ", for containment of a morphological variant
    stem_last: str  # its last stem ("" for none): the cheap pre-check at the stem level
    country: str | None  # ISO alpha-2 code when the value names a country (text values only)
    #: the value as a truth value when it can be one (1/0, yes/no, true/false): a flag column
    #: asked as a yes/no question is answered "Yes, it has been discontinued" for the gold 1
    boolean: bool | None = None
    #: (set, member) when the whole value is a member of a closed set (a month, a planet): any
    #: other member the answer names instead is another value (text values only)
    member: tuple[str, str] | None = None
    #: other ways of writing the same value, any of which is the gold ("UK" for United Kingdom)
    alts: tuple[GoldPart, ...] = ()
    #: each word of this spelling and of its alternatives with its stem: where every word of a
    #: response with one of these stems is that very word, the stems find nothing the words do not
    word_stems: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def norms(self) -> frozenset[str]:
        """The value's normalized spellings: its own and its alternatives'."""
        return frozenset((self.norm, *(a.norm for a in self.alts)))

    @property
    def countries(self) -> frozenset[str]:
        """Country codes the value or any alternative names."""
        return frozenset(c for c in (self.country, *(a.country for a in self.alts)) if c)

    @property
    def members(self) -> frozenset[str]:
        """Closed-set members the value or any alternative is, in the set of ``member``."""
        if self.member is None:
            return frozenset()
        name = self.member[0]
        return frozenset(
            p.member[1] for p in (self, *self.alts) if p.member is not None and p.member[0] == name
        )


@dataclass(frozen=True, slots=True)
class GoldOption:
    letter: str
    part: GoldPart


@dataclass(frozen=True, slots=True, eq=False)
class RivalLookup:
    """One part's rivals, indexed once per gold so a judgement does not walk every rival.

    Most rivals are named nowhere in a response: intersecting the response's token (stem) set
    with ``last_words`` (``stem_lasts``) rules them all out in one C-level set operation instead
    of two look-ups per rival (a value set has dozens). ``acronyms`` are the values (the part
    first, owner -1, then rival ``k``) whose initials could stand for them, and ``initials``
    their set: one intersection with the response's capitalised words rules them all out.
    """

    last_words: frozenset[str]
    stem_lasts: frozenset[str]
    acronyms: tuple[tuple[int, str, str], ...]  # (owner, raw, initials)
    initials: frozenset[str]  # every value's initials, to rule them all out in one operation
    rival_codes: dict[str, str]  # country code → the rival naming it (the last one wins)


@lru_cache(maxsize=65_536)
def acronym(norm: str) -> str:
    """Initials of a value's content words ("chief executive officer" → "ceo"), or "" for a value
    of fewer than two content words (an initial alone is no evidence)."""
    words = [w for w in norm.split() if w not in STOPWORDS]
    if len(words) < 2 or not all(w[0].isalpha() for w in words):
        return ""
    return "".join(w[0] for w in words)


def rival_lookup(part: GoldPart, rivals: tuple[GoldPart, ...]) -> RivalLookup:
    """The :class:`RivalLookup` of one part and its rivals."""
    acronyms = []
    for owner, value in [(-1, part), *enumerate(rivals)]:
        short = acronym(value.norm)
        if short:
            acronyms.append((owner, value.raw, short))
    return RivalLookup(
        last_words=frozenset(r.last_word for r in rivals),
        stem_lasts=frozenset(r.stem_last for r in rivals if r.stem_last),
        acronyms=tuple(acronyms),
        initials=frozenset(a[2] for a in acronyms),
        rival_codes={r.country: r.raw for r in rivals if r.country},
    )


@dataclass(frozen=True, slots=True)
class Gold:
    parts: tuple[GoldPart, ...]
    stale: tuple[tuple[GoldPart, ...], ...]
    options: tuple[GoldOption, ...]
    correct_option: int | None
    answerable: bool
    norm: str  # the whole answer normalized, for the exact tier
    content: frozenset[str]  # every content token of the answer, for token P/R/F1
    has_typed: bool  # some part is a parsed date or number
    #: per part: other values of its column (grounded candidates), never equal to a gold part
    rivals: tuple[tuple[GoldPart, ...], ...]
    #: per part: its rivals indexed (derived from ``parts`` and ``rivals``, so not compared)
    lookups: tuple[RivalLookup, ...] = field(default=(), compare=False)
    #: the parts' raw values as a correct verdict's reason names them ("'a', 'b'"), built once
    raws: str = field(default="", compare=False)
    #: per part: the matcher over its column's whole domain (shared by every group of the
    #: template), or None; where there is one it supersedes the part's candidates
    domains: tuple[DomainIndex | None, ...] = field(default=(), compare=False)
    #: the named row's text values in other columns (never equal to a gold spelling)
    attributes: tuple[GoldPart, ...] = ()
    #: the named row's numbers and dates in other columns (never equal to a gold value)
    typed_attributes: tuple[GoldPart, ...] = ()
    #: their values, days and the days' years: one set test rules them out of most answers
    attribute_numbers: frozenset[float] = frozenset()
    attribute_days: frozenset[date] = frozenset()
    attribute_years: frozenset[str] = frozenset()
    #: every normalized spelling of every part: what is never a rival
    gold_norms: frozenset[str] = frozenset()
    #: the attributes' last words: one set test rules them all out of most answers
    attribute_last_words: frozenset[str] = frozenset()
    #: per text attribute (aligned with ``attributes``): the table and column it came from
    attribute_sources: tuple[str, ...] = field(default=(), compare=False)
    #: the typed attributes' sources by their number or day (what a reason names)
    typed_sources: dict[float | date, str] = field(default_factory=dict, compare=False)
    #: per part with a domain: the last words and last stems whose every domain value is a gold
    #: spelling — an answer naming only those names no rival, and the walk over them is skipped
    domain_own: tuple[tuple[frozenset[str], frozenset[str]], ...] = field(default=(), compare=False)
    #: the matcher over the values the question names its entity by (shared per template), and
    #: their table and column: what tells an answer about another entity
    entity: DomainIndex | None = field(default=None, compare=False)
    entity_source: str = field(default="", compare=False)

    @property
    def has_rivals(self) -> bool:
        return any(self.rivals)


def infer_type(value: str) -> AnswerType:
    """The type a value parses as, for gold answers that come without one."""
    v = fold(value).strip()
    if _DATE_VALUE.fullmatch(v) and parse_gold_date(value) is not None:
        return AnswerType.DATE
    if _NUMERIC_VALUE.fullmatch(v) and parse_gold_number(value) is not None:
        return AnswerType.NUMBER
    if not any(ch.isdigit() for ch in v) and words_value(v) is not None:
        return AnswerType.NUMBER  # "twelve", "one thousand, nine hundred and fifty-one"
    return AnswerType.TEXT


@lru_cache(maxsize=65_536)
def gold_part(raw: str, declared: AnswerType | None) -> GoldPart:
    # A declared TEXT may still be an ISO date or a bare number (SQLite keeps dates as strings).
    typ = declared if declared in (AnswerType.DATE, AnswerType.NUMBER) else infer_type(raw)
    day = parse_gold_date(raw) if typ is AnswerType.DATE else None
    number = parse_gold_number(raw) if typ is AnswerType.NUMBER else None
    if (typ is AnswerType.DATE and day is None) or (typ is AnswerType.NUMBER and number is None):
        typ = AnswerType.TEXT  # declared typed but unreadable as such: compare as text
    norm = normalize_cached(raw)
    toks = norm.split()
    word_stems = stems(toks)
    stem_needle = f" {' '.join(word_stems)} "
    return GoldPart(
        raw=raw,
        norm=norm,
        type=typ,
        day=day,
        number=number,
        content=frozenset(content_tokens(raw)),
        typed=day is not None or number is not None,
        needle=f" {norm} ",
        last_word=norm.rsplit(" ", 1)[-1],
        word_stems=tuple(zip(toks, word_stems, strict=True)),
        stem_needle=stem_needle,
        stem_last=stem_needle.rsplit(" ", 2)[-2] if stem_needle.strip() else "",
        country=country_of(raw) if typ is AnswerType.TEXT else None,
        # a count's 1 is no "yes": the question decides (tiers._truth_value), not the type, so
        # a 0/1 flag declared a number and asked "Is … ?" still reads as a yes or a no
        boolean=_BOOLEANS.get(norm),
        member=member_of(raw) if typ is AnswerType.TEXT else None,
    )


#: Values that can be a truth value, normalized.
_BOOLEANS = {"1": True, "0": False, "yes": True, "no": False, "true": True, "false": False}


def _columns(values: tuple[str, ...]) -> list[int]:
    """Indexes of the non-empty values: the answer columns that become parts."""
    return [i for i, v in enumerate(values) if v is not None and str(v).strip()]


def _parts(values: tuple[str, ...], types: tuple[AnswerType, ...]) -> tuple[GoldPart, ...]:
    return tuple(
        gold_part(values[i], types[i] if i < len(types) else None) for i in _columns(values)
    )


def _rivals(
    values: tuple[str, ...], parts: tuple[GoldPart, ...], candidates: tuple[tuple[str, ...], ...]
) -> tuple[tuple[GoldPart, ...], ...]:
    """Each part's candidates, prepared; any equal to some gold part (normalized, or one of its
    alternatives) left out, so a list answer never counts one of its own items as a rival of
    another."""
    gold_norms = {n for p in parts for n in p.norms}
    out: list[tuple[GoldPart, ...]] = []
    for col in _columns(values):
        cands = candidates[col] if col < len(candidates) else ()
        prepared = (gold_part(c, AnswerType.TEXT) for c in dict.fromkeys(cands))
        out.append(tuple(c for c in prepared if c.norm and c.norm not in gold_norms))
    return tuple(out)


_LETTERS = string.ascii_lowercase


@lru_cache(maxsize=32_768)
def _prepare(
    values: tuple[str, ...],
    types: tuple[AnswerType, ...],
    stale: tuple[tuple[str, ...], ...],
    options: tuple[str, ...] | None,
    answerable: bool,
    candidates: tuple[tuple[str, ...], ...] = (),
    attributes: tuple[str, ...] = (),
    alternatives: tuple[tuple[str, ...], ...] = (),
    domain_ids: tuple[str | None, ...] = (),
    attribute_types: tuple[AnswerType, ...] = (),
    attribute_sources: tuple[str, ...] = (),
    entity_id: str | None = None,  # in the key only: the entity matcher is added by the caller
) -> Gold:
    parts = _parts(values, types)
    if alternatives:
        parts = _with_alternatives(values, parts, alternatives)
    opts: tuple[GoldOption, ...] = ()
    correct: int | None = None
    if options:
        opts = tuple(
            GoldOption(_LETTERS[i], gold_part(o, AnswerType.TEXT))
            for i, o in enumerate(options[: len(_LETTERS)])
        )
        correct = _resolve_option(parts, opts)
    content: frozenset[str] = (
        frozenset().union(*(p.content for p in parts)) if parts else frozenset()
    )
    rivals = _rivals(values, parts, candidates)
    gold_norms = frozenset(n for p in parts for n in p.norms)
    attrs, typed_attrs, text_src, typed_src = _attributes(
        parts, gold_norms, attributes, attribute_types, attribute_sources
    )
    return Gold(
        parts=parts,
        stale=tuple(p for p in (_parts(s, types) for s in stale) if p),
        options=opts,
        correct_option=correct,
        answerable=answerable,
        norm=" ".join(p.norm for p in parts),
        content=content,
        has_typed=any(p.typed for p in parts),
        rivals=rivals,
        lookups=tuple(
            rival_lookup(p, rivals[i] if i < len(rivals) else ()) for i, p in enumerate(parts)
        ),
        raws=", ".join(repr(p.raw) for p in parts),
        attributes=attrs,
        typed_attributes=typed_attrs,
        attribute_numbers=frozenset(a.number.value for a in typed_attrs if a.number is not None),
        attribute_days=frozenset(a.day for a in typed_attrs if a.day is not None),
        attribute_years=frozenset(str(a.day.year) for a in typed_attrs if a.day is not None),
        gold_norms=gold_norms,
        attribute_last_words=frozenset(a.last_word for a in attrs),
        attribute_sources=text_src if any(text_src) else (),
        typed_sources={
            k: src
            for a, src in zip(typed_attrs, typed_src, strict=True)
            if src and (k := a.day if a.day is not None else _number_of(a)) is not None
        },
    )


def _number_of(a: GoldPart) -> float | None:
    return a.number.value if a.number is not None else None


def _attributes(
    parts: tuple[GoldPart, ...],
    gold_norms: frozenset[str],
    values: tuple[str, ...],
    types: tuple[AnswerType, ...],
    sources: tuple[str, ...] = (),
) -> tuple[tuple[GoldPart, ...], tuple[GoldPart, ...], tuple[str, ...], tuple[str, ...]]:
    """The named row's other values, prepared as parts of their declared type (typed by what
    they parse as where no type is given): its text values and its numbers and dates apart,
    each with the sources of those values (aligned; "" where unknown). A value the gold holds —
    its spelling, or the same number or day — is never one of them."""
    text: list[GoldPart] = []
    typed: list[GoldPart] = []
    text_src: list[str] = []
    typed_src: list[str] = []
    seen: set[str] = set()
    for i, raw in enumerate(values):
        if raw in seen:
            continue
        seen.add(raw)
        a = gold_part(raw, types[i] if i < len(types) else None)
        if not a.norm or a.norm in gold_norms:
            continue
        src = sources[i] if i < len(sources) else ""
        if not a.typed:
            text.append(a)
            text_src.append(src)
        elif not any(_same_typed(a, p) for gp in parts for p in (gp, *gp.alts)):
            typed.append(a)
            typed_src.append(src)
    return tuple(text), tuple(typed), tuple(text_src), tuple(typed_src)


def _same_typed(a: GoldPart, p: GoldPart) -> bool:
    """Whether typed value ``a`` is the same day or number as part ``p``."""
    if a.day is not None:
        return a.day == p.day
    return a.number is not None and p.number is not None and a.number.value == p.number.value


def _with_alternatives(
    values: tuple[str, ...], parts: tuple[GoldPart, ...], alternatives: tuple[tuple[str, ...], ...]
) -> tuple[GoldPart, ...]:
    """Each part with its alternatives ("any of these") prepared as parts of their own."""
    out = []
    for part, col in zip(parts, _columns(values), strict=True):
        alts = alternatives[col] if col < len(alternatives) else ()
        prepared = tuple(
            a
            for a in (gold_part(v, None) for v in dict.fromkeys(alts))
            if a.norm and a.norm != part.norm
        )
        country = part.country or next((a.country for a in prepared if a.country), None)
        member = part.member or next((a.member for a in prepared if a.member), None)
        out.append(
            replace(
                part,
                alts=prepared,
                country=country,
                member=member,
                word_stems=part.word_stems + tuple(ws for a in prepared for ws in a.word_stems),
            )
            if prepared
            else part
        )
    return tuple(out)


@dataclass(frozen=True, slots=True, eq=False)
class DomainIndex:
    """A matcher over every DISTINCT value of one answer column, built once per domain and shared
    by every probe of the template: for each value its normalized words and stems, indexed by
    last word and last stem, so a response is checked against thousands of values with one set
    intersection and a look-up per hit instead of a walk over the values."""

    id: str
    raws: tuple[str, ...]
    needles: tuple[str, ...]  # " norm ", per value
    stem_needles: tuple[str, ...]
    by_last: dict[str, tuple[int, ...]]
    by_stem_last: dict[str, tuple[int, ...]]
    last_words: frozenset[str]
    stem_lasts: frozenset[str]
    complete: bool
    #: per value: where the database holds it when that is another column ("customer.city" for
    #: a kin value of an employee's city), "" for the column's own values
    sources: tuple[str, ...] = ()
    #: the values made of function words only (a pet named "Is", a title "The Who"): named only
    #: as written, capitalised inside a sentence or quoted — as the lowercase word they are the
    #: sentence's grammar ("The breed of Balder is …"), not the value
    cased: frozenset[int] = frozenset()


def build_domain_index(domain: ColumnDomain) -> DomainIndex:
    """The :class:`DomainIndex` of a domain (see :func:`domain_index` for the shared one)."""
    raws: list[str] = []
    needles: list[str] = []
    stem_needles: list[str] = []
    by_last: dict[str, list[int]] = {}
    by_stem_last: dict[str, list[int]] = {}
    sources: list[str] = []
    seen: set[str] = set()
    cased: list[int] = []
    kin = zip(domain.kin, domain.kin_sources, strict=False)
    for raw, source in [*((v, "") for v in dict.fromkeys(domain.values)), *kin]:
        norm = normalize_cached(raw)
        if not norm or norm in seen:
            continue
        seen.add(norm)
        sources.append(source)
        k = len(raws)
        toks = norm.split()
        if STOPWORDS.issuperset(toks):
            cased.append(k)
        st = stems(toks)
        raws.append(raw)
        needles.append(f" {norm} ")
        stem_needles.append(f" {' '.join(st)} ")
        by_last.setdefault(toks[-1], []).append(k)
        if st[-1]:
            by_stem_last.setdefault(st[-1], []).append(k)
    return DomainIndex(
        id=domain.id,
        raws=tuple(raws),
        needles=tuple(needles),
        stem_needles=tuple(stem_needles),
        by_last={w: tuple(ix) for w, ix in by_last.items()},
        by_stem_last={w: tuple(ix) for w, ix in by_stem_last.items()},
        last_words=frozenset(by_last),
        stem_lasts=frozenset(by_stem_last),
        complete=domain.complete,
        sources=tuple(sources) if any(sources) else (),
        cased=frozenset(cased),
    )


#: Domain matchers by domain id, least recently used dropped first: one per template in use.
_DOMAINS: OrderedDict[str, DomainIndex] = OrderedDict()
DOMAINS_MAX = 256


def domain_index(domain: ColumnDomain) -> DomainIndex:
    """The shared matcher of a domain, built on its first use (keyed by the domain's id)."""
    hit = _DOMAINS.get(domain.id)
    if hit is not None:
        _DOMAINS.move_to_end(domain.id)
        return hit
    built = build_domain_index(domain)
    _DOMAINS[domain.id] = built
    if len(_DOMAINS) > DOMAINS_MAX:
        _DOMAINS.popitem(last=False)
    return built


def _with_domains(gold: Gold, values: tuple[str, ...], domains: list[ColumnDomain | None]) -> Gold:
    """``gold`` with each part's domain matcher; a part with a domain has no candidates."""
    cols = _columns(values)
    per_part = tuple(
        domain_index(d) if (d := domains[c] if c < len(domains) else None) is not None else None
        for c in cols
    )
    if not any(per_part):
        return gold
    rivals = tuple(
        () if per_part[i] is not None else (gold.rivals[i] if i < len(gold.rivals) else ())
        for i in range(len(gold.parts))
    )
    return replace(
        gold,
        domains=per_part,
        rivals=rivals,
        lookups=tuple(rival_lookup(p, rivals[i]) for i, p in enumerate(gold.parts)),
        domain_own=tuple(_own_words(d, gold.gold_norms) for d in per_part),
    )


_NO_WORDS: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def _own_words(
    dom: DomainIndex | None, gold_norms: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]]:
    """The domain's last words and last stems that end gold spellings only (see
    :attr:`Gold.domain_own`)."""
    if dom is None:
        return _NO_WORDS
    lasts = {n.rsplit(" ", 1)[-1] for n in gold_norms if n}
    stem_lasts = {st[-1] for n in gold_norms if n and (st := stems(n.split()))[-1]}

    def only_gold(ix: tuple[int, ...]) -> bool:
        return all(dom.needles[k][1:-1] in gold_norms for k in ix)

    return (
        frozenset(w for w in lasts if w in dom.by_last and only_gold(dom.by_last[w])),
        frozenset(
            w for w in stem_lasts if w in dom.by_stem_last and only_gold(dom.by_stem_last[w])
        ),
    )


def _resolve_option(parts: tuple[GoldPart, ...], opts: tuple[GoldOption, ...]) -> int | None:
    """The gold option index: the gold value is either the option's letter or its text."""
    if len(parts) != 1:
        return None
    g = parts[0].norm
    for i, o in enumerate(opts):
        if g == o.letter or g == o.part.norm:
            return i
    # "C) Russia" or "C: Russia" as the gold value
    for i, o in enumerate(opts):
        if g.startswith(o.letter + " ") and g[2:] == o.part.norm:
            return i
    return None


GoldKey = tuple[Any, ...]

#: Gold keys and golds of recently judged ``Expected`` objects, by identity. A probe's expected
#: answer is one object however many times it is judged (every tier, the stage's memo, the
#: metrics), and hashing its content — dozens of candidates — costs more than the judging's
#: cheap tiers. ``Expected`` is a frozen model, so an object's content cannot change under its
#: id; the entry keeps the object alive, so the id cannot be reused while it is cached. Bounded:
#: cleared when full (a long-running judge refills it with the groups it is judging).
_BY_IDENTITY: dict[int, tuple[Expected, GoldKey, Gold]] = {}
_BY_IDENTITY_MAX = 1024


def _key(expected: Expected) -> GoldKey:
    # map(tuple, …), not a generator: the key is built for every message the judge parses
    e = expected
    return (
        tuple(e.values),
        tuple(e.types),
        tuple(map(tuple, e.stale_values)) if e.stale_values else (),
        tuple(e.options) if e.options else None,
        e.answerable,
        tuple(map(tuple, e.candidates)) if e.candidates else (),
        tuple(e.attributes),
        tuple(map(tuple, e.alternatives)) if e.alternatives else (),
        # a domain by its id: hashing thousands of values per message would cost more than the
        # judging (the id is a hash of them)
        tuple([d.id if d is not None else None for d in e.domain]) if e.domain else (),
        tuple(e.attribute_types),
        tuple(e.attribute_sources),
        e.entity_domain.id if e.entity_domain is not None else None,
    )


#: Golds, with their domain matchers, by content key (bounded, cleared when full): one lookup
#: per message, so the key — a tuple of tuples, whose hash Python does not keep — is hashed once.
_GOLDS: dict[GoldKey, Gold] = {}


def _entry(expected: Expected) -> tuple[Expected, GoldKey, Gold]:
    hit = _BY_IDENTITY.get(id(expected))
    if hit is not None and hit[0] is expected:
        return hit
    key = _key(expected)
    gold = _GOLDS.get(key)
    if gold is None:
        gold = _prepare(*key)
        if expected.domain:
            gold = _with_domains(gold, key[0], expected.domain)
        if expected.entity_domain is not None:
            gold = replace(
                gold,
                entity=domain_index(expected.entity_domain),
                entity_source=expected.entity_source,
            )
        if len(_GOLDS) >= _BY_IDENTITY_MAX * 32:
            _GOLDS.clear()
        _GOLDS[key] = gold
    entry = (expected, key, gold)
    if len(_BY_IDENTITY) >= _BY_IDENTITY_MAX:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(expected)] = entry
    return entry


def gold_key(expected: Expected) -> GoldKey:
    """The content of a gold answer as a hashable key (what the judge's caches are keyed on)."""
    return _entry(expected)[1]


def prepare_gold(expected: Expected) -> Gold:
    """The parsed gold answer, cached on the answer's content (and on the object's identity)."""
    return _entry(expected)[2]
