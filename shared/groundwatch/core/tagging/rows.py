"""One observation as a row of plain values, and back: the form a tally's window takes in its
stored state (:mod:`groundwatch.core.tagging.state`) and in a compressed tally
(:mod:`groundwatch.core.tagging.cold`). The group's target, cohort, group id and cycle are not in
the row: the holder of the rows knows them."""

from __future__ import annotations

from sys import intern as _intern
from typing import Any

import orjson

from groundwatch.core.model import Verdict
from groundwatch.core.score_json import scores_from_json, scores_json_bytes
from groundwatch.core.scores import NO_SCORES, Scores
from groundwatch.core.tagging.values import Observation

_VERDICTS = {v.value: v for v in Verdict}


def observation_row(o: Observation) -> list[Any]:
    """The row; an answer a person gave a verdict on has two more values at its end (the
    revision and the judge's verdict), so the rows of every other answer keep their length."""
    row: list[Any] = [
        o.probe_id,
        o.form_id,
        o.verdict.value,
        o.run_id,
        o.dataset_id,
        o.scenario,
        o.group_forms,
        o.retrieved_ids,
        o.relevant_doc_ids,
        o.retrieval_ok,
        o.at,
        o.latency_s,
        o.stale,
        o.series,
        o.truth_version,
        o.error_kind,
        o.context_has_answer,
        # the typed families as JSON text ('' for none): one restore decodes a text once
        _scores_text(o.scores),
    ]
    if o.human is not None:
        row += [o.human[0], o.human[1].value]
    return row


#: Scores written as JSON text, by object: the tally's observations share their tallied scores
#: (:meth:`Scores.tallied`) and a tally's state is written again with every batch that touches
#: it, so each scores object is serialized once, not once per write (bounded like the table of
#: shared scores; the entry holds the object, so its id stays its own).
_ENCODED: dict[int, tuple[Scores, str]] = {}


def _scores_text(scores: Scores) -> str:
    if scores is NO_SCORES:
        return ""
    hit = _ENCODED.get(id(scores))
    if hit is not None and hit[0] is scores:
        return hit[1]
    if len(_ENCODED) >= 1 << 16:
        _ENCODED.clear()
    text = scores_json_bytes(scores).decode()
    _ENCODED[id(scores)] = (scores, text)
    return text


def _same(text: str) -> str:
    return text


def row_observation(
    row: list[Any], target: str, cohort: str, group_id: str, cycle: int, *, shared: bool = True
) -> Observation:
    """``shared``: the repeated strings interned, for an observation that is kept (a restored
    or thawed tally's); a read-once decode (a quiet tally peeked at by a report) leaves them as
    decoded, not adding each form id to the interpreter's table only to drop it again."""
    intern = _intern if shared else _same
    return Observation(
        row[0],
        target,
        cohort,
        group_id,
        intern(row[1]),  # the form: every verdict of it repeats it
        _VERDICTS[row[2]],
        intern(row[3]),  # run, dataset, scenario, series: shared by many (see observe.py)
        intern(row[4]),
        intern(row[5]),
        row[6],
        tuple(row[7]) if row[7] else (),
        tuple(row[8]) if row[8] else (),
        row[9],
        row[10],
        row[11],
        row[12],
        intern(row[13]),
        cycle,
        row[14],
        row[15],
        row[16],
        _scores(row[17]),
        (row[18], _VERDICTS[row[19]]) if len(row) > 18 else None,
    )


#: Scores decoded from their JSON text, shared: a repeated answer's scores are decoded once per
#: restore (bounded like :meth:`Scores.tallied`'s table).
_DECODED: dict[str, Scores] = {}


def _scores(text: str) -> Scores:
    if not text:
        return NO_SCORES
    scores = _DECODED.get(text)
    if scores is None:
        if len(_DECODED) >= 1 << 16:
            _DECODED.clear()
        scores = _DECODED[text] = scores_from_json(orjson.loads(text)).tallied()
    return scores
