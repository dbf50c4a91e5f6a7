"""Comparing evaluations: ``groundwatch diff``, ``baseline save`` and ``run --baseline``.

A side of a comparison is named by the user as one of

* a **run id** (``groundwatch runs`` lists them): that cycle's own judgements;
* ``series:NAME`` — the newest run of that monitoring series — or ``series:NAME~K``, the run K
  cycles before it (``series:capitals~1`` is the cycle before the latest);
* a **file** written by ``groundwatch baseline save`` (a portable baseline).

A run's statuses are those its own judgements support (the evidence rules, as
``report --run`` gives them), so a group a target did not answer in that run is unknown there,
never a status held from an earlier cycle: a comparison says what each run observed. The pure
comparison is :mod:`groundwatch.core.compare`; this module reads the sides and the answers behind
every changed group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundwatch.errors import ConfigError

if TYPE_CHECKING:
    from groundwatch.app.store import Store
    from groundwatch.core.compare import Comparison, Side
    from groundwatch.core.model import SemanticGroup

#: The portable baseline's format.
BASELINE_SCHEMA = "groundwatch.baseline/1"
#: The comparison's JSON format.
DIFF_SCHEMA = "groundwatch.diff/1"
SERIES_PREFIX = "series:"
#: (store URL, dataset id) → the digest of the dataset the store holds, once per process
_DIGESTS: dict[tuple[str, str], str] = {}


def _needs_store(spec: str, store: Store | None) -> Store:
    if store is None:
        raise ConfigError(f"{spec!r} is not a baseline file, and no store was given to find a run")
    return store


def resolve_run(store: Store, spec: str) -> str:
    """The run id ``spec`` names (a run id, ``series:NAME`` or ``series:NAME~K``)."""
    from groundwatch.adapters.db.compare_reads import run_info, series_runs

    if spec.startswith(SERIES_PREFIX):
        name, _, back = spec[len(SERIES_PREFIX) :].partition("~")
        try:
            k = int(back) if back else 0
        except ValueError:
            raise ConfigError(
                f"{spec!r}: expected series:NAME or series:NAME~K (K a number)"
            ) from None
        runs = series_runs(store.engine, name)
        if not runs:
            raise ConfigError(f"{spec!r}: no series {name!r} in the store ({store.name})")
        if not 0 <= k < len(runs):
            raise ConfigError(f"{spec!r}: series {name!r} has {len(runs)} runs, none {k} back")
        return runs[k].run_id
    if run_info(store.engine, spec) is None:
        raise ConfigError(
            f"{spec!r} is neither a baseline file nor a run of the store ({store.name})"
            " (`groundwatch runs` lists the runs; series:NAME names a series' newest)"
        )
    return spec


def run_side(store: Store, run_id: str, label: str | None = None) -> Side:
    """A stored run as a side: every GRAMMAR group it judged, each cohort's status by the
    operator's evidence rule."""
    from groundwatch.adapters.db.compare_reads import run_counts, run_info
    from groundwatch.core.compare import Side, cohort_tally
    from groundwatch.runtime.evidence_settings import evidence_rule

    info = run_info(store.engine, run_id)
    if info is None:
        raise ConfigError(f"no run {run_id!r} in the store ({store.name})")
    rule = evidence_rule()
    # the digest is read when a comparison needs it (a baseline, another store's side): two
    # runs of one store and dataset id are of the dataset version the store holds
    side = Side(label or run_id, info.dataset_id, "", run_ids=(run_id,))
    tallies: dict[tuple[int, ...], Any] = {}  # equal counts share one tally (most groups)
    groups = side.groups
    for target, cohort, gid, forms, right, wrong, err, und in run_counts(store.engine, run_id):
        key = (forms, right, wrong, err, und)
        tally = tallies.get(key)
        if tally is None:
            tally = tallies[key] = cohort_tally(right, wrong, err, und, forms, rule)
        cohorts = groups.get((target, gid))
        if cohorts is None:
            cohorts = groups[(target, gid)] = {}
        cohorts[cohort] = tally
    if not side.groups:
        raise ConfigError(f"run {run_id!r} has no judged GRAMMAR groups")
    return side


def check_targets(a: Side, b: Side) -> None:
    """Sides without a target to compare (neither a shared name nor one target each): a
    ConfigError naming both sides' targets, not an empty comparison that passes a gate."""
    from groundwatch.core.compare import target_pairs

    if not target_pairs(a, b):
        raise ConfigError(
            f"no target to compare: {a.label} has {', '.join(a.targets) or 'none'},"
            f" {b.label} has {', '.join(b.targets) or 'none'}"
        )


def with_digest(side: Side, store: Store | None) -> Side:
    """``side`` with its dataset's digest, read from the store for a run side (once a process
    per store and dataset)."""
    from groundwatch.adapters.db.compare_reads import dataset_pairs
    from groundwatch.core.compare import dataset_digest

    if side.digest or store is None:
        return side
    where = (store.url, side.dataset_id)
    if where not in _DIGESTS:
        _DIGESTS[where] = dataset_digest(dataset_pairs(store.engine, side.dataset_id))
    side.digest = _DIGESTS[where]
    return side


def load_side(spec: str, store: Store | None) -> Side:
    """The side ``spec`` names: a baseline file, else a run of the store."""
    path = Path(spec)
    if path.is_file():
        return read_baseline(path)
    st = _needs_store(spec, store)
    run_id = resolve_run(st, spec)
    return run_side(st, run_id, label=run_id if run_id == spec else f"{spec} ({run_id})")


def diff(
    a: str, b: str, store: Store | None, *, alpha: float = 0.05, answers: bool = True
) -> Comparison:
    """Side ``a`` (before) against side ``b`` (after), with the forms and answers behind every
    changed group read from the store when a side is a run."""
    from concurrent.futures import ThreadPoolExecutor

    from groundwatch.core.compare import compare

    # the two runs' aggregate queries run in the driver, without the GIL: side by side they
    # overlap on a second core (a quarter off a 100k-group diff on this 2-core machine)
    with ThreadPoolExecutor(2, thread_name_prefix="gw-diff") as pool:
        future_a, future_b = pool.submit(load_side, a, store), pool.submit(load_side, b, store)
        side_a, side_b = future_a.result(), future_b.result()
    check_targets(side_a, side_b)
    if side_a.digest or side_b.digest:  # a baseline file: the run side's version to set beside
        with_digest(side_a, store)
        with_digest(side_b, store)
    comparison = compare(side_a, side_b, alpha=alpha)
    if answers:
        add_answers(comparison, side_a, side_b, store)
    return comparison


def against_baseline(baseline: Side, run_id: str, store: Store) -> Comparison:
    """A run just made compared with its baseline (``run --baseline``), answers added."""
    from groundwatch.core.compare import compare

    candidate = with_digest(run_side(store, run_id), store)
    check_targets(baseline, candidate)
    comparison = compare(baseline, candidate)
    add_answers(comparison, baseline, candidate, store)
    return comparison


def add_answers(comparison: Comparison, a: Side, b: Side, store: Store | None) -> None:
    """Each changed group's gold answer and the forms whose verdict or answer differ: from the
    store's judgements of a run side, from a baseline's per-form verdicts."""
    from groundwatch.core.answer_scoring import gold_text
    from groundwatch.core.compare import form_changes, target_pairs

    if not comparison.changes:
        return
    a_target = {tb: ta for ta, tb in target_pairs(a, b)}
    ids = [c.group_id for c in comparison.changes]
    keys_b = [(c.target, c.group_id) for c in comparison.changes]
    keys_a = [(a_target.get(c.target, c.target), c.group_id) for c in comparison.changes]

    def forms_of(side: Side, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        if side.run_ids and store is not None:
            from groundwatch.adapters.db.compare_reads import run_forms

            for target, gid, cohort, fid, verdict, answer, question in run_forms(
                store.engine, side.run_ids[-1], keys
            ):
                out.setdefault((target, gid), {})[fid] = (cohort, verdict, question, answer)
            return out
        for (target, gid), cohorts in side.groups.items():
            for cohort, t in cohorts.items():
                for fid, verdict in t.forms.items():
                    out.setdefault((target, gid), {})[fid] = (cohort, verdict, None, None)
        return out

    before, after = forms_of(a, keys_a), forms_of(b, keys_b)
    answers_known = True
    if store is not None:
        from groundwatch.adapters.db.compare_reads import summarised_cycle

        answers_known = not any(
            side.run_ids and summarised_cycle(store.engine, side.run_ids[-1]) for side in (a, b)
        )
    truths: dict[str, tuple[str, dict[str, Any]]] = {}
    if store is not None:
        from groundwatch.adapters.db.compare_reads import group_truths

        truths = group_truths(store.engine, comparison.dataset_id, ids)
    for c in comparison.changes:
        c.forms = form_changes(
            before.get((a_target.get(c.target, c.target), c.group_id), {}),
            after.get((c.target, c.group_id), {}),
            answers_known=answers_known,
        )
        truth = truths.get(c.group_id)
        if truth is not None:
            c.sql = truth[0]
            c.gold = gold_text(truth[1].get("values") or []) or None


def dataset_side_digest(groups: Sequence[SemanticGroup]) -> str:
    from groundwatch.core.compare import dataset_digest

    return dataset_digest((g.group_id, f.form_id) for g in groups for f in g.forms)


def check_baseline_dataset(baseline: Side, dataset_id: str, digest: str) -> None:
    """A baseline of another dataset, or of another version of this one: a ConfigError saying
    which (a comparison of different groups would call every new group a change)."""
    if baseline.dataset_id != dataset_id:
        raise ConfigError(
            f"--baseline {baseline.label}: it is of dataset {baseline.dataset_id!r}, this run's"
            f" is {dataset_id!r}"
        )
    if baseline.digest != digest:
        raise ConfigError(
            f"--baseline {baseline.label}: it is of another version of dataset {dataset_id!r}"
            f" (digest {baseline.digest[:12]}, this dataset's {digest[:12]}): save a new"
            " baseline from a run of this version"
        )


# --- the portable baseline ---------------------------------------------------------------


def _pin(store: Store, run_id: str, reason: str) -> None:
    """Keep the run's raw judgements whatever the retention window (`diff` and `--baseline
    RUN_ID` read its answers). The store was opened to read: the pin takes a writing
    connection of its own, and a store that cannot be written to says so in one line."""
    from groundwatch.adapters.db.engine import open_engine
    from groundwatch.adapters.db.retention import Retention

    engine = open_engine(store.url, store.name, read_only=False)
    try:
        Retention(engine).pin(run_id, reason=reason)
    except Exception as exc:
        raise ConfigError(
            f"{store.name}: cannot pin run {run_id} as a baseline ({type(exc).__name__})"
        ) from None
    finally:
        engine.dispose()


def save_baseline(store: Store, spec: str, out: Path) -> tuple[Side, int]:
    """Write the run ``spec`` names as a portable baseline at ``out``: dataset id and digest,
    every group's status, each cohort's counts and per-form verdicts, and the figures.
    Returns the side and the number of groups written."""
    import orjson

    from groundwatch.adapters.db.compare_reads import run_forms
    from groundwatch.core.compare import figures, group_status

    run_id = resolve_run(store, spec)
    side = with_digest(run_side(store, run_id), store)
    _pin(store, run_id, f"baseline {out.name}")
    verdicts: dict[tuple[str, str, str], dict[str, str]] = {}
    for target, gid, cohort, fid, verdict, _a, _q in run_forms(
        store.engine, run_id, sorted(side.groups)
    ):
        verdicts.setdefault((target, gid, cohort), {})[fid] = verdict
    groups = []
    for (target, gid), cohorts in sorted(side.groups.items()):
        groups.append(
            {
                "target": target,
                "group_id": gid,
                "status": str(group_status(cohorts)),
                "cohorts": {
                    name: {
                        "status": t.status,
                        "correct": t.correct,
                        "incorrect": t.incorrect,
                        "errors": t.errors,
                        "undecided": t.undecided,
                        "group_forms": t.group_forms,
                        "forms": verdicts.get((target, gid, name), {}),
                    }
                    for name, t in sorted(cohorts.items())
                },
            }
        )
    doc = {
        "schema": BASELINE_SCHEMA,
        "run_id": run_id,
        "dataset_id": side.dataset_id,
        "digest": side.digest,
        "figures": {
            t: {
                cohort: {
                    name: f.value(name)
                    for name in ("acc_db", "refined_accuracy", "lambda", "coverage")
                }
                | {"groups": f.groups, "gap_groups": f.gap_groups, "examples": f.examples}
                for cohort, f in figures(side, t).items()
            }
            for t in side.targets
        },
        "groups": groups,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return side, len(groups)


def read_baseline(path: Path) -> Side:
    """A baseline file as a side; a file that is not one is a ConfigError naming it."""
    import orjson

    from groundwatch.core.compare import CohortTally, Side

    try:
        doc = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not a baseline (not JSON: {exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("schema") != BASELINE_SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else None
        raise ConfigError(
            f"{path}: not a baseline (schema {found!r}, expected {BASELINE_SCHEMA!r}; write one"
            " with `groundwatch baseline save`)"
        )
    side = Side(str(path), str(doc.get("dataset_id", "")), str(doc.get("digest", "")))
    try:
        for g in doc["groups"]:
            for cohort, c in g["cohorts"].items():
                forms = {str(k): str(v) for k, v in (c.get("forms") or {}).items()}
                right, wrong = int(c["correct"]), int(c["incorrect"])
                err, und = int(c.get("errors", 0)), int(c.get("undecided", 0))
                side.add(
                    str(g["target"]),
                    str(g["group_id"]),
                    str(cohort),
                    CohortTally(
                        str(c["status"]),
                        right,
                        wrong,
                        err,
                        und,
                        right + wrong + err + und,
                        int(c.get("group_forms", 1)),
                        forms,
                    ),
                )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a baseline (a group without {exc})") from None
    return side


def comparison_json(comparison: Comparison) -> bytes:
    import orjson

    doc = {"schema": DIFF_SCHEMA, **_plain(comparison)}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)


def _plain(comparison: Comparison) -> dict[str, Any]:
    from dataclasses import asdict

    out = asdict(comparison)
    out["regressed"] = len(comparison.regressions)
    # "significant" is a significant regression, never a significant improvement
    out["significant"] = comparison.paired.significant(comparison.alpha)
    out["sign_test"] = comparison.paired.verdict(comparison.alpha)
    for c, plain in zip(comparison.changes, out["changes"], strict=True):
        plain["transition"] = c.transition
    return out
