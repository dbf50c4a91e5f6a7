"""The report's table columns, specified once: the text, HTML and CSV renderers all read these.

A column names the header each renderer prints, how to read its value from the typed model, and
how many digits a float gets; a new number is added here and appears everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from groundwatch.core.tagging import UNSETTLED_MEANINGS, Cause, GroupStatus
from groundwatch.report.document import CohortNumbers, ScenarioNumbers, TargetReport

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Column(Generic[T]):
    """One column: ``text`` is the terse header of the plain-text table, ``title`` the header of
    the HTML table, ``help`` its tooltip."""

    key: str
    text: str
    title: str
    get: Callable[[T], object]
    help: str = ""
    digits: int = 3


def fmt(value: object, digits: int = 3) -> str:
    """One cell: ``–`` for undefined, floats to ``digits`` places, booleans as yes/no."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def interval(ci: tuple[float, float] | None) -> str:
    return "–" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


COHORT_COLUMNS: tuple[Column[CohortNumbers], ...] = (
    Column("examples", "examples", "examples", lambda c: c.examples, "decisively judged examples"),
    Column(
        "groups",
        "decided",
        "decided groups",
        lambda c: c.groups,
        "decided semantic groups (gap + non-robust + robust + flaky): the groups every rate is"
        " over; unknown and pending groups are counted in their own columns, not here",
    ),
    Column("gap_groups", "gap", "gap", lambda c: c.gap_groups, "every form wrong"),
    Column(
        "non_robust_groups", "non-rob", "non-robust", lambda c: c.non_robust_groups, "mixed forms"
    ),
    Column("robust_groups", "robust", "robust", lambda c: c.robust_groups, "every form right"),
    Column(
        "flaky_groups",
        "flaky",
        "flaky",
        lambda c: c.flaky_groups,
        "wrong only through forms whose verdict flips with an unchanged truth (LM noise)",
    ),
    Column(
        "unknown_groups",
        "unknown",
        "unknown",
        lambda c: c.unknown_groups,
        UNSETTLED_MEANINGS[GroupStatus.UNKNOWN],
    ),
    Column(
        "held_groups",
        "held",
        "held",
        lambda c: c.held_groups,
        "status kept from an older cycle: the later ones got no answer (an outage)",
    ),
    Column(
        "pending_groups",
        "pending",
        "pending",
        lambda c: c.pending_groups,
        UNSETTLED_MEANINGS[GroupStatus.PENDING],
    ),
    Column(
        "coverage",
        "cover",
        "coverage",
        lambda c: c.coverage,
        "decided forms / probed forms: the share of evidence the rates stand on",
    ),
    Column("accuracy", "Acc", "Acc", lambda c: c.accuracy, "correct / examples"),
    Column("acc_db", "Acc_db", "Acc_db", lambda c: c.acc_db, "1 − gap groups / groups"),
    Column(
        "refined_accuracy",
        "R",
        "R",
        lambda c: c.refined_accuracy,
        "correct / (examples − examples in gap groups)",
    ),
    Column("lambda", "λ", "λ", lambda c: c.lambda_, "examples in gap groups / examples"),
    Column(
        "retrieval_accuracy",
        "RetAcc",
        "retrieval acc",
        lambda c: c.retrieval_accuracy,
        "examples with sufficient retrieved context / examples whose retrieval could be judged"
        " (– when the target gives no retrieval evidence)",
    ),
    Column(
        "refined_retrieval_accuracy",
        "RetR",
        "retrieval R",
        lambda c: c.refined_retrieval_accuracy,
        "retrieval accuracy outside gap groups",
    ),
    Column("errors", "errors", "errors", lambda c: c.errors, "the target did not answer"),
    Column(
        "cohort_gap_groups",
        "coh-gap",
        "cohort gaps",
        lambda c: c.cohort_gap_groups,
        "gap here while another cohort answered the semantic group",
    ),
)

#: The denominator (n) of every rate of :data:`COHORT_COLUMNS`, and the retrieval coverage.
DENOMINATOR_COLUMNS: tuple[Column[CohortNumbers], ...] = (
    Column("examples", "Acc,λ: n", "Acc, λ: n", lambda c: c.examples, "decided examples"),
    Column("groups", "Acc_db: n", "Acc_db: n", lambda c: c.groups, "decided groups"),
    Column(
        "refined_n",
        "R: n",
        "R: n",
        lambda c: c.refined_n,
        "examples − examples in gap groups",
    ),
    Column(
        "retrieval_judged",
        "RetAcc: n",
        "retrieval acc: n",
        lambda c: c.retrieval_judged,
        "examples whose retrieval was judged (any group)",
    ),
    Column(
        "retrieval_inconclusive",
        "inconcl.",
        "retrieval inconclusive",
        lambda c: c.retrieval_inconclusive,
        "answered examples without retrieval evidence (no ids, no contexts)",
    ),
    Column(
        "retrieval_coverage",
        "RetCov",
        "retrieval coverage",
        lambda c: c.retrieval_coverage,
        "judged / (judged + inconclusive)",
    ),
    Column(
        "refined_retrieval_n",
        "RetR: n",
        "retrieval R: n",
        lambda c: c.refined_retrieval_n,
        "retrieval-judged examples of decided groups outside gap groups",
    ),
)

SCENARIO_COLUMNS: tuple[Column[ScenarioNumbers], ...] = (
    Column("probes", "probes", "probes", lambda s: s.probes),
    Column("correct", "correct", "correct", lambda s: s.correct),
    Column("incorrect", "incorrect", "incorrect", lambda s: s.incorrect),
    Column("errors", "errors", "errors", lambda s: s.errors),
    Column("undecided", "undecided", "undecided", lambda s: s.undecided),
    Column("failure_rate", "failure", "failure rate", lambda s: s.failure_rate),
    Column("failure_rate_ci", "95% CI", "95% CI", lambda s: interval(s.failure_rate_ci)),
)

#: Group statuses as the plots colour them, in stacking order.
STATUS_SEGMENTS: tuple[tuple[str, str, Callable[[CohortNumbers], int]], ...] = (
    ("gap", "#c0392b", lambda c: c.gap_groups),
    ("non-robust", "#e67e22", lambda c: c.non_robust_groups),
    ("flaky", "#f1c40f", lambda c: c.flaky_groups),
    ("robust", "#27ae60", lambda c: c.robust_groups),
    ("unknown", "#7f8c8d", lambda c: c.unknown_groups),
    ("pending", "#95a5a6", lambda c: c.pending_groups),
)

#: Failure causes as the plots colour them: every cause, in :class:`Cause`'s order (the text
#: table's), a cause of an unsettled group in its status's colour.
CAUSE_COLOURS: tuple[tuple[str, str], ...] = tuple(
    (cause.value, colour)
    for cause, colour in {
        Cause.GAP: "#c0392b",
        Cause.RETRIEVAL: "#8e44ad",
        Cause.LM: "#2980b9",
        Cause.INCONCLUSIVE: "#a6acaf",
        Cause.FLAKY: "#f1c40f",
        Cause.TARGET_ERROR: "#34495e",
        Cause.STALE: "#d35400",
        Cause.UNDECIDED: "#bdc3c7",
        Cause.UNKNOWN: "#7f8c8d",
        Cause.PENDING: "#95a5a6",
    }.items()
)


def cell(value: float | None, n: int) -> str:
    """A rate with its denominator: ``0.287 (n=314)``; ``– (n=0)`` when undefined."""
    return f"{fmt(value)} (n={n})"


def table3_rows(tr: TargetReport) -> list[list[str]]:
    """GRAMMAR 002 Table 3's rows for the compared cohorts: how errors of the retrieval database
    are isolated (nothing, remove gap groups, balance gap examples) × how LLM errors are (nothing:
    answer accuracy; context comparison: retrieval accuracy)."""
    b = tr.balanced
    if b is None or len(b.cohorts) != 2 or any(c not in tr.cohorts for c in b.cohorts):
        return []
    cs = [tr.cohorts[c] for c in b.cohorts]
    sides = [b.sides.get(c) for c in b.cohorts]
    return [
        ["no action", "no action", *(cell(c.accuracy, c.examples) for c in cs)],
        [
            "no action",
            "context comparison",
            *(cell(c.retrieval_accuracy, c.retrieval_judged) for c in cs),
        ],
        ["remove gap groups", "no action", *(cell(c.refined_accuracy, c.refined_n) for c in cs)],
        [
            "remove gap groups",
            "context comparison",
            *(cell(c.refined_retrieval_accuracy, c.refined_retrieval_n) for c in cs),
        ],
        [
            "balance gap examples",
            "no action",
            *(cell(s.accuracy, s.examples) if s else "–" for s in sides),
        ],
        [
            "balance gap examples",
            "context comparison",
            *(cell(s.retrieval_accuracy, s.retrieval_judged) if s else "–" for s in sides),
        ],
    ]


#: Per-answer metrics (``ScoresReport.answer_metrics``) in reading order, with their short
#: headers; ``{k}`` stands for the IR cut-off. Metrics not listed follow in name order.
ANSWER_METRIC_HEADERS: tuple[tuple[str, str], ...] = (
    ("exact_match", "EM"),
    ("token_f1", "F1"),
    ("rouge_l", "ROUGE-L"),
    ("bleu", "BLEU"),
    ("recall@{k}", "R@{k}"),
    ("precision@{k}", "P@{k}"),
    ("ap@{k}", "AP@{k}"),
    ("rr", "RR"),
    ("ndcg@{k}", "nDCG@{k}"),
    ("semantic_similarity", "SemSim"),
    ("bertscore_f1", "BERTScore"),
    ("answer_correctness", "AnsCorr"),
    ("answer_relevance", "AnsRel"),
    ("context_relevance", "CtxRel"),
    ("ragas_faithfulness", "faithful"),
    ("selfcheck_agreement", "SC agree"),
)


def answer_metric_columns(names: Iterable[str]) -> list[tuple[str, str]]:
    """(metric name, header) for the metrics in ``names``, in :data:`ANSWER_METRIC_HEADERS`
    order (any K)."""
    present = set(names)
    out: list[tuple[str, str]] = []
    for pattern, header in ANSWER_METRIC_HEADERS:
        if "{k}" not in pattern:
            if pattern in present:
                out.append((pattern, header))
            continue
        head, tail = pattern.split("{k}")
        for name in sorted(present):
            k = name[len(head) : len(name) - len(tail)] if tail else name[len(head) :]
            if name.startswith(head) and name.endswith(tail) and k.isdigit():
                out.append((name, header.replace("{k}", k)))
    listed = {n for n, _ in out}
    out.extend((n, n) for n in sorted(present - listed))
    return out
