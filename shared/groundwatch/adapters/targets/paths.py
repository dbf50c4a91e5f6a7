"""Find values in a JSON reply by a dotted path (``data.answer``, ``docs.*.id``) or JSONPath.

A path beginning with ``$`` is JSONPath (jsonpath-ng); anything else is dotted, where a number
indexes a list and ``*`` maps over one. Dotted paths cover most replies and need no escaping in
YAML; JSONPath is there for the rest.
"""

from __future__ import annotations

from typing import Any

from jsonpath_ng import JSONPath
from jsonpath_ng.ext.parser import parse as parse_jsonpath


class PathError(ValueError):
    """The path does not lead anywhere in this document."""


class MissingPath(PathError):
    """A key or index the path names is absent (as opposed to a value of the wrong type)."""


#: What :meth:`ReplyPath.get` returns where the path leads nowhere.
ABSENT: Any = object()


class ReplyPath:
    """A compiled path; :meth:`one` for a single value, :meth:`many` for a list of values,
    :meth:`get` for a value that may be absent (a stream's events: most lack most fields)."""

    def __init__(self, expr: str) -> None:
        expr = expr.strip()
        if not expr:
            raise ValueError("empty path")
        self.expr = expr
        self._jsonpath: JSONPath | None = None
        self._parts: list[str] = []
        if expr.startswith("$"):
            try:
                self._jsonpath = parse_jsonpath(expr)
            except Exception as exc:  # jsonpath-ng raises lexer, parser and bare Exceptions
                raise ValueError(f"invalid JSONPath {expr!r}: {exc}") from None
        else:
            self._parts = expr.split(".")
            if any(p == "" for p in self._parts):
                raise ValueError(f"invalid dotted path {expr!r}")
        #: a dotted path without ``*``: walked key by key, an absence known without a message
        self._steps: list[str | int] | None = (
            [int(p) if _is_index(p) else p for p in self._parts]
            if self._parts and "*" not in self._parts
            else None
        )

    def __repr__(self) -> str:
        return f"ReplyPath({self.expr!r})"

    def _find(self, doc: Any) -> tuple[list[Any], bool]:
        """Matches, and whether the path fans out (so zero matches is a legal empty list)."""
        if self._jsonpath is not None:
            return [m.value for m in self._jsonpath.find(doc)], True
        current: list[Any] = [doc]
        fans_out = False
        for part in self._parts:
            nxt: list[Any] = []
            for node in current:
                if part == "*":
                    fans_out = True
                    if isinstance(node, list):
                        nxt.extend(node)
                    elif isinstance(node, dict):
                        nxt.extend(node.values())
                    else:
                        raise PathError(f"{self.expr}: '*' applied to a {type(node).__name__}")
                elif isinstance(node, dict):
                    if part not in node:
                        keys = ", ".join(map(str, list(node)[:10])) or "none"
                        raise MissingPath(f"{self.expr}: key {part!r} missing (keys: {keys})")
                    nxt.append(node[part])
                elif isinstance(node, list) and _is_index(part):
                    idx = int(part)
                    if not -len(node) <= idx < len(node):
                        raise MissingPath(f"{self.expr}: index {idx} out of range")
                    nxt.append(node[idx])
                else:
                    raise PathError(f"{self.expr}: cannot take {part!r} of a {type(node).__name__}")
            current = nxt
        return current, fans_out

    @property
    def single(self) -> bool:
        """A dotted path without ``*``: it leads to one value or to none."""
        return self._steps is not None

    def get(self, doc: Any) -> Any:
        """The one value the path leads to, or :data:`ABSENT` where a key or an index it names
        is missing (a value of the wrong type on the way is still a :class:`PathError`)."""
        steps = self._steps
        if steps is None:
            try:
                return self.one(doc)
            except MissingPath:
                return ABSENT
        node = doc
        for step in steps:
            if type(node) is dict:
                node = node.get(step if type(step) is str else str(step), ABSENT)
            elif type(node) is list and type(step) is int:
                node = node[step] if -len(node) <= step < len(node) else ABSENT
            else:
                return self.one(doc)  # the wrong type on the way: one() says which
            if node is ABSENT:
                return ABSENT
        return node

    def one(self, doc: Any) -> Any:
        found, _ = self._find(doc)
        if len(found) != 1:
            raise PathError(f"{self.expr}: expected one value, found {len(found)}")
        return found[0]

    def many(self, doc: Any) -> list[Any]:
        """A list: the list the path points at, or the values a fanning-out path collects."""
        found, fans_out = self._find(doc)
        if not fans_out:
            if len(found) != 1:
                raise PathError(f"{self.expr}: expected one list, found {len(found)} values")
            value = found[0]
            if value is None:
                return []
            if not isinstance(value, list):
                raise PathError(f"{self.expr}: expected a list, got {type(value).__name__}")
            return value
        if len(found) == 1 and isinstance(found[0], list):
            return list(found[0])  # JSONPath '$.ids' points at the list itself
        return found


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()
