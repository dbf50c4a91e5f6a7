"""``groundwatch settings``: every ``GW_*`` variable of every service, from the settings classes.

The README's configuration table is this command's ``--markdown`` output (a test keeps the two
equal), so the documentation cannot drift from what the services read.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

import typer
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

#: (who reads it, settings class path); shared fields are listed once, under "all services".
SOURCES: tuple[tuple[str, str], ...] = (
    ("all services", "groundwatch.runtime.settings:CommonSettings"),
    ("generator", "services.generator.settings:GeneratorSettings"),
    ("rag-runner", "services.rag_runner.settings:RunnerSettings"),
    ("judge", "services.judge.settings:JudgeServiceSettings"),
    ("judge", "groundwatch.stages.judge.tiered:JudgeSettings"),
    ("judge, rag-runner", "groundwatch.stages.judge.reference_free:ReferenceFreeSettings"),
    ("judge", "groundwatch.stages.judge.semantic:SemanticSettings"),
    ("judge, LLM features", "groundwatch.adapters.llm.client:LlmSettings"),
    ("analytics", "services.analytics.settings:AnalyticsSettings"),
    ("reference-rag", "groundwatch.reference_rag.settings:ReferenceRagSettings"),
)


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
    elif field.default is PydanticUndefined:
        return "(required)"
    else:
        value = field.default
    if value is None or value == []:
        return "unset" if value is None else "[]"
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    return f"`{value}`"


def rows() -> list[tuple[str, str, str, str]]:
    """(variable, default, read by, description) for every setting, shared ones once."""
    common = _load(SOURCES[0][1])
    seen: set[str] = set()
    out = []
    for who, path in SOURCES:
        cls = _load(path)
        prefix = str(cls.model_config.get("env_prefix", ""))
        for name, field in cls.model_fields.items():
            var = f"{prefix}{name}".upper()
            overridden_port = name == "port" and cls is not common
            if cls is common and name == "port":
                continue  # every service overrides it; listed per service below
            if var in seen and not overridden_port:
                continue
            seen.add(var)
            if overridden_port:
                out.append((var, _default(field), who, f"HTTP port of the {who} service."))
                continue
            desc = (field.description or "").replace("|", "\\|")
            out.append((var, _default(field), who, desc))
    return out


def markdown() -> str:
    lines = ["| variable | default | read by | meaning |", "|---|---|---|---|"]
    lines += [f"| `{v}` | {d} | {w} | {m} |" for v, d, w, m in rows()]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("settings")
    def settings_cmd(
        as_markdown: Annotated[bool, typer.Option("--markdown", help="A markdown table.")] = False,
    ) -> None:
        """List every GW_* environment variable the services read, with defaults."""
        if as_markdown:
            typer.echo(markdown())
            return
        for var, default, who, desc in rows():
            typer.echo(f"{var:34} {default:28} {who:20} {desc}")
