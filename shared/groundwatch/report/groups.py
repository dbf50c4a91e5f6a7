"""Per-group and per-question results: which facts fail, asked how, answered what, and why.

The report's numbers say *how many* groups are gaps; a user acts on *which*. This module turns a
tagger's window into :class:`~groundwatch.report.document.GroupResult` rows — one per semantic group
and target (every cohort), or per cohort — with the SQL truth, the gold answer, every form's
question, answer, verdict, tier, reason and cause, and the status per cycle. The CLI (``groups``,
``show``), the API (``/groups``) and the report's failing-facts section all read these rows, so
they never disagree.

The tagger holds verdicts only (no text: the live service keeps millions of forms); the texts come
from an :class:`Evidence` source — the analytics store, which keeps every judgement with its
question, answer and reason, and the dataset's groups with their SQL. Without one, rows still
carry statuses, verdicts and causes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import (
    DECIDED_STATUSES,
    FACTUAL,
    GroupStatus,
    GroupTally,
    Observation,
    TallyReads,
    attribution_status,
    cause_of,
    overall_status,
    status_of,
)
from groundwatch.report.document import (
    FormResult,
    GroupResult,
    StatusPoint,
    StatusSince,
    TargetHealth,
)

#: Worst first: the order of every listing.
SEVERITY: dict[GroupStatus, int] = {
    GroupStatus.GAP: 0,
    GroupStatus.NON_ROBUST: 1,
    GroupStatus.FLAKY: 2,
    GroupStatus.UNKNOWN: 3,
    GroupStatus.PENDING: 4,
    GroupStatus.ROBUST: 5,
}
#: Statuses the failing-facts listings show (robust and pending groups have nothing to fix yet).
FAILING: frozenset[GroupStatus] = frozenset(
    {GroupStatus.GAP, GroupStatus.NON_ROBUST, GroupStatus.FLAKY, GroupStatus.UNKNOWN}
)


class FormEvidence(Protocol):
    """What the store keeps of one judgement (``JudgementRow`` has these attributes)."""

    @property
    def query(self) -> str: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def tier(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def expected(self) -> dict[str, Any] | None: ...


class GroupSource(Protocol):
    """A semantic group's SQL truth as stored with its dataset (``semantic_groups`` rows)."""

    @property
    def sql(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...


class Evidence(Protocol):
    """Where the texts behind verdicts are read from (the analytics store)."""

    def forms(self, probe_ids: Sequence[str]) -> Mapping[str, FormEvidence]: ...

    def sources(self, keys: Sequence[tuple[str, str]]) -> Mapping[tuple[str, str], GroupSource]:
        """(dataset_id, group_id) → the group's SQL and parameters."""
        ...


_Key = tuple[str, str]  # (target, group_id)


def status_summary(tagger: TallyReads, target: str | None = None) -> dict[str, int]:
    """Semantic groups by their status over every cohort (:func:`overall_status`), factual
    probes only, and how many of them stand on kept evidence (``held``): the numbers of a
    continuous run's line per cycle. O(groups)."""
    out = dict.fromkeys([s.value for s in GroupStatus], 0)
    out["held"] = 0
    baseline = tagger.open_domain_baseline
    for t, _gid, _cohorts, statuses, answered, held in tagger.group_statuses(
        target, scenario=FACTUAL
    ):
        if t != baseline:
            out[overall_status(statuses, answered=answered).value] += 1
            out["held"] += held
    return out


def select_groups(
    tagger: TallyReads,
    *,
    target: str | None = None,
    cohort: str | None = None,
    status: GroupStatus | Iterable[GroupStatus] | None = None,
    scenario: str | None = FACTUAL,
    group_id: str | None = None,
) -> list[tuple[_Key, GroupStatus, dict[str, GroupTally]]]:
    """The matching groups, worst first: ((target, group_id), status, tallies by cohort).

    ``status`` filters on the row's status: the cohort's with ``cohort``, else the semantic
    group's over every cohort (:func:`overall_status`). ``scenario`` None keeps RAGProbe scenario
    probes too (default: GRAMMAR's factual groups only). ``group_id`` may be a unique prefix."""
    picked = _pick(tagger, target, cohort, status, scenario, group_id)
    return [row for key, st, cohorts in picked if (row := _row(tagger, key, st, cohorts))]


def _pick(
    tagger: TallyReads,
    target: str | None,
    cohort: str | None,
    status: GroupStatus | Iterable[GroupStatus] | None,
    scenario: str | None,
    group_id: str | None,
    group_ids: Collection[str] | None = None,
) -> list[tuple[_Key, GroupStatus, tuple[str, ...]]]:
    """The matching groups, worst first, by their statuses alone: a snapshot is made only
    of the rows shown (snapshots of every group, held together to pick a page of failing
    ones, were ~56 MB at 500k probes)."""
    wanted: frozenset[GroupStatus] | None
    if status is None:
        wanted = None
    elif isinstance(status, GroupStatus):
        wanted = frozenset({status})
    else:
        wanted = frozenset(status)
    picked: list[tuple[_Key, GroupStatus, tuple[str, ...]]] = []
    for t, gid, cohorts, statuses, answered, _held in tagger.group_statuses(
        target, cohort, scenario
    ):
        if group_id is not None and not gid.startswith(group_id):
            continue
        if group_ids is not None and gid not in group_ids:
            continue
        st = statuses[0] if cohort is not None else overall_status(statuses, answered=answered)
        if wanted is None or st in wanted:
            picked.append(((t, gid), st, cohorts))
    picked.sort(key=lambda r: (SEVERITY[r[1]], r[0][0], r[0][1]))
    return picked


def _row(
    tagger: TallyReads, key: _Key, status: GroupStatus, cohorts: tuple[str, ...]
) -> tuple[_Key, GroupStatus, dict[str, GroupTally]] | None:
    """A picked group with its cohorts' snapshots (None: dropped since it was picked, by a
    live tagger read from a report thread)."""
    by_cohort = {c: t for c in cohorts if (t := tagger.tally(key[0], c, key[1])) is not None}
    return (key, status, by_cohort) if by_cohort else None


def group_results(
    tagger: TallyReads,
    *,
    target: str | None = None,
    cohort: str | None = None,
    status: GroupStatus | Iterable[GroupStatus] | None = None,
    scenario: str | None = FACTUAL,
    group_id: str | None = None,
    evidence: Evidence | None = None,
    offset: int = 0,
    limit: int | None = None,
    group_ids: Collection[str] | None = None,
) -> tuple[int, list[GroupResult]]:
    """(total matching, the page ``[offset, offset + limit)`` as full rows); ``group_ids``
    keeps only those groups (a search's)."""
    picked = _pick(tagger, target, cohort, status, scenario, group_id, group_ids)
    return len(picked), page_results(tagger, picked, cohort, evidence, offset, limit)


Picked = list[tuple[_Key, GroupStatus, tuple[str, ...]]]
"""Groups picked for a listing, worst first: ((target, group_id), status, cohorts); a caller
that pages through an unchanging tagger picks once and asks :func:`page_results` per page."""


def page_results(
    tagger: TallyReads,
    picked: Picked,
    cohort: str | None = None,
    evidence: Evidence | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[GroupResult]:
    """The rows of ``picked[offset : offset + limit]``, with their texts from ``evidence``."""
    page = [
        row
        for key, st, cohorts in picked[offset : None if limit is None else offset + limit]
        if (row := _row(tagger, key, st, cohorts)) is not None
    ]
    gaps = {t: tagger.knowledge_gaps(t) for t in {key[0] for key, _, _ in page}}
    # built and filled a few rows at a time: every row built bare first, then each copied with
    # its texts, held both at once (2,000 failing groups: ~25 MB the allocator kept)
    built: list[GroupResult] = []
    for i in range(0, len(page), EVIDENCE_ROWS):
        chunk = [
            _build(tagger, key, st, by_cohort, cohort, gaps)
            for key, st, by_cohort in page[i : i + EVIDENCE_ROWS]
        ]
        built += _fill_evidence(chunk, evidence) if evidence is not None else chunk
    return built


def one_group(
    tagger: TallyReads,
    group_id: str,
    target: str | None = None,
    evidence: Evidence | None = None,
    *,
    targets: Sequence[str] | None = None,
    cohorts: Mapping[str, Sequence[str]] | None = None,
) -> list[GroupResult]:
    """The group ``group_id`` (its exact id), a row per target that holds it (``target``:
    that one only): found by its key, O(cohorts). ``targets`` and ``cohorts`` (by target) are
    the tagger's, when the caller keeps them (each is a pass over every group to find)."""
    picked: Picked = []
    names = [target] if target is not None else (targets or tagger.targets())
    for t in names:
        known = cohorts[t] if cohorts is not None and t in cohorts else tagger.cohorts(t)
        tallies = [(c, tally) for c in known if (tally := tagger.tally(t, c, group_id))]
        if not tallies:
            continue
        answered = tagger.answered_anywhere(t, group_id)
        status = overall_status((x.status for _, x in tallies), answered=answered)
        picked.append(((t, group_id), status, tuple(c for c, _ in tallies)))
    picked.sort(key=lambda r: (SEVERITY[r[1]], r[0][0]))
    return page_results(tagger, picked, None, evidence)


def _build(
    tagger: TallyReads,
    key: _Key,
    status: GroupStatus,
    by_cohort: Mapping[str, GroupTally],
    cohort: str | None,
    gaps: Mapping[str, set[str]],
) -> GroupResult:
    target, gid = key
    answered = tagger.answered_anywhere(target, gid)
    retrieval = tagger.retrieval_judgements(target, gid)
    forms: list[FormResult] = []
    history: list[StatusPoint] = []
    for c in sorted(by_cohort):
        t = by_cohort[c]
        attr = attribution_status(t.status, answered)
        flaky = tagger.flaky(target, c, gid)
        for o in sorted(tagger.group_observations(target, c, gid), key=lambda o: o.form_id):
            ret = retrieval.get(o.probe_id)
            cause = cause_of(o, attr, ret[0] if ret is not None else None)
            forms.append(
                FormResult(
                    probe_id=o.probe_id,
                    form_id=o.form_id,
                    cohort=c,
                    cycle=o.cycle,
                    run_id=o.run_id,
                    verdict=o.verdict.value,
                    cause=None if cause is None else cause.value,
                    error_kind=o.error_kind,
                    retrieved_ids=list(o.retrieved_ids),
                    flaky=o.form_id in flaky,
                )
            )
        history += _history(c, t.group_forms, tagger.group_history(target, c, gid))
    tallies = list(by_cohort.values())
    first = tallies[0]
    correct = sum(t.correct for t in tallies)
    incorrect = sum(t.incorrect for t in tallies)
    judged = sum(t.forms_judged for t in tallies)
    return GroupResult(
        target=target,
        group_id=gid,
        cohort=cohort,
        status=status.value,
        cohort_status={c: by_cohort[c].status.value for c in sorted(by_cohort)},
        knowledge_gap=gid in gaps.get(target, ()),
        dataset_id=first.dataset_id,
        series=first.series,
        cycle=max(t.cycle for t in tallies),
        evidence_cycle=max(t.evidence_cycle for t in tallies),
        held=any(t.held for t in tallies),
        scenario=first.scenario,
        correct=correct,
        incorrect=incorrect,
        errors=sum(t.error for t in tallies),
        undecided=sum(t.undecided for t in tallies),
        forms_expected=sum(t.group_forms for t in tallies),
        forms_judged=judged,
        coverage=(correct + incorrect) / judged if judged else None,
        forms=forms,
        history=history,
    )


def _history(
    cohort: str, group_forms: int, observations: Sequence[Observation]
) -> list[StatusPoint]:
    """GRAMMAR's status of each cycle alone (each form's latest verdict in that cycle)."""
    by_cycle: dict[int, dict[str, Verdict]] = {}
    for o in observations:
        by_cycle.setdefault(o.cycle, {})[o.form_id] = o.verdict
    out = []
    for cycle in sorted(by_cycle):
        verdicts = list(by_cycle[cycle].values())
        n = {v: verdicts.count(v) for v in Verdict}
        out.append(
            StatusPoint(
                cohort=cohort,
                cycle=cycle,
                status=status_of(
                    n[Verdict.CORRECT], n[Verdict.INCORRECT], len(verdicts), group_forms
                ).value,
                correct=n[Verdict.CORRECT],
                incorrect=n[Verdict.INCORRECT],
                errors=n[Verdict.ERROR],
                undecided=n[Verdict.UNDECIDED],
            )
        )
    return out


#: Rows whose stored judgements are read at once: a judgement row (answer, scores, contexts)
#: weighs ~5 KB, and a report of 2,000 failing groups read them all in one go (~70 MB).
EVIDENCE_ROWS = 100


def fill_evidence(rows: list[GroupResult], evidence: Evidence) -> list[GroupResult]:
    """The rows with questions, answers, reasons, gold answers and SQL filled in (I/O only: a
    live service calls this off its event loop, after selecting the rows on it)."""
    out: list[GroupResult] = []
    for i in range(0, len(rows), EVIDENCE_ROWS):
        out += _fill_evidence(rows[i : i + EVIDENCE_ROWS], evidence)
    return out


def _fill_evidence(rows: list[GroupResult], evidence: Evidence) -> list[GroupResult]:
    details = evidence.forms([f.probe_id for r in rows for f in r.forms])
    sources = evidence.sources(sorted({(r.dataset_id, r.group_id) for r in rows}))
    out = []
    for r in rows:
        forms = []
        gold: list[str] = []
        gold_text: str | None = None
        for f in r.forms:
            d = details.get(f.probe_id)
            if d is None:
                forms.append(f)
                continue
            forms.append(
                f.model_copy(
                    update={
                        "question": d.query,
                        "answer": d.answer,
                        "tier": d.tier,
                        "reason": d.reason or None,
                    }
                )
            )
            values = [str(v) for v in (d.expected or {}).get("values", [])]
            if values and not gold:
                gold = values
                gold_text = values[0] if len(values) == 1 else "(" + ", ".join(values) + ")"
        src = sources.get((r.dataset_id, r.group_id))
        update: dict[str, Any] = {"forms": forms, "gold": gold, "gold_text": gold_text}
        if src is not None:
            update |= {"sql": src.sql, "params": dict(src.params or {})}
        out.append(r.model_copy(update=update))
    return out


def target_health(tagger: TallyReads, evidence: Evidence | None = None) -> dict[str, TargetHealth]:
    """Per target over its newest cycle's probes (each form's latest verdict in it): probes,
    answered, errors by kind, and the message of the first error (from the evidence: the judge
    keeps the target's error there). See :func:`cycle_health`."""
    return cycle_health(tagger, evidence)[0]


def cycle_health(
    tagger: TallyReads, evidence: Evidence | None = None
) -> tuple[dict[str, TargetHealth], dict[tuple[str, str], tuple[int, int]]]:
    """Whether each target answered *now*: from the probes of its newest cycle only, never
    from what the groups' windows count — an outage keeps a group's status and numbers from its
    last cycle with answers (held), and a gate that read those passed a dead endpoint on a store
    with earlier cycles. Returns the health per target and, per (target, cohort), that cycle's
    (probes, target errors): the ``target_error_share`` a gate checks. A group not sampled in
    the target's newest cycle adds nothing to it."""
    newest: dict[str, int] = {}
    counts: dict[str, list[int]] = {}
    kinds: dict[str, dict[str, int]] = {}
    first: dict[str, Observation] = {}
    by_cohort: dict[str, dict[str, list[int]]] = {}
    for (target, cohort, _gid), top, forms in tagger.newest_cycle_forms():
        seen = newest.get(target)
        if seen is not None and top < seen:
            continue
        if seen is None or top > seen:  # a newer cycle of the target: what came before is past
            newest[target] = top
            counts[target] = [0, 0]
            kinds.pop(target, None)
            first.pop(target, None)
            by_cohort[target] = {}
        c = counts[target]
        cc = by_cohort[target].setdefault(cohort, [0, 0])
        for o in forms:
            c[0] += 1
            cc[0] += 1
            if o.verdict is not Verdict.ERROR:
                continue
            c[1] += 1
            cc[1] += 1
            kind = o.error_kind or "target_error"
            k = kinds.setdefault(target, {})
            k[kind] = k.get(kind, 0) + 1
            f = first.get(target)
            # the cause, not its echo: a circuit that opened only repeats an earlier error
            if f is None or _earlier(o, f):
                first[target] = o
    messages: dict[str, str] = {}
    if evidence is not None and first:
        found = evidence.forms([o.probe_id for o in first.values()])
        for t, o in first.items():
            d = found.get(o.probe_id)
            if d is not None and d.reason:
                messages[t] = d.reason
    out = {}
    for t in sorted(counts):
        probes, errors = counts[t]
        fo = first.get(t)
        out[t] = TargetHealth(
            cycle=newest[t],
            probes=probes,
            answered=probes - errors,
            errors=errors,
            error_kinds=dict(sorted(kinds.get(t, {}).items(), key=lambda kv: -kv[1])),
            first_error=messages.get(t) or (fo.error_kind if fo is not None else None),
            all_failed=probes > 0 and errors == probes,
        )
    cohorts = {(t, c): (n[0], n[1]) for t, per in by_cohort.items() for c, n in per.items()}
    return out, cohorts


def _earlier(o: Observation, than: Observation) -> bool:
    """Errors other than ``circuit_open`` first, then by time."""
    a, b = o.error_kind == "circuit_open", than.error_kind == "circuit_open"
    if a != b:
        return b
    return o.at < than.at


def health_lines(health: Mapping[str, TargetHealth]) -> list[str]:
    """One line per target that failed on some probe: what the CLI prints and the HTML shows."""
    out = []
    for t, h in health.items():
        if not h.errors:
            continue
        kinds = ", ".join(f"{k} {n}" for k, n in h.error_kinds.items())
        of = f" of cycle {h.cycle}" if h.cycle else ""  # cycle 0: no series (an import)
        head = (
            f"all {h.probes} probes{of} failed"
            if h.all_failed
            else f"{h.errors} of {h.probes} probes{of} failed"
        )
        first = f"; first error: {h.first_error}" if h.first_error else ""
        out.append(f"target {t}: {head} ({kinds}){first}")
    return out


def status_since(
    row: GroupResult, changes: Sequence[tuple[str, str, str, int]]
) -> list[StatusSince]:
    """Per cohort of ``row``: the cycle its current status began and, when that status is not
    conclusive (unknown, pending), the last conclusive one before it, from the group's status
    changes newest first — (cohort, from, to, cycle), as the store keeps them."""
    decided = {s.value for s in DECIDED_STATUSES}
    out = []
    for cohort, status in row.cohort_status.items():
        mine = [c for c in changes if c[0] == cohort]
        since = next((n for _, _, to, n in mine if to == status), None)
        was = None
        if status not in decided:
            was = next((a for _, a, _, _ in mine if a in decided), None)
        out.append(StatusSince(cohort=cohort, status=status, since_cycle=since, was=was))
    return out
