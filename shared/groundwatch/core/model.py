"""The words of the papers as types: semantic group, text form, cohort, expected answer, verdict."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

#: What a reader or an LLM-only target answers when it does not know: an explicit refusal, which
#: the judge scores as one (never as a wrong value).
DONT_KNOW = "I don't know."

#: Identifiers (ids, tiers, names that become columns, metric labels and URL path segments) are
#: short and plain: nothing to escape and nothing to guess (the wire contracts' rule).
ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._:@+=-]*$"


class AnswerType(StrEnum):
    """An SQL answer's type, kept so the judge compares dates as dates and numbers as numbers."""

    TEXT = "text"
    NUMBER = "number"
    DATE = "date"


class Verdict(StrEnum):
    """A judgement's outcome. ``error`` = the target failed to answer; it never counts as wrong."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    UNDECIDED = "undecided"
    ERROR = "error"


#: Bounds of :attr:`Expected.candidates`: a probe message stays small whatever the column's domain.
MAX_CANDIDATES = 200
MAX_CANDIDATE_CHARS = 256

Candidate = Annotated[str, StringConstraints(max_length=MAX_CANDIDATE_CHARS)]
#: Bounds of :attr:`Expected.domain`: every DISTINCT value of an answer column up to this many
#: (a bottom-k hash sample beyond), so a message and a dataset line stay bounded whatever the
#: column: every probe and every group line carries its template's domain, so a column of many
#: values (which also makes many groups) would otherwise grow the dataset with its square.
MAX_DOMAIN = 2000
#: Bound of :attr:`Expected.attributes` (the asked row's other values).
MAX_ATTRIBUTES = 32
#: Bound of :attr:`Expected.alternatives` per answer column.
MAX_ALTERNATIVES = 256


class ColumnDomain(BaseModel):
    """Every DISTINCT value of one answer column (the gold among them), the same for every
    semantic group of a template: what lets the judge call "Winnipeg" wrong for *Calgary* when
    the column holds Winnipeg. ``id`` names the value list (a hash of it), so the judge builds
    its matcher once per domain and shares it across probes; ``complete`` is False when the
    column had more than :data:`MAX_DOMAIN` values and ``values`` is a sample of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    values: list[Candidate] = Field(default_factory=list, max_length=MAX_DOMAIN)
    complete: bool = True
    kin: list[Candidate] = Field(
        default_factory=list,
        max_length=MAX_DOMAIN,
        description=(
            "Values of the same kind in other columns of the database (a customer's city for an "
            "employee's city: columns named by the same word, of the same type), never one of "
            "``values``: an answer naming one gave another entity's value of the asked kind."
        ),
    )
    kin_sources: list[Annotated[str, Field(max_length=128)]] = Field(
        default_factory=list,
        max_length=MAX_DOMAIN,
        description="Per kin value (aligned with kin): the table and column it was read from.",
    )

    @classmethod
    def of(
        cls,
        values: list[str],
        *,
        complete: bool = True,
        kin: list[str] | None = None,
        kin_sources: list[str] | None = None,
    ) -> ColumnDomain:
        """A domain over ``values`` (and its kin), its id their hash (order-independent)."""
        digest = hashlib.blake2b(digest_size=12)
        for v in sorted(values):
            digest.update(v.encode("utf-8", "surrogatepass") + b"\x1f")
        kin = kin or []
        kin_sources = kin_sources or []
        if kin:
            digest.update(b"\x1e")
            for pair in sorted(zip(kin, kin_sources, strict=True)):
                digest.update("\x1d".join(pair).encode("utf-8", "surrogatepass") + b"\x1f")
        return cls(
            id=digest.hexdigest(),
            values=values,
            complete=complete,
            kin=kin,
            kin_sources=kin_sources,
        )


class Expected(BaseModel):
    """Ground truth for one probe.

    ``values`` holds one entry per answer column: a multi-column answer is a tuple and every part is
    required. ``answerable=False`` marks a question the corpus cannot answer (RAGProbe S6), where
    only an explicit refusal is right. ``stale_values`` are earlier answer versions of the group, so
    a response matching an outdated fact is told apart from a gap. ``candidates[i]`` are other
    values the database holds in answer column ``i``: what turns "the gold's words are absent" into
    positive evidence of another answer (the judge needs it to say ``incorrect`` about free text).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: list[str] = Field(default_factory=list)
    types: list[AnswerType] = Field(default_factory=list)
    answerable: bool = True
    version: int = 1
    stale_values: list[list[str]] = Field(default_factory=list)
    options: list[str] | None = Field(None, description="Multiple-choice options (RAGProbe S3).")
    candidates: list[Annotated[list[Candidate], Field(max_length=MAX_CANDIDATES)]] = Field(
        default_factory=list,
        max_length=64,
        description=(
            "Per answer column (aligned with values): other DISTINCT values of that column, never "
            "the gold, a bounded sample for large domains. A response naming one of them and not "
            "the gold is conclusively wrong; empty when unknown."
        ),
    )
    domain: list[ColumnDomain | None] = Field(
        default_factory=list,
        max_length=64,
        description=(
            "Per answer column (aligned with values): every DISTINCT value of the column, the gold "
            "among them, shared by every group of the template (schema version 3); None or absent "
            "when unknown. Supersedes candidates."
        ),
    )
    attributes: list[Candidate] = Field(
        default_factory=list,
        max_length=MAX_ATTRIBUTES,
        description=(
            "The values of the row the question names (its slots' row: the asked row, or the "
            "joined-from row of a join or an aggregate) in its other columns, of every type "
            "(schema version 3): an answer that gives these and not the gold answered about the "
            "right entity with the wrong attribute."
        ),
    )
    attribute_types: list[AnswerType] = Field(
        default_factory=list,
        max_length=MAX_ATTRIBUTES,
        description=(
            "Per attribute (aligned with attributes): its column's type, so a number or a date "
            "of the row is compared as one (schema version 3); absent entries are typed by what "
            "the value parses as."
        ),
    )
    attribute_sources: list[Annotated[str, Field(max_length=128)]] = Field(
        default_factory=list,
        max_length=MAX_ATTRIBUTES,
        description=(
            "Per attribute (aligned with attributes): the table and column it was read from "
            "('artist.name'): the named row's own columns, or a row one or two foreign keys away "
            "from it, so a wrong verdict says where the answer's value came from."
        ),
    )
    entity_domain: ColumnDomain | None = Field(
        None,
        description=(
            "Every DISTINCT value of the column the question names its entity by (the slot's "
            "column: course titles for 'the instructor of the course Optics'), shared by every "
            "group of the template: an answer about another of them, and not the asked one, "
            "answered another entity's question."
        ),
    )
    entity_source: Annotated[str, Field(max_length=128)] = Field(
        "", description="The table and column of entity_domain ('course.title')."
    )
    alternatives: list[Annotated[list[str], Field(max_length=MAX_ALTERNATIVES)]] = Field(
        default_factory=list,
        max_length=64,
        description=(
            "Per answer column (aligned with values): other ways of writing the same value, any of "
            'which is the gold ("United Kingdom" / "UK" / "Great Britain"; schema version 3).'
        ),
    )

    @property
    def text(self) -> str:
        """The answer as the GRAMMAR tool prints it: a single value, or a tuple string."""
        if len(self.values) == 1:
            return self.values[0]
        return "(" + ", ".join(repr(v) for v in self.values) + ")"


class TextForm(BaseModel):
    """One natural-language query of a semantic group, in one cohort."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    form_id: str
    cohort: str
    text: str


class SemanticGroup(BaseModel):
    """One filled SQL query with its SQL answer and all its text forms (GRAMMAR §4.2)."""

    model_config = ConfigDict(extra="forbid")

    group_id: str
    dataset_id: str = "default"
    sql: str = Field(description="SQL template with named parameters, e.g. :name.")
    params: dict[str, Any] = Field(default_factory=dict)
    answer: Expected
    forms: list[TextForm] = Field(default_factory=list)
    relevant_doc_ids: list[str] = Field(default_factory=list)
    scenario: str = "factual"
    template_id: str | None = None
    provenance: dict[str, Any] = Field(
        default_factory=dict,
        description="What a scenario item was made from (chunks, or SQL and groups); JSONL only.",
    )

    def forms_in(self, cohort: str) -> list[TextForm]:
        return [f for f in self.forms if f.cohort == cohort]

    @property
    def cohorts(self) -> list[str]:
        return sorted({f.cohort for f in self.forms})


def group_id_for(sql: str, params: dict[str, Any]) -> str:
    """Stable id of a semantic group: a hash of the SQL template and its bound values.

    Canonical JSON (sorted keys) so the same fill always maps to the same id across runs and hosts,
    which is what lets live tallies and stored history line up.
    """
    payload = orjson.dumps(
        {"sql": " ".join(sql.split()), "params": params}, option=orjson.OPT_SORT_KEYS, default=str
    )
    return hashlib.sha256(payload).hexdigest()[:16]


def group_id_hasher(sql: str) -> Callable[[dict[str, Any]], str]:
    """:func:`group_id_for` for one SQL template, its constant part encoded once.

    The canonical payload is ``{"params":…,"sql":…}`` (sorted keys: "params" < "sql"), so the
    template's normalized SQL is a fixed suffix; a generation run hashes one group id per fill,
    and re-normalizing and re-encoding the SQL each time cost as much as the hash.
    """
    suffix = b',"sql":' + orjson.dumps(" ".join(sql.split())) + b"}"
    sha256 = hashlib.sha256
    dumps = orjson.dumps
    sort_keys = orjson.OPT_SORT_KEYS

    def group_id(params: dict[str, Any]) -> str:
        payload = b'{"params":' + dumps(params, option=sort_keys, default=str) + suffix
        return sha256(payload).hexdigest()[:16]

    return group_id


def form_id_for(group_id: str, cohort: str, text: str) -> str:
    return hashlib.sha256(f"{group_id}\x1f{cohort}\x1f{text}".encode()).hexdigest()[:12]
