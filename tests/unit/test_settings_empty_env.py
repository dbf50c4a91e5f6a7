"""An empty ``GW_*`` variable counts as unset: ``GW_X=`` in a shell, or a compose file's
``${X:-}``, leaves a variable set to "", and the setting must then take its default rather than
refuse the empty text (a URL, a number and a flag each refuse it)."""

from __future__ import annotations

import pytest

from groundwatch.app.settings import RunnerSettings, check_environment, documented
from groundwatch.runtime.settings import CommonSettings, load_settings
from groundwatch.stages.judge.tiered import JudgeSettings

pytestmark = pytest.mark.unit


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for k in list(os.environ):
        if k.startswith("GW_"):
            monkeypatch.delenv(k)
    return monkeypatch


def test_an_empty_url_number_and_flag_take_their_defaults(bare_env: pytest.MonkeyPatch) -> None:
    for name in ("GW_DATABASE_URL", "GW_PARTITIONS", "GW_JUDGE_LLM_ENABLED"):
        bare_env.setenv(name, "")
    common = load_settings(CommonSettings)
    default = CommonSettings.model_fields
    assert common.database_url == default["database_url"].default
    assert common.partitions == default["partitions"].default
    assert (
        load_settings(JudgeSettings).llm_enabled
        is JudgeSettings.model_fields["llm_enabled"].default
    )
    check_environment()  # what every entry point runs first refuses none of them


def test_every_settings_class_ignores_empty_variables() -> None:
    loose = [
        cls.__name__ for _, cls in documented() if not cls.model_config.get("env_ignore_empty")
    ]
    assert loose == []


def test_a_set_value_still_counts(bare_env: pytest.MonkeyPatch) -> None:
    bare_env.setenv("GW_PARTITIONS", "3")
    assert load_settings(CommonSettings).partitions == 3


def test_off_disables_the_reference_target(bare_env: pytest.MonkeyPatch) -> None:
    default = RunnerSettings.model_fields["runner_reference_url"].default
    bare_env.setenv("GW_RUNNER_REFERENCE_URL", "")
    assert load_settings(RunnerSettings).runner_reference_url == default
    bare_env.setenv("GW_RUNNER_REFERENCE_URL", "off")
    assert load_settings(RunnerSettings).runner_reference_url is None
