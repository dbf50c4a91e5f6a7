"""How generated questions read on schemas unlike the demo's (issue 32): kinds, golds, vocabulary.

Builds the two seeded test schemas of ``tests/unit/gen_schemas.py`` (a music store and a trading
company: self-references, link tables with payloads, a 0/1 flag, midnight timestamps), runs the
offline generation on each, and reports per schema:

* ``groups_by_kind``: groups per template kind, and per wording feature (self-reference, link
  membership, count over a link, payload keyed by both ends, yes/no flag, date, money);
* ``wrong_golds``: a seeded sample of groups whose SQL is run again with sqlite3 and whose rows
  are rendered by this script's own reading of the rules (0/1 flag → yes/no, a midnight time
  left out), compared with the stored gold;
* ``non_column_word_share``: share of groups where some form names the attribute without the
  column's own words (by Snowball stem, placeholder values left out);
* ``distinct_2``/``distinct_3``: per cohort, distinct-n over one group's forms, averaged over
  templates; over all of one template's text templates, averaged (the forms a group can get);
  and over all text templates of the cohort (boilerplate repeated across templates).

Usage: ``python bench/bench_wording.py [--sample 300] [--out FILE]``. JSON on stdout.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import emit, machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

import gen_schemas

from groundwatch.adapters.sources import generate_groups
from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.pipeline import GenerationResult
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.wording import avoids_column_words, distinct_n
from groundwatch.core.model import SemanticGroup

_MONEY = ("price", "total", "freight", "cost", "amount")


def features(t: SqlTemplate) -> set[str]:
    """What a template exercises, read from its SQL and parts (not from its wording)."""
    out = {f"kind:{t.kind}"}
    sql = t.sql
    tables = [x.lower() for x in t.tables]
    if (
        any(sql.count(f"JOIN {x} ") or sql.count(f'JOIN "{x}" ') for x in t.tables)
        and len(set(tables)) < sql.count("JOIN ") + 1
    ):
        out.add("self_reference")
    if t.join is not None and t.join.fk_table == t.join.ref_table:
        out.add("self_reference")
    link_tables = {"playlisttrack", "employeeterritories", "invoiceline", "order details"}
    on_link = bool(link_tables & set(tables))
    if on_link and t.kind == "link" and len(t.slots) == 1:
        out.add("link_membership")
    if on_link and any(s.agg == "count" for s in t.selected):
        out.add("link_count")
    if on_link and len(t.slots) == 2 and not any(s.agg == "count" for s in t.selected):
        out.add("link_payload_both_ends")
    for s in t.selected:
        if getattr(s, "flag", False):
            out.add("flag_yes_no")
        if s.kind == "date":
            out.add("date")
        if any(m in s.column.lower() for m in _MONEY):
            out.add("money")
    return out


def expected(raw: Any, t: SqlTemplate, i: int) -> str:
    """A re-run value as the gold should hold it, by this script's own reading of the rules."""
    sel = t.selected[i]
    if getattr(sel, "flag", False) and raw in (0, 1, "0", "1", True, False):
        return "yes" if raw in (1, "1", True) else "no"
    text = format_value(raw)
    if sel.kind == "date" and isinstance(raw, str) and raw.endswith((" 00:00:00", "T00:00:00")):
        return text[:10]
    return text


def wrong_golds(
    path: str, res: GenerationResult, sample: int, seed: int = 32
) -> tuple[int, int, list[Any]]:
    by_id = {t.template_id: t for t in res.templates}
    groups = list(res.groups)
    picked = random.Random(seed).sample(groups, min(sample, len(groups)))
    con = sqlite3.connect(path)
    wrong: list[Any] = []
    try:
        for g in picked:
            t = by_id[str(g.template_id)]
            rows = {
                tuple(expected(v, t, i) for i, v in enumerate(r))
                for r in con.execute(g.sql, g.params)
            }
            if len(g.answer.values) == len(t.selected):
                ok = rows == {tuple(g.answer.values)}
            else:  # a list answer: one value per row
                ok = {r[0] for r in rows} == set(g.answer.values)
            if not ok:
                wrong.append({"sql": g.sql, "params": g.params, "gold": g.answer.values,
                              "rows": sorted(rows)[:3]})  # fmt: skip
    finally:
        con.close()
    return len(picked), len(wrong), wrong[:5]


def named_without_column_words(g: SemanticGroup, t: SqlTemplate) -> bool:
    cols = []
    for s in t.selected:
        cols.append(s.table if s.column == "*" else s.column)
    return any(all(avoids_column_words(f.text, c) for c in cols) for f in g.forms)


def report(name: str, url: str, sample: int) -> dict[str, Any]:
    started = time.perf_counter()
    res = generate_groups(url, k=3)
    seconds = time.perf_counter() - started
    by_id = {t.template_id: t for t in res.templates}
    kinds: Counter[str] = Counter()
    for g in res.groups:
        kinds.update(features(by_id[str(g.template_id)]))
    checked, n_wrong, examples = wrong_golds(url.removeprefix("sqlite:///"), res, sample)
    paraphrased = sum(named_without_column_words(g, by_id[str(g.template_id)]) for g in res.groups)
    cohorts = sorted({f.cohort for g in res.groups for f in g.forms})
    within: dict[int, dict[str, float]] = {2: {}, 3: {}}
    template: dict[int, dict[str, float]] = {2: {}, 3: {}}
    across: dict[int, dict[str, float]] = {2: {}, 3: {}}
    first = {}
    for g in res.groups:
        first.setdefault(str(g.template_id), g)
    for n in (2, 3):
        for c in cohorts:
            per = [
                distinct_n([f.text for f in g.forms if f.cohort == c], n) for g in first.values()
            ]
            within[n][c] = round(sum(per) / len(per), 3) if per else 0.0
            own = [distinct_n(v.get(c, []), n) for v in res.text_templates.values() if v.get(c)]
            template[n][c] = round(sum(own) / len(own), 3) if own else 0.0
            texts = [x for v in res.text_templates.values() for x in v.get(c, [])]
            across[n][c] = round(distinct_n(texts, n), 3)
    return {
        "schema": name,
        "seconds": round(seconds, 2),
        "templates": len(res.templates),
        "groups": len(res.groups),
        "groups_by_kind": dict(sorted(kinds.items())),
        "rejected_templates": dict(res.summary.rejected_templates),
        "dropped_fills": dict(res.summary.dropped_fills),
        "wrong_golds": {"checked": checked, "wrong": n_wrong, "examples": examples},
        "non_column_word_share": round(paraphrased / len(res.groups), 3) if res.groups else 0.0,
        "distinct_2_within_template": within[2],
        "distinct_3_within_template": within[3],
        "distinct_2_over_template_texts": template[2],
        "distinct_3_over_template_texts": template[3],
        "distinct_2_across_templates": across[2],
        "distinct_3_across_templates": across[3],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sample", type=int, default=300, help="groups re-run per schema")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        schemas = [
            report(n, gen_schemas.build_real(n, Path(d)), args.sample) for n in gen_schemas.BUILT
        ]
    emit({"machine": machine(), "schemas": schemas}, args.out)


if __name__ == "__main__":
    main()
