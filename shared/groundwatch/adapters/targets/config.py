"""Targets from a config file (YAML or TOML); secrets come from environment variables.

.. code-block:: yaml

    targets:
      - name: support-bot
        type: http_json
        url: https://rag.internal/v1/ask
        headers: {Authorization: "Bearer ${SUPPORT_BOT_TOKEN}"}
        body: {question: "{query}", top_k: 5}
        answer_path: data.answer
        retrieved_ids_path: "$.data.sources[*].id"
        contexts_path: data.sources.*.text
        limits: {concurrency: 4, rate_per_s: 2, timeout_s: 20}
        sampling: {body: {temperature: 1.0}}   # how to ask for a SelfCheck sample
      - name: llm-only
        type: openai_chat
        model: gpt-4o-mini
        api_key_env: OPENAI_API_KEY
      - name: local
        type: callable
        callable: mypackage.rag:answer

The file holds only ``${NAME}`` references; values are read when targets are built and kept out
of reprs and logs. A bad file is a :class:`ConfigError` naming the file and the field.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from groundwatch.adapters.targets.base import Target
from groundwatch.adapters.targets.callable import CallableTarget, TargetCallable
from groundwatch.adapters.targets.http_json import (
    DEFAULT_BODY,
    DEFAULT_MAX_RESPONSE_BYTES,
    HttpJsonTarget,
    JsonTemplate,
    expand_env,
)
from groundwatch.adapters.targets.limits import TargetLimits
from groundwatch.adapters.targets.openai_chat import BASELINE_SYSTEM_PROMPT, OpenAIChatTarget
from groundwatch.adapters.targets.paths import ReplyPath
from groundwatch.adapters.targets.transport import HttpClient
from groundwatch.core.llm import ChatModel
from groundwatch.errors import ConfigError, parse_error_line
from groundwatch.validation import validation_line

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class _TargetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME, description="Target name; probes and metrics refer to it.")
    limits: TargetLimits = Field(default_factory=TargetLimits)


class HttpSampling(BaseModel):
    """How an ``http_json`` endpoint is asked for a SelfCheck sample (an answer with its
    randomness on): ``body`` fields merged into the JSON request, ``params`` added to the URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    body: dict[str, Any] = Field(
        default_factory=dict, description="Fields set in the request body, e.g. temperature: 1.0."
    )
    params: dict[str, str | int | float] = Field(
        default_factory=dict, description="Query parameters added to the URL, e.g. sample: 1."
    )

    @model_validator(mode="after")
    def _says_something(self) -> HttpSampling:
        if not self.body and not self.params:
            raise ValueError("give body or params: how the endpoint is asked for a sample")
        return self


class HttpJsonConfig(_TargetBase):
    type: Literal["http_json"]
    url: str = Field(description="Endpoint URL; may hold {query} (URL-encoded) and ${VAR}.")
    method: Literal["GET", "POST", "PUT"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict, description="Values may hold ${VAR}.")
    body: JsonTemplate | None = Field(DEFAULT_BODY, description="JSON with {query}; null: none.")
    answer_path: str = "answer"
    retrieved_ids_path: str | None = "retrieved_ids"
    contexts_path: str | None = "contexts"
    max_response_bytes: int = Field(DEFAULT_MAX_RESPONSE_BYTES, ge=1024)
    sampling: HttpSampling | None = Field(
        None, description="How to ask for a SelfCheck sample; unset: the target is not sampled."
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://", "${")):
            raise ValueError("must start with http:// or https://")
        return v

    @field_validator("answer_path", "retrieved_ids_path", "contexts_path")
    @classmethod
    def _path_compiles(cls, v: str | None) -> str | None:
        if v is not None:
            ReplyPath(v)
        return v

    @model_validator(mode="after")
    def _body_needs_a_method_with_body(self) -> HttpJsonConfig:
        if self.method == "GET" and self.body is not None:
            raise ValueError("a GET target takes no body; set body: null and put {query} in url")
        return self


class OpenAIChatConfig(_TargetBase):
    type: Literal["openai_chat"]
    model: str = Field(min_length=1)
    base_url: str | None = Field(None, description="OpenAI-compatible server URL.")
    api_key_env: str = Field("OPENAI_API_KEY", description="Variable holding the API key.")
    system_prompt: str = BASELINE_SYSTEM_PROMPT
    max_tokens: int | None = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    sample_temperature: float = Field(
        1.0, ge=0.0, le=2.0, description="SelfCheck samples' temperature; 0: never sampled."
    )


class CallableConfig(_TargetBase):
    type: Literal["callable"]
    callable: str = Field(pattern=r"^[\w.]+:[\w.]+$", description="'package.module:function'.")
    in_thread: bool = Field(True, description="Run a synchronous callable in a worker thread.")


TargetConfig = Annotated[
    HttpJsonConfig | OpenAIChatConfig | CallableConfig, Field(discriminator="type")
]


class TargetsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: list[TargetConfig] = Field(min_length=1)

    @field_validator("targets")
    @classmethod
    def _unique_names(cls, v: list[TargetConfig]) -> list[TargetConfig]:
        seen: set[str] = set()
        for t in v:
            if t.name in seen:
                raise ValueError(f"target name {t.name!r} is used twice")
            seen.add(t.name)
        return v


def parse_targets(data: Any, source: str = "<config>") -> list[TargetConfig]:
    """Validate already-parsed config data; errors name the source and the field."""
    if isinstance(data, list):
        data = {"targets": data}
    try:
        return TargetsFile.model_validate(data).targets
    except ValidationError as exc:
        raise ConfigError(f"{source}: {validation_line(exc, TargetsFile)}") from None


def load_targets(path: Path | str) -> list[TargetConfig]:
    """Read targets from a ``.yaml``/``.yml`` or ``.toml`` file (``targets`` list at the top)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise ConfigError(f"{path}: expected a .yaml, .yml or .toml file")
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: not valid {path.suffix[1:].upper()}: {parse_error_line(exc)}"
        ) from None
    return parse_targets(data, str(path))


#: Makes the LLM client of an ``openai_chat`` target from its config and resolved API key.
LlmFactory = Callable[[OpenAIChatConfig, str | None], ChatModel]


def default_llm_factory(config: OpenAIChatConfig, api_key: str | None) -> ChatModel:
    """``groundwatch.adapters.llm.client.LlmClient`` for one ``openai_chat`` target.

    The client's own retries and rate limit are switched off: the runner applies the target's
    limits, and two retry policies stacked would multiply the load on a struggling server.
    """
    from pydantic import SecretStr

    from groundwatch.adapters.llm.client import LlmClient as OpenAIClient
    from groundwatch.adapters.llm.client import LlmSettings

    settings = LlmSettings(
        base_url=config.base_url,
        api_key=SecretStr(api_key) if api_key else None,
        model=config.model,
        timeout=config.limits.timeout_s,
        max_concurrency=config.limits.concurrency,
        requests_per_second=0,
        max_retries=0,
    )
    return OpenAIClient(settings)


def import_callable(spec: str) -> TargetCallable:
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"callable {spec!r} cannot be imported: {exc}") from None
    if not callable(obj):
        raise ConfigError(f"callable {spec!r} is not callable")
    fn: TargetCallable = obj
    return fn


def can_sample(config: TargetConfig) -> bool:
    """Whether the target of ``config`` can be asked for a SelfCheck sample (its randomness on),
    as ``sampler_of`` will find once it is built."""
    if isinstance(config, HttpJsonConfig):
        return config.sampling is not None
    if isinstance(config, OpenAIChatConfig):
        return config.sample_temperature > 0.0
    return CallableTarget(import_callable(config.callable)).can_sample


def build_target(
    config: TargetConfig,
    *,
    http_client: HttpClient | httpx.AsyncClient | None = None,
    llm_factory: LlmFactory | None = None,
    env: Mapping[str, str] | None = None,
) -> Target:
    """The adapter for one config; ``env`` defaults to the process environment."""
    env = os.environ if env is None else env
    where = f"target {config.name}"
    if isinstance(config, HttpJsonConfig):
        if http_client is None:
            raise ConfigError(f"{where}: an HTTP client is needed for http_json targets")
        headers = {
            k: expand_env(v, env, f"{where}: headers.{k}") for k, v in config.headers.items()
        }
        try:
            return HttpJsonTarget(
                http_client,
                expand_env(config.url, env, f"{where}: url"),
                method=config.method,
                headers=headers,
                body_template=config.body,
                answer_path=config.answer_path,
                retrieved_ids_path=config.retrieved_ids_path,
                contexts_path=config.contexts_path,
                max_response_bytes=config.max_response_bytes,
                sample_body=config.sampling.body if config.sampling else None,
                sample_params=config.sampling.params if config.sampling else None,
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if isinstance(config, OpenAIChatConfig):
        api_key = env.get(config.api_key_env)
        if api_key is None and config.base_url is None:
            raise ConfigError(f"{where}: environment variable {config.api_key_env} is not set")
        llm_factory = llm_factory or default_llm_factory
        client = llm_factory(config, api_key)
        return OpenAIChatTarget(
            client,
            system_prompt=config.system_prompt,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            sample_temperature=config.sample_temperature,
        )
    return CallableTarget(import_callable(config.callable), in_thread=config.in_thread)


def build_targets(
    configs: list[TargetConfig],
    *,
    http_client: HttpClient | httpx.AsyncClient | None = None,
    llm_factory: LlmFactory | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[dict[str, Target], dict[str, TargetLimits]]:
    """Adapters and limits by name, ready for :class:`groundwatch.stages.runner.lanes.Runner`."""
    targets = {
        c.name: build_target(c, http_client=http_client, llm_factory=llm_factory, env=env)
        for c in configs
    }
    return targets, {c.name: c.limits for c in configs}
