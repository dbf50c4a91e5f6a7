"""The CI gate: thresholds on any report figure, per target × cohort, and a JUnit XML file.

``--fail-under acc_db=0.9`` fails when a (target, cohort)'s Acc_db is below 0.9; ``--max
non_robust_share=0.1`` when its share of non-robust groups is above 0.1. A figure is any number
of :class:`~groundwatch.report.document.CohortNumbers` (``acc_db``, ``refined_accuracy``,
``lambda``, ``gap_groups``, ``coverage``, …) or a share derived here (:data:`SHARES`). A rule may
be scoped, ``long:acc_db=0.9`` (a cohort) or ``prod/long:acc_db=0.9`` (a target and cohort; ``*``
matches any). A figure that is undefined (no decided group, nothing probed) breaks the rule: a
gate that cannot be evaluated must not pass.

Whatever the rules, a target that answered less than a floor share of its newest cycle's probes
(:data:`DEFAULT_MIN_ANSWERED`, ``--min-answered``) breaks the gate (:func:`answered_checks`): the
figures of a cycle whose probes were mostly shed (``circuit_open``) or failed stand on too little
evidence to pass anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from xml.etree import ElementTree as ET

from groundwatch.core.compare import GroupChange
from groundwatch.pydantic_errors import did_you_mean
from groundwatch.report.columns import fmt
from groundwatch.report.document import CohortNumbers, GroupResult, Report, TargetHealth


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def _all_groups(c: CohortNumbers) -> int:
    return c.groups + c.unknown_groups + c.pending_groups


#: Figures derived from the cohort numbers (a share of groups or of probed forms).
SHARES: dict[str, tuple[str, Callable[[CohortNumbers], float | None]]] = {
    "gap_share": ("gap groups / decided groups", lambda c: _share(c.gap_groups, c.groups)),
    # fragility as the semantic group shows it: a fact this cohort answered in one wording and
    # not another, or missed in every wording of it while another cohort answered it (a cohort
    # gap: short right, long wrong) — the second is no non-robust group *of the cohort*, and a
    # gate on non-robust groups alone passed a target fragile on every long form
    "non_robust_share": (
        "(non-robust + cohort-gap groups) / decided groups",
        lambda c: _share(c.non_robust_groups + c.cohort_gap_groups, c.groups),
    ),
    "cohort_gap_share": (
        "cohort-gap groups / decided groups",
        lambda c: _share(c.cohort_gap_groups, c.groups),
    ),
    "robust_share": ("robust groups / decided groups", lambda c: _share(c.robust_groups, c.groups)),
    "flaky_share": ("flaky groups / decided groups", lambda c: _share(c.flaky_groups, c.groups)),
    "knowledge_gap_share": (
        "knowledge-gap groups / decided groups",
        lambda c: _share(c.knowledge_gap_groups, c.groups),
    ),
    "unknown_share": (
        "unknown groups / all groups",
        lambda c: _share(c.unknown_groups, _all_groups(c)),
    ),
    "target_error_share": (
        "target errors / probes of the target's newest cycle",
        lambda c: _share(c.cycle_errors, c.cycle_probes),
    ),
    "undecided_share": ("undecided / probed forms", lambda c: _share(c.undecided, c.probed)),
}


def figures() -> list[str]:
    """Every figure a rule may name."""
    own = []
    for name, field in CohortNumbers.model_fields.items():
        ann = str(field.annotation)
        if ann in ("int", "float | None", "<class 'int'>", "<class 'float'>") or ann.startswith(
            ("int", "float")
        ):
            own.append(field.alias or name)
    return sorted({*own, *SHARES})


def figure(c: CohortNumbers, name: str) -> float | None:
    """The value of figure ``name`` for one cohort's numbers."""
    if name in SHARES:
        return SHARES[name][1](c)
    field = "lambda_" if name == "lambda" else name
    value = getattr(c, field)
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number")
    return float(value)


@dataclass(frozen=True, slots=True)
class Rule:
    """``figure`` must be at least (``under``) or at most (``max``) ``threshold``."""

    figure: str
    threshold: float
    kind: str  # "min" (--fail-under) or "max" (--max)
    target: str = "*"
    cohort: str = "*"

    @property
    def text(self) -> str:
        if self.target == "*":
            scope = "" if self.cohort == "*" else f"{self.cohort}:"
        else:
            scope = f"{self.target}/{self.cohort}:"
        op = ">=" if self.kind == "min" else "<="
        return f"{scope}{self.figure} {op} {self.threshold:g}"


def parse_rule(spec: str, kind: str) -> Rule:
    """``[[TARGET/]COHORT:]figure=value`` → a rule; ValueError naming what is wrong."""
    left, sep, value = spec.partition("=")
    if not sep:
        raise ValueError(f"expected FIGURE=VALUE, got {spec!r}")
    scope, colon, name = left.rpartition(":")
    name = name.strip()
    target, cohort = "*", "*"
    if colon:
        t, slash, c = scope.rpartition("/")
        target, cohort = (t.strip() or "*") if slash else "*", c.strip() or "*"
    known = figures()
    if name not in known:
        hint = did_you_mean(name, known)
        raise ValueError(f"unknown figure {name!r}{hint}; one of: {', '.join(known)}")
    try:
        threshold = float(value)
    except ValueError:
        raise ValueError(f"{name}: threshold {value!r} is not a number") from None
    low, high = figure_range(name)
    if not low <= threshold <= high:  # NaN fails both
        allowed = f"{low:g} to {high:g}" if high != math.inf else f"at least {low:g}"
        raise ValueError(f"{name}={value}: out of range (allowed: {allowed})")
    return Rule(name, threshold, kind, target, cohort)


def figure_range(name: str) -> tuple[float, float]:
    """The values figure ``name`` can take: a rate or share is in [0, 1], a count is ≥ 0 — a
    threshold outside can never hold (or always does), which is a typo, not a gate."""
    if name in SHARES:
        return 0.0, 1.0
    field = CohortNumbers.model_fields["lambda_" if name == "lambda" else name]
    return (0.0, 1.0) if "float" in str(field.annotation) else (0.0, math.inf)


def scope_errors(
    rules: Sequence[Rule], cohorts_by_target: Mapping[str, Iterable[str]]
) -> list[str]:
    """Rules whose target or cohort names nothing that is evaluated: a typo in a scope, told
    with the closest name (a usage error, before any probing when the caller knows the names)."""
    targets = sorted(cohorts_by_target)
    out = []
    for rule in rules:
        opt = "--fail-under" if rule.kind == "min" else "--max"
        if rule.target != "*" and rule.target not in cohorts_by_target:
            out.append(
                f"{opt} {rule.text}: no target {rule.target!r}"
                f"{did_you_mean(rule.target, targets)}; targets: {', '.join(targets) or 'none'}"
            )
            continue
        scoped = [rule.target] if rule.target != "*" else targets
        cohorts = sorted({c for t in scoped for c in cohorts_by_target[t]})
        if rule.cohort != "*" and rule.cohort not in cohorts:
            out.append(
                f"{opt} {rule.text}: no cohort {rule.cohort!r}"
                f"{did_you_mean(rule.cohort, cohorts)}; cohorts: {', '.join(cohorts) or 'none'}"
            )
    return out


#: The share of a target's probes in its newest cycle that must be answered for the gate to pass.
DEFAULT_MIN_ANSWERED = 0.9


@dataclass(frozen=True, slots=True)
class AnsweredCheck:
    """Whether a target answered at least ``floor`` of its newest cycle's probes."""

    target: str
    health: TargetHealth
    floor: float

    @property
    def value(self) -> float:
        h = self.health
        return h.answered / h.probes if h.probes else 0.0

    @property
    def ok(self) -> bool:
        return self.value >= self.floor

    @property
    def case_name(self) -> str:
        return f"{self.target}: answered_share >= {self.floor:g}"

    @property
    def line(self) -> str:
        h = self.health
        shed = h.error_kinds.get("circuit_open", 0)
        of = f" of cycle {h.cycle}" if h.cycle else ""
        return (
            f"{self.target}: answered {h.answered} of {h.probes} probes{of}"
            f" ({fmt(self.value, 4)} < --min-answered {self.floor:g}):"
            f" {shed} shed by the open circuit (circuit_open), {h.errors - shed} failed;"
            " too little evidence for the gate"
        )


def answered_checks(health: Mapping[str, TargetHealth], floor: float) -> list[AnsweredCheck]:
    """The answered-share floor of every target that was probed (none when ``floor`` is 0)."""
    if floor <= 0:
        return []
    return [AnsweredCheck(t, h, floor) for t, h in health.items() if h.probes]


@dataclass(frozen=True, slots=True)
class Check:
    """One rule on one (target, cohort): its value and whether it held."""

    rule: Rule
    target: str
    cohort: str
    value: float | None

    @property
    def ok(self) -> bool:
        if self.value is None:
            return False
        if self.rule.kind == "min":
            return self.value >= self.rule.threshold
        return self.value <= self.rule.threshold

    @property
    def case_name(self) -> str:
        return f"{self.target}/{self.cohort}: {self.rule.text}"

    @property
    def line(self) -> str:
        op = "<" if self.rule.kind == "min" else ">"
        limit = "fail-under" if self.rule.kind == "min" else "max"
        if self.value is None:
            return (
                f"{self.target}/{self.cohort}: {self.rule.figure} is undefined (no decided"
                f" groups or nothing probed); --{limit} {self.rule.figure}={self.rule.threshold:g}"
            )
        return (
            f"{self.target}/{self.cohort}: {self.rule.figure} = {fmt(self.value, 4)} {op}"
            f" {self.rule.threshold:g} (--{limit})"
        )


def evaluate(report: Report, rules: Sequence[Rule]) -> list[Check]:
    """Every rule on every (target, cohort) it applies to. A rule matching no cohort at all is
    a broken check too (a typo in its scope must not pass silently)."""
    checks: list[Check] = []
    for rule in rules:
        matched = False
        for target, tr in report.targets.items():
            if rule.target not in ("*", target):
                continue
            for cohort, numbers in tr.cohorts.items():
                if rule.cohort not in ("*", cohort):
                    continue
                matched = True
                checks.append(Check(rule, target, cohort, figure(numbers, rule.figure)))
        if not matched:
            checks.append(Check(rule, rule.target, rule.cohort, None))
    return checks


def junit_xml(
    groups: Sequence[GroupResult],
    checks: Sequence[Check | AnsweredCheck] = (),
    health: Mapping[str, TargetHealth] | None = None,
    *,
    name: str = "groundwatch",
    regressions: Sequence[GroupChange] | None = None,
    baseline: str = "",
) -> bytes:
    """JUnit XML: a test suite per target with one test case per semantic group — a failure
    for a gap, non-robust or flaky group (with its SQL, gold answer and every answer given), a
    skip for an unknown or pending one — and a suite of the thresholds (the answered-share
    floors among them), so a CI system lists the failing facts natively. With ``regressions``
    (``run --baseline``) a suite of the groups that got worse against ``baseline``, each a
    failure with its question, gold and answers."""
    root = ET.Element("testsuites", name=name)
    by_target: dict[str, list[GroupResult]] = {}
    for g in groups:
        by_target.setdefault(g.target, []).append(g)
    for target in sorted(set(by_target) | set(health or {})):
        suite = ET.SubElement(root, "testsuite", name=f"{name}.{target}")
        failures = skipped = 0
        items = by_target.get(target, [])
        for g in items:
            case = ET.SubElement(
                suite, "testcase", classname=f"{name}.{target}", name=_case_name(g)
            )
            if g.status in ("unknown", "pending"):
                skipped += 1
                ET.SubElement(case, "skipped", message=f"{g.status}: no decided verdict")
            elif g.status != "robust":
                failures += 1
                el = ET.SubElement(case, "failure", message=_failure_message(g), type=g.status)
                el.text = _failure_text(g)
        suite.set("tests", str(len(items)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        h = (health or {}).get(target)
        if h is not None and h.errors:
            out = ET.SubElement(suite, "system-out")
            kinds = ", ".join(f"{k} {n}" for k, n in h.error_kinds.items())
            out.text = (
                f"{h.errors} of {h.probes} probes failed ({kinds}); first error: {h.first_error}"
            )
    if checks:
        suite = ET.SubElement(root, "testsuite", name=f"{name}.thresholds")
        bad = 0
        for c in checks:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{name}.thresholds",
                name=c.case_name,
            )
            if not c.ok:
                bad += 1
                ET.SubElement(case, "failure", message=c.line, type="threshold")
        suite.set("tests", str(len(checks)))
        suite.set("failures", str(bad))
        suite.set("errors", "0")
    if regressions is not None:
        _regression_suite(root, name, regressions, baseline)
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data


def _case_name(g: GroupResult) -> str:
    question = next((f.question for f in g.forms if f.question), None)
    label = f" — {question}" if question else ""
    return f"{g.group_id}{label}"[:300]


def _failure_message(g: GroupResult) -> str:
    return f"{g.status}: expected {g.gold_text or '–'} ({g.incorrect} wrong, {g.correct} right)"


def _failure_text(g: GroupResult) -> str:
    lines = [f"SQL: {g.sql or '–'}", f"gold: {g.gold_text or '–'}"]
    for f in g.forms:
        answer = f.answer if f.answer is not None else f"({f.error_kind or 'no answer'})"
        lines.append(
            f"[{f.cohort}] {f.verdict}{f' ({f.cause})' if f.cause else ''}: {f.question or '–'}"
            f" → {answer}"
        )
    return "\n".join(lines)


def _regression_suite(
    root: ET.Element, name: str, regressions: Sequence[GroupChange], baseline: str
) -> None:
    suite = ET.SubElement(root, "testsuite", name=f"{name}.regressions")
    for c in regressions:
        question = next((f.question for f in c.forms if f.question), None)
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"{name}.regressions",
            name=f"{c.target}/{c.group_id}{f' — {question}' if question else ''}"[:300],
        )
        el = ET.SubElement(
            case,
            "failure",
            message=f"{c.transition} against {baseline}: expected {c.gold or '–'}",
            type="regression",
        )
        lines = [f"SQL: {c.sql or '–'}", f"gold: {c.gold or '–'}"]
        lines += [f"[{m.cohort}] {m.before} → {m.after}" for m in c.cohorts]
        for f in c.forms:
            was = f" (was: {f.before_answer})" if f.before_answer is not None else ""
            lines.append(
                f"[{f.cohort}] {f.before or '–'} → {f.after or '–'}: {f.question or '–'}"
                f" → {f.after_answer if f.after_answer is not None else '(no answer)'}{was}"
            )
        el.text = "\n".join(lines)
    suite.set("tests", str(len(regressions)))
    suite.set("failures", str(len(regressions)))
    suite.set("errors", "0")
