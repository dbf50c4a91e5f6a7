"""Import of files the GRAMMAR authors' tool writes, and of rating files, into observations.

A GRAMMAR result file (``eval_results/results_<attr>_balanced.json``) is a list with one entry per
text query: ``query``, ``answer``, ``gpt_response`` (null when the closed-domain pipeline stopped
because retrieval already failed), ``judgement`` ("Correct"/"Incorrect"), ``query_tag`` (the
semantic group, numbered within the experiment, so files of one experiment share tags),
``true_document_ids``, ``retrieved_document_ids`` and ``retrieval_judgement`` (1/0).

Imported faithfully: the file's ``judgement`` is the verdict (a null ``gpt_response`` keeps the
file's "Incorrect", as the authors' ``RAGResult.judge_rag_response`` sets it), and
``retrieval_judgement`` is used as given rather than recomputed, because the ids in
``true_document_ids`` name clients or employees while ``retrieved_document_ids`` name project
documents — recomputing would be wrong, the authors' own flag is the ground truth here.

An entry without a ``judgement`` was never judged: the unbalanced files
(``eval_results_results_{short,long}.json``, every text query the generator made) carry retrieval
judgements only. Such entries are ``undecided`` — answer accuracy is unavailable for them, never
0 — while their retrieval judgements count as given (90/314 and 132/257 for Aurp: the paper's
Table 3 baseline "context comparison" cells, 0.29 and 0.51).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from groundwatch.core.data_quality import GroupSpec
from groundwatch.core.model import Expected, Verdict, form_id_for
from groundwatch.core.tagging import Observation
from groundwatch.errors import GroundwatchError
from groundwatch.pydantic_errors import did_you_mean


class ImportFormatError(GroundwatchError):
    """A result or rating file does not have the documented shape."""


_VERDICTS = {"correct": Verdict.CORRECT, "incorrect": Verdict.INCORRECT}


def load_grammar_results(
    path: str | Path,
    cohort: str,
    target: str = "grammar",
    *,
    dataset_id: str = "grammar",
    run_id: str = "",
) -> list[Observation]:
    """One observation per entry of a GRAMMAR result file, in file order.

    ``probe_id`` is ``"<target>:<cohort>:<index>"`` (entry index in the file), which is what
    rating and evaluator files refer to; ``group_id`` is the ``query_tag`` as a string, so the
    short and long files of one experiment line up group by group; ``group_forms`` is the number
    of entries the file has for that tag (the authors' groups are exactly the entries sharing a
    tag within one file).
    """
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ImportFormatError(f"{p}: cannot read a GRAMMAR result file: {exc}") from exc
    if not isinstance(raw, list):
        raise ImportFormatError(f"{p}: expected a JSON list of results, got {type(raw).__name__}")
    entries: list[Mapping[str, Any]] = []
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or "query_tag" not in e or "query" not in e:
            raise ImportFormatError(f"{p}[{i}]: entry needs 'query' and 'query_tag'")
        entries.append(e)
    forms_per_tag = Counter(str(e["query_tag"]) for e in entries)
    out: list[Observation] = []
    for i, e in enumerate(entries):
        group_id = str(e["query_tag"])
        out.append(
            Observation(
                probe_id=f"{target}:{cohort}:{i}",
                target=target,
                cohort=cohort,
                group_id=group_id,
                form_id=form_id_for(group_id, cohort, str(e["query"])),
                verdict=_verdict(e, f"{p}[{i}]"),
                run_id=run_id,
                dataset_id=dataset_id,
                group_forms=forms_per_tag[group_id],
                retrieved_ids=_ids(e.get("retrieved_document_ids")),
                relevant_doc_ids=_ids(e.get("true_document_ids")),
                retrieval_ok=_flag(e.get("retrieval_judgement"), f"{p}[{i}]"),
            )
        )
    return out


def load_grammar_specs(paths: Iterable[str | Path]) -> dict[str, GroupSpec]:
    """The semantic groups of GRAMMAR result files as data-quality specs (group id = the
    ``query_tag``, as :func:`load_grammar_results` names them): every query of the tag across the
    files, and its answer; the entities are the queries' quoted names."""
    questions: dict[str, dict[str, None]] = {}
    answers: dict[str, str] = {}
    for path in paths:
        p = Path(path)
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ImportFormatError(f"{p}: cannot read a GRAMMAR result file: {exc}") from exc
        if not isinstance(raw, list):
            raise ImportFormatError(f"{p}: expected a JSON list of results")
        for e in raw:
            if isinstance(e, dict) and "query_tag" in e and "query" in e:
                gid = str(e["query_tag"])
                questions.setdefault(gid, {})[str(e["query"])] = None
                if e.get("answer") is not None:
                    answers.setdefault(gid, str(e["answer"]))
    return {
        gid: GroupSpec(gid, tuple(qs), Expected(values=[answers[gid]]))
        for gid, qs in questions.items()
        if gid in answers
    }


def _verdict(e: Mapping[str, Any], where: str) -> Verdict:
    j = e.get("judgement")
    if j is None:
        # Never judged by the tool (the unbalanced files): no verdict to import. The authors'
        # closed-domain shortcut (retrieval failed ⇒ "Incorrect") is a judging step they did not
        # take here, and taking it for them would turn "not judged" into "wrong".
        return Verdict.UNDECIDED
    v = _VERDICTS.get(str(j).strip().lower())
    if v is None:
        raise ImportFormatError(f"{where}: judgement {j!r} is neither 'Correct' nor 'Incorrect'")
    return v


def _flag(value: Any, where: str) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool | int | float) and value in (0, 1):
        return bool(value)
    raise ImportFormatError(f"{where}: retrieval_judgement {value!r} is not 0, 1 or null")


def _ids(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple | set):
        return tuple(str(v) for v in value)
    return (str(value),)


def load_likert_ratings(path: str | Path) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Human ratings (Oro et al.: a 1–5 Likert scale) and optional metric scores, from CSV.

    Header ``probe_id,rating[,<metric>,…]``: every further numeric column is a metric score to
    correlate with the rating (BLEU, RAGAS faithfulness, …). Returns ``(ratings, metrics)`` with
    ``ratings[probe_id]`` and ``metrics[name][probe_id]``. Empty metric cells are skipped.
    """
    p = Path(path)
    ratings: dict[str, float] = {}
    metrics: dict[str, dict[str, float]] = {}
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = reader.fieldnames or []
        if "probe_id" not in cols or "rating" not in cols:
            missing = [c for c in ("probe_id", "rating") if c not in cols]
            hint = "".join(
                did_you_mean(m, cols).replace("did you mean", f"{m}: is it") for m in missing
            )
            raise ImportFormatError(
                f"{p}: CSV header needs 'probe_id' and 'rating', got {cols}{hint}"
            )
        extra = [c for c in cols if c not in ("probe_id", "rating")]
        for line, row in enumerate(reader, start=2):
            try:
                rating = float(row["rating"])
            except (TypeError, ValueError) as exc:
                raise ImportFormatError(f"{p}:{line}: rating {row['rating']!r}") from exc
            if not 1 <= rating <= 5:
                raise ImportFormatError(f"{p}:{line}: rating {rating} outside the 1–5 Likert scale")
            ratings[row["probe_id"]] = rating
            for c in extra:
                cell = (row.get(c) or "").strip()
                if cell:
                    try:
                        metrics.setdefault(c, {})[row["probe_id"]] = float(cell)
                    except ValueError as exc:
                        raise ImportFormatError(f"{p}:{line}: {c}={cell!r}") from exc
    return ratings, metrics


def load_evaluator_verdicts(path: str | Path) -> dict[str, bool]:
    """A reference-free evaluator's verdicts (RAGAS, SelfCheck, …) from CSV ``probe_id,verdict``;
    verdict ``correct``/``incorrect``, ``true``/``false`` or ``1``/``0``."""
    p = Path(path)
    truthy = {"correct": True, "true": True, "1": True, "yes": True}
    falsy = {"incorrect": False, "false": False, "0": False, "no": False}
    out: dict[str, bool] = {}
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not {"probe_id", "verdict"} <= set(reader.fieldnames or []):
            raise ImportFormatError(f"{p}: CSV header needs 'probe_id' and 'verdict'")
        for line, row in enumerate(reader, start=2):
            cell = (row["verdict"] or "").strip().lower()
            if cell in truthy:
                out[row["probe_id"]] = True
            elif cell in falsy:
                out[row["probe_id"]] = False
            else:
                raise ImportFormatError(f"{p}:{line}: verdict {row['verdict']!r}")
    return out
