"""Failure attribution (GRAMMAR §4.3): why a wrong example failed — the knowledge base, the
retrieval, the LM — judged by context comparison across a semantic group's forms and cohorts,
and what a retrieval judgement stands on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from groundwatch.core.evidence import GroupStatus
from groundwatch.core.model import Verdict
from groundwatch.core.tagging.values import Cause, Observation, RetrievalEvidence

if TYPE_CHECKING:
    from groundwatch.core.tagging.windows import Tally

_CORRECT = Verdict.CORRECT

#: What the two statuses short of a conclusive one mean — the groups table's ``pending`` and
#: ``unknown`` columns and the attribution's causes of the same names say it in these words,
#: so both views of a store count the same groups by the same name.
UNSETTLED_MEANINGS: Mapping[GroupStatus, str] = MappingProxyType(
    {
        GroupStatus.UNKNOWN: "too little decided for a status; target errors and undecided"
        " verdicts are no evidence",
        GroupStatus.PENDING: "no cycle done yet",
    }
)

#: The group statuses that are a wrong form's cause by themselves, each as that cause: a gap
#: group's failures are the knowledge base's, a flaky group's the LM's chance; an unknown or a
#: pending group has no status to explain them, and its wrong forms are counted under its own
#: status's name — an *unknown* group's cycle is closed (it is not waiting for anything), a
#: *pending* one's is not. The one rule :func:`cause_of` and every reader share: a form counted
#: under ``pending`` (``unknown``) is one of a group the groups table counts ``pending``
#: (``unknown``).
STATUS_CAUSES: Mapping[GroupStatus, Cause] = MappingProxyType(
    {
        GroupStatus.GAP: Cause.GAP,
        GroupStatus.FLAKY: Cause.FLAKY,
        GroupStatus.UNKNOWN: Cause.UNKNOWN,
        GroupStatus.PENDING: Cause.PENDING,
    }
)

#: What each cause says about a failed example, in the words every report prints beside them.
CAUSE_MEANINGS: Mapping[Cause, str] = MappingProxyType(
    {
        Cause.GAP: "wrong in a gap group (the knowledge base lacks the fact)",
        Cause.RETRIEVAL: "wrong with insufficient retrieved context",
        Cause.LM: "wrong although the context sufficed (ground truth, context comparison or"
        " the gold stated in the retrieved text)",
        Cause.INCONCLUSIVE: "wrong with no retrieval evidence to tell (no ids, no contexts)",
        Cause.FLAKY: "wrong in a flaky group (the verdict reverses with an unchanged truth)",
        Cause.TARGET_ERROR: "no answer",
        Cause.STALE: "the answer an earlier SQL truth gave (outdated, not missing)",
        Cause.UNDECIDED: "the judge could not decide the answer",
        Cause.UNKNOWN: "wrong in an unknown group that no cohort answered right ("
        + UNSETTLED_MEANINGS[GroupStatus.UNKNOWN]
        + "): a gap and fragile wording are not told apart",
        Cause.PENDING: "wrong in a pending group ("
        + UNSETTLED_MEANINGS[GroupStatus.PENDING]
        + "): not attributed until its cycle closes",
    }
)


_JUDGEMENTS: dict[tuple[bool | None, RetrievalEvidence], tuple[bool | None, RetrievalEvidence]] = {
    (ok, evidence): (ok, evidence) for ok in (True, False, None) for evidence in RetrievalEvidence
}


def judge_retrieval(
    obs: Observation, correct_contexts: set[frozenset[str]], *, reports_ids: bool = False
) -> tuple[bool | None, RetrievalEvidence]:
    """:func:`_judge_retrieval`'s judgement, one shared tuple per distinct value (a report
    keeps one per counted example: 56 bytes each, for 18 possible values)."""
    return _JUDGEMENTS[_judge_retrieval(obs, correct_contexts, reports_ids=reports_ids)]


def _judge_retrieval(
    obs: Observation, correct_contexts: set[frozenset[str]], *, reports_ids: bool = False
) -> tuple[bool | None, RetrievalEvidence]:
    """Whether the retrieval gave ``obs`` sufficient context, and what that stands on; ``None``
    (inconclusive) when nothing says.

    In order of strength:

    1. the judgement given with the observation (imported GRAMMAR results);
    2. ground-truth document ids, when the target reported retrieved ids: sufficient when every
       relevant document was retrieved (relevant ⊆ retrieved — a top-k retriever always brings
       extra documents, so set equality as in the authors' tool would blame retrieval for every
       k > |relevant|, while mere overlap would call half of a two-document answer sufficient);
    3. an empty retrieval from a target that reports ids for other queries (``reports_ids``):
       nothing was retrieved, so nothing sufficed;
    4. context comparison (§4.3) on ids: sufficient when the retrieved ids contain (⊇) those of a
       correctly answered form of the same semantic group — that form got its answer from those
       documents, and more documents do not take them away (a correct form matches itself);
    5. the retrieved text (the judge's ``context_has_answer``): the gold answer stated in the
       contexts → sufficient; contexts without it → insufficient;
    6. context comparison, negative: the retrieved ids share no document with any correctly
       answered form's → insufficient (none of the documents that answered the group came back);
    7. otherwise inconclusive: no ids and no contexts (every ``openai_chat`` target, an
       ``http_json`` target without id or context paths), or ids that overlap a correct form's
       without containing them. The paper itself warns that a missing match "does not
       conclusively indicate retrieval failures" (000 §3.6), so no evidence is never a verdict.

    A target error has no retrieval judgement. An undecided verdict keeps whatever evidence the
    retrieval has (its correctness is not evidence either way).
    """
    if obs.verdict is Verdict.ERROR:
        return None, RetrievalEvidence.NONE
    if obs.retrieval_ok is not None:
        return obs.retrieval_ok, RetrievalEvidence.GIVEN
    retrieved = obs.retrieved_ids
    if retrieved and obs.relevant_doc_ids:
        return set(obs.relevant_doc_ids) <= set(retrieved), RetrievalEvidence.GROUND_TRUTH
    if not retrieved and reports_ids:
        return False, RetrievalEvidence.NOTHING_RETRIEVED
    if retrieved and correct_contexts:
        got = frozenset(retrieved)
        if any(c <= got for c in correct_contexts):
            return True, RetrievalEvidence.CONTEXT_COMPARISON
    if obs.context_has_answer is not None:
        return obs.context_has_answer, RetrievalEvidence.CONTEXT_TEXT
    if retrieved and correct_contexts and all(got.isdisjoint(c) for c in correct_contexts):
        return False, RetrievalEvidence.CONTEXT_COMPARISON
    return None, RetrievalEvidence.NONE


def retrieval_sufficient(
    obs: Observation, correct_contexts: set[frozenset[str]], *, reports_ids: bool = False
) -> bool | None:
    """:func:`judge_retrieval` without its evidence: True, False, or None (inconclusive)."""
    return judge_retrieval(obs, correct_contexts, reports_ids=reports_ids)[0]


def cause_of(obs: Observation, status: GroupStatus, retrieval_ok: bool | None) -> Cause | None:
    """Failure attribution of one example; ``None`` for a correct one.

    error → target error; undecided → undecided; a response matching an earlier answer version
    (the source database changed, the RAG's knowledge did not) → stale; a wrong example in a gap
    group → gap (the knowledge base lacks the fact); in a flaky group → flaky; in a group with
    no conclusive status → that status (:data:`STATUS_CAUSES`: unknown when its cycle closed with
    too little decided, pending while no cycle has closed); otherwise insufficient retrieval →
    retrieval, sufficient → LM, not judgeable (``None``) → inconclusive. Callers pass the status
    from :func:`attribution_status`, so a group that is a gap in one cohort only is not blamed on
    the knowledge base.
    """
    v = obs.verdict
    if v is Verdict.CORRECT:
        return None
    if v is Verdict.ERROR:
        return Cause.TARGET_ERROR
    if v is Verdict.UNDECIDED:
        return Cause.UNDECIDED
    if obs.stale:
        return Cause.STALE  # the answer matches an earlier SQL truth: outdated, not missing
    by_status = STATUS_CAUSES.get(status)
    if by_status is not None:
        return by_status
    if retrieval_ok is None:
        return Cause.INCONCLUSIVE
    return Cause.LM if retrieval_ok else Cause.RETRIEVAL


def attribution_status(status: GroupStatus, answered_in_another_cohort: bool) -> GroupStatus:
    """The status attribution works from: a *cohort gap* — every form of this cohort wrong while
    a form of another cohort of the same semantic group was answered correctly — is no knowledge
    gap (the fact is in the knowledge base, the target just cannot reach it in this form), so its
    failures are judged like those of a non-robust group: retrieval or LM. This is the authors'
    rule that gap groups are identified "by considering both hypothesis and counter-hypothesis
    clusters" (mutual gap groups), applied to attribution; the per-cohort status, and with it
    Acc_db, R and λ, stays exactly GRAMMAR's. The same holds for a wrong form of a cohort with
    too little evidence for a status (unknown): the fact was answered in another wording, so
    that form's failure is fragility, whatever the rest of its cohort did."""
    if (status is GroupStatus.GAP or status is GroupStatus.UNKNOWN) and answered_in_another_cohort:
        return GroupStatus.NON_ROBUST
    return status


def correct_answer_contexts(tallies: Iterable[Tally]) -> set[frozenset[str]]:
    """Retrieved-id sets of the correctly answered forms of one semantic group, across cohorts:
    any semantically identical, correctly answered form is evidence that a context suffices."""
    return {
        frozenset(o.retrieved_ids)
        for t in tallies
        if t.correct
        for o in t.latest.values()
        if o.verdict is _CORRECT and o.retrieved_ids
    }
