"""Generation benchmark: one grouped query per template vs the GRAMMAR tool's one SELECT per combination.

Builds a synthetic SQLite database (``--rows`` customers, default 200 000, plus their account
managers), derives the SQL and text templates once with the rule generator, then measures on the
same database and the same templates, each in its own subprocess so peak RSS is its own:

* ``ours_answers`` — every fill and its answer through the grouped queries (the answer step only);
* ``ours_end_to_end`` — the full offline path: answers, k=3 text forms for two cohorts per group,
  semantic groups streamed to a JSONL file (this is the ≥1M-query memory test) through the
  streaming write path (``iter_group_records`` + ``group_record_line``: no model per group, the
  same bytes as ``iter_groups`` + ``group_line``); its ``floor_us_per_group`` is what every group
  costs whatever the code: its SHA-256 ids and one orjson line, timed on a sample;
* ``baseline`` — the GRAMMAR tool's method (Algorithm 1): DISTINCT values per placeholder, then one
  ``SELECT`` per combination through SQLAlchemy. It is timed on a sample of combinations
  (``--baseline-sample``) and its rate extrapolated to all of them; the output says so.

Usage: ``python bench/bench_generation.py [--rows 200000] [--many-rows 20000] [--baseline-sample 20000] [--out FILE]``.
JSON on stdout (and in ``--out``). Targets: speed-up of queries/s ≥ 20, peak RSS < 300 MB for
≥ 1M queries with streamed output.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, figure

TARGET_SPEEDUP = 20.0
TARGET_SPEEDUP_E2E = 10.0
TARGET_RSS_MB = 300.0


def build_db(path: Path, rows: int, seed: int = 1) -> int:
    """Customers (unique names, categorical city/segment, dates, numbers) and their managers."""
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE managers (manager_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                               region TEXT NOT NULL);
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                                city TEXT NOT NULL, segment TEXT NOT NULL, signup_date DATE NOT NULL,
                                credit_limit INTEGER NOT NULL,
                                account_manager_id INTEGER NOT NULL REFERENCES managers(manager_id));
        """
    )
    n_managers = max(10, rows // 1000)
    regions = ["North", "South", "East", "West", "Central"]
    con.executemany(
        "INSERT INTO managers VALUES (?, ?, ?)",
        ((i, f"Manager {i:05d}", rng.choice(regions)) for i in range(1, n_managers + 1)),
    )
    cities = [f"City {i:03d}" for i in range(300)]
    con.executemany(
        "INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            (
                i,
                f"Customer {i:08d}",
                rng.choice(cities),
                rng.choice("ABCDE"),
                f"{rng.randrange(2005, 2025)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
                rng.randrange(1, 400) * 250,
                rng.randrange(1, n_managers + 1),
            )
            for i in range(1, rows + 1)
        ),
    )
    con.commit()
    con.close()
    return rows + n_managers


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


#: The many-placeholder set: conditions on several columns, as a person (or an LLM) writes them.
#: The per-combination method asks every combination of the columns' distinct values (most have
#: no answer, or several); the grouped query reads the rows that exist once.
MANY_PLACEHOLDERS = """
version: 1
templates:
- sql: SELECT credit_limit FROM customers WHERE city = :city AND segment = :segment
    AND signup_date = :signup_date
  on_multiple: drop
- sql: SELECT customers.name FROM customers JOIN managers
    ON customers.account_manager_id = managers.manager_id
    WHERE managers.name = :manager AND customers.city = :city AND customers.segment = :segment
  on_multiple: drop
- sql: SELECT signup_date FROM customers WHERE city = :city AND credit_limit = :credit_limit
  on_multiple: drop
"""


def _setup(db: Path, template_set: str = "rules") -> tuple[Any, Any, Any, Any]:
    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.adapters.sources.introspect import introspect
    from groundwatch.core.generation import default_verbalizers, offline_text_templates
    from groundwatch.core.generation.rules import rule_templates

    engine = readonly_engine(f"sqlite:///{db}")
    conn = engine.connect()
    conn.begin()
    schema = introspect(conn)
    if template_set == "many":
        from groundwatch.adapters.template_files import parse_template_file
        from groundwatch.core.generation.template_file import load_templates

        loaded = load_templates(parse_template_file(MANY_PLACEHOLDERS), schema)
        if loaded.rejected:
            raise SystemExit(f"many-placeholder templates rejected: {loaded.rejected}")
        templates = loaded.templates
    else:
        templates = rule_templates(schema)
    texts = offline_text_templates(templates, default_verbalizers(), ["short", "long"])
    return engine, conn, schema, (templates, texts)


def worker_ours(db: Path, jsonl: Path, template_set: str = "rules") -> dict[str, Any]:
    """The full offline path, groups streamed to a JSONL file."""
    from groundwatch.adapters.db.datasets import write_group_records
    from groundwatch.adapters.sources.port import SqlAlchemyPort
    from groundwatch.core.generation.pipeline import StageSummary, iter_group_records

    engine, conn, schema, (templates, texts) = _setup(db, template_set)
    summary = StageSummary()
    t0 = time.perf_counter()
    with open(jsonl, "wb", buffering=1 << 20) as fh:
        n = write_group_records(
            iter_group_records(
                SqlAlchemyPort(conn),
                schema,
                templates,
                texts,
                k=3,
                cohorts=("short", "long"),
                summary=summary,
            ),
            fh,
        )
    seconds = time.perf_counter() - t0
    peak_rss_mb = _peak_rss_mb()  # the run's own peak, before the floor's sample is read
    floor = _floor_per_group(_sample_lines(jsonl))
    conn.close()
    engine.dispose()
    queries = summary.combinations
    return {
        "method": "grouped query per template, full pipeline, JSONL streamed",
        "templates": len(templates),
        "queries": queries,
        "groups": n,
        "forms": n * 6,
        "seconds": round(seconds, 3),
        "queries_per_s": round(queries / seconds, 1),
        "groups_per_s": round(n / seconds, 1),
        "sql_statements": summary.sql_statements,
        "jsonl_bytes": jsonl.stat().st_size,
        "peak_rss_mb": round(peak_rss_mb, 1),
        "summary": summary.as_dict(),
        "floor_us_per_group": floor,
    }


def _sample_lines(jsonl: Path, every: int = 100, most: int = 2000) -> list[dict[str, Any]]:
    """Every ``every``-th group of the written file (at most ``most``), read back after the
    timed run so that sampling costs the run nothing."""
    import orjson

    out: list[dict[str, Any]] = []
    with open(jsonl, "rb") as fh:
        for i, line in enumerate(fh):
            if i % every == 0:
                out.append(orjson.loads(line))
                if len(out) >= most:
                    break
    return out


def _floor_per_group(records: list[dict[str, Any]]) -> dict[str, float]:
    """What every group costs whatever the code around it, timed on a sample of the written
    groups: its content-addressed ids (a SHA-256 per form, ``form_id_for``, and one for the
    group, ``group_id_for``: the schema's ids) and one ``orjson.dumps`` of its line. The forms
    and JSONL step cannot go below groups × this; it bounds the end-to-end ratio."""
    import hashlib

    import orjson

    from groundwatch.core.model import group_id_hasher

    if not records:
        return {"ids": 0.0, "json": 0.0, "total": 0.0}
    hashers = {r["sql"]: group_id_hasher(r["sql"]) for r in records}
    sha256 = hashlib.sha256
    reps = 3
    t0 = time.perf_counter()
    for _ in range(reps):
        for r in records:
            hashers[r["sql"]](r["params"])
            gid = r["group_id"]
            for f in r["forms"]:
                sha256(f"{gid}\x1f{f['cohort']}\x1f{f['text']}".encode()).hexdigest()[:12]
    ids = (time.perf_counter() - t0) / (reps * len(records))
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    t0 = time.perf_counter()
    for _ in range(reps):
        for r in records:
            dumps(r, option=newline)
    js = (time.perf_counter() - t0) / (reps * len(records))
    return {
        "ids": round(ids * 1e6, 2),
        "json": round(js * 1e6, 2),
        "total": round((ids + js) * 1e6, 2),
    }


def worker_ours_answers(db: Path, template_set: str = "rules") -> dict[str, Any]:
    """The answer step alone: every fill and its answer from the grouped queries."""
    from groundwatch.adapters.sources.port import SqlAlchemyPort
    from groundwatch.core.generation.grouped import group_rows, plan

    engine, conn, schema, (templates, _) = _setup(db, template_set)
    port = SqlAlchemyPort(conn)
    t0 = time.perf_counter()
    fills = statements = 0
    for t in templates:
        p = plan(t, schema)
        for sql in p.distinct_sql.values():
            next(iter(port.rows(sql)))
            statements += 1
        if p.sql is None:
            raise SystemExit(f"template without a grouped query: {t.sql}")
        if t.on_multiple == "reject" and p.multi_sql is not None:
            statements += 1
            if next(iter(port.rows(p.multi_sql)), None) is not None:
                continue  # the singular-answer check rejects it, as the pipeline does
        for _ in group_rows(port.rows(p.sql), p):
            fills += 1
        statements += 1
    seconds = time.perf_counter() - t0
    conn.close()
    engine.dispose()
    return {
        "method": "grouped query per template (answers only)",
        "templates": len(templates),
        "queries": fills,
        "seconds": round(seconds, 3),
        "queries_per_s": round(fills / seconds, 1),
        "sql_statements": statements,
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def worker_baseline(
    db: Path, sample: int, budget_s: float = 2.0, template_set: str = "rules"
) -> dict[str, Any]:
    """GRAMMAR's Algorithm 1: DISTINCT values, Cartesian product, one bound SELECT per combination.

    All DISTINCT value lists are read (that is cheap and counts the combinations); the per-
    combination SELECTs are timed on the first ``sample`` combinations spread over the templates,
    at most ``budget_s`` seconds per template.
    """
    from itertools import islice, product

    from sqlalchemy import text

    from groundwatch.core.generation.grouped import plan

    engine, conn, schema, (templates, _) = _setup(db, template_set)
    total = 0
    per_template = max(1, sample // max(1, len(templates)))
    timed = 0
    sampled_seconds = 0.0
    extrapolated = 0.0
    per_template_rates = []
    for t in templates:
        p = plan(t, schema)
        values = [[r[0] for r in conn.execute(text(p.values_sql[s.param]))] for s in t.slots]
        combos = 1
        for v in values:
            combos *= len(v)
        total += combos
        stmt = text(t.sql)
        n = 0
        t0 = time.perf_counter()
        for combo in islice(product(*values), per_template):
            conn.execute(stmt, dict(zip(t.params, combo, strict=True))).fetchall()
            n += 1
            if n >= 20 and time.perf_counter() - t0 > budget_s:
                break  # unindexed conditions are slow per query: a time budget keeps runs short
        dt = time.perf_counter() - t0
        timed += n
        sampled_seconds += dt
        # each template's own rate times its own number of combinations: templates whose
        # condition has no index are slow per query but may have few combinations
        extrapolated += combos * dt / max(1, n)
        per_template_rates.append(
            {
                "sql": t.sql,
                "combinations": combos,
                "queries_per_s": round(n / dt, 1) if dt else None,
            }
        )
    conn.close()
    engine.dispose()
    return {
        "method": "one SELECT per combination through SQLAlchemy (GRAMMAR Algorithm 1)",
        "templates": len(templates),
        "queries": total,
        "sampled_queries": timed,
        "sampled_seconds": round(sampled_seconds, 3),
        "queries_per_s": round(total / extrapolated, 1),
        "extrapolated_seconds_for_all": round(extrapolated, 1),
        "extrapolated": True,
        "per_template": per_template_rates,
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def _run_worker(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout))


def measure_set(db: Path, tmp: Path, template_set: str, sample: int) -> dict[str, Any]:
    """One A/B pair on one template set: the per-combination method, then ours."""
    common = ["--db", str(db), "--template-set", template_set]
    baseline = _run_worker(["--worker", "baseline", *common, "--baseline-sample", str(sample)])
    answers = _run_worker(["--worker", "ours_answers", *common])
    ours = _run_worker(["--worker", "ours", *common, "--jsonl", str(tmp / f"{template_set}.jsonl")])
    # The per-combination method end to end = its SQL (extrapolated to every combination) plus
    # the same text forms and JSONL writing as ours (the same code would make them): ours minus
    # its answer step. The groups written are the same, so that cost is the same.
    forms_s = max(0.0, ours["seconds"] - answers["seconds"])
    baseline_e2e_s = baseline["extrapolated_seconds_for_all"] + forms_s
    # the most the ratio could be if the forms and JSONL step cost only its floor per group
    floor_s = ours["groups"] * ours["floor_us_per_group"]["total"] / 1e6
    best = (baseline["extrapolated_seconds_for_all"] + floor_s) / (answers["seconds"] + floor_s)
    return {
        "ours_answers": answers,
        "ours_end_to_end": ours,
        "baseline": baseline,
        "text_forms_and_jsonl_seconds": round(forms_s, 3),
        "baseline_end_to_end_seconds": round(baseline_e2e_s, 2),
        "speedup_answers": round(answers["queries_per_s"] / baseline["queries_per_s"], 2),
        "speedup_end_to_end": round(baseline_e2e_s / ours["seconds"], 2),
        "forms_floor_seconds": round(floor_s, 3),
        "speedup_end_to_end_at_floor": round(best, 2),
        "forms_us_per_group": round(forms_s / max(1, ours["groups"]) * 1e6, 2),
        "speedup_end_to_end_vs_answers_only_baseline": round(
            baseline["extrapolated_seconds_for_all"] / ours["seconds"], 2
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000, help="customers of the bench database")
    ap.add_argument("--big", action="store_true", help="also the ≥1M-query memory run")
    ap.add_argument("--big-rows", type=int, default=200_000)
    ap.add_argument("--many-rows", type=int, default=20_000, help="customers, many-placeholder")
    ap.add_argument("--baseline-sample", type=int, default=20_000)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--worker", choices=["ours", "ours_answers", "baseline"], help=argparse.SUPPRESS
    )
    ap.add_argument("--template-set", default="rules", help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--jsonl", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        if a.worker == "ours":
            res = worker_ours(a.db, a.jsonl, a.template_set)
        elif a.worker == "ours_answers":
            res = worker_ours_answers(a.db, a.template_set)
        else:
            res = worker_baseline(a.db, a.baseline_sample, template_set=a.template_set)
        print(json.dumps(res))
        return
    with tempfile.TemporaryDirectory(prefix="gw-bench-gen-") as tmp:
        db = Path(tmp) / "synthetic.sqlite"
        t0 = time.perf_counter()
        total_rows = build_db(db, a.rows)
        build_s = time.perf_counter() - t0
        rules = measure_set(db, Path(tmp), "rules", a.baseline_sample)
        (Path(tmp) / "rules.jsonl").unlink(missing_ok=True)
        many_db = Path(tmp) / "many.sqlite"
        many_rows = build_db(many_db, a.many_rows)
        many = measure_set(many_db, Path(tmp), "many", a.baseline_sample)
        big: dict[str, Any] | None = None
        if a.big:  # one run: ours end to end on 200k customers (1M queries), for its memory
            many_db.unlink()
            big_db = Path(tmp) / "big.sqlite"
            build_db(big_db, a.big_rows)
            big = _run_worker(
                ["--worker", "ours", "--db", str(big_db), "--jsonl", str(Path(tmp) / "big.jsonl")]
            )
    result: dict[str, Any] = {
        "bench": "generation",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "database": {
            "engine": "sqlite",
            "rows": total_rows,
            "build_seconds": round(build_s, 2),
            "many_placeholders_rows": many_rows,
        },
        "rules": rules,
        "many_placeholders": many,
        "big": big,
        "note": (
            "Both methods use the same templates on the same database, each step in its own "
            "subprocess. The per-combination method is timed on a sample of combinations and "
            "its rate extrapolated to all of them; its end-to-end time adds the text forms and "
            "JSONL writing ours spent (the same groups, the same code)."
        ),
    }
    figures = {
        "speedup_end_to_end": figure(
            "generation: end to end (answers, text forms, JSONL) ÷ the per-combination method,"
            " rule templates",
            rules["speedup_end_to_end"],
            unit="×",
            target=TARGET_SPEEDUP_E2E,
            measured=rules["ours_end_to_end"]["seconds"],
            baseline=rules["baseline_end_to_end_seconds"],
            baseline_name="one SELECT per combination + the same text forms and JSONL",
            absolute_unit="s",
            bound="ours: the text forms and their JSONL"
            f" ({rules['text_forms_and_jsonl_seconds']:.1f} s of"
            f" {rules['ours_end_to_end']['seconds']:.1f} s,"
            f" {rules['forms_us_per_group']:.1f} µs per group of 6 forms), of which the"
            " schema's content-addressed ids (7 SHA-256 per group:"
            f" {rules['ours_end_to_end']['floor_us_per_group']['ids']:.1f} µs) and one orjson"
            f" line ({rules['ours_end_to_end']['floor_us_per_group']['json']:.1f} µs) are a floor"
            f" of {rules['forms_floor_seconds']:.1f} s: at that floor the ratio would be"
            f" {rules['speedup_end_to_end_at_floor']:.1f}×; the baseline: a statement round"
            " trip per combination",
        ),
        "speedup_end_to_end_many": figure(
            "generation: end to end ÷ the per-combination method, many-placeholder templates",
            many["speedup_end_to_end"],
            unit="×",
            target=TARGET_SPEEDUP_E2E,
            measured=many["ours_end_to_end"]["seconds"],
            baseline=many["baseline_end_to_end_seconds"],
            baseline_name="one SELECT per combination (extrapolated) + the same forms",
            absolute_unit="s",
            bound="the per-combination method asks every combination of the placeholders'"
            " distinct values; the grouped query reads the rows that exist",
            digits=0,
        ),
        "speedup_end_to_end_vs_answers_only": figure(
            "generation: ours end to end ÷ the per-combination method's answers alone"
            " (no forms, no output), rule templates",
            rules["speedup_end_to_end_vs_answers_only_baseline"],
            unit="×",
        ),
        "speedup_answers": figure(
            "generation: answer step alone ÷ the per-combination method, rule templates",
            rules["speedup_answers"],
            unit="×",
            target=TARGET_SPEEDUP,
            measured=rules["ours_answers"]["queries_per_s"],
            baseline=rules["baseline"]["queries_per_s"],
            baseline_name="one SELECT per combination",
            absolute_unit="queries/s",
            bound="SQLite scan + Python grouping; the baseline pays one statement per query",
            digits=1,
        ),
    }
    if big is not None:
        figures["peak_rss_mb"] = figure(
            f"generation: peak RSS, {big['queries']:,} queries streamed to JSONL (first run)",
            big["peak_rss_mb"] if big["queries"] >= 1_000_000 else None,
            unit=" MB",
            target=TARGET_RSS_MB,
            goal="<=",
            measured=big["queries_per_s"],
            absolute_unit="queries/s end to end",
            bound="streaming: one template's rows at a time, groups written as they are made",
            digits=1,
        )
    result["figures"] = figures
    emit(result, a.out)


if __name__ == "__main__":
    main()
