"""The wire → domain mapping of the analytics stage: a ``Judgement`` message as an ``Observation``.

It lives with the stage, not in the core: the core's tagger knows observations only, never the
wire contracts, so the contracts can change their schema without touching the domain.
"""

from __future__ import annotations

from sys import intern

from groundwatch.contracts import Judgement
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import STALE_REASON, Observation


def observation_from_judgement(j: Judgement, probe_id: str | None = None) -> Observation:
    """The observation a judgement message carries (the analytics consumer's one mapping).

    ``probe_id``: ``str(j.probe_id)`` when the caller has it already (the stage formats every
    id once to skip redeliveries; a UUID's ``str`` is Python code)."""
    at = j.judged_at.timestamp()
    verdict = j.verdict
    # The window keeps each observation until its cycle leaves: the strings every judgement of
    # a target, cohort, group, run or form repeats are kept once (interned), not once per
    # judgement as parsed — about a third of an observation's memory.
    return Observation(
        probe_id=str(j.probe_id) if probe_id is None else probe_id,
        target=intern(j.target),
        cohort=intern(j.cohort),
        group_id=intern(j.group_id),
        form_id=intern(j.form_id),
        # validated as a Verdict already: the enum lookup only for a message built otherwise
        verdict=verdict if type(verdict) is Verdict else Verdict(verdict),
        run_id=intern(j.run_id),
        dataset_id=intern(j.dataset_id),
        scenario=intern(j.scenario),
        group_forms=j.group_forms,
        retrieved_ids=tuple(map(intern, j.retrieved_ids)),
        relevant_doc_ids=tuple(map(intern, j.relevant_doc_ids)),
        at=at,
        latency_s=max(0.0, at - j.probe_created_at.timestamp()),
        stale=j.reason.startswith(STALE_REASON),
        series=intern(j.series),
        cycle=j.cycle,
        truth_version=j.expected.version,
        error_kind=None if j.error_kind is None else intern(j.error_kind),
        context_has_answer=j.context_has_answer,
        scores=j.scores.tallied(),
    )
