"""Bad configuration fails at start-up with the field named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from groundwatch.config import CommonSettings, load_settings
from groundwatch.errors import ConfigError

pytestmark = pytest.mark.unit


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


@pytest.mark.parametrize("script", ["groundwatch-judge", "groundwatch-generator"])
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
