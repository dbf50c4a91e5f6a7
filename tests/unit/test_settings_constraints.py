"""Every constrained ``GW_*`` setting refuses a value outside its bounds by name, and every entry
point refuses it at start-up in one line with exit 2 — whether or not that entry point reads it
on the path the command takes (``run --once`` accepted ``GW_RETAIN_CYCLES=-5`` and
``GW_LOG_LEVEL=LOUD`` without a word)."""

from __future__ import annotations

import os
import sys
import typing
from collections.abc import Iterator

import annotated_types as at
import pytest
from pydantic.fields import FieldInfo

from groundwatch.app.settings import check_environment, documented
from groundwatch.errors import ConfigError


def _bad_values(field: FieldInfo) -> Iterator[tuple[str, str]]:
    """(bad value as the environment spells it, which constraint it breaks) for ``field``."""
    for m in field.metadata:
        if isinstance(m, at.Ge):
            yield str(m.ge - 1), f"ge={m.ge}"
        elif isinstance(m, at.Gt):
            yield str(m.gt), f"gt={m.gt}"
        elif isinstance(m, at.Le):
            yield str(m.le + 1), f"le={m.le}"
        elif isinstance(m, at.Lt):
            yield str(m.lt), f"lt={m.lt}"
        elif isinstance(m, at.MinLen) and m.min_length == 1 and _is_list(field):
            # a text's "" is no bad value: an empty variable counts as unset (the default)
            yield "[]", "min_length=1"
        elif isinstance(m, at.MaxLen):
            yield "x" * (m.max_length + 1), f"max_length={m.max_length}"
    if typing.get_origin(field.annotation) is typing.Literal:
        yield "NOT-A-CHOICE", "one of " + "/".join(map(str, typing.get_args(field.annotation)))
    if field.annotation is float:
        yield "inf", "finite"


def _is_list(field: FieldInfo) -> bool:
    return typing.get_origin(field.annotation) is list


def _cases() -> list[tuple[str, str, str]]:
    cases: dict[tuple[str, str], str] = {}
    for _, cls in documented():
        prefix = str(cls.model_config.get("env_prefix", "")).upper()
        for name, field in cls.model_fields.items():
            for value, why in _bad_values(field):
                cases.setdefault((prefix + name.upper(), value), why)
    return [(var, value, why) for (var, value), why in cases.items()]


CASES = _cases()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for k in list(os.environ):
        if k.startswith("GW_"):
            monkeypatch.delenv(k)
    return monkeypatch


def test_the_audit_covers_the_settings_a_new_user_set() -> None:
    names = {var for var, _, _ in CASES}
    assert {"GW_RETAIN_CYCLES", "GW_LOG_LEVEL", "GW_INTERVAL_S", "GW_PORT"} <= names
    assert len(names) > 60  # every class of documented() was walked, not one


@pytest.mark.parametrize(("var", "value", "why"), CASES, ids=[f"{c[0]}={c[1][:12]}" for c in CASES])
def test_a_value_breaking_a_constraint_is_refused_by_name(
    clean_env: pytest.MonkeyPatch, var: str, value: str, why: str
) -> None:
    clean_env.setenv(var, value)
    with pytest.raises(ConfigError) as err:
        check_environment()
    message = str(err.value)
    assert f"{var}:" in message, (why, message)
    assert "\n" not in message


def test_the_defaults_pass(clean_env: pytest.MonkeyPatch) -> None:
    check_environment()


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--once"],
        ["view"],
        ["store", "stats"],
        ["store", "prune", "--dry-run"],
        ["gen", "templates"],
        ["demo", "--quiet"],
        ["report"],
        ["groups"],
        ["show", "g1"],
        ["db-upgrade"],
    ],
)
def test_every_command_exits_2_with_one_line_naming_the_setting(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    from groundwatch.cli.main import main

    clean_env.setenv("GW_RETAIN_CYCLES", "-5")
    clean_env.setenv("GW_LOG_LEVEL", "LOUD")
    clean_env.setattr(sys, "argv", ["groundwatch", *argv])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "GW_RETAIN_CYCLES: Input should be greater than or equal to 1" in err
    assert "GW_LOG_LEVEL: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'" in err


def test_help_and_the_settings_table_still_answer(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """How an operator finds the allowed values must work while a value is bad."""
    from groundwatch.cli.main import main

    clean_env.setenv("GW_LOG_LEVEL", "LOUD")
    for argv in (["settings"], ["run", "--help"]):
        clean_env.setattr(sys, "argv", ["groundwatch", *argv])
        try:
            main()
        except SystemExit as stop:
            assert stop.value.code in (0, None)
    assert "GW_LOG_LEVEL" in capsys.readouterr().out


@pytest.mark.parametrize("service", ["judge", "rag_runner", "analytics", "generator"])
def test_a_service_refuses_a_setting_it_reads_only_later(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], service: str
) -> None:
    """GW_RETAIN_CYCLES is not a field of the service's own class; it is still checked."""
    import importlib

    main = importlib.import_module(f"services.{service}.app").main
    clean_env.setenv("GW_RETAIN_CYCLES", "-5")
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: invalid configuration: GW_RETAIN_CYCLES:")
    assert "\n" not in err


def test_only_the_harness_variables_skip_the_command_lines_check() -> None:
    """The CLI spares a plain report the settings' imports when only the harness's variables
    are set; a real setting is never taken for one of them."""
    from groundwatch.cli.settings_doc import may_set_settings, rows

    skipped = {name for name, *_ in rows() if not may_set_settings({name: "1"})}
    # test only (the services check it), and the CLI's own traceback switch
    assert skipped <= {"GW_TEST_KILL_BEFORE_COMMIT", "GW_DEBUG"}
    assert not may_set_settings({"GW_KAFKA_PORT": "9092", "GW_TEST_DATABASE_URL": "x"})
