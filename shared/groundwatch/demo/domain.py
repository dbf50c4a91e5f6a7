"""The demo domain: a database, a corpus rendered from it, and the list of gaps put in on purpose.

``build_demo()`` makes everything from a seed; ``demo_dataset()`` also runs the offline generation
and attaches each group's relevant documents. Because the gaps are known, the evaluation's
gap detection can be checked against them: :meth:`DemoDomain.injected_gap_group_ids`.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine

from groundwatch.adapters.sources.connect import SourcePolicy, readonly_engine
from groundwatch.adapters.sources.generate import generate_groups
from groundwatch.adapters.sources.introspect import introspect
from groundwatch.adapters.sources.provenance import group_facts
from groundwatch.core.generation.pipeline import GenerationResult
from groundwatch.core.generation.rules import RuleConfig
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_gate import ReadGate
from groundwatch.core.generation.steering import Steering
from groundwatch.core.model import SemanticGroup
from groundwatch.demo.corpus import (
    GENERAL_DOCUMENTS,
    Fact,
    OmittedFact,
    choose_omissions,
    doc_id_for,
    render_documents,
)
from groundwatch.demo.data import DemoRows, make_rows
from groundwatch.demo.db import create_demo_db

#: The template shapes the demo's corpus can answer: it states every entity's own attributes and
#: whom it points at, never counts, latest dates or two-hop chains, so those shapes would be
#: reported as gaps that were never injected. Nor the reverse of a link ("project of client X"):
#: a client's document lists its projects in one sentence, and when the one project's link is
#: left out the question's only telling word is its role, which the client's own document
#: holds ("Client profile: X"), so the extractive reader answers that line and no judge can
#: call it wrong: an injected gap the demo could never find.
DEMO_RULES = RuleConfig(max_hops=1, aggregates=False, reverse_joins=False)


#: How the demo reads its database: the database is groundwatch's own, written by this very login
#: when it was built (``build_demo(url)`` on PostgreSQL), so the refusal of privileged logins —
#: which guards a source someone else owns — does not apply; the read gate and the read-only
#: connection still do.
DEMO_SOURCE = SourcePolicy(allow_privileged=True)


@dataclass(slots=True)
class DemoDomain:
    """Database URL, documents (doc id → text), the omitted facts and what each document states."""

    db_url: str
    documents: dict[str, str]
    omitted_facts: list[OmittedFact]
    doc_facts: dict[str, frozenset[Fact]]
    home_docs: dict[tuple[str, int], str]
    seed: int
    rows: DemoRows
    _schema: SchemaInfo | None = field(default=None, repr=False)
    _facts_cache: dict[str, set[Fact]] = field(default_factory=dict, repr=False)

    @property
    def omitted(self) -> set[Fact]:
        return {(o.table, o.column, o.key) for o in self.omitted_facts}

    def facts_of(self, groups: Iterable[SemanticGroup]) -> dict[str, set[Fact]]:
        """The database facts each group's answer rests on (traced through the SQL)."""
        todo = [g for g in groups if g.group_id not in self._facts_cache]
        if todo:
            engine = readonly_engine(self.db_url, policy=DEMO_SOURCE)
            try:
                with engine.connect() as conn:
                    if self._schema is None:
                        self._schema = introspect(conn, profile=False)
                    gate = ReadGate(self._schema)
                    for g in todo:
                        self._facts_cache[g.group_id] = group_facts(
                            conn, self._schema, g.sql, g.params, gate
                        )
            finally:
                engine.dispose()
        return {g.group_id: self._facts_cache[g.group_id] for g in groups}

    def doc_ids_for(self, group: SemanticGroup) -> list[str]:
        return self.relevant_doc_ids([group])[group.group_id]

    def relevant_doc_ids(self, groups: Sequence[SemanticGroup]) -> dict[str, list[str]]:
        """Ground-truth documents per group: those stating every fact of its answer.

        For an injected gap no document states it; the relevant document is then the one where the
        fact belongs (the home document of the row), as the GRAMMAR data lists for its gaps.
        """
        out: dict[str, list[str]] = {}
        for gid, facts in self.facts_of(groups).items():
            docs = [d for d, have in self.doc_facts.items() if facts and facts <= have]
            if not docs:
                missing = facts & self.omitted
                docs = sorted(
                    {self.home_docs[(t, k)] for t, _, k in missing if (t, k) in self.home_docs}
                )
            out[gid] = sorted(docs)
        return out

    def injected_gap_group_ids(self, groups: Iterable[SemanticGroup]) -> set[str]:
        """Groups whose answer needs a fact that was left out of the corpus."""
        omitted = self.omitted
        return {gid for gid, facts in self.facts_of(list(groups)).items() if facts & omitted}

    def annotate(self, groups: Sequence[SemanticGroup]) -> list[SemanticGroup]:
        """Copies of the groups with ``relevant_doc_ids`` filled in."""
        rel = self.relevant_doc_ids(groups)
        return [g.model_copy(update={"relevant_doc_ids": rel[g.group_id]}) for g in groups]


def build_demo(
    url: str | None = None, *, seed: int = 7, workdir: str | Path | None = None
) -> DemoDomain:
    """Create the demo database and its corpus.

    ``url`` must point at an empty database: the tables are created, never replaced. Without it a
    new SQLite file is made in ``workdir`` (default: a fresh temporary directory, which the caller
    owns and may delete).
    """
    rows = make_rows(seed)
    if url is None:
        if workdir is not None:
            base = Path(workdir)
        else:
            # Nobody else owns this directory: remove it when the process ends, so every
            # demo, service start and test does not leave a database behind in /tmp.
            base = Path(tempfile.mkdtemp(prefix="groundwatch-demo-"))
            atexit.register(shutil.rmtree, base, True)
        base.mkdir(parents=True, exist_ok=True)
        path = base / f"meridian_vale_{seed}.sqlite"
        url = f"sqlite:///{path}"
    engine = create_engine(url)
    try:
        create_demo_db(engine, rows)
    finally:
        engine.dispose()
    omitted = choose_omissions(rows, seed)
    docs = render_documents(rows, {(o.table, o.column, o.key) for o in omitted})
    documents = {d.doc_id: d.text() for d in docs.values()}
    documents.update(GENERAL_DOCUMENTS)
    home: dict[tuple[str, int], str] = {}
    home.update({("projects", p.project_id): doc_id_for("projects", p.name) for p in rows.projects})
    home.update(
        {("employees", e.employee_id): doc_id_for("employees", e.name) for e in rows.employees}
    )
    home.update({("clients", c.client_id): doc_id_for("clients", c.name) for c in rows.clients})
    return DemoDomain(
        db_url=url,
        documents=documents,
        omitted_facts=omitted,
        doc_facts={d.doc_id: d.facts() for d in docs.values()},
        home_docs=home,
        seed=seed,
        rows=rows,
    )


def demo_generation(
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    *,
    seed: int = 7,
    url: str | None = None,
    dataset_id: str = "demo",
    rule_config: RuleConfig = DEMO_RULES,
    steering: Steering | None = None,
    list_answers: bool = False,
) -> tuple[DemoDomain, GenerationResult]:
    """The demo domain and the full offline generation result (groups annotated)."""
    domain = build_demo(url, seed=seed)
    result = generate_groups(
        domain.db_url,
        k=k,
        cohorts=cohorts,
        dataset_id=dataset_id,
        rule_config=rule_config,
        steering=steering,
        list_answers=list_answers,
        policy=DEMO_SOURCE,
    )
    result.groups = domain.annotate(result.groups)
    return domain, result


def demo_dataset(
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    *,
    seed: int = 7,
    url: str | None = None,
    rule_config: RuleConfig = DEMO_RULES,
    steering: Steering | None = None,
    list_answers: bool = False,
) -> tuple[DemoDomain, list[SemanticGroup]]:
    """The demo domain and its semantic groups (offline path, relevant documents attached)."""
    domain, result = demo_generation(
        k,
        cohorts,
        seed=seed,
        url=url,
        rule_config=rule_config,
        steering=steering,
        list_answers=list_answers,
    )
    return domain, result.groups
