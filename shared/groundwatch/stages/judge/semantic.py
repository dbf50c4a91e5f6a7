"""Oro et al.'s semantic and LLM-derived answer metrics beside the judge (their scores' families).

* **Offline, on by default where the packaged model is installed** (``GW_SEMANTIC_METRICS=auto``):
  ``semantic_similarity`` and ``bertscore_f1`` of the factual answers against their SQL gold,
  from the packaged MiniLM encoder (:mod:`groundwatch.adapters.embeddings`). No network. A new
  text costs ~30 ms of CPU, so by default a hash-picked 10 % of the probes are scored
  (``GW_SEMANTIC_SHARE``): enough for the means, without making the judge the pipeline's
  bottleneck (at 100 % the Kafka pipeline's judge fell behind a 300 probes/s generator);
  ``groundwatch report --ratings`` scores every rated answer from the store.
* **Through the judge's LLM** (``GW_LLM_METRICS``, needs ``GW_LLM_*``): ``answer_correctness``,
  ``answer_relevance`` (also needs the encoder) and ``context_relevance`` (needs the target's
  contexts), on ``GW_LLM_METRICS_SHARE`` of the factual probes, picked by a hash of the probe id;
  their calls count against the LLM budget.

They travel in ``Judgement.scores`` (``semantic``, ``llm_metrics``), so the report's
answer-metric means, the ``groundwatch_answer_metric*`` series and the correlation with human
ratings take them up like EM or F1. What has no offline counterpart is said so at start-up, not
faked: answer correctness offline is what token F1 and semantic similarity already are; answer
relevance is about questions an LLM writes; context relevance about which sentences an LLM
needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from groundwatch.adapters.embeddings import DEFAULT_MODEL, Encoder, encoder_available, load_encoder
from groundwatch.contracts import RagResponse, TargetStatus
from groundwatch.core.answer_scoring import gold_text
from groundwatch.core.judging import Decision
from groundwatch.core.llm import ChatModel
from groundwatch.core.sampling import in_share
from groundwatch.core.scores import (
    ANSWER_CORRECTNESS,
    ANSWER_RELEVANCE,
    BERTSCORE_F1,
    CONTEXT_RELEVANCE,
    LLM_METRICS,
    NO_SCORES,
    SEMANTIC_SIMILARITY,
    LlmMetricScores,
    Scores,
    SemanticScores,
)
from groundwatch.core.semantic import Vector, bertscore
from groundwatch.core.tagging import FACTUAL
from groundwatch.errors import ConfigError
from groundwatch.stages.judge.llm_metrics import (
    answer_correctness,
    answer_relevance,
    context_relevance,
)

__all__ = [
    "ANSWER_CORRECTNESS",
    "ANSWER_RELEVANCE",
    "BERTSCORE_F1",
    "CONTEXT_RELEVANCE",
    "LLM_METRICS",
    "SEMANTIC_SIMILARITY",
    "SemanticCounters",
    "SemanticScorer",
    "SemanticSettings",
    "build_semantic",
]


class SemanticSettings(BaseSettings):
    """Which semantic and LLM-derived answer metrics the judge computes (``GW_*``)."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    semantic_metrics: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Semantic similarity and BERTScore of every answer against its gold, from"
        " the packaged embedding model: auto (when installed), on (refuse to start without"
        " it) or off.",
    )
    semantic_share: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="Share of factual probes given semantic similarity and BERTScore (a new"
        " answer costs ~30 ms of CPU; `report --ratings` scores every rated answer anyway).",
    )
    semantic_model: str = Field(
        DEFAULT_MODEL,
        description="Embedding model of the semantic metrics: an installed package bundling"
        " the weights, or a model directory.",
    )
    llm_metrics: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="LLM-derived answer metrics, comma separated: answer_correctness,"
        " answer_relevance, context_relevance (need the GW_LLM_* model; answer_relevance"
        " the embedding model too).",
    )
    llm_metrics_share: float = Field(
        0.1, ge=0.0, le=1.0, description="Share of factual probes the LLM-derived metrics score."
    )

    @field_validator("llm_metrics", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [t.strip().lower() for t in v.split(",") if t.strip()]
        return v

    @field_validator("llm_metrics")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        from groundwatch.pydantic_errors import did_you_mean

        for name in v:
            if name not in LLM_METRICS:
                raise ValueError(
                    f"unknown metric {name!r}{did_you_mean(name, LLM_METRICS)};"
                    f" known: {', '.join(LLM_METRICS)}"
                )
        return list(dict.fromkeys(v))

    def wants_encoder(self) -> bool:
        """Whether the encoder should be loaded: on, or auto and installed, or needed by
        answer relevance."""
        if self.semantic_metrics == "on" or ANSWER_RELEVANCE in self.llm_metrics:
            return True
        return self.semantic_metrics == "auto" and encoder_available(self.semantic_model)


@dataclass
class SemanticCounters:
    scored: int = 0  # answers given the offline metrics
    llm_scored: int = 0  # answers given LLM-derived metrics
    llm_failed: int = 0  # LLM-derived metrics that got no score (failed or unreadable call)

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


class SemanticScorer:
    """The configured metrics on one judged response (an ``Annotator`` of the judge stage)."""

    def __init__(
        self,
        settings: SemanticSettings,
        encoder: Encoder | None = None,
        client: ChatModel | None = None,
    ) -> None:
        if settings.llm_metrics and client is None:
            raise ConfigError("GW_LLM_METRICS: LLM-derived metrics need the GW_LLM_* model")
        if ANSWER_RELEVANCE in settings.llm_metrics and encoder is None:
            raise ConfigError("GW_LLM_METRICS: answer_relevance needs the embedding model")
        self.settings = settings
        self.encoder = encoder
        self.client = client
        self.counters = SemanticCounters()

    @property
    def describe(self) -> str:
        parts = []
        if self.encoder is not None and self.settings.semantic_metrics != "off":
            share = self.settings.semantic_share
            parts.append(
                f"semantic similarity and BERTScore ({self.encoder.name}) on {share:.0%} of"
                " factual probes"
            )
        if self.settings.llm_metrics:
            parts.append(
                f"{', '.join(self.settings.llm_metrics)} on"
                f" {self.settings.llm_metrics_share:.0%} of factual probes"
            )
        return "; answer metrics: " + ", ".join(parts) if parts else ""

    def _embed(self, texts: Sequence[str]) -> list[Vector]:
        assert self.encoder is not None
        return [e.sentence for e in self.encoder.encode(texts)]

    async def __call__(self, response: RagResponse, decision: Decision) -> Scores:
        answer = response.answer
        if response.status is not TargetStatus.OK or not answer or response.scenario != FACTUAL:
            return NO_SCORES
        gold = gold_text(response.expected.values)
        semantic: SemanticScores | None = None
        llm: LlmMetricScores | None = None
        offline = self.encoder is not None and self.settings.semantic_metrics != "off"
        if offline and gold and in_share(str(response.probe_id), self.settings.semantic_share):
            assert self.encoder is not None
            # the model runs in a worker thread: a few ms a text must not stall the event loop
            a, g = await asyncio.to_thread(self.encoder.encode, [answer, gold])
            similarity = float(a.sentence @ g.sentence)
            semantic = SemanticScores(
                min(1.0, max(0.0, similarity)), float(bertscore(a.tokens, g.tokens)[2])
            )
            self.counters.scored += 1
        wanted = self.settings.llm_metrics
        if wanted and in_share(str(response.probe_id), self.settings.llm_metrics_share):
            llm = await self._llm(response, answer, gold, wanted)
        if semantic is None and llm is None:
            return NO_SCORES
        return Scores(semantic=semantic, llm_metrics=llm)

    async def _llm(
        self, response: RagResponse, answer: str, gold: str, wanted: list[str]
    ) -> LlmMetricScores | None:
        assert self.client is not None
        client = self.client
        jobs: dict[str, Any] = {}
        if ANSWER_CORRECTNESS in wanted and gold:
            jobs[ANSWER_CORRECTNESS] = answer_correctness(client, response.query, answer, gold)
        if ANSWER_RELEVANCE in wanted:
            embed = self._embed
            jobs[ANSWER_RELEVANCE] = answer_relevance(client, embed, response.query, answer)
        if CONTEXT_RELEVANCE in wanted and response.contexts:
            jobs[CONTEXT_RELEVANCE] = context_relevance(client, response.query, response.contexts)
        if not jobs:
            return None
        values = await asyncio.gather(*jobs.values())
        self.counters.llm_scored += 1
        out: dict[str, float] = {}
        for name, value in zip(jobs, values, strict=True):
            if value is None:
                self.counters.llm_failed += 1
            else:
                out[name] = float(value)
        return LlmMetricScores(**out) if out else None


def build_semantic(
    settings: SemanticSettings, client: ChatModel | None = None
) -> SemanticScorer | None:
    """The scorer the settings ask for, or None when nothing is asked (or ``auto`` finds no
    packaged model); a :class:`ConfigError` when ``on`` cannot load the model."""
    encoder = load_encoder(settings.semantic_model) if settings.wants_encoder() else None
    if encoder is None and not settings.llm_metrics:
        return None
    return SemanticScorer(settings, encoder, client)
