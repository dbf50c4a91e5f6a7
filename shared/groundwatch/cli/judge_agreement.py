"""``groundwatch judge-agreement FILE…``: how far the rules-only judge agrees with reference labels.

Reads GRAMMAR-tool result files (``query``, ``answer``, ``gpt_response``, ``judgement``), judges
every item that has a response with the deterministic tiers only, and reports, per file and in
total: coverage (the share the rules decide), agreement with the file's ``judgement`` on the
decided items, the precision of "correct" and of "incorrect" separately (a wrong "incorrect"
creates false gap groups and alerts, so it is watched on its own), and the confusion table.
``gpt_response`` may be a string, a list of strings (joined) or null (skipped).

Two optional fields per item make a richer development set in the same format: ``expected`` (a
full :class:`~groundwatch.core.model.Expected`, with types, tuple parts and grounded candidates,
used instead of ``answer``) and ``class`` (what the item tests: paraphrase, hedge, …), by which
the report breaks agreement down and labels every disagreement.

EVOUNA files (Wang et al., "Evaluating Open-QA Evaluation": ``question``, ``golden_answer`` with
alternatives separated by "/", and ``answer_<system>`` / ``judge_<system>`` — people's verdicts —
per system) are read too: one report per system and per half of the items, ``dev`` or
``held_out`` by a stable hash of the question, so that a rule fitted to the dev half shows on the
other. The alternatives become an "any of these" gold (:attr:`Expected.alternatives`); items the
authors marked ``improper`` are set aside.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from groundwatch.core.model import Expected, Verdict

if TYPE_CHECKING:
    from groundwatch.core.judging import Decision
from groundwatch.cli.common import EXIT_USAGE, fail, one_line_errors
from groundwatch.errors import GroundwatchError


@dataclass(frozen=True)
class ResultItem:
    """One judged query of a GRAMMAR result file."""

    file: str
    query: str
    answer: str | None
    response: str | None
    judgement: Verdict  # the reference label (the GRAMMAR authors' GPT judgement, or a person's)
    full: Expected | None = None  # the item's own expectation, when the file gives one
    kind: str = ""  # the item's class, when the file gives one

    @property
    def expected(self) -> Expected:
        if self.full is not None:
            return self.full
        return Expected(values=[] if self.answer is None else [self.answer])


def _response(raw: Any) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, list):
        parts = [str(r) for r in raw if r is not None]
        return "\n".join(parts) if parts else None
    return str(raw)


def _authors(raw: Any, where: str) -> Verdict:
    label = str(raw).strip().lower()
    if label == "correct":
        return Verdict.CORRECT
    if label == "incorrect":
        return Verdict.INCORRECT
    raise GroundwatchError(f"{where}: judgement must be 'Correct' or 'Incorrect', got {raw!r}")


#: The systems an EVOUNA file judges, in the order it lists them.
EVOUNA_SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")


def half_of(question: str) -> str:
    """``dev`` or ``held_out``: a stable hash of the question, the same on every run and host."""
    return "dev" if hashlib.blake2b(question.encode(), digest_size=8).digest()[0] % 2 == 0 else (
        "held_out"
    )  # fmt: skip


_QUALIFIER = re.compile(r"\s*\((?:disambiguation|[^()]*)\)\s*$")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def evouna_gold(golden: str) -> Expected:
    """An EVOUNA gold ("Scorpio/Skorpio/Scorpio (disambiguation)") as an "any of these" gold.

    Alternatives are Wikipedia titles: percent escapes are decoded and a trailing qualifier
    ("(film)", "(disambiguation)") dropped. The value is the alternative the most others
    contain as words ("Cancer" in "Cancer (disease)", "Malignant cancer"): the name the others
    elaborate; the rest are its alternatives.
    """
    alts: list[str] = []
    for raw in golden.split("/"):
        text = _PERCENT.sub(lambda m: chr(int(m[1], 16)), raw).strip()
        text = _QUALIFIER.sub("", text).strip() or text
        if text and text not in alts:
            alts.append(text)
    if not alts:
        return Expected(values=[""], answerable=True)
    from groundwatch.core.judging.normalize import normalize

    norms = [f" {normalize(a)} " for a in alts]

    def contained_in(i: int) -> int:
        return sum(1 for j, n in enumerate(norms) if j != i and norms[i].strip() and norms[i] in n)

    best = max(range(len(alts)), key=lambda i: (contained_in(i), -i))
    return Expected(values=[alts[best]], alternatives=[[a for a in alts if a != alts[best]]])


def _evouna_items(path: Path, data: list[Any]) -> list[ResultItem]:
    items = []
    for i, row in enumerate(data):
        if not isinstance(row, dict) or "question" not in row or "golden_answer" not in row:
            raise GroundwatchError(f"{path}[{i}]: needs 'question' and 'golden_answer'")
        if row.get("improper"):
            continue
        question = str(row["question"])
        expected = evouna_gold(str(row["golden_answer"]))
        half = half_of(question)
        for system in EVOUNA_SYSTEMS:
            if f"judge_{system}" not in row:
                continue
            answer = row.get(f"answer_{system}")
            items.append(
                ResultItem(
                    file=f"{path.name} {system} {half}",
                    query=question,
                    answer=expected.values[0],
                    response=answer if isinstance(answer, str) and answer.strip() else None,
                    judgement=Verdict.CORRECT if row[f"judge_{system}"] else Verdict.INCORRECT,
                    full=expected,
                )
            )
    return items


def load_results(path: Path) -> list[ResultItem]:
    """The items of one result file; raises :class:`GroundwatchError` naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GroundwatchError(f"{path}: cannot read a JSON result file: {exc}") from None
    if not isinstance(data, list):
        raise GroundwatchError(f"{path}: expected a JSON list of results")
    if data and isinstance(data[0], dict) and "golden_answer" in data[0]:
        return _evouna_items(path, data)
    items = []
    for i, row in enumerate(data):
        where = f"{path}[{i}]"
        if not isinstance(row, dict) or "query" not in row or "judgement" not in row:
            raise GroundwatchError(f"{where}: needs 'query' and 'judgement'")
        answer = row.get("answer")
        full = None
        if row.get("expected") is not None:
            try:
                full = Expected.model_validate(row["expected"])
            except ValueError as exc:
                raise GroundwatchError(f"{where}: 'expected' is not valid: {exc}") from None
            answer = full.text if answer is None else answer
        items.append(
            ResultItem(
                file=path.name,
                query=str(row["query"]),
                answer=None if answer is None else str(answer),
                response=_response(row.get("gpt_response")),
                judgement=_authors(row["judgement"], where),
                full=full,
                kind=str(row.get("class") or ""),
            )
        )
    return items


@dataclass
class AgreementReport:
    """Coverage and agreement of the deterministic tiers against the file's judgements."""

    items: int = 0  # items with a response (the ones judged)
    skipped: int = 0  # items without a response
    decided: int = 0
    agreed: int = 0
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)  # (authors, ours)
    by_tier: Counter[str] = field(default_factory=Counter)
    #: (tier, reference) of every "incorrect" the rules said: which mechanism a false one came
    #: from (a refusal the reference calls right is a label to read, not a rule to mend)
    incorrect_by_tier: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: (class, "agreed" | "disagreed" | "undecided") for items that carry a class
    by_class: Counter[tuple[str, str]] = field(default_factory=Counter)
    disagreements: list[tuple[ResultItem, Decision]] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        return self.decided / self.items if self.items else 0.0

    @property
    def agreement(self) -> float:
        return self.agreed / self.decided if self.decided else 0.0

    def precision(self, verdict: Verdict) -> float | None:
        """Of the items the rules called ``verdict``, the share the reference agrees with (None
        when the rules never said it)."""
        said = sum(self.confusion[(a, verdict.value)] for a in _AUTHORS)
        return self.confusion[(verdict.value, verdict.value)] / said if said else None

    def add(self, item: ResultItem, decision: Decision) -> None:
        self.items += 1
        self.confusion[(item.judgement.value, decision.verdict.value)] += 1
        if not decision.decided:
            if item.kind:
                self.by_class[(item.kind, "undecided")] += 1
            return
        self.decided += 1
        self.by_tier[decision.tier] += 1
        if decision.verdict is Verdict.INCORRECT:
            self.incorrect_by_tier[(decision.tier, item.judgement.value)] += 1
        if decision.verdict is item.judgement:
            self.agreed += 1
            if item.kind:
                self.by_class[(item.kind, "agreed")] += 1
        else:
            self.disagreements.append((item, decision))
            if item.kind:
                self.by_class[(item.kind, "disagreed")] += 1

    def to_json(self) -> dict[str, Any]:
        classes = sorted({k for k, _ in self.by_class})
        return {
            "coverage": self.coverage,
            "agreement": self.agreement,
            "precision_correct": self.precision(Verdict.CORRECT),
            "precision_incorrect": self.precision(Verdict.INCORRECT),
            "decided": self.decided,
            "items": self.items,
            "agreed": self.agreed,
            "skipped_no_response": self.skipped,
            "confusion": {
                authors: {ours: self.confusion[(authors, ours)] for ours in _OURS}
                for authors in _AUTHORS
            },
            "decided_by_tier": dict(self.by_tier),
            "incorrect_by_tier": {
                tier: {a: self.incorrect_by_tier[(tier, a)] for a in _AUTHORS}
                for tier in sorted({t for t, _ in self.incorrect_by_tier})
            },
            "by_class": {
                k: {o: self.by_class[(k, o)] for o in ("agreed", "disagreed", "undecided")}
                for k in classes
            },
            "disagreements": [
                {
                    "class": item.kind,
                    "reference": item.judgement.value,
                    "ours": d.verdict.value,
                    "tier": d.tier,
                    "reason": d.reason,
                    "gold": item.answer,
                    "response": item.response,
                }
                for item, d in self.disagreements
            ],
        }


_AUTHORS = (Verdict.CORRECT.value, Verdict.INCORRECT.value)
_OURS = (Verdict.CORRECT.value, Verdict.INCORRECT.value, Verdict.UNDECIDED.value)


def measure_agreement(
    items: Iterable[ResultItem], tiers: Sequence[str] | None = None
) -> AgreementReport:
    from groundwatch.core.judging import judge_deterministic

    report = AgreementReport()
    for item in items:
        if item.response is None:
            report.skipped += 1
            continue
        report.add(item, judge_deterministic(item.query, item.expected, item.response, tiers=tiers))
    return report


def measure_per_file(
    items: Sequence[ResultItem], tiers: Sequence[str] | None = None
) -> dict[str, AgreementReport]:
    """One report per file (in the order the files came), each item judged once."""
    by_file: dict[str, list[ResultItem]] = {}
    for item in items:
        by_file.setdefault(item.file, []).append(item)
    return {name: measure_agreement(group, tiers) for name, group in by_file.items()}


def combine(reports: Iterable[AgreementReport]) -> AgreementReport:
    """The total over several files' reports."""
    total = AgreementReport()
    for r in reports:
        total.items += r.items
        total.skipped += r.skipped
        total.decided += r.decided
        total.agreed += r.agreed
        total.confusion.update(r.confusion)
        total.by_tier.update(r.by_tier)
        total.incorrect_by_tier.update(r.incorrect_by_tier)
        total.by_class.update(r.by_class)
        total.disagreements.extend(r.disagreements)
    return total


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _print(report: AgreementReport, console: Console, show: int, title: str = "") -> None:
    table = Table(title=f"{title}: reference (rows) vs deterministic tiers (columns)")
    table.add_column("reference \\ ours")
    for ours in _OURS:
        table.add_column(ours, justify="right")
    for authors in _AUTHORS:
        table.add_row(authors, *(str(report.confusion[(authors, o)]) for o in _OURS))
    console.print(table)
    console.print(
        f"items with a response: {report.items} (skipped without: {report.skipped})\n"
        f"decided: {report.decided}  coverage: {report.coverage:.1%}\n"
        f"agreement on decided: {report.agreed}/{report.decided} = "
        f"{_pct(report.agreement if report.decided else None)}\n"
        f"precision of 'correct': {_pct(report.precision(Verdict.CORRECT))}  "
        f"precision of 'incorrect': {_pct(report.precision(Verdict.INCORRECT))}\n"
        f"decided by tier: {dict(report.by_tier.most_common())}"
    )
    tiers = sorted({t for t, _ in report.incorrect_by_tier})
    if tiers:
        said = ", ".join(
            f"{t} {report.incorrect_by_tier[(t, Verdict.INCORRECT.value)]}"
            f"/{sum(report.incorrect_by_tier[(t, a)] for a in _AUTHORS)}"
            for t in tiers
        )
        console.print(f"'incorrect' by tier (reference agrees / said): {said}")
    classes = sorted({k for k, _ in report.by_class})
    if classes:
        cls = Table(title=f"{title}: by item class")
        for col in ("class", "agreed", "disagreed", "undecided"):
            cls.add_column(col, justify="left" if col == "class" else "right")
        for k in classes:
            cls.add_row(
                k, *(str(report.by_class[(k, o)]) for o in ("agreed", "disagreed", "undecided"))
            )
        console.print(cls)
    for item, d in report.disagreements[:show]:
        kind = f" class={item.kind}" if item.kind else ""
        console.print(
            f"[yellow]disagree[/]{kind} reference={item.judgement.value} ours={d.verdict.value} "
            f"({d.tier}: {d.reason}) gold={item.answer!r} response={item.response!r:.160}"
        )


def register(app: typer.Typer) -> None:
    @app.command("judge-agreement")
    @one_line_errors
    def judge_agreement(
        files: Annotated[
            list[Path],
            typer.Argument(
                help="GRAMMAR result files, or EVOUNA files (one report per system and half)."
            ),
        ],
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Also write the numbers to this file.")
        ] = None,
        tiers: Annotated[
            str | None, typer.Option(help="Comma-separated deterministic tiers (default: all).")
        ] = None,
        show: Annotated[int, typer.Option(help="Print up to this many disagreements.")] = 10,
        dry_run: Annotated[
            bool,
            typer.Option(
                "--dry-run", help="Also estimate the LLM calls and tokens the undecided would cost."
            ),
        ] = False,
    ) -> None:
        """Coverage, agreement and precision per verdict of the rules-only judge, per file."""
        console = Console()
        try:
            from groundwatch.core.judging import validate_tiers

            tier_list = validate_tiers([t.strip() for t in tiers.split(",")]) if tiers else None
            items = [item for f in files for item in load_results(f)]
        except (GroundwatchError, ValueError) as exc:
            fail(str(exc), EXIT_USAGE)
        per_file = measure_per_file(items, tier_list)
        for name, file_report in per_file.items():
            _print(file_report, console, show, name)
        report = combine(per_file.values())
        if len(per_file) > 1:
            _print(report, console, 0, "all files")
        payload = report.to_json() | {
            "files": [str(f) for f in files],
            "per_file": {name: r.to_json() for name, r in per_file.items()},
        }
        if dry_run:
            from groundwatch.app.bootstrap import llm_judge_spend

            calls, tokens, prompt_version = llm_judge_spend(
                ((i.query, i.expected, i.response) for i in items), tier_list
            )
            payload["llm_dry_run"] = {
                "calls": calls, "tokens": tokens, "prompt_version": prompt_version
            }  # fmt: skip
            console.print(
                f"dry run: the LLM tier ({prompt_version}) would make {calls} calls, "
                f"~{tokens} tokens, for the undecided items; nothing was sent"
            )
        if json_out is not None:
            json_out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
