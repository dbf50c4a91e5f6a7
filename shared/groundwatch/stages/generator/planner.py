"""Turns semantic groups into probes: every form of every sampled group, for every target.

A cycle asks each sampled group in all its forms and cohorts within one run, so that group status
is computed on complete groups (a half-asked group would look non-robust or gap by accident).
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from groundwatch.contracts import Probe, utcnow
from groundwatch.core.model import SemanticGroup

_CLEAR_VERSION = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_4 = (4 << 76) | (0x8000 << 48)


def new_probe_ids(n: int) -> list[uuid.UUID]:
    """``n`` random (version 4) UUIDs, as :func:`uuid.uuid4` makes them, from one read of the
    OS's random source: ``uuid4`` reads it once per id and goes through ``UUID.__init__``'s
    argument checks, a fifth of the generator's cost per probe."""
    raw = os.urandom(16 * n)
    out: list[uuid.UUID] = []
    new, put, unknown, from_bytes = (
        object.__new__,
        object.__setattr__,
        uuid.SafeUUID.unknown,
        int.from_bytes,
    )
    for i in range(0, 16 * n, 16):
        u = new(uuid.UUID)
        put(u, "int", (from_bytes(raw[i : i + 16], "big") & _CLEAR_VERSION) | _VERSION_4)
        put(u, "is_safe", unknown)
        out.append(u)
    return out


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def sample_groups(
    groups: Sequence[SemanticGroup], size: int, rng: random.Random
) -> list[SemanticGroup]:
    """``size`` groups without replacement (all when ``size`` is 0 or larger than the dataset)."""
    if size <= 0 or size >= len(groups):
        return list(groups)
    return rng.sample(list(groups), size)


#: Validated form fields kept between cycles at most (a dataset's forms × targets); beyond
#: it the cache starts again, so a huge dataset costs validation, never unbounded memory.
MAX_VALIDATED_FORMS = 1_000_000

#: (form id, cohort, text, target, forms in the cohort) -> those fields validated as a Probe's
FormFields = dict[tuple[str, str, str, str, int], dict[str, Any]]


def probes_for(
    groups: Sequence[SemanticGroup],
    targets: Sequence[str],
    run_id: str,
    *,
    series: str = "",
    cycle: int = 0,
    started_at: datetime | None = None,
    validated: FormFields | None = None,
) -> Iterator[Probe]:
    """Every form of every group for every target, stamped with the cycle they belong to.

    A group's first probe is validated whole; the others are its siblings (:meth:`Probe.sibling`)
    with their form's fields validated once and kept in ``validated`` (pass the same dict every
    cycle: the generator stage does) — a fresh UUID and the current time need no validation."""
    cache: FormFields = {} if validated is None else validated
    for group in groups:
        per_cohort = {c: len(group.forms_in(c)) for c in group.cohorts}
        first: Probe | None = None
        ids = iter(new_probe_ids(len(group.forms) * len(targets)))
        for target in targets:
            for form in group.forms:
                if first is None:
                    first = Probe(
                        probe_id=next(ids),
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
                    yield first
                    continue
                key = (form.form_id, form.cohort, form.text, target, per_cohort[form.cohort])
                own = cache.get(key)
                if own is None:
                    own = Probe.validate_fields(
                        form_id=key[0],
                        cohort=key[1],
                        query=key[2],
                        target=key[3],
                        group_forms=key[4],
                    )
                    if len(cache) >= MAX_VALIDATED_FORMS:
                        cache.clear()
                    cache[key] = own
                yield first.sibling({**own, "probe_id": next(ids), "probe_created_at": utcnow()})
