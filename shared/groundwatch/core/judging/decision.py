"""What any judging tier returns: a verdict, the tier that gave it, and its evidence."""

from __future__ import annotations

from dataclasses import dataclass

from groundwatch.core.model import Verdict
from groundwatch.core.scores import NO_SCORES, Scores

#: Reason codes other components match on (the part of ``reason`` before any ":").
STALE = "stale"
JUDGE_ERROR = "judge_error"
NO_TIER = "none"


@dataclass(frozen=True)
class Decision:
    """One judgement's outcome.

    ``reason`` starts with a short code (``date_match``, ``refusal``, ``stale``, ``judge_error`` …),
    optionally followed by ``": "`` and the evidence, so dashboards group on the code while a
    person reading one judgement still sees why. ``scores`` is what the tier measured beside the
    verdict (the rules' token overlap, the LLM call, the self-audit, RAGProbe's metrics): immutable,
    so a memoised decision is shared as it is. ``prompt_version`` is set when an LLM decided, so
    every LLM verdict can be traced to the exact prompt that produced it.
    """

    verdict: Verdict
    tier: str
    reason: str
    scores: Scores = NO_SCORES
    prompt_version: str | None = None

    @classmethod
    def made(cls, verdict: Verdict, tier: str, reason: str, scores: Scores = NO_SCORES) -> Decision:
        """The same decision as ``Decision(verdict, tier, reason, scores)``, built without
        the frozen dataclass's ``__init__`` (one guarded ``object.__setattr__`` per field):
        the deterministic judge builds one per judgement, where that ``__init__`` is a
        measurable share of the cost. The instance dict is filled in field order, so equality,
        ``repr``, ``vars`` and pickling see exactly what ``__init__`` would have set."""
        d = object.__new__(cls)
        d.__dict__.update(
            verdict=verdict,
            tier=tier,
            reason=reason,
            scores=scores,
            prompt_version=None,
        )
        return d

    def scored(self, scores: Scores) -> Decision:
        """This decision, just made and not yet shared, given ``scores`` in place (the rules'
        chain adds its token overlap to the deciding tier's decision without a second one)."""
        self.__dict__["scores"] = scores
        return self

    def with_scores(self, scores: Scores) -> Decision:
        """This decision with ``scores`` in place of its own."""
        d = Decision.made(self.verdict, self.tier, self.reason, scores)
        d.__dict__["prompt_version"] = self.prompt_version
        return d

    @property
    def decided(self) -> bool:
        return self.verdict in (Verdict.CORRECT, Verdict.INCORRECT)

    @property
    def code(self) -> str:
        return self.reason.split(":", 1)[0]
