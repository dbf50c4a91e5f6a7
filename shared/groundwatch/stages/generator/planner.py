"""Turns semantic groups into probes: every form of every sampled group, for every target.

A cycle asks each sampled group in all its forms and cohorts within one run, so that group status
is computed on complete groups (a half-asked group would look non-robust or gap by accident).
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from groundwatch.contracts import Probe, utcnow
from groundwatch.core.group_sequence import GroupSequence
from groundwatch.core.model import SemanticGroup

#: RFC 9562 version 7: 48 bits of Unix milliseconds, the version, 12 random bits, the variant,
#: 62 random bits. The 74 random bits are drawn as one 80-bit read whose spare bits are cleared.
_RANDOM_74 = (0xFFF << 64) | ((1 << 62) - 1)
_VERSION_7 = (7 << 76) | (0b10 << 62)


def new_probe_ids(n: int, now_ms: int | None = None) -> list[uuid.UUID]:
    """``n`` time-ordered (version 7) UUIDs of this millisecond, in increasing order, from one
    read of the OS's random source.

    Why version 7 and not random (version 4) ids: the probe id is the judgements table's primary
    key, so every store keeps an index on it; random ids land anywhere in that index, and once it
    outgrows the page cache each insert reads a page back. Ids that start with the time append at
    the index's right edge instead, in SQLite, PostgreSQL and MariaDB alike (RFC 9562 §6.10).
    74 random bits per id keep them unguessable and collision-free across generator instances.
    One read of ``os.urandom`` and no ``UUID.__init__`` checks: ``uuid4()`` per id was a fifth of
    the generator's cost per probe.
    """
    ms = (time.time_ns() // 1_000_000 if now_ms is None else now_ms) & ((1 << 48) - 1)
    raw = os.urandom(10 * n)
    from_bytes = int.from_bytes
    head = (ms << 80) | _VERSION_7
    values = sorted(
        head | (from_bytes(raw[i : i + 10], "big") & _RANDOM_74) for i in range(0, 10 * n, 10)
    )
    out: list[uuid.UUID] = []
    new, put, unknown = object.__new__, object.__setattr__, uuid.SafeUUID.unknown
    for value in values:
        u = new(uuid.UUID)
        put(u, "int", value)
        put(u, "is_safe", unknown)
        out.append(u)
    return out


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def sample_groups(
    groups: Sequence[SemanticGroup], size: int, rng: random.Random
) -> Sequence[SemanticGroup]:
    """``size`` groups without replacement (all when ``size`` is 0 or larger than the dataset:
    ``groups`` itself, not a copy — a dataset read from its file stays there)."""
    if size <= 0 or size >= len(groups):
        return groups
    return rng.sample(groups, size)  # by index: the same picks as over a list of the groups


class WithFresh(GroupSequence):
    """The dataset's groups with the newer versions of the groups whose answer changed in the
    source: only the changed ones are kept beside the dataset, which may live on disk."""

    def __init__(self, groups: Sequence[SemanticGroup], fresh: Mapping[str, SemanticGroup]):
        self.groups = groups
        self.fresh = fresh

    def __len__(self) -> int:
        return len(self.groups)

    def _group(self, index: int) -> SemanticGroup:
        g = self.groups[index]
        return self.fresh.get(g.group_id, g)

    def __iter__(self) -> Iterator[SemanticGroup]:
        fresh = self.fresh
        for g in self.groups:
            yield fresh.get(g.group_id, g)


#: Validated form fields kept between cycles at most (a dataset's forms × targets); beyond
#: it the cache starts again, so a larger dataset costs validation (a few µs a form), never
#: memory that grows with it: an entry weighs ~700 bytes, and at a million a 500k-probe cycle
#: kept ~350 MB of them for a saving of about a second.
MAX_VALIDATED_FORMS = 20_000

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
    series_epoch: datetime | None = None,
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
                        series_epoch=series_epoch,
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
