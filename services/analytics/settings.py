"""Analytics service settings (``GW_*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from groundwatch.runtime.settings import CommonSettings, reject_placeholder


class AnalyticsSettings(CommonSettings):
    port: int = Field(8004, ge=0, le=65535)
    analytics_group: str = Field("analytics", description="Consumer group of analytics instances.")
    window_runs: int = Field(
        1,
        ge=0,
        description="A group's status is over its own last N probed cycles (1: the latest);"
        " 0 pools every cycle (a batch view, never live).",
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
        " answers correctly are open-domain and left out of the telemetry, the alerts and the"
        " report (GRAMMAR §5.2).",
    )
