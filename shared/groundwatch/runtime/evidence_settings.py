"""The evidence rules' settings (``GW_EVIDENCE_*``), apart from the services' settings so that a
reading command (``report``, ``groups``) loads them without the database layer."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from groundwatch.core.evidence import EvidenceRule


class EvidenceSettings(BaseSettings):
    """The evidence rules' thresholds (:mod:`groundwatch.core.evidence`): read by whatever tags
    groups — the analytics service, ``run``, ``demo``, ``report`` and ``groups`` — so a status
    means the same wherever it is shown."""

    model_config = SettingsConfigDict(
        env_prefix="GW_",
        extra="ignore",
        env_file=None,
        allow_inf_nan=False,
        env_ignore_empty=True,
    )

    evidence_min_forms: int = Field(
        2,
        ge=1,
        le=1000,
        description="Decided forms (correct or incorrect) a group's cycle needs before it can be"
        " gap or robust (capped at the group's size); fewer: unknown. A right and a wrong form"
        " are non-robust whatever this says.",
    )
    evidence_min_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Share of a group's forms that must be decided for gap or robust (target"
        " errors and undecided verdicts are no evidence).",
    )

    def rule(self) -> EvidenceRule:
        return EvidenceRule(min_forms=self.evidence_min_forms, min_share=self.evidence_min_share)


def evidence_rule() -> EvidenceRule:
    """The operator's evidence rule from ``GW_EVIDENCE_*`` (:class:`ConfigError` when bad)."""
    try:
        return EvidenceSettings().rule()
    except ValueError:
        # the database layer comes with it: imported only to say what is wrong
        from groundwatch.runtime.settings import load_settings

        return load_settings(EvidenceSettings).rule()  # raises ConfigError naming the variable
