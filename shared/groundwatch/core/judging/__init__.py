"""Reference-based judging without an LLM: normalization, typed comparison, the tier chain.

``judge_deterministic`` is the entry point; the judge stage's
:class:`~groundwatch.stages.judge.tiered.TieredJudge` runs it first and asks an LLM only about what
stays ``undecided``.
"""

from groundwatch.core.judging.decision import JUDGE_ERROR, NO_TIER, STALE, Decision
from groundwatch.core.judging.gold import Gold, prepare_gold
from groundwatch.core.judging.normalize import normalize
from groundwatch.core.judging.refusal import detect_refusal, is_refusal
from groundwatch.core.judging.tiers import (
    DEFAULT_TIERS,
    TIERS,
    judge_deterministic,
    token_prf,
    validate_tiers,
)

__all__ = [
    "DEFAULT_TIERS",
    "JUDGE_ERROR",
    "NO_TIER",
    "STALE",
    "TIERS",
    "Decision",
    "Gold",
    "detect_refusal",
    "is_refusal",
    "judge_deterministic",
    "normalize",
    "prepare_gold",
    "token_prf",
    "validate_tiers",
]
