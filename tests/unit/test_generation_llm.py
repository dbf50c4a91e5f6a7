"""The LLM path with a fake client: the paper's prompts, validation of every line, counts."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from groundwatch.adapters.sources import introspect, readonly_engine
from groundwatch.adapters.sources.generate import generate_groups_llm
from groundwatch.core.generation import default_verbalizers
from groundwatch.core.generation.llm import (
    SQL_PROMPT,
    llm_sql_templates,
    llm_text_templates_for,
    response_lines,
    sql_prompts,
)
from groundwatch.demo import build_demo

pytestmark = pytest.mark.unit

MALICIOUS = [
    "DELETE FROM clients",
    "DROP TABLE projects",
    "SELECT industry FROM clients WHERE name = '[clients.name]'; DROP TABLE clients",
    "ATTACH DATABASE '/tmp/evil.db' AS evil",
    "PRAGMA writable_schema = 1",
    "SELECT * FROM clients WHERE name = '[clients.name]'",
    "SELECT client_id FROM clients WHERE name = '[clients.name]'",
    "SELECT salary FROM employees WHERE name = '[employees.name]'",
]
GOOD = [
    "1. SELECT industry FROM clients WHERE name = '[clients.name]';",
    "- SELECT country FROM clients WHERE name = '[clients.name]';",
    "SELECT industry FROM clients WHERE name = '[clients.name]';",  # duplicate
    "SELECT name FROM employees WHERE department = '[employees.department]'",  # several answers
    "SELECT p.status FROM projects p JOIN clients c ON p.client_id = c.client_id "
    "WHERE p.name = '[projects.name]' AND c.name = '[clients.name]'",
]


class FakeLlm:
    """Answers SQL prompts with a fixed mix of good and malicious lines, text prompts by cohort."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, float]] = []

    async def complete(
        self,
        system: str,
        user: str,
        *,
        temperature: float = 0.0,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> list[str]:
        self.prompts.append((user, temperature))
        if user.startswith("You are a SQL query Template Generator"):
            schema = user.split("##DATA SCHEMA##")[1]
            one_shape = "with one placeholder" in user
            if schema.count("Table ") == 1 and "Table clients" in schema and one_shape:
                return ["```sql\n" + "\n".join(GOOD + MALICIOUS) + "\n```"]
            return [""]
        tokens = sorted(
            {
                tok
                for tok in (
                    "'[clients.name]'",
                    "'[employees.department]'",
                    "'[employees.name]'",
                    "'[projects.name]'",
                )
                if tok.strip("'") in user.split("##SQL TEMPLATE##")[1]
            }
        )
        ref = " and ".join(tokens)
        if "at least 30 words" in user:
            filler = "in the context of the records that we keep about all of our work " * 2
            return [
                "\n".join(
                    [
                        f"Could you please tell me, {filler}, what is recorded for {ref} today?",
                        f"I would like to know, {filler}, the value that we have noted for {ref}.",
                        f"Please look up, {filler}, the detail that belongs to {ref} in our files.",
                        f"Please look up, {filler}, the detail that belongs to {ref} in our files.",
                    ]
                )
            ]
        return [
            "\n".join(
                [
                    f"value of {ref}",
                    f"{ref} value",
                    f"lookup {ref}",
                    "value of '[Nope.Name]'",
                    f"value of {ref}",
                ]
            )
        ]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def demo_url(tmp_path: Path) -> str:
    return build_demo(f"sqlite:///{tmp_path / 'demo.sqlite'}").db_url


def test_prompts_are_the_papers_per_table_and_per_foreign_key(demo_url: str) -> None:
    engine = readonly_engine(demo_url)
    schema = introspect(engine)
    engine.dispose()
    prompts = sql_prompts(schema)
    # one per table and single-table criterion (one, two placeholders), one per foreign key
    assert len(prompts) == 3 * 2 + 5
    assert all(p.startswith(SQL_PROMPT.split("{")[0]) for p in prompts)
    assert "Table projects" in prompts[4] and "foreign key" in prompts[-1]
    # each prompt asks for one shape only: never "exactly one" next to "exactly two"
    for p in prompts:
        assert ("exactly one parameter" in p) + ("exactly two parameter" in p) <= 1, p
    assert "exactly one parameter" in prompts[0] and "exactly two parameter" in prompts[1]


async def test_every_llm_sql_line_is_validated_and_counted(demo_url: str) -> None:
    engine = readonly_engine(demo_url)
    schema = introspect(engine)
    engine.dispose()
    res = await llm_sql_templates(FakeLlm(), schema)
    assert res.proposed == len(GOOD) + len(MALICIOUS)
    assert [t.sql for t in res.templates] == [
        "SELECT industry FROM clients WHERE name = :name",
        "SELECT country FROM clients WHERE name = :name",
        "SELECT name FROM employees WHERE department = :department",
        "SELECT p.status FROM projects AS p JOIN clients AS c ON p.client_id = c.client_id "
        "WHERE p.name = :name AND c.name = :name_2",
    ]
    assert res.rejected == {
        "not_a_select": 4,
        "not_exactly_one_statement": 1,
        "select_star": 1,
        "surrogate_column": 1,
        "unknown_column": 1,
        "duplicate": 1,
    }


async def test_text_templates_keep_only_exact_placeholders_and_deduplicate(demo_url: str) -> None:
    engine = readonly_engine(demo_url)
    schema = introspect(engine)
    engine.dispose()
    res = await llm_sql_templates(FakeLlm(), schema)
    fake = FakeLlm()
    from collections import Counter

    rejected: Counter[str] = Counter()
    texts = await llm_text_templates_for(
        fake, res.templates[0], default_verbalizers()["short"], num_generations=3, rejected=rejected
    )
    assert texts == [
        "value of '[clients.name]'",
        "'[clients.name]' value",
        "lookup '[clients.name]'",
    ]
    assert rejected == {"text_placeholders_mismatch": 1, "duplicate": 1}
    assert [t for _, t in fake.prompts] == [0.0]


async def test_llm_path_end_to_end_leaves_the_database_unchanged(demo_url: str) -> None:
    path = Path(demo_url.removeprefix("sqlite:///"))
    before = _digest(path)
    result = await generate_groups_llm(demo_url, FakeLlm(), k=3, cohorts=("short", "long"))
    assert _digest(path) == before
    s = result.summary
    assert s.rejected_templates["not_a_select"] == 4
    assert s.rejected_templates["not_exactly_one_statement"] == 1
    # department → name has several answers for most departments: those fills are dropped
    assert s.dropped_fills["several_answers"] > 0
    assert result.groups and all(
        len(g.forms_in("short")) == 3 and len(g.forms_in("long")) == 3 for g in result.groups
    )
    assert {g.sql for g in result.groups} >= {"SELECT industry FROM clients WHERE name = :name"}


def test_response_lines_strip_markers_and_fences() -> None:
    assert response_lines("```sql\n1. SELECT a\n- SELECT b\n##RESPONSE_END##\n```") == [
        "SELECT a",
        "SELECT b",
    ]
