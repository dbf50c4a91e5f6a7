"""``groundwatch judge-agreement FILE…``: how far the rules-only judge agrees with GRAMMAR's judge.

Reads GRAMMAR-tool result files (``query``, ``answer``, ``gpt_response``, ``judgement``), judges
every item that has a response with the deterministic tiers only, and reports coverage (the share
the rules decide), agreement with the file's ``judgement`` on the decided items, and the
confusion table. ``gpt_response`` may be a string, a list of strings (joined) or null (skipped).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from groundwatch.core.judging import Decision, judge_deterministic, validate_tiers
from groundwatch.core.model import Expected, Verdict
from groundwatch.errors import GroundwatchError


@dataclass(frozen=True)
class ResultItem:
    """One judged query of a GRAMMAR result file."""

    file: str
    query: str
    answer: str | None
    response: str | None
    judgement: Verdict  # the authors' (GPT) judgement

    @property
    def expected(self) -> Expected:
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


def load_results(path: Path) -> list[ResultItem]:
    """The items of one result file; raises :class:`GroundwatchError` naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GroundwatchError(f"{path}: cannot read a JSON result file: {exc}") from None
    if not isinstance(data, list):
        raise GroundwatchError(f"{path}: expected a JSON list of results")
    items = []
    for i, row in enumerate(data):
        where = f"{path}[{i}]"
        if not isinstance(row, dict) or "query" not in row or "judgement" not in row:
            raise GroundwatchError(f"{where}: needs 'query' and 'judgement'")
        answer = row.get("answer")
        items.append(
            ResultItem(
                file=path.name,
                query=str(row["query"]),
                answer=None if answer is None else str(answer),
                response=_response(row.get("gpt_response")),
                judgement=_authors(row["judgement"], where),
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
    disagreements: list[tuple[ResultItem, Decision]] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        return self.decided / self.items if self.items else 0.0

    @property
    def agreement(self) -> float:
        return self.agreed / self.decided if self.decided else 0.0

    def add(self, item: ResultItem, decision: Decision) -> None:
        self.items += 1
        self.confusion[(item.judgement.value, decision.verdict.value)] += 1
        if not decision.decided:
            return
        self.decided += 1
        self.by_tier[decision.tier] += 1
        if decision.verdict is item.judgement:
            self.agreed += 1
        else:
            self.disagreements.append((item, decision))

    def to_json(self) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "agreement": self.agreement,
            "decided": self.decided,
            "items": self.items,
            "agreed": self.agreed,
            "skipped_no_response": self.skipped,
            "confusion": {
                authors: {ours: self.confusion[(authors, ours)] for ours in _OURS}
                for authors in _AUTHORS
            },
            "decided_by_tier": dict(self.by_tier),
        }


_AUTHORS = (Verdict.CORRECT.value, Verdict.INCORRECT.value)
_OURS = (Verdict.CORRECT.value, Verdict.INCORRECT.value, Verdict.UNDECIDED.value)


def measure_agreement(
    items: Iterable[ResultItem], tiers: Sequence[str] | None = None
) -> AgreementReport:
    report = AgreementReport()
    for item in items:
        if item.response is None:
            report.skipped += 1
            continue
        report.add(item, judge_deterministic(item.query, item.expected, item.response, tiers=tiers))
    return report


def _print(report: AgreementReport, console: Console, show: int) -> None:
    table = Table(title="authors' judgement (rows) vs deterministic tiers (columns)")
    table.add_column("authors \\ ours")
    for ours in _OURS:
        table.add_column(ours, justify="right")
    for authors in _AUTHORS:
        table.add_row(authors, *(str(report.confusion[(authors, o)]) for o in _OURS))
    console.print(table)
    console.print(
        f"items with a response: {report.items} (skipped without: {report.skipped})\n"
        f"decided: {report.decided}  coverage: {report.coverage:.1%}\n"
        f"agreement on decided: {report.agreed}/{report.decided} = {report.agreement:.1%}\n"
        f"decided by tier: {dict(report.by_tier.most_common())}"
    )
    for item, d in report.disagreements[:show]:
        console.print(
            f"[yellow]disagree[/] authors={item.judgement.value} ours={d.verdict.value} "
            f"({d.tier}: {d.reason}) gold={item.answer!r} response={item.response!r:.160}"
        )


def register(app: typer.Typer) -> None:
    @app.command("judge-agreement")
    def judge_agreement(
        files: Annotated[list[Path], typer.Argument(help="GRAMMAR result files (JSON).")],
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
        """Coverage and agreement of the rules-only judge against the files' GPT judgements."""
        console = Console()
        try:
            tier_list = validate_tiers([t.strip() for t in tiers.split(",")]) if tiers else None
            items = [item for f in files for item in load_results(f)]
        except (GroundwatchError, ValueError) as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2) from None
        report = measure_agreement(items, tier_list)
        _print(report, console, show)
        payload = report.to_json() | {"files": [str(f) for f in files]}
        if dry_run:
            from groundwatch.adapters.llm.llm_judge import PROMPT_VERSION
            from groundwatch.stages.judge.tiered import estimate_llm_spend

            calls, tokens = estimate_llm_spend(
                ((i.query, i.expected, i.response) for i in items), tier_list
            )
            payload["llm_dry_run"] = {
                "calls": calls, "tokens": tokens, "prompt_version": PROMPT_VERSION
            }  # fmt: skip
            console.print(
                f"dry run: the LLM tier ({PROMPT_VERSION}) would make {calls} calls, "
                f"~{tokens} tokens, for the undecided items; nothing was sent"
            )
        if json_out is not None:
            json_out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
