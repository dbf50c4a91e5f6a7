"""Bad configuration fails at start-up with the field named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groundwatch.errors import ConfigError
from groundwatch.runtime.settings import CommonSettings, load_settings

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "env, field",
    [
        ({"GW_BUS": "rabbit"}, "GW_BUS"),
        ({"GW_KAFKA_BOOTSTRAP": "nohostport"}, "GW_KAFKA_BOOTSTRAP"),
        ({"GW_PORT": "99999"}, "GW_PORT"),
        ({"GW_TOPIC_PREFIX": "bad prefix!"}, "GW_TOPIC_PREFIX"),
        ({"GW_PARTITIONS": "zero"}, "GW_PARTITIONS"),
    ],
)
def test_bad_value_names_the_field(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], field: str
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=field):
        load_settings(CommonSettings)


def test_defaults_are_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(__import__("os").environ):
        if k.startswith("GW_"):
            monkeypatch.delenv(k)
    s = load_settings(CommonSettings)
    assert s.bus == "memory" and s.database_url.startswith("sqlite")


@pytest.mark.parametrize(
    "script",
    [
        "groundwatch-judge",
        "groundwatch-generator",
        "groundwatch-rag-runner",
        "groundwatch-analytics",
        "groundwatch-reference-rag",
    ],
)
def test_service_exits_2_naming_the_field(script: str) -> None:
    exe = __import__("pathlib").Path(sys.executable).with_name(script)
    proc = subprocess.run(
        [str(exe)],
        env={"GW_PORT": "not-a-port", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "GW_PORT" in proc.stderr and "not-a-port" in proc.stderr


def _service_settings() -> dict[str, type[CommonSettings]]:
    from groundwatch.reference_rag.settings import ReferenceRagSettings
    from services.analytics.settings import AnalyticsSettings
    from services.generator.settings import GeneratorSettings
    from services.judge.settings import JudgeServiceSettings
    from services.rag_runner.settings import RunnerSettings

    return {
        "generator": GeneratorSettings,
        "rag-runner": RunnerSettings,
        "judge": JudgeServiceSettings,
        "analytics": AnalyticsSettings,
        "reference-rag": ReferenceRagSettings,
    }


@pytest.mark.parametrize(
    "service, env, field",
    [
        ("generator", {"GW_FORMS": "0"}, "GW_FORMS"),
        ("generator", {"GW_RATE": "-1"}, "GW_RATE"),
        ("generator", {"GW_TARGETS": "[]"}, "GW_TARGETS"),
        ("rag-runner", {"GW_RUNNER_BATCH": "0"}, "GW_RUNNER_BATCH"),
        (
            "rag-runner",
            {"GW_RUNNER_REFERENCE_CONCURRENCY": "100000"},
            "GW_RUNNER_REFERENCE_CONCURRENCY",
        ),
        ("analytics", {"GW_WINDOW_RUNS": "-1"}, "GW_WINDOW_RUNS"),
        ("reference-rag", {"GW_RAG_ERROR_RATE": "2"}, "GW_RAG_ERROR_RATE"),
        ("reference-rag", {"GW_RAG_RETRIEVER": "grep"}, "GW_RAG_RETRIEVER"),
        ("reference-rag", {"GW_RAG_TOP_K": "0"}, "GW_RAG_TOP_K"),
    ],
)
def test_each_service_validates_its_own_settings_at_start_up(
    monkeypatch: pytest.MonkeyPatch, service: str, env: dict[str, str], field: str
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError, match=field):
        load_settings(_service_settings()[service])


@pytest.mark.parametrize(
    "service, var", [("generator", "GW_API_TOKEN"), ("reference-rag", "GW_RAG_ADMIN_TOKEN")]
)
def test_placeholder_secrets_are_refused_without_echoing_them(
    monkeypatch: pytest.MonkeyPatch, service: str, var: str
) -> None:
    monkeypatch.setenv(var, "ChangeMe")
    with pytest.raises(ConfigError, match=var) as err:
        load_settings(_service_settings()[service])
    assert "ChangeMe" not in str(err.value)


@pytest.mark.parametrize(
    "url",
    ["postgress://u:hunter2@db/gw", "nonsense", "oracle+nodriver://u:hunter2@db/gw"],
)
@pytest.mark.parametrize("script", ["groundwatch-analytics", "groundwatch-judge"])
def test_bad_database_url_exits_2_with_one_line_naming_the_variable(script: str, url: str) -> None:
    """Before: a raw NoSuchModuleError traceback (exit 3)."""
    exe = __import__("pathlib").Path(sys.executable).with_name(script)
    proc = subprocess.run(
        [str(exe)],
        env={"GW_DATABASE_URL": url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "GW_DATABASE_URL" in lines[0], proc.stderr
    assert "hunter2" not in proc.stderr and "Traceback" not in proc.stderr


def test_bad_database_url_option_of_the_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    dataset, targets = tmp_path / "d.jsonl", tmp_path / "t.yaml"
    dataset.write_text("")
    targets.write_text(
        "targets:\n  - name: t\n    type: http_json\n    url: http://127.0.0.1:9/query\n"
    )
    exe = Path(sys.executable).with_name("groundwatch")
    args = ["run", "--once", "--dataset", str(dataset), "--targets", str(targets)]
    proc = subprocess.run(
        [str(exe), *args, "--database-url", "postgress://u:hunter2@db/gw"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--database-url" in lines[0], proc.stderr
    assert "hunter2" not in proc.stderr


def test_bad_source_url_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.generator.settings import GeneratorSettings

    monkeypatch.setenv("GW_SOURCE_URL", "sqlite3:///x.db")
    with pytest.raises(ConfigError, match="GW_SOURCE_URL") as info:
        load_settings(GeneratorSettings)
    assert "x.db" not in str(info.value)


def test_an_empty_variable_leaves_the_option_in_charge(tmp_path: Path) -> None:
    """``GW_DATABASE_URL=`` (set, empty) is unset: the command line's URL stands, and the only
    complaint is the option the command really lacks."""
    import os

    cli = Path(sys.executable).with_name("groundwatch")
    env = {**os.environ, "GW_DATABASE_URL": ""}
    url = f"sqlite:///{tmp_path / 'cont.db'}"
    proc = subprocess.run(
        [str(cli), "run", "--database-url", url, "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "GW_DATABASE_URL" not in proc.stderr and "--dataset" in proc.stderr, proc.stderr
