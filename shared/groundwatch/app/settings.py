"""Each service's settings (``GW_*``): one class per service, in the library so the one bootstrap
(:mod:`groundwatch.app.services`) builds a service from them and ``groundwatch settings`` lists
them without importing the services (``services/<name>/settings.py`` re-exports its class).

Moved from ``services/<name>/settings.py`` unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from groundwatch.adapters.db.engine import database_url_problem
from groundwatch.adapters.sources.connect import SourcePolicy
from groundwatch.core.cycles import MAX_CYCLE, MAX_CYCLE_JUMP
from groundwatch.runtime.settings import CommonSettings, reject_placeholder

if TYPE_CHECKING:
    from collections.abc import Callable

    from groundwatch.adapters.db.retention import RetentionPolicy
    from groundwatch.runtime.traffic_limit import TargetRateLimit

__all__ = [
    "AnalyticsSettings",
    "GeneratorSettings",
    "JudgeServiceSettings",
    "RetentionSettings",
    "RunnerSettings",
    "TrafficSettings",
    "check_environment",
    "documented",
]


class GeneratorSettings(CommonSettings):
    port: int = Field(8001, ge=0, le=65535)
    dataset: str = Field(
        "demo",
        description="'demo' (built-in demo domain), 'source' (generate from source_url) or a "
        "path to a dataset JSONL file.",
    )
    forms: int = Field(
        3, ge=1, le=20, description="Text forms per group per cohort (demo, source)."
    )
    cohorts: list[str] = Field(["short", "long"], description="Cohorts to generate (demo, source).")
    include_tables: list[str] = Field(
        [], description="Generate only from tables matching these globs (empty: all)."
    )
    exclude_tables: list[str] = Field([], description="Never generate from these tables (globs).")
    exclude_columns: list[str] = Field(
        [], description="Never ask about or by these columns (globs, e.g. 'people.*Name')."
    )
    pii: bool = Field(
        False,
        description="Exclude columns whose names or values look personal (e-mail, phone, "
        "address, birth date, national ids); a continuous run also masks e-mails, phones and"
        " national ids in users' traffic before it is grounded or stored.",
    )
    key_ratio: float = Field(
        0.9, ge=0.0, le=1.0, description="Distinct share for a text column to name its rows."
    )
    allow_list_answers: bool = Field(
        False, description="Keep fills with several answers as list answers."
    )
    targets: list[str] = Field(["reference"], min_length=1, description="Target names to probe.")
    runs: int = Field(
        1, ge=0, description="Cycles to run at start-up; 0 = none until started via API."
    )
    continuous: bool = Field(
        False, description="Keep probing every interval_s after the start-up runs."
    )
    interval_s: float = Field(60.0, gt=0, description="Seconds between continuous cycles.")
    stop_wait_s: float = Field(
        2.0,
        ge=0,
        le=60,
        description="POST /runs/continuous/stop waits at most this long for the cycle in "
        "flight to end; past it the answer says the cycle is still in flight (it ends on its "
        "own, and no next cycle starts).",
    )
    sample: int = Field(0, ge=0, description="Groups per cycle (0 = all).")
    rate: float = Field(0.0, ge=0, description="Probes per second (0 = as fast as the bus takes).")
    seed: int = Field(7, description="Seed of the group sampler (reproducible cycles).")
    series: str = Field(
        "",
        max_length=128,
        description="Monitoring series the cycles belong to (default: the dataset's id); a"
        " restarted generator continues the series' cycle numbers from the database.",
    )
    api_token: str | None = Field(None, description="Bearer token for state-changing endpoints.")
    api_read_token: str | None = Field(
        None,
        description="Bearer token for GET /traffic/unmatched (the shapes of users' questions no"
        " group matched); unset: open.",
    )
    source_url: str | None = Field(
        None,
        description="Source database (opened read-only) whose answers each cycle re-reads; "
        "'demo' dataset: the demo database. Unset: answers are never refreshed.",
    )

    source_statement_timeout_s: float = Field(
        60.0,
        gt=0,
        le=86_400,
        description="Seconds one statement on the source database may run (a batch of rows of a"
        " streamed one) before the database cancels it.",
    )
    source_allow_privileged: bool = Field(
        False,
        description="Accept, with a warning, a source login that can reach the server's files or"
        " other sessions (PostgreSQL superuser, pg_read_server_files, pg_write_server_files,"
        " pg_execute_server_program; MySQL FILE or SUPER). Off: such a login is refused.",
    )

    def source_policy(self) -> SourcePolicy:
        """How the source database is opened."""
        return SourcePolicy(self.source_statement_timeout_s, self.source_allow_privileged)

    @field_validator("source_url")
    @classmethod
    def _source_url_opens(cls, v: str | None) -> str | None:
        problem = None if v is None else database_url_problem(v)
        if problem is not None:
            raise ValueError(problem)
        return v

    @field_validator("api_token", "api_read_token")
    @classmethod
    def _no_placeholder(cls, v: str | None) -> str | None:
        return reject_placeholder(v)


class RunnerSettings(CommonSettings):
    port: int = Field(8002, ge=0, le=65535)
    runner_group: str = Field(
        "rag-runner", min_length=1, description="Consumer group of runner instances."
    )
    runner_targets_file: Path | None = Field(
        None, description="YAML/TOML file of targets (http_json, openai_chat, callable)."
    )
    runner_reference_url: str | None = Field(
        "http://127.0.0.1:8005/query",
        description="URL of the target named 'reference' (the reference RAG); 'off' to disable.",
    )
    runner_reference_concurrency: int = Field(
        32, ge=1, le=4096, description="Requests in flight at once to the reference target."
    )
    runner_batch: int = Field(500, ge=1, le=10_000, description="Probes consumed per batch.")

    @field_validator("runner_reference_url")
    @classmethod
    def _off_disables(cls, v: str | None) -> str | None:
        # a word, not an empty value: an empty variable counts as unset, i.e. the default URL
        return None if v is None or v.strip().lower() in ("", "off") else v


class JudgeServiceSettings(CommonSettings):
    port: int = Field(8003, ge=0, le=65535)
    judge_group: str = Field(
        "judge", min_length=1, description="Consumer group shared by all judge workers."
    )


class AnalyticsSettings(CommonSettings):
    port: int = Field(8004, ge=0, le=65535)
    analytics_group: str = Field(
        "analytics", min_length=1, description="Consumer group of analytics instances."
    )
    window_runs: int = Field(
        1,
        ge=0,
        description="A group's status is over its own last N probed cycles (1: the latest);"
        " 0 pools every cycle (a batch view, never live). Also the default of --window-runs of"
        " run, report, groups and show.",
    )
    max_cycle_jump: int = Field(
        MAX_CYCLE_JUMP,
        ge=1,
        le=MAX_CYCLE,
        description="Cycles a judgement may claim above its series' newest cycle; one beyond is "
        "dead-lettered with the reason, never applied (a forged or corrupted number would "
        "otherwise become every window's newest cycle).",
    )
    api_read_token: str | None = Field(
        None,
        description="Bearer token for /groups, /transitions, /report and /report.html (they serve "
        "ground-truth answers and target replies); unset: open.",
    )

    @field_validator("api_read_token")
    @classmethod
    def _no_placeholder(cls, v: str | None) -> str | None:
        return reject_placeholder(v)

    corpus: Path | None = Field(
        None,
        description="Corpus the system under test answers from (a JSON file {doc_id: text} or a"
        " directory of .txt/.md files, as GW_RAG_CORPUS), for the data-quality check of gap"
        " groups; unset: gap groups stay unchecked.",
    )
    data_quality_mrc: bool = Field(
        False,
        description="Have the LLM (GW_LLM_*) read the best-matching documents of a gap group the"
        " BM25 check did not find in the corpus (GRAMMAR's MRC check).",
    )
    open_domain_baseline: str | None = Field(
        None,
        description="Target name of an LLM-only baseline (e.g. an openai_chat target): groups it"
        " answers correctly are open-domain and left out of the metrics, the alerts and the"
        " report (GRAMMAR §5.2).",
    )
    api_token: str | None = Field(
        None,
        description="Bearer token a person's verdict on the view (/ui) needs; unset: verdicts"
        " are closed (the view stays readable).",
    )

    @field_validator("api_token")
    @classmethod
    def _no_placeholder_write(cls, v: str | None) -> str | None:
        return reject_placeholder(v)


class TrafficSettings(BaseSettings):
    """How users' traffic is taken and grounded (``GW_TRAFFIC_*``, ``GW_PII``): read by a
    continuous ``run``, and in the services by analytics (ingest) and the generator (grounding)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    traffic_sample: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Share of users' traffic grounded and judged, drawn by a hash of the trace"
        " id: every evaluator with the same share keeps the same traces (1: all, 0: none).",
    )
    pii: bool = Field(
        False,
        description="Also mask e-mail addresses, phone numbers, national ids and IBANs in users'"
        " questions, answers and contexts before they are grounded, judged or stored.",
    )
    traffic_rate: float = Field(
        0.0,
        ge=0,
        description="Traffic records a second each target may send on average (POST /traffic,"
        " /v1/traces); a batch over it is refused whole with 429 and Retry-After (0: no limit).",
    )
    traffic_burst: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="Records of one target taken at once after a pause, under GW_TRAFFIC_RATE.",
    )

    def limit(self, clock: Callable[[], float] | None = None) -> TargetRateLimit | None:
        """The per-target rate limit of these settings (None: no limit)."""
        from groundwatch.runtime.traffic_limit import TargetRateLimit

        if self.traffic_rate <= 0:
            return None
        if clock is None:
            return TargetRateLimit(self.traffic_rate, self.traffic_burst)
        return TargetRateLimit(self.traffic_rate, self.traffic_burst, clock)


class RetentionSettings(BaseSettings):
    """What the store keeps (``GW_RETAIN_*``): read by analytics' pruner and ``groundwatch
    store``. With the defaults a minute monitor of P probes a cycle keeps at most the newest
    60 cycles raw (~60 x P x 1.2 KB; PostgreSQL up to one partition hour more), and a year of
    summaries costs one ~1 KB row per group, cohort and status change (docs/retention.md)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    retain_cycles: int = Field(
        60, ge=1, description="Raw judgements kept for each series' newest N cycles."
    )
    retain_days: float = Field(
        1.0,
        ge=0,
        description="…and no longer than this many days (0: no age limit); older cycles are"
        " rolled up into per-group summaries. The newest cycle is always kept.",
    )
    retain_summary_days: float = Field(
        400.0, ge=0, description="Summaries of pruned cycles kept this many days (0: for ever)."
    )
    retain_dead_letter_days: float = Field(
        30.0, ge=0, description="Dead letters kept this many days (0: for ever)."
    )
    retain_llm_cache_days: float = Field(
        30.0, ge=0, description="LLM-verdict cache entries kept this many days (0: for ever)."
    )
    retain_answer_versions: int = Field(
        20, ge=0, description="Answer versions kept per group, newest first (0: all)."
    )
    prune_interval_s: float = Field(
        60.0, ge=0, description="Seconds between analytics' pruning runs (0: never prune)."
    )
    prune_batch: int = Field(
        1000, ge=10, le=100_000, description="Rows deleted per transaction (SQLite, MySQL)."
    )
    prune_duty: float = Field(
        0.05,
        gt=0,
        le=1,
        description="Share of wall time analytics' pruner may hold the store (it pauses after"
        " each transaction), so the consume loop never waits behind it for long.",
    )
    partition_hours: int = Field(
        1,
        ge=1,
        le=24 * 31,
        description="Hours of probe time per judgements partition (PostgreSQL).",
    )
    store_warn_mb_per_day: float = Field(
        1024.0,
        ge=0,
        description="Warn at start-up when the store's newest cycles imply more written per day"
        " than this (MB; 0: never).",
    )

    def policy(self) -> RetentionPolicy:
        """The :class:`groundwatch.adapters.db.retention.RetentionPolicy` of these settings."""
        from groundwatch.adapters.db.retention import RetentionPolicy

        return RetentionPolicy(
            cycles=self.retain_cycles,
            days=self.retain_days,
            summary_days=self.retain_summary_days,
            dead_letter_days=self.retain_dead_letter_days,
            llm_cache_days=self.retain_llm_cache_days,
            answer_versions=self.retain_answer_versions,
            batch=self.prune_batch,
            partition_hours=self.partition_hours,
            duty=self.prune_duty,
        )


def documented() -> list[tuple[str, type[BaseSettings]]]:
    """(who reads it, settings class) for every class of ``GW_*`` settings, the shared ones
    first: what ``groundwatch settings`` and the README's table list, and what a misspelt
    variable is checked against."""
    from groundwatch.adapters.llm.client import LlmSettings
    from groundwatch.adapters.tracing import TracingSettings
    from groundwatch.reference_rag.settings import ReferenceRagSettings
    from groundwatch.runtime.evidence_settings import EvidenceSettings
    from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
    from groundwatch.stages.judge.semantic import SemanticSettings
    from groundwatch.stages.judge.tiered import JudgeSettings

    return [
        ("all services", CommonSettings),
        ("generator", GeneratorSettings),
        ("rag-runner", RunnerSettings),
        ("judge", JudgeServiceSettings),
        ("judge", JudgeSettings),
        ("judge, rag-runner", ReferenceFreeSettings),
        ("judge", SemanticSettings),
        ("judge, LLM features", LlmSettings),
        ("analytics", AnalyticsSettings),
        ("analytics, store", RetentionSettings),
        ("run, analytics, generator (traffic)", TrafficSettings),
        ("analytics, run, demo, report, groups", EvidenceSettings),
        ("reference-rag", ReferenceRagSettings),
        ("rag-runner, analytics, run, demo", TracingSettings),
    ]


def check_environment() -> None:
    """Raise :class:`~groundwatch.errors.ConfigError` naming every ``GW_*`` variable whose value
    its settings refuse, with what they accept, in one line.

    Every entry point calls it at start-up, whichever classes it reads later: a setting read only
    on some path (a continuous run's traffic, a pruner, a log level) would otherwise be accepted
    silently and misbehave, or fail, long after the start. A variable left unset takes its
    default, which is valid, so only what the operator set can be refused."""
    from pydantic import ValidationError

    from groundwatch.errors import ConfigError
    from groundwatch.runtime.settings import problems

    found: dict[str, None] = {}  # ordered and deduplicated: shared fields repeat per class
    for _, cls in documented():
        try:
            cls()
        except ValidationError as exc:
            found.update(dict.fromkeys(problems(cls, exc)))
    if found:
        raise ConfigError("invalid configuration: " + "; ".join(found))
