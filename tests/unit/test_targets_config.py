from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import yaml

from groundwatch.adapters.targets import (
    CallableTarget,
    HttpJsonTarget,
    OpenAIChatTarget,
    TargetReply,
)
from groundwatch.adapters.targets.config import (
    HttpJsonConfig,
    OpenAIChatConfig,
    build_targets,
    load_targets,
    parse_targets,
)
from groundwatch.errors import ConfigError

pytestmark = pytest.mark.unit

YAML = """
targets:
  - name: support-bot
    type: http_json
    url: https://rag.internal/v1/ask
    headers: {Authorization: "Bearer ${BOT_TOKEN}"}
    body: {question: "{query}", top_k: 5}
    answer_path: data.answer
    retrieved_ids_path: "$.data.sources[*].id"
    contexts_path: data.sources.*.text
    limits: {concurrency: 4, rate_per_s: 2, timeout_s: 20}
  - name: llm-only
    type: openai_chat
    model: gpt-4o-mini
    api_key_env: MY_OPENAI_KEY
  - name: local
    type: callable
    callable: "tests_helpers_echo:echo"
"""

TOML = """
[[targets]]
name = "reference"
type = "http_json"
url = "http://127.0.0.1:8010/query"

[targets.limits]
concurrency = 16
retries = 0
"""


def echo(query: str) -> str:
    return f"echo {query}"


def test_yaml_and_toml_files(tmp_path: Path) -> None:
    y = tmp_path / "targets.yaml"
    y.write_text(YAML, encoding="utf-8")
    configs = load_targets(y)
    assert [c.name for c in configs] == ["support-bot", "llm-only", "local"]
    http = configs[0]
    assert isinstance(http, HttpJsonConfig)
    assert http.limits.concurrency == 4 and http.limits.rate_per_s == 2
    assert http.body == {"question": "{query}", "top_k": 5}
    assert "${BOT_TOKEN}" in http.headers["Authorization"]  # the file holds references only

    t = tmp_path / "targets.toml"
    t.write_text(TOML, encoding="utf-8")
    (ref,) = load_targets(t)
    assert isinstance(ref, HttpJsonConfig)
    assert ref.limits.concurrency == 16 and ref.limits.retries == 0
    assert ref.body == '{"query": "{query}"}' and ref.answer_path == "answer"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"targets": [{"name": "a", "type": "http_json"}]}, r"targets\[0\]\.url: Field required"),
        (
            {"targets": [{"name": "a", "type": "http_json", "url": "ftp://x"}]},
            r"targets\[0\]\.url: .*http:// or https://",
        ),
        (
            {"targets": [{"name": "a", "type": "smtp"}]},
            r"targets\[0\]\.type: unknown 'smtp'; known: http_json, openai_chat, callable$",
        ),
        (  # issue 31: a misspelt tag or key names the closest known one
            {"targets": [{"name": "a", "type": "htp_json", "url": "http://x/{query}"}]},
            r"targets\[0\]\.type: unknown 'htp_json' \(did you mean 'http_json'\?\)",
        ),
        (
            {"targets": [{"name": "a", "type": "http_json", "url": "http://x", "answr_path": "a"}]},
            r"targets\[0\]\.answr_path: unknown key \(did you mean 'answer_path'\?\)$",
        ),
        (
            {
                "targets": [
                    {"name": "a", "type": "http_json", "url": "http://x", "limits": {"retrys": 1}}
                ]
            },
            r"targets\[0\]\.limits\.retrys: unknown key \(did you mean 'retries'\?\)$",
        ),
        (
            {"targets": [{"name": "a", "type": "openai_chat", "model": "m", "temperature": 3}]},
            r"targets\[0\]\.temperature: 3 is out of range \(allowed: 0.0 ≤ temperature ≤ 2.0\)",
        ),
        (
            {
                "targets": [
                    {
                        "name": "a",
                        "type": "callable",
                        "callable": "m:f",
                        "limits": {"concurrency": 0},
                    }
                ]
            },
            r"targets\[0\]\.limits\.concurrency",
        ),
        (
            {"targets": [{"name": "a", "type": "callable", "callable": "m:f", "colour": 1}]},
            r"targets\[0\]\.colour: unknown key; known: name, limits, type, callable, in_thread$",
        ),
        (
            {
                "targets": [
                    {"name": "a", "type": "callable", "callable": "m:f"},
                    {"name": "a", "type": "callable", "callable": "m:g"},
                ]
            },
            "used twice",
        ),
        (
            {
                "targets": [
                    {"name": "a", "type": "http_json", "url": "http://x", "answer_path": "$.[["}
                ]
            },
            r"targets\[0\]\.answer_path: .*invalid JSONPath",
        ),
        (
            {"targets": [{"name": "a", "type": "http_json", "url": "http://x", "method": "GET"}]},
            "GET target takes no body",
        ),
        ({"targets": []}, "at least 1"),
    ],
)
def test_bad_config_names_the_field(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_targets(data, "targets.yaml")
    assert "\n" not in str(caught.value) and "pydantic.dev" not in str(caught.value)


def test_the_old_breaker_minimum_key_is_read_with_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``breaker_min_calls`` counted semantic groups all along: a file that still says so gets
    its value as ``breaker_min_groups`` and one warning line; both keys at once are refused."""
    target = {"name": "x", "type": "callable", "callable": "m:f"}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"targets": [{**target, "limits": {"breaker_min_calls": 7}}]}))
    with caplog.at_level(logging.WARNING):
        (config,) = load_targets(path)
    assert config.limits.breaker_min_groups == 7
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "\n" not in warned[0]
    assert "breaker_min_calls" in warned[0] and "breaker_min_groups" in warned[0]
    both = {"breaker_min_calls": 7, "breaker_min_groups": 9}
    with pytest.raises(ConfigError, match="breaker_min_groups only"):
        parse_targets([{**target, "limits": both}], "t.yaml")
    with pytest.raises(ConfigError, match="breaker_min_cals"):
        parse_targets([{**target, "limits": {"breaker_min_cals": 7}}], "t.yaml")


def test_unreadable_or_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_targets(tmp_path / "missing.yaml")
    bad = tmp_path / "t.yaml"
    bad.write_text("targets: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_targets(bad)
    other = tmp_path / "t.json"
    other.write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\.yaml, \.yml or \.toml"):
        load_targets(other)


async def test_build_targets_resolves_secrets_without_leaking_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    configs = parse_targets(
        yaml.safe_load(YAML.replace("tests_helpers_echo:echo", f"{__name__}:echo"))
    )
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = {"data": {"answer": "ok", "sources": [{"id": "s1", "text": "t1"}]}}
        return httpx.Response(200, json=body)

    keys: list[str | None] = []

    class Llm:
        async def complete(
            self,
            system: str,
            user: str,
            *,
            temperature: float = 0.0,
            n: int = 1,
            max_tokens: int | None = None,
        ) -> list[str]:
            return ["llm says"]

    def factory(config: OpenAIChatConfig, api_key: str | None) -> Llm:
        keys.append(api_key)
        return Llm()

    env = {"BOT_TOKEN": "tok-123-secret", "MY_OPENAI_KEY": "sk-secret"}
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        targets, limits = build_targets(configs, http_client=client, llm_factory=factory, env=env)
        assert isinstance(targets["support-bot"], HttpJsonTarget)
        assert isinstance(targets["llm-only"], OpenAIChatTarget)
        assert isinstance(targets["local"], CallableTarget)
        assert limits["support-bot"].timeout_s == 20
        assert await targets["support-bot"].ask("q") == TargetReply("ok", ["s1"], ["t1"])
        assert await targets["llm-only"].ask("q") == TargetReply("llm says")
        assert await targets["local"].ask("q") == TargetReply("echo q")
    assert seen[0].headers["Authorization"] == "Bearer tok-123-secret"
    assert keys == ["sk-secret"]
    shown = " ".join(repr(t) for t in targets.values()) + repr(configs) + caplog.text
    assert "tok-123-secret" not in shown and "sk-secret" not in shown

    with pytest.raises(
        ConfigError, match=r"headers\.Authorization: environment variable BOT_TOKEN"
    ):
        build_targets(configs[:1], http_client=client, env={})
    with pytest.raises(ConfigError, match="MY_OPENAI_KEY is not set"):
        build_targets(configs[1:2], env={})


def test_bad_callable_reference() -> None:
    configs = parse_targets([{"name": "x", "type": "callable", "callable": "no_such_mod:f"}])
    with pytest.raises(ConfigError, match="cannot be imported"):
        build_targets(configs)


def test_a_malformed_yaml_file_is_one_line_with_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "t.yaml"
    bad.write_text("targets:\n  - name: a\n    type: [callable\n")
    with pytest.raises(ConfigError) as err:
        load_targets(bad)
    message = str(err.value)
    assert "\n" not in message and "line 4, column 1" in message and "flow sequence" in message
