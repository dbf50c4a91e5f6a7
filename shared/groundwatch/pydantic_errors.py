"""A pydantic validation failure as one line a person can act on.

pydantic's own message spans several lines per problem, ends each with a documentation URL and
says "Extra inputs are not permitted" for a misspelt key. Every command must say why it failed in
one line, so each problem here is ``field.path: what is wrong``, an unknown key or tag names the
closest known one (``answr_path`` → ``answer_path``, ``htp_json`` → ``http_json``), and a value
out of range names the range. The known keys come from the model itself (walked along the
error's location), so a new field is suggested without anyone listing it here.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

#: Problems one line names before it says how many more there are.
MAX_PROBLEMS = 3


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``known``, else ``""``."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _members(annotation: Any) -> list[Any]:
    """The alternatives of a union (``X | None``, ``Annotated[A | B, ...]``), else itself."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return [m for a in get_args(annotation) for m in _members(a)]
    if origin is not None and getattr(annotation, "__metadata__", None) is not None:
        return _members(get_args(annotation)[0])  # Annotated[...]
    return [annotation]


def _tag_of(model: type[BaseModel]) -> set[str]:
    """The values of a model's ``Literal`` fields: the tags a discriminated union picks it by."""
    out: set[str] = set()
    for field in model.model_fields.values():
        if get_origin(field.annotation) is Literal:
            out.update(str(a) for a in get_args(field.annotation))
    return out


def _step(annotation: Any, part: int | str) -> tuple[Any, bool]:
    """The annotation one location part further in, and whether ``part`` was a union member's
    tag (which pydantic puts in the location although nobody wrote it)."""
    members = _members(annotation)
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if len(models) > 1 and isinstance(part, str):  # a tagged union: the tag comes first
        for member in models:
            if part in _tag_of(member):
                return member, True
    for member in members:
        is_model = isinstance(member, type) and issubclass(member, BaseModel)
        if is_model and isinstance(part, str) and part in member.model_fields:
            return member.model_fields[part].annotation, False
        origin = get_origin(member)
        args = get_args(member)
        if isinstance(part, int) and origin in (list, tuple, Sequence, set, frozenset) and args:
            return args[0], False
        if origin in (dict, Mapping) and len(args) == 2:
            return args[1], False
    return None, False


def _known_keys(annotation: Any) -> list[str]:
    keys: list[str] = []
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, field in member.model_fields.items():
                keys.append(field.alias or name)
    return keys


def _problem(error: Mapping[str, Any], model: type[BaseModel] | None) -> str:
    loc: tuple[int | str, ...] = tuple(error.get("loc", ()))
    annotation: Any = model
    path = ""
    parent: Any = model
    for i, part in enumerate(loc):
        if i == len(loc) - 1:
            parent = annotation
        annotation, is_tag = _step(annotation, part) if annotation is not None else (None, False)
        if is_tag:
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    where = path or "<root>"
    if kind == "extra_forbidden" and loc:
        key = str(loc[-1])
        known = _known_keys(parent)
        hint = did_you_mean(key, known)
        return f"{where}: unknown key{hint}" + (
            "" if hint or not known else f"; known: {', '.join(known)}"
        )
    if kind == "union_tag_invalid":
        tag = str(ctx.get("tag", ""))
        expected = [t.strip(" '\"") for t in str(ctx.get("expected_tags", "")).split(",")]
        field = str(ctx.get("discriminator", "type")).strip("'\"")
        at = f"{where}.{field}" if path else field
        return f"{at}: unknown {tag!r}{did_you_mean(tag, expected)}; known: {', '.join(expected)}"
    if kind == "union_tag_not_found":
        field = str(ctx.get("discriminator", "type")).strip("'\"")
        return f"{where}: {field} is missing"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        bound = _range(parent, loc[-1] if loc else None)
        got = error.get("input")
        return f"{where}: {got!r} is out of range{bound or ': ' + error['msg']}"
    return f"{where}: {error['msg']}"


def _range(annotation: Any, name: int | str | None) -> str:
    """``" (allowed: 0 ≤ x ≤ 1)"`` from a model field's constraints, else ``""``."""
    for member in _members(annotation):
        if (
            isinstance(member, type)
            and issubclass(member, BaseModel)
            and name in member.model_fields
        ):
            low = high = None
            low_sign = high_sign = "≤"
            for meta in member.model_fields[str(name)].metadata:
                if getattr(meta, "ge", None) is not None:
                    low = meta.ge
                if getattr(meta, "gt", None) is not None:
                    low, low_sign = meta.gt, "<"
                if getattr(meta, "le", None) is not None:
                    high = meta.le
                if getattr(meta, "lt", None) is not None:
                    high, high_sign = meta.lt, "<"
            if low is not None and high is not None:
                return f" (allowed: {low} {low_sign} {name} {high_sign} {high})"
            if low is not None:
                return f" (allowed: {name} {'>=' if low_sign == '≤' else '>'} {low})"
            if high is not None:
                return f" (allowed: {name} {'<=' if high_sign == '≤' else '<'} {high})"
    return ""


def validation_line(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """``exc`` as one line: each problem ``path: what is wrong`` (at most :data:`MAX_PROBLEMS`),
    with the closest known key or tag and the allowed range where they apply. ``model`` is the
    model validated (its fields give the suggestions); without it only the paths are named."""
    errors = exc.errors(include_url=False)
    problems = list(dict.fromkeys(_problem(e, model) for e in errors))
    more = f" (+{len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
    return "; ".join(" ".join(p.split()) for p in problems[:MAX_PROBLEMS]) + more
