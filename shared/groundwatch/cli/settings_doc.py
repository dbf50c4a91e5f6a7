"""``groundwatch settings``: every ``GW_*`` variable of every service, from the settings classes
(:func:`groundwatch.app.settings.documented` lists them; the library never imports the services).

The README's configuration table is this command's ``--markdown`` output (a test keeps the two
equal), so the documentation cannot drift from what the services read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import typer
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from groundwatch.cli.common import one_line_errors


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
    from groundwatch.app.settings import documented

    sources = documented()
    common = sources[0][1]
    seen: set[str] = set()
    out = []
    for who, cls in sources:
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
    out += CLI_VARIABLES
    return out


#: Variables the ``groundwatch`` command reads itself, outside every settings class.
CLI_VARIABLES = [
    (
        "GW_DEBUG",
        "unset",
        "groundwatch",
        "Set: an unexpected error shows its traceback instead of one line.",
    ),
    (
        "GW_MIN_ANSWERED",
        "`0.9`",
        "run",
        "Default of `run --once --min-answered`: the gate fails (exit 1) when a target answered"
        " less than this share of its newest cycle's probes (shed by the open circuit or failed);"
        " 0: off.",
    ),
]


#: ``GW_*`` variables read outside the settings classes (the CLI's own, and the test harness's
#: and scripts' prefixes), so they are not taken for typos.
OTHER_VARIABLES = frozenset({"GW_DEBUG", "GW_CHAOS_SEED"})
OTHER_PREFIXES = ("GW_TEST_", "GW_KAFKA_", "GW_PG_", "GW_MARIADB_", "GW_PROM_")


#: The harness's and scripts' own variables under a prefix real settings share (``GW_KAFKA_*``).
HARNESS_VARIABLES = frozenset(
    {
        "GW_KAFKA_PORT",
        "GW_KAFKA_BROKERS",
        "GW_KAFKA_HOME",
        "GW_KAFKA_CONTROLLER_PORT",
        "GW_KAFKA_READY_TIMEOUT",
        "GW_KAFKA_HEAP",
        "GW_KAFKA_VERSION",
    }
)
#: Prefixes only the harness and scripts use (``GW_KAFKA_`` holds settings too).
HARNESS_PREFIXES = tuple(p for p in OTHER_PREFIXES if p != "GW_KAFKA_")


def may_set_settings(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` sets a ``GW_*`` variable that may be a setting, so that validating
    every settings class (which imports the database driver) is worth its cost: the harness's
    own variables alone (``make test``, the scripts) are not."""
    return any(
        n.startswith("GW_")
        and not n.startswith(HARNESS_PREFIXES)
        and n not in HARNESS_VARIABLES
        and n not in OTHER_VARIABLES
        for n in environ
    )


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One warning line per ``GW_*`` variable of ``environ`` that no setting reads — a typo
    (``GW_JUDGE_LLM_ENABLE``) is otherwise silently ignored and the default used — with the
    closest known name."""
    from groundwatch.pydantic_errors import did_you_mean

    # The harness's and scripts' prefixes are set aside first: reading every settings class
    # imports the database driver, which a plain report must not pay for under `make test`.
    names = [
        n
        for n in environ
        if n.startswith("GW_") and not n.startswith(OTHER_PREFIXES) and n not in OTHER_VARIABLES
    ]
    if not names:
        return []
    known = {row[0] for row in rows()} | OTHER_VARIABLES
    out = []
    for name in sorted(names):
        if name in known:
            continue
        out.append(f"{name} is not a groundwatch setting{did_you_mean(name, known)}; it is ignored")
    return out


def markdown() -> str:
    lines = ["| variable | default | read by | meaning |", "|---|---|---|---|"]
    lines += [f"| `{v}` | {d} | {w} | {m} |" for v, d, w, m in rows()]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("settings")
    @one_line_errors
    def settings_cmd(
        as_markdown: Annotated[bool, typer.Option("--markdown", help="A markdown table.")] = False,
    ) -> None:
        """List every GW_* environment variable the services read, with defaults."""
        if as_markdown:
            typer.echo(markdown())
            return
        for var, default, who, desc in rows():
            typer.echo(f"{var:34} {default:28} {who:20} {desc}")
