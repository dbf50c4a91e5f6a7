"""Turns semantic groups into probes: every form of every sampled group, for every target.

A cycle asks each sampled group in all its forms and cohorts within one run, so that group status
is computed on complete groups (a half-asked group would look non-robust or gap by accident).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime

from groundwatch.contracts import Probe
from groundwatch.core.model import SemanticGroup


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def sample_groups(
    groups: Sequence[SemanticGroup], size: int, rng: random.Random
) -> list[SemanticGroup]:
    """``size`` groups without replacement (all when ``size`` is 0 or larger than the dataset)."""
    if size <= 0 or size >= len(groups):
        return list(groups)
    return rng.sample(list(groups), size)


def probes_for(
    groups: Sequence[SemanticGroup],
    targets: Sequence[str],
    run_id: str,
    *,
    series: str = "",
    cycle: int = 0,
    started_at: datetime | None = None,
) -> Iterator[Probe]:
    """Every form of every group for every target, stamped with the cycle they belong to."""
    for group in groups:
        per_cohort = {c: len(group.forms_in(c)) for c in group.cohorts}
        for target in targets:
            for form in group.forms:
                yield Probe(
                    probe_id=uuid.uuid4(),
                    run_id=run_id,
                    series=series,
                    cycle=cycle,
                    cycle_started_at=started_at,
                    dataset_id=group.dataset_id,
                    group_id=group.group_id,
                    form_id=form.form_id,
                    cohort=form.cohort,
                    scenario=group.scenario,
                    target=target,
                    query=form.text,
                    expected=group.answer,
                    group_forms=per_cohort[form.cohort],
                    relevant_doc_ids=group.relevant_doc_ids,
                )
