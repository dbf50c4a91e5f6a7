"""Reference-free evaluators beside the grounded judge: GRAMMAR §3's Table 1, kept up to date.

RAGAS-Fact and SelfCheck need no gold answer, which is why teams use them, and (GRAMMAR Table 1)
they are optimistic about wrong answers. Run next to the SQL-grounded verdicts on the same
responses, their precision and recall against that truth become a live panel: how far a team
could trust them on *its* endpoint. They run only when an LLM is configured (``GW_LLM_*``) and
named in ``GW_REFERENCE_FREE``; without one nothing is guessed and nothing is shown.

* **RAGAS-Fact** reads the response's retrieved contexts (``RagResponse.contexts``): a target
  that returns none leaves it abstaining, which the panel counts.
* **SelfCheck** compares the answer with more answers *of the target under test* to the same
  question. The judge has no client of the target — and must not have one: the runner owns each
  target's rate limit, breaker and timeout — so the runner asks the target again for the same
  share of probes (:class:`groundwatch.stages.runner.lanes.SelfCheckSampling`) and ships the
  samples with the response (``RagResponse.samples``). Both stages pick the probes by a hash of
  the probe id, so the same probes get both evaluators and the comparison is paired.

Factual (GRAMMAR) probes only: their grounded verdict is the truth of the comparison.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from groundwatch.contracts import MAX_SAMPLES, RagResponse, TargetStatus
from groundwatch.core.judging import Decision
from groundwatch.core.llm import ChatModel
from groundwatch.core.model import Verdict
from groundwatch.core.sampling import in_share
from groundwatch.core.scores import (
    EVALUATORS,
    NO_SCORES,
    RAGAS_FACT,
    SELFCHECK,
    EvaluatorCall,
    ReferenceFreeScores,
    Scores,
)
from groundwatch.core.tagging import FACTUAL
from groundwatch.stages.judge.evaluators import ragas_faithfulness, selfcheck


class ReferenceFreeSettings(BaseSettings):
    """Which reference-free evaluators run beside the judge, and on how many probes (``GW_*``);
    read by the judge and, for SelfCheck's samples, by the runner."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    reference_free: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description=(
            "Reference-free evaluators beside the judge, comma separated: ragas_fact, selfcheck"
            " (need the GW_LLM_* model)."
        ),
    )
    reference_free_share: float = Field(
        0.1, ge=0.0, le=1.0, description="Share of factual probes they evaluate."
    )
    reference_free_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="RAGAS faithfulness at or above which it says 'right'."
    )
    selfcheck_samples: int = Field(
        4,
        ge=1,
        le=MAX_SAMPLES,
        description="Extra answers the runner asks the target for, per SelfCheck probe.",
    )

    @field_validator("reference_free", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [t.strip().lower() for t in v.split(",") if t.strip()]
        return v

    @field_validator("reference_free")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        unknown = [e for e in v if e not in EVALUATORS]
        if unknown:
            raise ValueError(f"unknown evaluator(s) {unknown}; known: {list(EVALUATORS)}")
        return list(dict.fromkeys(v))

    @property
    def selfcheck(self) -> bool:
        return SELFCHECK in self.reference_free


@dataclass
class ReferenceFreeCounters:
    evaluated: int = 0
    ragas_fact: int = 0
    selfcheck: int = 0
    abstained: int = 0
    unsampled: int = 0

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


class ReferenceFreeJudge:
    """The configured evaluators on one judged response (an ``Annotator`` of the judge stage)."""

    def __init__(self, settings: ReferenceFreeSettings, client: ChatModel) -> None:
        self.settings = settings
        self.client = client
        self.counters = ReferenceFreeCounters()

    def selected(self, response: RagResponse) -> bool:
        return in_share(str(response.probe_id), self.settings.reference_free_share)

    async def __call__(self, response: RagResponse, decision: Decision) -> Scores:
        answer = response.answer
        if response.status is not TargetStatus.OK or not answer or response.scenario != FACTUAL:
            return NO_SCORES
        names = self.settings.reference_free
        ragas: EvaluatorCall | None = None
        faithfulness: float | None = None
        sc_call: EvaluatorCall | None = None
        agreement: float | None = None
        if RAGAS_FACT in names and self.selected(response):
            self.counters.ragas_fact += 1
            if response.contexts:
                f = await ragas_faithfulness(self.client, response.query, answer, response.contexts)
                ragas = _call(f.verdict(self.settings.reference_free_threshold))
                faithfulness = f.score
            else:
                ragas = EvaluatorCall.ABSTAINED  # nothing to check the statements against
        if SELFCHECK in names and response.samples:
            self.counters.selfcheck += 1
            sc = await selfcheck(self.client, response.query, answer, response.samples)
            sc_call = _call(sc.verdict)
            agreement = sc.agreement_rate
        elif SELFCHECK in names and self.selected(response):
            # the runner picked this probe but shipped no sample: the target cannot be sampled
            # (or its first sample failed). Said so, never scored as agreement.
            self.counters.unsampled += 1
            sc_call = EvaluatorCall.NOT_SAMPLED
        if ragas is None and sc_call is None:
            return NO_SCORES
        self.counters.evaluated += 1
        self.counters.abstained += (ragas is EvaluatorCall.ABSTAINED) + (
            sc_call is EvaluatorCall.ABSTAINED
        )
        return Scores(reference_free=ReferenceFreeScores(ragas, faithfulness, sc_call, agreement))


def _call(verdict: Verdict) -> EvaluatorCall:
    if verdict is Verdict.CORRECT:
        return EvaluatorCall.RIGHT
    if verdict is Verdict.INCORRECT:
        return EvaluatorCall.WRONG
    return EvaluatorCall.ABSTAINED
