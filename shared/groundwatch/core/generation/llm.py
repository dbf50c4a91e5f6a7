"""GRAMMAR-Gen's LLM path: SQL templates (the paper's Table 7 prompt) and text templates per cohort.

Everything the model writes is untrusted: every SQL line goes through
:func:`groundwatch.core.generation.validate_sql` before anything runs it, and a text template is
kept only if it carries exactly its SQL template's placeholders. Rejections are counted by reason
so the stage summary shows what the model got wrong. Code against
:class:`~groundwatch.core.llm.ChatModel` — the project's client
(:class:`groundwatch.adapters.llm.client.LlmClient`) satisfies it, and tests pass a fake. The
path end to end against a database is
:func:`groundwatch.adapters.sources.generate.generate_groups_llm`.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_checks import Rejection, rejection_code, validate_sql
from groundwatch.core.generation.templates import SqlTemplate, tokens_in
from groundwatch.core.generation.verbalizers import Verbalizer, default_verbalizers
from groundwatch.core.llm import ChatModel
from groundwatch.errors import UnsafeSQL

#: Table 7 of the paper, verbatim apart from the two fields.
SQL_PROMPT = "\n".join(
    [
        (
            "You are a SQL query Template Generator: Generate ACCEPTABLE SQL query "
            "templates with placeholders according to the give data schema and "
            "requirements. A simple example of an acceptable SQL query template is: SELECT "
            "Industry FROM Company WHERE Name = '[Company.Name]';"
        ),
        "You must follow the basic criteria below except for other requirements:",
        "##CRITERIA##",
        (
            "- The placeholder format should be a combination of a table name and a column "
            "name, enclosed within square brackets, e.g., '[User.Name]'."
        ),
        "- Use only 'SELECT' queries.",
        (
            "- Select specific column(s) instead of using '*'. Avoid projecting attributes "
            "that appear in the predicate."
        ),
        (
            "- The selected and condition columns in the query MUST BE MEANINGFUL and "
            "DESCRIPTIVE to ensure the queries are easily understood by non-technical "
            "users."
        ),
        (
            "- Avoid using technical column names that don't clearly signify the nature of "
            "the entities or objects involved, e.g., column for semantically void record "
            "identifiers."
        ),
        (
            "- Do not create redundant or semantically duplicated queries when translated "
            "into natural language."
        ),
        ("- Each query must contain at least one parameter placeholder in the WHERE clause."),
        (
            "- Ensure the query yields a specific and singular answer to avoid multiplicity"
            " issues, thus facilitating accurate chatbot evaluation."
        ),
        "{SPECIFIC_REQUIREMENTS}",
        (
            "- If no acceptable SQL template can be generated with the given table and "
            "column information, do not generate any text."
        ),
        "##RESPONSE FORMAT##",
        "- Output each SQL template as a single line, without any prefix or suffix.",
        ("- Do not include any other text in your response, even something like ##RESPONSE_END##."),
        "##DATA SCHEMA##",
        "{GIVEN_SCHEMA}",
        "##RESPONSE_START##",
        "",
    ]
)

#: C_sql, one criterion per prompt as in Table 6 ("Generating SQL queries with one placeholder"):
#: a prompt asking for one placeholder *and* for two would contradict itself ("exactly one" next
#: to "exactly two"), so every shape gets its own prompt.
SQL_CRITERIA: dict[str, str] = {
    "one_placeholder": "- Generating SQL queries with one placeholder: Each query must contain "
    "exactly one parameter placeholder in the WHERE clause.",
    "two_placeholders": "- Generating SQL queries with two placeholders: Each query must contain "
    "exactly two parameter placeholders in the WHERE clause, combined with "
    "AND, that together identify a single record.",
    "joins": "- Generating SQL queries with joins: Each query must join the given tables along "
    "their foreign key and contain at least one parameter placeholder in the WHERE "
    "clause.",
}

#: The text-template prompt, written in the style of Table 7 (the paper does not print its own).
TEXT_PROMPT = "\n".join(
    [
        (
            "You are a Text Query Template Generator: Rewrite the given SQL query template "
            "as natural-language query templates that ask for exactly the same information."
        ),
        "You must follow the basic criteria below except for other requirements:",
        "##CRITERIA##",
        (
            "- Keep every placeholder exactly as it is written in the SQL template, "
            "including the quotes, e.g., '[Client.Name]'. Do not add other placeholders."
        ),
        "- Do not mention SQL, tables or columns; ask as a person would.",
        "- Each template must be different from the others.",
        "- Generate exactly {NUM} templates.",
        "{SPECIFIC_REQUIREMENTS}",
        "##RESPONSE FORMAT##",
        "- Output each text template as a single line, without any prefix or suffix.",
        "- Do not include any other text in your response.",
        "##SQL TEMPLATE##",
        "{SQL_TEMPLATE}",
        "##RESPONSE_START##",
        "",
    ]
)

_LINE_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)]|#+)\s*")
_FENCE = re.compile(r"^\s*```")


def response_lines(text: str) -> list[str]:
    """Non-empty lines of a model response, list markers and code fences removed."""
    out = []
    for line in text.splitlines():
        if _FENCE.match(line) or "##" in line:
            continue
        cleaned = _LINE_PREFIX.sub("", line).strip().strip("`").strip()
        if cleaned:
            out.append(cleaned)
    return out


@dataclass(slots=True)
class LlmSqlResult:
    """Validated templates, how many lines the model proposed, and rejections by reason."""

    templates: list[SqlTemplate] = field(default_factory=list)
    proposed: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


def sql_prompts(schema: SchemaInfo, criteria: Mapping[str, str] | None = None) -> list[str]:
    """One prompt per table and per single-table criterion, and one per foreign key (joins).

    Each prompt carries exactly one criterion of C_sql (GRAMMAR Table 6), so the model is never
    asked for "exactly one" and "exactly two" placeholders at once.
    """
    crit = dict(criteria or SQL_CRITERIA)
    prompts = [
        _fill_sql_prompt(text, schema.describe((t.name,)))
        for t in schema.tables
        for key, text in crit.items()
        if key != "joins"
    ]
    if "joins" in crit:
        for t in schema.tables:
            for fk in t.foreign_keys:
                names = tuple(dict.fromkeys((t.name, fk.ref_table)))
                prompts.append(_fill_sql_prompt(crit["joins"], schema.describe(names)))
    return prompts


def _fill_sql_prompt(criterion: str, schema_text: str) -> str:
    return SQL_PROMPT.replace("{SPECIFIC_REQUIREMENTS}", criterion).replace(
        "{GIVEN_SCHEMA}", schema_text
    )


async def llm_sql_templates(
    client: ChatModel,
    schema: SchemaInfo,
    *,
    criteria: Mapping[str, str] | None = None,
    max_tokens: int | None = 1024,
) -> LlmSqlResult:
    """SQL templates from the model, validated; invalid and duplicate lines are counted."""
    replies = await asyncio.gather(
        *[
            client.complete("", p, temperature=0.0, max_tokens=max_tokens)
            for p in sql_prompts(schema, criteria)
        ]
    )
    result = LlmSqlResult()
    seen: set[str] = set()
    for reply in replies:
        for line in (ln for r in reply for ln in response_lines(r)):
            result.proposed += 1
            try:
                t = validate_sql(line, schema, origin="llm")
            except UnsafeSQL as e:
                result.rejected[rejection_code(e)] += 1
                continue
            if t.sql in seen:
                result.rejected["duplicate"] += 1
                continue
            seen.add(t.sql)
            result.templates.append(t)
    return result


def _norm(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".?!")


async def llm_text_templates_for(
    client: ChatModel,
    template: SqlTemplate,
    verbalizer: Verbalizer,
    *,
    num_generations: int = 3,
    max_rounds: int = 3,
    rejected: Counter[str] | None = None,
) -> list[str]:
    """Up to ``num_generations`` distinct text templates for one SQL template in one cohort.

    The first round runs at temperature 0; later rounds (only if too few survived de-duplication
    and the placeholder check) at 0.7 to get different wordings.
    """
    want = {s.grammar_token() for s in template.slots}
    kept: list[str] = []
    keys: set[str] = set()
    bad = rejected if rejected is not None else Counter()
    prompt = (
        TEXT_PROMPT.replace("{NUM}", str(num_generations))
        .replace("{SPECIFIC_REQUIREMENTS}", "- " + verbalizer.criteria)
        .replace("{SQL_TEMPLATE}", template.grammar_sql())
    )
    for round_ in range(max_rounds):
        replies = await client.complete("", prompt, temperature=0.0 if round_ == 0 else 0.7)
        for line in (ln for r in replies for ln in response_lines(r)):
            if tokens_in(line) != want:
                bad[Rejection.TEXT_PLACEHOLDERS] += 1
                continue
            if verbalizer.min_words and len(line.split()) < verbalizer.min_words:
                bad["too_short"] += 1
                continue
            if _norm(line) in keys:
                bad["duplicate"] += 1
                continue
            keys.add(_norm(line))
            kept.append(line)
        if len(kept) >= num_generations:
            break
    return kept[:num_generations]


async def llm_text_templates(
    client: ChatModel,
    templates: Sequence[SqlTemplate],
    cohorts: Sequence[str],
    *,
    verbalizers: Mapping[str, Verbalizer] | None = None,
    num_generations: int = 3,
) -> tuple[dict[str, dict[str, list[str]]], Counter[str]]:
    """Text templates for every SQL template and cohort, and rejection counts."""
    vs = verbalizers or default_verbalizers()
    rejected: Counter[str] = Counter()
    jobs = [(t, c) for t in templates for c in cohorts]
    results = await asyncio.gather(
        *[
            llm_text_templates_for(
                client, t, vs[c], num_generations=num_generations, rejected=rejected
            )
            for t, c in jobs
        ]
    )
    out: dict[str, dict[str, list[str]]] = {}
    for (t, c), texts in zip(jobs, results, strict=True):
        out.setdefault(t.template_id, {})[c] = texts
    return out, rejected
