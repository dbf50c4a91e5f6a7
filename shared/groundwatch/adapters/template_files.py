"""The template file as YAML text, both ways (the data and its checks are in
:mod:`groundwatch.core.generation.template_file`; YAML parsing stays out of the core)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from groundwatch.core.generation.template_file import HEADER, entries_from_data, templates_to_data
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.errors import ConfigError, parse_error_line


def dump_templates(
    templates: Sequence[SqlTemplate],
    text_templates: Mapping[str, Mapping[str, Sequence[str]]],
    *,
    dialect: str,
) -> str:
    """The templates as the YAML file people edit (with a header saying how)."""
    body = yaml.safe_dump(
        templates_to_data(templates, text_templates, dialect=dialect),
        sort_keys=False,
        allow_unicode=True,
        width=1000,
    )
    return HEADER + body


def parse_template_file(text: str) -> list[dict[str, Any]]:
    """The entries of a template file's text (ConfigError, one line, if it is malformed)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"template file is not valid YAML: {parse_error_line(e)}") from e
    return entries_from_data(data)


def read_template_file(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"--templates: no such file {path}")
    return parse_template_file(path.read_text(encoding="utf-8"))
