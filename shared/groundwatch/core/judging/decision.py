"""What any judging tier returns: a verdict, the tier that gave it, and its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

from groundwatch.core.model import Verdict

#: Reason codes other components match on (the part of ``reason`` before any ":").
STALE = "stale"
JUDGE_ERROR = "judge_error"
NO_TIER = "none"


@dataclass(frozen=True)
class Decision:
    """One judgement's outcome.

    ``reason`` starts with a short code (``date_match``, ``refusal``, ``stale``, ``judge_error`` …),
    optionally followed by ``": "`` and the evidence, so dashboards group on the code while a
    person reading one judgement still sees why. ``prompt_version`` is set when an LLM decided,
    so every LLM verdict can be traced to the exact prompt that produced it.
    """

    verdict: Verdict
    tier: str
    reason: str
    scores: dict[str, float] = field(default_factory=dict)
    prompt_version: str | None = None

    @classmethod
    def made(
        cls, verdict: Verdict, tier: str, reason: str, scores: dict[str, float] | None = None
    ) -> Decision:
        """The same decision as ``Decision(verdict, tier, reason, scores or {})``, built without
        the frozen dataclass's ``__init__`` (one guarded ``object.__setattr__`` per field):
        the deterministic judge builds one per judgement, where that ``__init__`` is a
        measurable share of the cost. The instance dict is filled in field order, so equality,
        ``repr``, ``vars`` and pickling see exactly what ``__init__`` would have set."""
        d = object.__new__(cls)
        d.__dict__.update(
            verdict=verdict,
            tier=tier,
            reason=reason,
            scores={} if scores is None else scores,
            prompt_version=None,
        )
        return d

    @property
    def decided(self) -> bool:
        return self.verdict in (Verdict.CORRECT, Verdict.INCORRECT)

    @property
    def code(self) -> str:
        return self.reason.split(":", 1)[0]
