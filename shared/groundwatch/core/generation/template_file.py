"""The template file: save the SQL (and text) templates, let people edit them, load them back.

GRAMMAR's tool saves its SQL templates, has people verify, modify or add to them, and reloads them
(Appendix B.2), because a generator — an LLM or rules — can get a template wrong. This is that round
trip in a readable YAML file (read and written by :mod:`groundwatch.adapters.template_files`)::

    version: 1
    templates:
    - sql: SELECT "Location" FROM "Client" WHERE "Name" = :name
      on_multiple: reject
      text:
        short: ["location of '[Client.Name]'", ...]
        long: [...]

``sql`` may use named parameters (``:name``) or the paper's placeholders (``'[Client.Name]'``).
``on_multiple``: what to do with a fill that has several answers — ``reject`` the template (the
default for a hand-written one: it promised a singular answer) or ``drop`` the fill. ``text`` is
optional: cohorts without text templates are realized offline. Everything loaded is validated
against the live schema (SELECT only, known tables and columns, placeholders bound to column
equalities, text templates carrying exactly the SQL's placeholders); every entry that fails is
reported with its reason, never silently skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_checks import Rejection, rejection_code, validate_sql
from groundwatch.core.generation.templates import SqlTemplate, tokens_in
from groundwatch.errors import ConfigError, UnsafeSQL

VERSION = 1
_KEYS = {"sql", "on_multiple", "text", "kind", "tables", "placeholders"}
HEADER = """\
# groundwatch SQL templates (GRAMMAR-Gen). Edit, delete or add entries, then run
#   groundwatch gen --db URL --templates THIS_FILE --out groups.jsonl
# Each entry: sql (SELECT only; placeholders as :name or '[Table.Column]', compared with = in the
# WHERE clause), on_multiple (reject | drop: a fill with several answers rejects the template or
# is dropped), text (optional, per cohort; each text carries exactly the SQL's placeholders).
# kind, tables and placeholders are informational; they are recomputed on load.
"""


@dataclass(frozen=True, slots=True)
class RejectedEntry:
    """One template of the file that was not used, and why."""

    index: int
    sql: str
    code: str
    detail: str

    def line(self) -> str:
        return f"template {self.index + 1}: {self.code}: {self.detail} — {self.sql}"


@dataclass(slots=True)
class TemplateSet:
    """What a template file gave: validated templates, their text templates, and rejections."""

    templates: list[SqlTemplate] = field(default_factory=list)
    text_templates: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    rejected: list[RejectedEntry] = field(default_factory=list)
    rejected_texts: int = 0


def templates_to_data(
    templates: Sequence[SqlTemplate],
    text_templates: Mapping[str, Mapping[str, Sequence[str]]],
    *,
    dialect: str,
) -> dict[str, Any]:
    """The templates as the file's data (written as YAML by ``groundwatch.adapters``)."""
    entries: list[dict[str, Any]] = []
    for t in templates:
        entry: dict[str, Any] = {
            "sql": t.sql,
            "kind": t.kind,
            "tables": list(t.tables),
            "placeholders": {s.param: s.grammar_token().strip("[]") for s in t.slots},
            "on_multiple": t.on_multiple,
        }
        texts = text_templates.get(t.template_id, {})
        if texts:
            entry["text"] = {c: list(v) for c, v in texts.items()}
        entries.append(entry)
    return {"version": VERSION, "dialect": dialect, "templates": entries}


def entries_from_data(data: Any) -> list[dict[str, Any]]:
    """The entries of a parsed template file (ConfigError if the file itself is malformed)."""
    if isinstance(data, list):
        data = {"templates": data}
    if not isinstance(data, dict) or not isinstance(data.get("templates"), list):
        raise ConfigError("template file must be a mapping with a 'templates' list")
    if int(data.get("version", VERSION)) != VERSION:
        raise ConfigError(f"template file version {data.get('version')!r}; expected {VERSION}")
    out: list[dict[str, Any]] = []
    for item in data["templates"]:
        out.append(
            item if isinstance(item, dict) else {"sql": item} if isinstance(item, str) else {}
        )
    return out


def load_templates(entries: Sequence[Mapping[str, Any]], schema: SchemaInfo) -> TemplateSet:
    """Validate every entry against ``schema``; keep the good ones, report the others."""
    out = TemplateSet()
    seen: set[str] = set()
    for i, e in enumerate(entries):
        sql = str(e.get("sql", "")).strip()
        unknown = set(e) - _KEYS
        if not sql:
            out.rejected.append(RejectedEntry(i, sql, "no_sql", "entry has no 'sql'"))
            continue
        if unknown:
            out.rejected.append(
                RejectedEntry(i, sql, "unknown_keys", f"unknown keys {sorted(map(str, unknown))}")
            )
            continue
        policy = str(e.get("on_multiple", "reject"))
        if policy not in ("reject", "drop"):
            out.rejected.append(
                RejectedEntry(i, sql, "bad_on_multiple", f"on_multiple {policy!r}: reject|drop")
            )
            continue
        try:
            t = validate_sql(sql, schema, origin="import")
        except UnsafeSQL as err:
            detail = str(err).split(": ", 1)[-1]
            out.rejected.append(RejectedEntry(i, sql, rejection_code(err), detail))
            continue
        t = replace(t, on_multiple=policy)  # type: ignore[arg-type]
        if t.sql in seen:
            out.rejected.append(RejectedEntry(i, sql, "duplicate", "same SQL as an earlier entry"))
            continue
        texts = e.get("text") or {}
        if not isinstance(texts, dict):
            out.rejected.append(
                RejectedEntry(i, sql, "bad_text", "'text' must map cohort → list of texts")
            )
            continue
        want = {s.grammar_token() for s in t.slots}
        kept: dict[str, list[str]] = {}
        for cohort, items in texts.items():
            good = []
            for x in items if isinstance(items, list) else [items]:
                if isinstance(x, str) and tokens_in(x) == want:
                    good.append(x)
                else:
                    out.rejected_texts += 1
            kept[str(cohort)] = good
        if texts and not any(kept.values()):
            out.rejected.append(
                RejectedEntry(
                    i,
                    sql,
                    Rejection.TEXT_PLACEHOLDERS,
                    f"no text template carries exactly the placeholders {sorted(want)}",
                )
            )
            continue
        seen.add(t.sql)
        out.templates.append(t)
        if kept:
            out.text_templates[t.template_id] = kept
    return out
