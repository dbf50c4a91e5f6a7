"""The demo domain end to end on SQLite: templates, SQL truth, balance, corpus, gaps, safety."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from groundwatch.adapters.sources import generate_groups, readonly_engine
from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.pipeline import GenerationResult
from groundwatch.core.model import SemanticGroup
from groundwatch.core.retrieval import Bm25Retriever, KeywordOverlapRetriever, split_sentences
from groundwatch.demo import DemoDomain, build_demo, demo_dataset, demo_generation
from groundwatch.errors import ConfigError

pytestmark = pytest.mark.unit
K = 3


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[DemoDomain, GenerationResult]]:
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    yield demo_generation(K, ("short", "long"), url=f"sqlite:///{db}")


def _db_path(domain: DemoDomain) -> Path:
    return Path(domain.db_url.removeprefix("sqlite:///"))


def test_demo_database_meets_the_brief(demo: tuple[DemoDomain, GenerationResult]) -> None:
    domain, _ = demo
    engine = create_engine(domain.db_url)
    with engine.connect() as conn:
        counts = {
            t: conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
            for t in ("clients", "employees", "projects")
        }
    engine.dispose()
    assert counts["clients"] >= 10 and counts["employees"] >= 25 and counts["projects"] >= 15


def test_demo_is_deterministic_per_seed(tmp_path: Path) -> None:
    a = build_demo(f"sqlite:///{tmp_path / 'a.sqlite'}", seed=7)
    b = build_demo(f"sqlite:///{tmp_path / 'b.sqlite'}", seed=7)
    c = build_demo(f"sqlite:///{tmp_path / 'c.sqlite'}", seed=8)
    assert a.documents == b.documents and a.omitted_facts == b.omitted_facts
    assert a.documents != c.documents
    ga = generate_groups(a.db_url, k=K).groups
    gb = generate_groups(b.db_url, k=K).groups
    assert [g.model_dump() for g in ga] == [g.model_dump() for g in gb]


def test_templates_cover_every_table_and_never_ask_about_ids(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    _, result = demo
    assert {t for tpl in result.templates for t in tpl.tables} == {
        "clients",
        "employees",
        "projects",
    }
    kinds = {t.kind for t in result.templates}
    assert kinds == {"single", "pair", "join"}
    for t in result.templates:
        for column in [r.column for r in t.selected] + [s.column for s in t.slots]:
            assert not column.endswith("_id"), t.sql
    for g in result.groups:
        assert all(not p.endswith("_id") for p in g.params)
        assert not re.search(r"\bSELECT\s+\w+\.?\w*_id\b", g.sql)


def test_every_group_has_exactly_k_distinct_forms_per_cohort(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    _, result = demo
    assert len(result.groups) > 200
    for g in result.groups:
        for c in ("short", "long"):
            forms = g.forms_in(c)
            assert len(forms) == K and len({f.text for f in forms}) == K
        assert len({f.form_id for f in g.forms}) == len(g.forms)
        for f in g.forms_in("long"):
            assert len(f.text.split()) >= 30
    s = result.summary
    assert s.groups == len(result.groups) and s.text_queries == {
        "short": K * s.groups,
        "long": K * s.groups,
    }


def test_every_answer_equals_what_the_sql_returns(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    domain, result = demo
    engine = create_engine(domain.db_url)
    with engine.connect() as conn:
        for g in result.groups:
            rows = [tuple(r) for r in conn.execute(text(g.sql), g.params)]
            assert len(set(rows)) == 1, g.sql
            assert [format_value(v) for v in rows[0]] == g.answer.values
    engine.dispose()
    types = {t for g in result.groups for t in g.answer.types}
    assert types == {"text", "number", "date"}


def test_quotes_and_unicode_survive_binding_and_text_filling(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    _, result = demo
    quoted = [g for g in result.groups if g.params.get("name") == "Aoife O'Sullivan"]
    accented = [g for g in result.groups if g.params.get("name") == "Société Lumière Verte"]
    assert quoted and accented
    assert all("'Aoife O'Sullivan'" in f.text for g in quoted for f in g.forms)
    assert all("Société Lumière Verte" in f.text for g in accented for f in g.forms)


def test_omitted_facts_are_nowhere_and_present_facts_are_verbatim(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    domain, result = demo
    assert len(domain.omitted_facts) >= 6
    assert {o.table for o in domain.omitted_facts} == {"clients", "employees", "projects"}
    sentences = [s for d in domain.documents.values() for s in split_sentences(d)]
    role = {
        "director_id": "director of",
        "manager_id": "manager of",
        "client_id": "client of",
        "supervisor_id": "supervisor of",
        "account_manager_id": "account manager for",
    }
    for o in domain.omitted_facts:
        assert all((o.table, o.column, o.key) not in f for f in domain.doc_facts.values())
        if o.column in role:
            assert not any(
                f"{role[o.column]} {o.entity}" in s
                or f"{role[o.column]} the project {o.entity}" in s
                for s in sentences
            )
        else:
            # the name itself may contain the value ("Ironvale Mining Cooperative" / "Mining")
            assert not any(
                o.entity in s and o.value in s.replace(o.entity, "") for s in sentences
            ), o
    gaps = domain.injected_gap_group_ids(result.groups)
    assert 0 < len(gaps) < len(result.groups) / 2
    for g in result.groups:
        if g.group_id in gaps:
            continue
        assert g.relevant_doc_ids, g.sql
        docs = [domain.documents[d] for d in g.relevant_doc_ids]
        entity = next(iter(g.params.values()))
        assert (
            any(
                any(str(entity) in s and g.answer.values[0] in s for s in split_sentences(d))
                for d in docs
            )
            or g.sql.count(":") > 1
        ), (g.sql, g.params, g.answer.values)


def test_gap_groups_are_exactly_those_asking_an_omitted_fact(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    domain, result = demo
    gaps = domain.injected_gap_group_ids(result.groups)
    omitted = {(o.table, o.column, o.entity) for o in domain.omitted_facts}
    single = [
        g
        for g in result.groups
        if g.sql.startswith("SELECT ") and " JOIN " not in g.sql and list(g.params) == ["name"]
    ]
    assert single
    for g in single:
        m = re.match(r"SELECT (\w+) FROM (\w+) WHERE name = :name", g.sql)
        assert m
        asked = (m.group(2), m.group(1), g.params["name"])
        assert (g.group_id in gaps) == (asked in omitted), g.sql


def test_keyword_retrieval_is_worse_on_long_forms_bm25_is_not(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    """GRAMMAR §5: the keyword matcher is fooled by the long cohort's extra words."""
    domain, result = demo
    gaps = domain.injected_gap_group_ids(result.groups)
    answerable = [g for g in result.groups if g.group_id not in gaps]

    def hit_rate(retriever: Any, cohort: str) -> float:
        hits = n = 0
        for g in answerable:
            for f in g.forms_in(cohort):
                top = retriever.retrieve(f.text, 1)
                hits += bool(top and top[0].doc_id in g.relevant_doc_ids)
                n += 1
        return hits / n

    keyword = KeywordOverlapRetriever(domain.documents)
    bm25 = Bm25Retriever(domain.documents)
    short, long_ = hit_rate(keyword, "short"), hit_rate(keyword, "long")
    assert short >= 0.8 and long_ <= short - 0.3
    assert hit_rate(bm25, "short") >= 0.95 and hit_rate(bm25, "long") >= 0.85


def test_demo_dataset_runs_other_cohorts_and_attaches_documents(tmp_path: Path) -> None:
    domain, groups = demo_dataset(
        k=2, cohorts=("interrogative", "casual"), url=f"sqlite:///{tmp_path / 'd.sqlite'}"
    )
    assert groups and all(g.cohorts == ["casual", "interrogative"] for g in groups)
    assert all(len(g.forms_in("casual")) == 2 for g in groups)
    assert sum(bool(g.relevant_doc_ids) for g in groups) == len(groups)
    assert domain.doc_ids_for(groups[0]) == groups[0].relevant_doc_ids


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_source_is_opened_read_only(demo: tuple[DemoDomain, GenerationResult]) -> None:
    domain, _ = demo
    path = _db_path(domain)
    before = _digest(path)
    engine = readonly_engine(domain.db_url)
    try:
        for sql in (
            "DELETE FROM clients",
            "DROP TABLE projects",
            "CREATE TABLE x (a INTEGER)",
            "UPDATE employees SET name = 'x'",
        ):
            with engine.connect() as conn, pytest.raises(DBAPIError):
                conn.execute(text(sql))
                conn.commit()
    finally:
        engine.dispose()
    generate_groups(domain.db_url, k=K)
    assert _digest(path) == before


def test_readonly_engine_refuses_what_it_cannot_guard(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        readonly_engine("sqlite://")
    with pytest.raises(ConfigError):
        readonly_engine(f"sqlite:///{tmp_path / 'missing.sqlite'}")
    with pytest.raises(ConfigError):
        readonly_engine("oracle://u:p@h/db")


def _groups_by_template(groups: list[SemanticGroup]) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in groups:
        out[g.sql] = out.get(g.sql, 0) + 1
    return out


def test_pair_templates_drop_fills_with_several_answers(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    domain, result = demo
    pairs = [t for t in result.templates if t.kind == "pair"]
    assert pairs
    assert result.summary.dropped_fills["several_answers"] > 0
    engine = create_engine(domain.db_url)
    with engine.connect() as conn:
        for t in pairs:
            n_single = conn.execute(
                text(
                    f"SELECT COUNT(*) FROM (SELECT {', '.join(s.column for s in t.slots)} "
                    f"FROM {t.tables[0]} GROUP BY {', '.join(s.column for s in t.slots)} "
                    "HAVING COUNT(*) = 1) AS g"
                )
            ).scalar_one()
            assert _groups_by_template(result.groups)[t.sql] == n_single
    engine.dispose()


def test_demo_text_answers_carry_grounded_candidates(
    demo: tuple[DemoDomain, GenerationResult],
) -> None:
    _, result = demo
    text_groups = [g for g in result.groups if "text" in g.answer.types]
    # the answer column's whole domain (issue 29), which supersedes the per-group candidates
    with_domain = [g for g in text_groups if any(g.answer.domain)]
    assert len(with_domain) >= 0.9 * len(text_groups)
    for g in with_domain:
        assert len(g.answer.domain) == len(g.answer.values) and not g.answer.candidates
        for value, col in zip(g.answer.values, g.answer.domain, strict=True):
            assert col is None or (value in col.values and col.complete)
