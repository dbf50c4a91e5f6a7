"""Grounding: which semantic group of a dataset a user's question asks, or an abstention.

A question is matched in two steps, each from what the dataset already holds:

1. **Entities.** The values bound into the groups' SQL (``SemanticGroup.params``) are indexed by
   their normalized text. A question's word n-grams are looked up in that dict (exact names), a
   word at one edit from a known word is read as that word (typos), and a word that belongs to
   exactly one multi-word value names that value (partial names: "Alegre" for "Porto Alegre").
2. **Attribute.** Each SQL template has a vocabulary: the stems of its forms' words (the group's
   own values taken out) and of the columns its SELECT reads, each weighted by how few templates
   share it. A candidate group — a template whose every parameter is filled by a mention, with
   a group for those values — scores its mentions' weight times its template's words found in
   the rest of the question.

The best candidate is the match when it is clearly ahead: confidence is the weakest mention's
certainty times the winner's lead over the runner-up (0 on a tie). Below the threshold, and
whenever there is no entity or no attribute word at all, the matcher abstains: a wrong match
is a wrong gold, so it prefers to say nothing. A template without parameters is never matched
(nothing in a question ties it to one fill).

Everything is built once per dataset into dicts; matching a question costs a few dozen dict
lookups, whatever the dataset's size.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise, product
from typing import Any

from rapidfuzz.distance import OSA

from groundwatch.core.model import SemanticGroup
from groundwatch.core.traffic.normalize import STOPWORDS, stem, tokens, value_key

#: Certainty of a mention by how it was found.
EXACT = 1.0
TYPO = 0.9
PARTIAL = 0.75
#: Default confidence below which the matcher abstains.
MIN_CONFIDENCE = 0.5
#: Words of a value a mention may span; longer values are indexed by their first words only.
MAX_NGRAM = 8
#: Shortest word corrected for a typo: a one-letter change in a short word is another word.
MIN_TYPO_LEN = 5
#: Forms read per template for its vocabulary (text templates repeat across fills).
FORMS_PER_TEMPLATE = 24
#: The columns a template's SELECT reads count as words of more than every one of its forms:
#: they are the attribute asked, whatever the forms' wording.
SELECT_SHARE = 1.5
#: Candidate fills tried per template and question (mentions of several values per parameter).
MAX_FILLS = 64

_SELECT = re.compile(r"\bselect\b(.*?)\bfrom\b", re.IGNORECASE | re.DOTALL)
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SQL_TEXT = (
    "select distinct as count sum avg min max from where and or not null is in like case when"
    " then else end cast over by group order limit asc desc round coalesce lower upper"
)
_SQL_WORDS = frozenset(_SQL_TEXT.split())


@dataclass(frozen=True, slots=True)
class Mention:
    """A value of the index found in a question: which value, where, how sure."""

    value: int
    start: int
    end: int
    certainty: float


@dataclass(frozen=True, slots=True)
class Grounding:
    """The matcher's answer for one question: a group with its confidence, or why not.

    ``reason`` is ``matched``, ``no_entity``, ``no_attribute``, ``ambiguous`` or
    ``low_confidence``; ``shape``, of an unmatched question only, is the question with its
    names as ``{}`` and numbers as ``#``: what unmatched traffic is counted by."""

    group_id: str | None
    confidence: float
    reason: str
    shape: str
    values: tuple[str, ...] = ()

    @property
    def matched(self) -> bool:
        return self.group_id is not None


@dataclass(slots=True)
class _Template:
    params: tuple[str, ...]
    weights: dict[str, float] = field(default_factory=dict)


def _select_words(sql: str) -> set[str]:
    found = _SELECT.search(sql)
    if found is None:
        return set()
    out: set[str] = set()
    for ident in _IDENT.findall(found.group(1)):
        if ident.lower() in _SQL_WORDS:
            continue
        for part in _CAMEL.sub(" ", ident).split():
            out.update(stem(t) for t in tokens(part) if t not in STOPWORDS)
    return out


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class GroundingIndex:
    """The values, templates and groups of one dataset, indexed for :meth:`match`."""

    def __init__(self, groups: Iterable[SemanticGroup], *, min_confidence: float = MIN_CONFIDENCE):
        self.min_confidence = min_confidence
        self._value_id: dict[str, int] = {}
        self._value_keys: list[str] = []
        self._value_tokens: list[frozenset[str]] = []
        #: value → (template, parameter position) pairs it fills
        self._fills: list[set[tuple[int, int]]] = []
        self._templates: list[_Template] = []
        self._groups: dict[tuple[int, tuple[int, ...]], str] = {}
        #: a word of a multi-word value → that value, or -1 when several values share it
        self._part_of: dict[str, int] = {}
        self._known: set[str] = set(STOPWORDS)
        self._typo: dict[str, str | None] = {}
        #: a word's stem → the templates whose vocabulary has it, with its weight in each
        self._postings: dict[str, dict[int, float]] = {}
        self._max_ngram = 1
        self.groups = 0
        self._build(groups)

    # ----------------------------------------------------------------------------- build
    def _value(self, raw: Any) -> int | None:
        key = value_key(raw)
        if not key or key in STOPWORDS:
            return None
        vid = self._value_id.get(key)
        if vid is None:
            vid = len(self._value_keys)
            self._value_id[key] = vid
            self._value_keys.append(key)
            words = key.split()
            self._value_tokens.append(frozenset(words))
            self._fills.append(set())
            self._max_ngram = max(self._max_ngram, min(len(words), MAX_NGRAM))
            self._known.update(words)
            if len(words) > 1:
                for w in set(words):
                    if w not in STOPWORDS and not w.isdigit():
                        self._part_of[w] = vid if self._part_of.get(w, vid) == vid else -1
        return vid

    def _build(self, groups: Iterable[SemanticGroup]) -> None:
        template_of: dict[str, int] = {}
        words_of: list[dict[str, int]] = []
        select_of: list[set[str]] = []
        forms_read: list[int] = []
        for g in groups:
            params = tuple(sorted(g.params))
            if not params:
                continue
            tkey = g.template_id or " ".join(g.sql.split())
            t = template_of.get(tkey)
            if t is None:
                t = len(self._templates)
                template_of[tkey] = t
                self._templates.append(_Template(params))
                select_of.append(_select_words(g.sql))
                words_of.append({})
                forms_read.append(0)
            template = self._templates[t]
            if template.params != params:  # same template id, other parameters: not one shape
                continue
            vids = [self._value(g.params[p]) for p in params]
            if any(v is None for v in vids):
                continue
            fill = tuple(v for v in vids if v is not None)
            for pos, vid in enumerate(fill):
                self._fills[vid].add((t, pos))
            self._groups.setdefault((t, fill), g.group_id)
            self.groups += 1
            if forms_read[t] < FORMS_PER_TEMPLATE:
                own = set().union(*(self._value_tokens[v] for v in fill))
                for form in g.forms[: FORMS_PER_TEMPLATE - forms_read[t]]:
                    forms_read[t] += 1
                    seen: set[str] = set()
                    for w in tokens(form.text):
                        if w not in own and w not in STOPWORDS and not w.isdigit():
                            seen.add(stem(w))
                            self._known.add(w)
                    for s in seen:
                        words_of[t][s] = words_of[t].get(s, 0) + 1
        shares = [
            {w: c / max(1, read) for w, c in words.items()}
            for words, read in zip(words_of, forms_read, strict=True)
        ]
        for share, select in zip(shares, select_of, strict=True):
            for w in select:
                share[w] = SELECT_SHARE
        self._weigh(shares)
        self._index_typos()

    def _weigh(self, shares: list[dict[str, float]]) -> None:
        """A template's word weighs log(1 + templates / templates having it) — a word every
        template has says little about which one is asked — times how many of its forms say
        it: the attribute is in nearly all of them, a long form's filler in one."""
        df: dict[str, int] = {}
        for words in shares:
            for w in words:
                df[w] = df.get(w, 0) + 1
        n = len(shares)
        for template, words in zip(self._templates, shares, strict=True):
            template.weights = {
                w: math.log(1 + n / df[w]) * (0.2 + 0.8 * share) for w, share in words.items()
            }
        for t, template in enumerate(self._templates):
            for w, weight in template.weights.items():
                self._postings.setdefault(w, {})[t] = weight

    def _index_typos(self) -> None:
        """Single deletions of every known word of :data:`MIN_TYPO_LEN` letters or more: two
        words at one edit (substitution, insertion, deletion, transposition) share one."""
        typo: dict[str, str | None] = {}
        for word in self._known:
            if len(word) < MIN_TYPO_LEN or word.isdigit():
                continue
            for d in _deletes(word) | {word}:
                seen = typo.get(d, word)
                typo[d] = word if seen == word else None  # None: several words, no guess
        self._typo = typo

    # ----------------------------------------------------------------------------- match
    def _corrected(self, words: list[str]) -> tuple[list[str], list[bool]]:
        fixed = list(words)
        flags = [False] * len(words)
        for i, w in enumerate(words):
            if w in self._known or len(w) < MIN_TYPO_LEN or w.isdigit():
                continue
            found: set[str] = set()
            for d in _deletes(w) | {w}:
                hit = self._typo.get(d, "")
                if hit is None:
                    found.add("")  # ambiguous key: refuse to guess
                elif hit and OSA.distance(w, hit, score_cutoff=1) <= 1:
                    found.add(hit)
            if len(found) == 1 and "" not in found:
                fixed[i] = found.pop()
                flags[i] = True
        return fixed, flags

    def _mentions(self, words: list[str], typo: list[bool]) -> list[Mention]:
        found: list[Mention] = []
        covered = [False] * len(words)
        n = len(words)
        for size in range(min(self._max_ngram, n), 0, -1):
            for start in range(n - size + 1):
                vid = self._value_id.get(" ".join(words[start : start + size]))
                if vid is None:
                    continue
                certainty = TYPO if any(typo[start : start + size]) else EXACT
                found.append(Mention(vid, start, start + size, certainty))
                for i in range(start, start + size):
                    covered[i] = True
        i = 0
        while i < n:
            vid = -1 if covered[i] else self._part_of.get(words[i], -1)
            if vid < 0:
                i += 1
                continue
            parts = self._value_tokens[vid]
            end = i
            while end < n and words[end] in parts and not covered[end]:
                end += 1
            found.append(Mention(vid, i, end, PARTIAL))
            i = end
        return found

    def match(self, question: str) -> Grounding:
        """The group ``question`` asks, with a confidence, or an abstention with its reason."""
        words, typo = self._corrected(tokens(question))
        mentions = self._mentions(words, typo)
        if not mentions:
            return Grounding(None, 0.0, "no_entity", self._shape(words, mentions))
        by_slot: dict[tuple[int, int], list[Mention]] = {}
        for m in mentions:
            for slot in self._fills[m.value]:
                by_slot.setdefault(slot, []).append(m)
        # The attribute of every template some word of the question speaks of, from the words
        # outside every name; a fill adds back the words inside names it does not use (rare).
        covered = {i for m in mentions for i in range(m.start, m.end)}
        attribute: dict[int, float] = {}
        inside: list[tuple[int, str, dict[int, float]]] = []
        seen: set[str] = set()
        for i, w in enumerate(words):
            if w in STOPWORDS:
                continue
            s = stem(w)
            p = self._postings.get(s)
            if p is None:
                continue
            if i in covered:
                inside.append((i, s, p))
            elif s not in seen:
                seen.add(s)
                for t, weight in p.items():
                    attribute[t] = attribute.get(t, 0.0) + weight
        # Branch and bound: templates by their attribute, best first; a template whose attribute
        # times the most the names can weigh is not above the runner-up cannot change the top two.
        most = sum(m.certainty * (m.end - m.start) for m in mentions)
        slots = {t for t, _ in by_slot}
        if inside:
            order = sorted(slots, key=lambda t: -attribute.get(t, 0.0))
        else:
            order = sorted((t for t in slots if t in attribute), key=lambda t: -attribute[t])
        scored: list[tuple[float, float, str, tuple[Mention, ...]]] = []
        top: list[float] = [0.0, 0.0]
        for t in order:
            if not inside and attribute[t] * most <= top[1] and len(scored) >= 2:
                break
            for c in self._candidates(t, attribute.get(t, 0.0), seen, inside, by_slot):
                scored.append(c)
                if c[0] > top[0]:
                    top = [c[0], top[0]]
                elif c[0] > top[1]:
                    top[1] = c[0]
        if not scored:  # a name of no template's, or no word of any of its templates
            reason = "no_attribute" if slots else "no_entity"
            return Grounding(None, 0.0, reason, self._shape(words, mentions))
        scored.sort(key=lambda c: -c[0])
        best, certainty, group_id, used = scored[0]
        if best <= 0.0:
            return Grounding(None, 0.0, "no_attribute", self._shape(words, mentions))
        runner = next((s for s in scored[1:] if s[2] != group_id), None)
        lead = 1.0 - (runner[0] / best if runner is not None else 0.0)
        confidence = certainty * lead
        values = tuple(self._value_keys[m.value] for m in used)
        if confidence < self.min_confidence:
            reason = "ambiguous" if lead < 0.5 else "low_confidence"
            return Grounding(None, confidence, reason, self._shape(words, mentions), values)
        return Grounding(group_id, confidence, "matched", "", values)

    def _candidates(
        self,
        t: int,
        outside: float,
        seen: set[str],
        inside: list[tuple[int, str, dict[int, float]]],
        by_slot: dict[tuple[int, int], list[Mention]],
    ) -> list[tuple[float, float, str, tuple[Mention, ...]]]:
        template = self._templates[t]
        options = [by_slot.get((t, pos), []) for pos in range(len(template.params))]
        if not all(options):
            return []
        out: list[tuple[float, float, str, tuple[Mention, ...]]] = []
        for n, fill in enumerate(product(*options)):
            if n >= MAX_FILLS:
                break
            if len(fill) > 1:
                spans = sorted((m.start, m.end) for m in fill)
                if any(a[1] > b[0] for a, b in pairwise(spans)):
                    continue  # one word cannot name two values
            group_id = self._groups.get((t, tuple(m.value for m in fill)))
            if group_id is None:
                continue
            attribute = outside
            if inside:
                extra: set[str] = set()
                for i, s, p in inside:
                    if s in seen or s in extra or any(m.start <= i < m.end for m in fill):
                        continue  # a word of a used name is not the attribute; once each
                    extra.add(s)
                    attribute += p.get(t, 0.0)
            named = sum(m.certainty * (m.end - m.start) for m in fill)
            certainty = min(m.certainty for m in fill)
            out.append((named * attribute, certainty, group_id, fill))
        return out

    def _shape(self, words: list[str], mentions: list[Mention]) -> str:
        """The question with its names as ``{}`` and its numbers as ``#``, at most 16 words."""
        starts = {m.start: m.end for m in mentions}
        out: list[str] = []
        i = 0
        while i < len(words) and len(out) < 16:
            end = starts.get(i)
            if end is not None and end > i:
                out.append("{}")
                i = end
                continue
            out.append("#" if words[i][:1].isdigit() else words[i])
            i += 1
        return " ".join(out)
