"""RAGProbe scenario specs from YAML files: the user's, and the shipped S1–S6 package data.

Reading files is I/O, so it lives here; the core parses and validates the mapping a file holds
(:func:`groundwatch.core.scenarios.spec.parse_scenario`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

import yaml

from groundwatch.core.scenarios.spec import ScenarioSpec, parse_scenario
from groundwatch.errors import ConfigError, parse_error_line

#: Where the shipped scenario specs live (package data of ``groundwatch``).
BUILTIN_PACKAGE = "groundwatch"
BUILTIN_DIR = "scenario_specs"


def load_scenario(path: str | Path) -> ScenarioSpec:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {parse_error_line(exc)}") from exc
    return parse_scenario(data, str(p))


def load_scenarios(paths: Iterable[str | Path]) -> dict[str, ScenarioSpec]:
    """Scenarios from files and directories (every ``*.yaml``/``*.yml`` in them), by id."""
    out: dict[str, ScenarioSpec] = {}
    for raw in paths:
        p = Path(raw)
        files = sorted([*p.glob("*.yaml"), *p.glob("*.yml")]) if p.is_dir() else [p]
        for f in files:
            spec = load_scenario(f)
            if spec.id in out:
                raise ConfigError(f"{f}: scenario id {spec.id!r} is defined twice")
            out[spec.id] = spec
    return out


def builtin_scenarios() -> dict[str, ScenarioSpec]:
    """The shipped RAGProbe scenarios S1–S6, read from the package's YAML files."""
    root = resources.files(BUILTIN_PACKAGE).joinpath(BUILTIN_DIR)
    out: dict[str, ScenarioSpec] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".yaml", ".yml")):
            spec = parse_scenario(yaml.safe_load(entry.read_text(encoding="utf-8")), entry.name)
            out[spec.id] = spec
    return out


def select_scenarios(
    wanted: str | Sequence[str], available: dict[str, ScenarioSpec] | None = None
) -> list[ScenarioSpec]:
    """``"all"``, ``"S1,S3"`` or a list of ids → the specs, in the order asked (all: by id)."""
    specs = available if available is not None else builtin_scenarios()
    if isinstance(wanted, str):
        ids = [w.strip() for w in wanted.split(",") if w.strip()]
    else:
        ids = [w.strip() for w in wanted]
    if ids == ["all"]:
        return [specs[k] for k in sorted(specs)]
    unknown = [i for i in ids if i not in specs]
    if unknown or not ids:
        raise ConfigError(f"unknown scenarios {unknown or ids}; known: {sorted(specs)} or 'all'")
    return [specs[i] for i in dict.fromkeys(ids)]
