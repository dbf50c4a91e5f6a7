"""The one gate every SQL text passes before it runs on a source database.

Whatever wrote the SQL — the rule generator, a templates file, an LLM, a dataset file's ``sql``
field, the grouped queries derived from a template, the per-cycle answer refresh — the source
adapter runs nothing that :meth:`ReadGate.check` did not accept (``SqlAlchemyPort.rows``). A text is
accepted only if sqlglot reads it, in the source's dialect, as exactly one ``SELECT`` (no comment,
no second statement, no set operation) built from an allow-list of node types: columns and tables,
comparisons and boolean logic, arithmetic, ``CASE``, subqueries, non-recursive ``WITH``, ``GROUP
BY``/``HAVING``/``ORDER BY``/``LIMIT``, and a short list of functions that neither have a side
effect nor reach outside the tables (``COUNT``, ``MIN``, ``MAX``, ``SUM``, ``AVG``, ``COALESCE``,
``CONCAT``, ``LOWER`` …). Every table must be one of the introspected tables (a CTE or a derived
table of the same statement aside) and every column a column of them or a name the statement
itself defines.

So a dataset file cannot smuggle ``pg_read_file``, ``lo_export``, ``pg_terminate_backend``,
``pg_logical_emit_message``, ``pg_advisory_lock``, ``set_config``, ``dblink``, ``LOAD_FILE``,
``sleep`` or anything else sqlglot reads as a function call it does not model (every one of those
is an ``Anonymous`` node, and no ``Anonymous`` node is allowed); nor a system catalogue
(``pg_shadow``, ``sqlite_master``, ``mysql.user``: not introspected tables); nor a locking clause,
``INTO``, a table function, a recursive CTE, a session variable or a niladic pseudo-column
(``current_user``, ``user``).

What runs is :meth:`ReadGate.bound`'s return value — the statement sqlglot parsed, printed again in
the dialect with a driver's parameter marker at each placeholder node
(:mod:`groundwatch.core.generation.sql_binding`) — never the text it was given, so a database that
reads a text differently from sqlglot (an escape in a string, a nested comment) still runs exactly
the statement that was checked, and a ``:name`` written inside a string literal is that literal's
text, never a parameter. An operator whose meaning depends on the server's settings is refused:
``||`` on MySQL/MariaDB is OR, or concatenation under ``PIPES_AS_CONCAT``.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import NamedTuple

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_binding import BoundStatement, Reader, bind
from groundwatch.core.generation.templates import render
from groundwatch.errors import UnsafeSQL


class Rejection:
    """Reason codes (stable strings: they are the keys of the rejected-template counts)."""

    PARSE = "parse_error"
    STATEMENTS = "not_exactly_one_statement"
    NOT_SELECT = "not_a_select"
    FORBIDDEN = "forbidden_construct"
    COMMENT = "comment"
    FUNCTION = "function_not_allowed"
    RECURSIVE = "recursive_cte"
    STAR = "select_star"
    UNKNOWN_TABLE = "unknown_table"
    UNKNOWN_COLUMN = "unknown_column"
    NO_PLACEHOLDER = "no_placeholder"
    BAD_PLACEHOLDER = "placeholder_not_column_equality"
    SELF_ANSWER = "selects_condition_column"
    SURROGATE = "surrogate_column"
    NOT_COLUMN = "projection_not_a_column"
    TEXT_PLACEHOLDERS = "text_placeholders_mismatch"
    DIALECT_OPERATOR = "operator_meaning_depends_on_server"
    MULTIPLE_ANSWERS = "several_answers"
    NO_FILLS = "no_answered_fill"
    TOO_FEW_TEXT = "too_few_text_templates"
    EXCLUDED = "excluded_by_steering"


def reject(code: str, detail: str) -> UnsafeSQL:
    err = UnsafeSQL(f"{code}: {detail}")
    err.code = code  # type: ignore[attr-defined]
    return err


def rejection_code(err: UnsafeSQL) -> str:
    return str(getattr(err, "code", Rejection.FORBIDDEN))


#: Functions a query may call: aggregates and scalar functions without side effects that read
#: nothing but their arguments. Everything else sqlglot models (``CurrentUser``, ``Explode``,
#: ``GenerateSeries`` …) or does not (``Anonymous``: ``pg_read_file``, ``sleep`` …) is refused.
FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Count,
    exp.Min,
    exp.Max,
    exp.Sum,
    exp.Avg,
    exp.Coalesce,
    exp.Concat,
    exp.Nullif,
    exp.Lower,
    exp.Upper,
    exp.Length,
    exp.Trim,
    exp.Abs,
    exp.Round,
    exp.Case,
    exp.If,
    exp.Cast,
)
#: The statement's structure: what a read of the introspected tables is built from.
STRUCTURE: tuple[type[exp.Expression], ...] = (
    exp.Select,
    exp.From,
    exp.Join,
    exp.Where,
    exp.Group,
    exp.Having,
    exp.Order,
    exp.Ordered,
    exp.Limit,
    exp.Offset,
    exp.Distinct,
    exp.Subquery,
    exp.Exists,
    exp.With,
    exp.CTE,
    exp.Table,
    exp.TableAlias,
    exp.Alias,
    exp.Column,
    exp.Identifier,
    exp.Star,
    exp.EQ,
    exp.NEQ,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Paren,
    exp.Is,
    exp.In,
    exp.Like,
    exp.ILike,
    exp.Between,
    exp.Tuple,
    exp.Neg,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.DPipe,
    exp.Null,
    exp.Boolean,
    exp.Literal,
    exp.Placeholder,
    exp.DataType,
    exp.DataTypeParam,
)
_ALLOWED = frozenset(STRUCTURE + FUNCTIONS)
#: Plain data types a CAST may name (not ``regclass`` and kin, which read the catalogue).
_CAST_TYPES = frozenset(
    {
        exp.DataType.Type.TEXT,
        exp.DataType.Type.VARCHAR,
        exp.DataType.Type.CHAR,
        exp.DataType.Type.NVARCHAR,
        exp.DataType.Type.NCHAR,
        exp.DataType.Type.INT,
        exp.DataType.Type.BIGINT,
        exp.DataType.Type.SMALLINT,
        exp.DataType.Type.TINYINT,
        exp.DataType.Type.DECIMAL,
        exp.DataType.Type.DOUBLE,
        exp.DataType.Type.FLOAT,
        exp.DataType.Type.DATE,
        exp.DataType.Type.DATETIME,
        exp.DataType.Type.TIMESTAMP,
        exp.DataType.Type.TIMESTAMPTZ,
        exp.DataType.Type.BOOLEAN,
    }
)
#: Unquoted names SQL reads as a niladic function, not a column (``SELECT user FROM t`` is the
#: role's name on PostgreSQL even when ``t`` has a column ``user``).
_PSEUDO_COLUMNS = frozenset(
    {
        "user",
        "current_user",
        "session_user",
        "system_user",
        "current_role",
        "current_catalog",
        "current_schema",
        "current_date",
        "current_time",
        "current_timestamp",
        "localtime",
        "localtimestamp",
    }
)
#: Schema qualifiers that name the default schema of a source (``public.t``, ``main.t``).
_DEFAULT_SCHEMAS = frozenset({"", "public", "main"})
#: Control characters have no place in a query; NUL in particular is read differently by
#: drivers (PostgreSQL refuses it, C strings end at it).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Operators read differently by the same dialect's servers, by dialect: MySQL and MariaDB read
#: ``||`` as OR, or as concatenation under ``sql_mode=PIPES_AS_CONCAT`` (and ``ANSI``, ``ORACLE``).
_AMBIGUOUS_OPERATORS = {"mysql": {"||": "OR or CONCAT()"}}


def parse_statement(sql: str, dialect: str) -> exp.Expression:
    """The one statement of ``sql`` in ``dialect``: no comment, no second statement, or
    :class:`UnsafeSQL`. A comment is refused rather than dropped: MySQL runs ``/*! … */``
    and reads ``/*+ … */`` as optimizer hints, and nothing a monitor asks needs one."""
    if _CONTROL.search(sql):
        raise reject(Rejection.FORBIDDEN, "control character")
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # sqlglot warns when it falls back to an opaque Command
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
        if any(t.comments for t in tokens):
            raise reject(Rejection.COMMENT, "a comment in the SQL")
        ambiguous = _AMBIGUOUS_OPERATORS.get(dialect, {})
        for t in tokens:
            if t.text in ambiguous:
                raise reject(
                    Rejection.DIALECT_OPERATOR,
                    f"{t.text} means different things by the server's settings; write"
                    f" {ambiguous[t.text]}",
                )
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as e:
        raise reject(Rejection.PARSE, str(e).splitlines()[0]) from e
    finally:
        logger.setLevel(level)
    if len(statements) != 1:
        raise reject(Rejection.STATEMENTS, f"{len(statements)} statements")
    stmt = statements[0]
    assert isinstance(stmt, exp.Expression)
    return stmt


def check_read(stmt: exp.Expression, schema: SchemaInfo) -> None:
    """Raise :class:`UnsafeSQL` unless ``stmt`` is a read of ``schema``'s tables by the rules of
    the module docstring."""
    if not isinstance(stmt, exp.Select):
        raise reject(Rejection.NOT_SELECT, type(stmt).__name__)
    for node in stmt.walk():
        if node.comments:
            raise reject(Rejection.COMMENT, "a comment in the SQL")
        if type(node) not in _ALLOWED:
            code = Rejection.FUNCTION if isinstance(node, exp.Func) else Rejection.FORBIDDEN
            name = node.name if isinstance(node, exp.Anonymous) else type(node).__name__
            raise reject(code, name or type(node).__name__)
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise reject(Rejection.RECURSIVE, "WITH RECURSIVE")
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
            raise reject(Rejection.STAR, "* outside COUNT(*)")
        if isinstance(node, exp.Column) and node.is_star:
            raise reject(Rejection.STAR, f"{node.table}.*")
        if isinstance(node, exp.Cast):
            to = node.args.get("to")
            if not isinstance(to, exp.DataType) or to.this not in _CAST_TYPES:
                raise reject(Rejection.FORBIDDEN, f"CAST to {to.sql() if to else '?'}")
        if isinstance(node, exp.Placeholder) and not (isinstance(node.this, str) and node.this):
            raise reject(Rejection.BAD_PLACEHOLDER, "positional placeholder")
        if isinstance(node, exp.Limit | exp.Offset):
            bound = node.args.get("expression")
            if not isinstance(bound, exp.Literal | exp.Placeholder):
                raise reject(Rejection.FORBIDDEN, "LIMIT that is not a number")
    _check_names(stmt, schema)


def _check_names(stmt: exp.Select, schema: SchemaInfo) -> None:
    """Tables are introspected ones (or this statement's CTEs); columns belong to them or are
    names the statement defines (an alias, a CTE's or a derived table's column)."""
    defined: set[str] = set()  # names the statement gives: CTEs, aliases, derived columns
    sources: set[str] = set()  # what a column may be qualified with
    for node in stmt.walk():
        if isinstance(node, exp.CTE | exp.Subquery):
            alias = node.args.get("alias")
            if isinstance(alias, exp.TableAlias):
                sources.add(alias.name.lower())
                defined.add(alias.name.lower())
                defined.update(c.name.lower() for c in alias.columns)
        elif isinstance(node, exp.Alias):
            defined.add(node.alias.lower())
    columns: set[str] = set()
    ctes = {c.alias_or_name.lower() for c in stmt.find_all(exp.CTE)}
    for tbl in stmt.find_all(exp.Table):
        if not isinstance(tbl.this, exp.Identifier):
            raise reject(Rejection.FORBIDDEN, f"table source {type(tbl.this).__name__}")
        if tbl.args.get("catalog") or tbl.db.lower() not in _DEFAULT_SCHEMAS:
            raise reject(Rejection.UNKNOWN_TABLE, tbl.sql())
        name = tbl.name.lower()
        if not tbl.db and name in ctes:
            sources.add(tbl.alias_or_name.lower())
            continue
        info = schema.table(tbl.name)
        if info is None:
            why = schema.excluded_tables.get(name)
            if why is not None:
                raise reject(Rejection.EXCLUDED, f"{tbl.name} ({why})")
            raise reject(Rejection.UNKNOWN_TABLE, tbl.name)
        sources.update({name, tbl.alias_or_name.lower()})
        columns.update(c.name.lower() for c in info.columns)
    for col in stmt.find_all(exp.Column):
        ident = col.this
        if not isinstance(ident, exp.Identifier):
            raise reject(Rejection.FORBIDDEN, f"column {type(ident).__name__}")
        name = ident.name.lower()
        if not ident.quoted and name in _PSEUDO_COLUMNS:
            raise reject(Rejection.FUNCTION, name)
        if col.args.get("db") or col.args.get("catalog"):
            raise reject(Rejection.UNKNOWN_COLUMN, col.sql())
        if col.table and col.table.lower() not in sources:
            raise reject(Rejection.UNKNOWN_TABLE, col.table)
        if name not in columns and name not in defined:
            raise reject(Rejection.UNKNOWN_COLUMN, ident.name)


class _Accepted(NamedTuple):
    tree: exp.Expression
    canonical: str


class ReadGate:
    """:func:`check_read` for one source's schema, remembering what it accepted.

    The same few texts run again and again (a template per combination of values, a group's SQL
    every cycle), so an accepted text's tree and printings are kept (at most ``cache`` texts); a
    refused one is parsed again each time and refused again.
    """

    def __init__(self, schema: SchemaInfo, *, cache: int = 4096) -> None:
        self.schema = schema
        self._cache: OrderedDict[str, _Accepted] = OrderedDict()
        self._bound: OrderedDict[tuple[str, str, str], BoundStatement] = OrderedDict()
        self._size = cache

    def _accept(self, sql: str) -> _Accepted:
        hit = self._cache.get(sql)
        if hit is not None:
            self._cache.move_to_end(sql)
            return hit
        stmt = parse_statement(sql, self.schema.dialect)
        check_read(stmt, self.schema)
        accepted = _Accepted(stmt, render(stmt, self.schema.dialect))
        self._cache[sql] = accepted
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return accepted

    def check(self, sql: str) -> str:
        """The canonical text of ``sql`` (sqlglot's own printing of what it checked, placeholders
        as ``:name``), or :class:`UnsafeSQL` with a reason code. For reading and storing; what a
        driver runs is :meth:`bound`."""
        return self._accept(sql).canonical

    def bound(self, sql: str, paramstyle: str, *, reader: Reader = "unknown") -> BoundStatement:
        """The statement a driver of ``paramstyle`` runs for ``sql``: the checked tree printed with
        a marker at each placeholder node for a driver whose markers ``reader`` reads
        (:func:`~groundwatch.core.generation.sql_binding.bind`), or :class:`UnsafeSQL`."""
        key = (sql, paramstyle, reader)
        hit = self._bound.get(key)
        if hit is not None:
            self._bound.move_to_end(key)
            return hit
        out = bind(self._accept(sql).tree, self.schema.dialect, paramstyle, reader=reader)
        self._bound[key] = out
        if len(self._bound) > self._size:
            self._bound.popitem(last=False)
        return out
