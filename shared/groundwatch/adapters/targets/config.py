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
      - name: streamed
        type: http_json
        url: https://llm.internal/v1/chat/completions
        body: {model: rag, stream: true, messages: [{role: user, content: "{query}"}]}
        stream: {format: openai, retrieved_ids_path: "sources.*.id"}
        proxy: http://proxy.corp:3128          # default: HTTPS_PROXY/HTTP_PROXY/NO_PROXY
        ca_file: /etc/ssl/corp-ca.pem          # default: the system store or SSL_CERT_FILE
        client_cert: /etc/groundwatch/client.pem
        client_key: /etc/groundwatch/client.key
        http2: true
        auth:
          type: oauth2_client_credentials
          token_url: https://idp.internal/oauth2/token
          client_id: groundwatch
          client_secret_env: RAG_CLIENT_SECRET
          scopes: [rag.ask]
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
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from groundwatch.adapters.targets.auth import (
    OAuth2ClientCredentials,
    RequestAuth,
    Signer,
    SignerAuth,
)
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
from groundwatch.adapters.targets.streams import OPENAI_DELTA, StreamFormat, StreamSpec
from groundwatch.adapters.targets.transport import (
    DEFAULT_TRANSPORT,
    HttpClient,
    HttpClients,
    TransportSettings,
    as_http_client,
)
from groundwatch.core.llm import ChatModel
from groundwatch.errors import ConfigError, parse_error_line
from groundwatch.pydantic_errors import validation_line

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


class StreamConfig(BaseModel):
    """The reply is a stream of JSON events; the answer is their text deltas joined."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: StreamFormat = Field(
        description="sse (server-sent events), openai (SSE of OpenAI chat-completion chunks)"
        " or ndjson (one JSON document a line)."
    )
    delta_path: str | None = Field(
        None, description=f"Path to each event's text delta; openai: {OPENAI_DELTA}."
    )
    retrieved_ids_path: str | None = Field(
        None, description="Path to retrieved ids, gathered from every event that has them."
    )
    contexts_path: str | None = Field(None, description="Path to contexts, gathered likewise.")
    done: str = Field("[DONE]", min_length=1, description="SSE data that ends the stream.")
    coalesce_s: float = Field(
        0.1,
        ge=0,
        le=5,
        description="After the first token, seconds between reads (what came meanwhile is read"
        " at once: less CPU per answer; the end is seen at most this late). 0: every event.",
    )

    @field_validator("delta_path", "retrieved_ids_path", "contexts_path")
    @classmethod
    def _path_compiles(cls, v: str | None) -> str | None:
        if v is not None:
            ReplyPath(v)
        return v

    @model_validator(mode="after")
    def _delta_known(self) -> StreamConfig:
        if self.delta_path is None and self.format is not StreamFormat.OPENAI:
            raise ValueError(f"a {self.format.value} stream needs delta_path: where its text is")
        return self

    def spec(self) -> StreamSpec:
        return StreamSpec(
            self.format,
            self.delta_path or OPENAI_DELTA,
            self.retrieved_ids_path,
            self.contexts_path,
            self.done,
            self.coalesce_s,
        )


class OAuth2Config(BaseModel):
    """OAuth2 client credentials (RFC 6749 §4.4): a bearer token fetched, refreshed before it
    expires; the secret from the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["oauth2_client_credentials"]
    token_url: str = Field(description="The token endpoint; may hold ${VAR}.")
    client_id: str = Field(min_length=1, description="May hold ${VAR}.")
    client_secret_env: str = Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Variable holding the client secret."
    )
    scopes: list[str] = Field(default_factory=list)
    audience: str | None = Field(None, description="Sent as 'audience' (Auth0, some IdPs).")
    send_as: Literal["basic", "post"] = Field(
        "basic", description="Credentials in HTTP Basic (client_secret_basic) or the form."
    )
    refresh_before_s: float = Field(
        60.0, ge=0, description="Fetch the next token this long before the current expires."
    )

    @field_validator("token_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://", "${")):
            raise ValueError("must start with http:// or https://")
        return v


class SignerConfig(BaseModel):
    """A Python callable that returns headers to add to each request (a custom scheme)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["signer"]
    callable: str = Field(pattern=r"^[\w.]+:[\w.]+$", description="'package.module:function'.")


AuthConfig = Annotated[OAuth2Config | SignerConfig, Field(discriminator="type")]


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
    stream: StreamConfig | None = Field(
        None, description="The reply is streamed (SSE, OpenAI chunks, NDJSON); unset: one JSON."
    )
    auth: AuthConfig | None = Field(
        None, description="OAuth2 client credentials, or a signer adding headers per request."
    )
    proxy: str | None = Field(
        None,
        description="http(s)://[user:pass@]host:port, or 'direct'; unset: HTTPS_PROXY,"
        " HTTP_PROXY and NO_PROXY. May hold ${VAR}.",
    )
    ca_file: str | None = Field(
        None, description="PEM file of the CAs to trust; unset: the system's or SSL_CERT_FILE."
    )
    client_cert: str | None = Field(
        None, description="PEM client certificate (and its key, unless client_key is given)."
    )
    client_key: str | None = Field(None, description="PEM key of client_cert.")
    http2: bool = Field(False, description="Offer HTTP/2 (over TLS, by ALPN).")

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://", "${")):
            raise ValueError("must start with http:// or https://")
        return v

    @field_validator("proxy")
    @classmethod
    def _proxy_url(cls, v: str | None) -> str | None:
        if v is not None and v != "direct" and not v.startswith(("http://", "https://", "${")):
            raise ValueError("must be an http:// or https:// proxy URL, or 'direct'")
        return v

    @model_validator(mode="after")
    def _key_needs_cert(self) -> HttpJsonConfig:
        if self.client_key is not None and self.client_cert is None:
            raise ValueError("client_key is given without client_cert")
        return self

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


#: Told of each streamed answer of a target: its name, seconds to the first text delta (None:
#: no delta had text) and to the end of the stream.
StreamHook = Callable[[str, float | None, float], None]


def transport_settings(config: HttpJsonConfig, env: Mapping[str, str]) -> TransportSettings:
    """The target's transport settings, ``${VAR}`` in its proxy filled in (errors name the
    setting; the caller adds the target)."""
    proxy = config.proxy
    if proxy is not None:
        proxy = expand_env(proxy, env, "proxy")
    return TransportSettings(
        proxy=proxy,
        ca_file=config.ca_file,
        client_cert=config.client_cert,
        client_key=config.client_key,
        http2=config.http2,
    )


def _target_client(
    config: HttpJsonConfig, http_client: HttpClient | httpx.AsyncClient, env: Mapping[str, str]
) -> HttpClient:
    """The client of the target's transport settings: the shared pool's, or the one given."""
    settings = transport_settings(config, env)
    if settings == DEFAULT_TRANSPORT:
        return as_http_client(http_client)
    if not isinstance(http_client, HttpClients):
        raise ConfigError(
            "proxy, ca_file, client_cert and http2 need the shared clients of make_http_client"
        )
    return http_client.for_settings(settings)


def build_auth(
    config: AuthConfig, client: HttpClient, env: Mapping[str, str], timeout_s: float
) -> RequestAuth:
    """The auth of a target: secrets read from ``env`` now (a missing one is a ConfigError
    naming the variable; the caller adds the target)."""
    if isinstance(config, SignerConfig):
        signer: Signer = import_callable(config.callable)  # type: ignore[assignment]
        return SignerAuth(signer, config.callable, {})
    secret = env.get(config.client_secret_env)
    if not secret:
        raise ConfigError(f"environment variable {config.client_secret_env} is not set")
    return OAuth2ClientCredentials(
        client,
        expand_env(config.token_url, env, "auth.token_url"),
        expand_env(config.client_id, env, "auth.client_id"),
        secret,
        scopes=config.scopes,
        audience=config.audience,
        send_as=config.send_as,
        refresh_before_s=config.refresh_before_s,
        timeout_s=timeout_s,
    )


def build_target(
    config: TargetConfig,
    *,
    http_client: HttpClient | httpx.AsyncClient | None = None,
    llm_factory: LlmFactory | None = None,
    env: Mapping[str, str] | None = None,
    stream_hook: StreamHook | None = None,
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
            target_client = _target_client(config, http_client, env)
            auth = (
                build_auth(config.auth, target_client, env, config.limits.timeout_s)
                if config.auth is not None
                else None
            )
            return HttpJsonTarget(
                target_client,
                expand_env(config.url, env, "url"),
                method=config.method,
                headers=headers,
                body_template=config.body,
                answer_path=config.answer_path,
                retrieved_ids_path=config.retrieved_ids_path,
                contexts_path=config.contexts_path,
                max_response_bytes=config.max_response_bytes,
                sample_body=config.sampling.body if config.sampling else None,
                sample_params=config.sampling.params if config.sampling else None,
                auth=auth,
                stream=config.stream.spec() if config.stream is not None else None,
                on_stream=partial(stream_hook, config.name) if stream_hook else None,
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
    stream_hook: StreamHook | None = None,
) -> tuple[dict[str, Target], dict[str, TargetLimits]]:
    """Adapters and limits by name, ready for :class:`groundwatch.stages.runner.lanes.Runner`."""
    targets = {
        c.name: build_target(
            c, http_client=http_client, llm_factory=llm_factory, env=env, stream_hook=stream_hook
        )
        for c in configs
    }
    return targets, {c.name: c.limits for c in configs}
