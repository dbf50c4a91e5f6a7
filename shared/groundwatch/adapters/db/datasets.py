"""Datasets of semantic groups: JSONL files, the database, and the GRAMMAR tool's files.

JSONL: one JSON object per line, one line per semantic group (``SemanticGroup`` as JSON: at least
``group_id``, ``sql``, ``params``, ``answer`` and ``forms: [{form_id, cohort, text}]``), streamed
both ways so a million groups never sit in memory. The database rows are the generator's own
state (DESIGN.md: datasets, groups, forms and answer versions belong to the generator).
"""

from __future__ import annotations

import bisect
import json
import os
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from groundwatch.adapters.db.tables import AnswerVersionRow, Dataset, FormRow, GroupRow
from groundwatch.core.generation.grammar_format import (
    import_qa_data,
    merge_cohorts,
    sql_templates_in_order,
)
from groundwatch.core.group_sequence import GroupSequence
from groundwatch.core.model import Expected, SemanticGroup, TextForm
from groundwatch.errors import ConfigError
from groundwatch.pydantic_errors import validation_line


def group_line(group: SemanticGroup) -> bytes:
    """One JSONL line (with the newline)."""
    return group.__pydantic_serializer__.to_json(group) + b"\n"


def group_record_line(record: Mapping[str, Any]) -> bytes:
    """One JSONL line (with the newline) straight from a group record
    (:func:`~groundwatch.core.generation.pipeline.iter_group_records`), no model in between.

    The record holds the model's fields in its order with every default, so this is the same
    bytes :func:`group_line` writes for its group (a test holds them equal). A value orjson
    cannot encode (an integer beyond 64 bits) goes through the model, as before.
    """
    try:
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return group_line(SemanticGroup.model_validate(record))


def write_group_records(records: Iterable[Mapping[str, Any]], out: str | Path | IO[bytes]) -> int:
    """Write group records as JSONL (:func:`group_record_line`); returns the number of lines."""
    if isinstance(out, str | Path):
        with open(out, "wb", buffering=1 << 20) as fh:
            return write_group_records(records, fh)
    n = 0
    write = out.write
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    for r in records:  # group_record_line inlined: one call less per group of a million
        try:
            line = dumps(r, option=newline)
        except TypeError:
            line = group_record_line(r)
        write(line)
        n += 1
    return n


def write_jsonl(groups: Iterable[SemanticGroup], out: str | Path | IO[bytes]) -> int:
    """Write groups as JSONL; returns the number of lines."""
    if isinstance(out, str | Path):
        with open(out, "wb") as fh:
            return write_jsonl(groups, fh)
    n = 0
    for g in groups:
        out.write(group_line(g))
        n += 1
    return n


def iter_jsonl(path: str | Path | IO[bytes]) -> Iterator[SemanticGroup]:
    """Read groups back, one line at a time; blank lines are skipped."""
    if isinstance(path, str | Path):
        with open(path, "rb") as fh:
            yield from iter_jsonl(fh)
        return
    for lineno, line in enumerate(path, 1):
        if line.strip():
            yield _parse_line(line, lineno)


def read_jsonl(path: str | Path | IO[bytes]) -> list[SemanticGroup]:
    return list(iter_jsonl(path))


class GroupFile(GroupSequence):
    """A dataset file's groups, read from disk whenever they are iterated, never held whole.

    A cycle walks every group once: a list of a 500k-probe dataset held ~850 MB for the whole
    run, though each group is needed only while its probes are made. Opening validates every
    line (a bad file fails at start, naming the line, as before) and copies the lines to a spool
    file this object owns, so what later cycles read is what was validated even if the dataset
    file is rewritten meanwhile. The spool is unlinked as soon as it is made and read through
    its descriptor by offset (``os.pread``): a process killed outright leaves nothing in the
    temporary directory, and walks and lookups never share a file position. Kept per group: its
    line's byte offset (8 bytes), for ``groups[i]`` and sampling."""

    #: bytes read at once while walking the groups
    CHUNK = 1 << 20

    def __init__(self, path: str | Path) -> None:
        fd, spool = tempfile.mkstemp(prefix="groundwatch-dataset-", suffix=".jsonl")
        self._fd = fd
        self._closing = weakref.finalize(self, os.close, fd)
        os.unlink(spool)
        offsets = array("q")
        at = 0
        with open(path, "rb") as fh, open(fd, "wb", buffering=1 << 20, closefd=False) as out:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                _parse_line(line, lineno)
                offsets.append(at)
                out.write(line)
                at += len(line)
        self._offsets = offsets
        self._end = at

    def __len__(self) -> int:
        return len(self._offsets)

    def _span(self, index: int) -> tuple[int, int]:
        offsets = self._offsets
        return offsets[index], offsets[index + 1] if index + 1 < len(offsets) else self._end

    def _group(self, index: int) -> SemanticGroup:
        start, end = self._span(index)
        return _parse_line(os.pread(self._fd, end - start, start), index + 1)

    def __iter__(self) -> Iterator[SemanticGroup]:
        offsets, n = self._offsets, len(self._offsets)
        i = 0
        while i < n:
            start = offsets[i]
            # the lines that begin within CHUNK bytes (at least one, however long)
            j = bisect.bisect_right(offsets, start + self.CHUNK, lo=i + 1)
            end = offsets[j] if j < n else self._end
            buf = os.pread(self._fd, end - start, start)
            for k in range(i, j):
                a, b = self._span(k)
                yield _parse_line(buf[a - start : b - start], k + 1)
            i = j

    def close(self) -> None:
        """Let the spool go now (it goes anyway when the object is collected or at exit)."""
        self._closing()


def _parse_line(line: bytes, lineno: int) -> SemanticGroup:
    """One JSONL line as a group; a ValueError naming the line when it is not one."""
    try:
        return SemanticGroup.model_validate(orjson.loads(line.rstrip()))
    except ValidationError as e:
        problem = validation_line(e, SemanticGroup)
        raise ValueError(f"line {lineno}: not a semantic group: {problem}") from e
    except orjson.JSONDecodeError as e:
        # orjson counts lines and columns within the line it was given: only the column is
        # ours to show ("line 4: not JSON: … line 2 column 1" named two lines)
        raise ValueError(f"line {lineno}, column {e.colno}: not JSON: {e.msg}") from e
    except ValueError as e:
        raise ValueError(f"line {lineno}: not JSON: {e}") from e


def save_groups(
    session: Session,
    dataset: Dataset,
    groups: Iterable[SemanticGroup],
    *,
    replace: bool = True,
) -> int:
    """Store a dataset and its groups and forms (the caller commits).

    With ``replace`` the dataset's earlier groups and forms are deleted first, so saving the same
    dataset twice leaves one copy. Each group's answer is also recorded as answer version 1 unless
    one is already stored (later versions are the live generator's business).
    """
    session.merge(dataset)
    did = dataset.dataset_id
    if replace:
        session.execute(delete(FormRow).where(FormRow.dataset_id == did))
        session.execute(delete(GroupRow).where(GroupRow.dataset_id == did))
    session.flush()
    n = 0
    for g in groups:
        session.add(
            GroupRow(
                dataset_id=did,
                group_id=g.group_id,
                sql=g.sql,
                params=g.params,
                answer=g.answer.model_dump(mode="json"),
                answer_version=g.answer.version,
                relevant_doc_ids=list(g.relevant_doc_ids),
                scenario=g.scenario,
                template_id=g.template_id,
            )
        )
        session.add_all(
            FormRow(
                dataset_id=did, group_id=g.group_id, form_id=f.form_id, cohort=f.cohort, text=f.text
            )
            for f in g.forms
        )
        if session.get(AnswerVersionRow, (did, g.group_id, g.answer.version)) is None:
            session.add(
                AnswerVersionRow(
                    dataset_id=did,
                    group_id=g.group_id,
                    version=g.answer.version,
                    answer=g.answer.model_dump(mode="json"),
                )
            )
        n += 1
        if n % 1000 == 0:
            session.flush()
    session.flush()
    return n


def load_groups(session: Session, dataset_id: str) -> list[SemanticGroup]:
    """The groups of a dataset with their forms, in group-id order."""
    forms: dict[str, list[TextForm]] = {}
    for f in session.scalars(
        select(FormRow)
        .where(FormRow.dataset_id == dataset_id)
        .order_by(FormRow.group_id, FormRow.cohort, FormRow.form_id)
    ):
        forms.setdefault(f.group_id, []).append(
            TextForm(form_id=f.form_id, cohort=f.cohort, text=f.text)
        )
    out = []
    for r in session.scalars(
        select(GroupRow).where(GroupRow.dataset_id == dataset_id).order_by(GroupRow.group_id)
    ):
        out.append(
            SemanticGroup(
                group_id=r.group_id,
                dataset_id=r.dataset_id,
                sql=r.sql,
                params=dict(r.params),
                answer=Expected.model_validate(r.answer),
                forms=forms.get(r.group_id, []),
                relevant_doc_ids=list(r.relevant_doc_ids),
                scenario=r.scenario,
                template_id=r.template_id,
            )
        )
    return out


def _load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@dataclass(slots=True)
class GrammarImport:
    """What a GRAMMAR tool directory gave: groups, and every entry that could not be used."""

    groups: list[SemanticGroup]
    skipped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _grammar_file(d: Path, generator: str, *names: str) -> Path | None:
    """The first of ``names`` in the repository layout (``SQLTemplateGenerator/sql_templates.json``)
    or the flat one (``SQLTemplateGenerator_sql_templates.json``)."""
    for name in names:
        for path in (d / generator / name, d / f"{generator}_{name}"):
            if path.is_file():
                return path
    return None


def read_grammar_dir(
    directory: str | Path,
    cohorts: Sequence[str] = ("short", "long"),
    *,
    dataset_id: str = "grammar",
    on_step: Callable[[int, int], None] | None = None,
) -> GrammarImport:
    """Semantic groups from a GRAMMAR tool output directory, as the authors' repository has it.

    ``on_step(done, total)`` is called after each cohort's file is imported (a progress bar).

    Reads ``SQLTemplateGenerator/sql_templates.json`` (and ``sql_templates_with_ids.json``, whose
    extra columns say what the QA rows carry), ``TextTemplateGenerator/<cohort>.json`` (optional:
    reads the placeholder values off the text queries) and
    ``QADataGenerator/<cohort>_with_ids.json`` or ``<cohort>.json`` per cohort — or the same
    files flattened as ``<Generator>_<name>``.
    Cohorts of the same group are merged. Entries that cannot be matched to a template are
    counted and exemplified in the result, not fatal.
    """
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"--grammar: no such directory {d}")
    sql_path = _grammar_file(d, "SQLTemplateGenerator", "sql_templates.json")
    ids_path = _grammar_file(d, "SQLTemplateGenerator", "sql_templates_with_ids.json")
    if sql_path is None and ids_path is None:
        inner = sorted(
            p.parent.name for p in d.glob("*/SQLTemplateGenerator") if p.is_dir()
        ) or sorted(p.parent.name for p in d.glob("*/*/SQLTemplateGenerator") if p.is_dir())
        hint = f"; it holds the benchmarks {inner}: pass one of them" if inner else ""
        raise ConfigError(f"--grammar {d}: no SQLTemplateGenerator sql_templates.json{hint}")
    with_ids = sql_templates_in_order(_load_json(ids_path)) if ids_path else None
    sqls = sql_templates_in_order(_load_json(sql_path)) if sql_path else list(with_ids or [])
    if sql_path is None:
        with_ids = None  # the _with_ids templates themselves; their id columns are split off
    out = GrammarImport([], {"several_answers": 0, "unmatched": 0})
    out.files = [str(p) for p in (sql_path, ids_path) if p is not None]
    per_cohort = []
    for step, c in enumerate(cohorts, 1):
        if on_step is not None:
            on_step(step - 1, len(cohorts))
        tt_path = _grammar_file(d, "TextTemplateGenerator", f"{c}.json")
        qa_path = _grammar_file(d, "QADataGenerator", f"{c}_with_ids.json", f"{c}.json")
        if qa_path is None:
            raise ConfigError(f"--grammar {d}: no QADataGenerator file for cohort {c!r}")
        out.files += [str(p) for p in (tt_path, qa_path) if p is not None]
        rows_have_ids = qa_path.name.endswith("_with_ids.json")
        groups, skipped = import_qa_data(
            sqls,
            _load_json(qa_path),
            c,
            text_templates=_load_json(tt_path) if tt_path else None,
            with_ids=with_ids if rows_have_ids else None,
            dataset_id=dataset_id,
            examples=out.examples,
        )
        for k, v in skipped.items():
            out.skipped[k] = out.skipped.get(k, 0) + v
        per_cohort.append(groups)
    out.groups = merge_cohorts(*per_cohort)
    return out


def import_grammar_dir(
    directory: str | Path,
    cohorts: Sequence[str] = ("short", "long"),
    *,
    dataset_id: str = "grammar",
) -> list[SemanticGroup]:
    """The groups of :func:`read_grammar_dir` (what was skipped is in its report)."""
    return read_grammar_dir(directory, cohorts, dataset_id=dataset_id).groups
