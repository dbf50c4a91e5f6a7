"""``groundwatch view``'s use cases: the view's app over a store, and the export of people's
verdicts as labelled data for ``judge-agreement``.

The pages read the store's latest series replayed through the tagger (as ``groups`` and
``show`` do), replayed again in the background when the last replay is ``refresh_s`` seconds
old, so a cycle a running ``groundwatch run`` stores shows on a later poll and no request
waits for a replay but the first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundwatch.app.store import NothingStored, Store

if TYPE_CHECKING:
    from fastapi import FastAPI
    from sqlalchemy import Engine

    from groundwatch.core.compare import Comparison
    from groundwatch.runtime.view import Reads, ViewAuth
    from groundwatch.runtime.view.runs import RunRef, TrendPoint

#: Seconds a replay of the store serves the pages before the store is read again.
REFRESH_S = 2.0
#: The interpreter's thread switch interval while the view serves (see :func:`serve_view`).
SWITCH_S = 0.0005


class StoreReads:
    """The store's latest series replayed, shared by every request: the first request waits
    for a replay; after ``refresh_s`` the next one starts a fresh replay in the background and
    is served the previous one, so a page never waits for a replay of a big store."""

    def __init__(
        self, store: Store, series: str | None, window_runs: int, refresh_s: float = REFRESH_S
    ) -> None:
        self.store, self.series, self.window_runs = store, series, window_runs
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._at = -float("inf")
        self._reads: Reads | None = None
        self._refreshing = False
        self._mark: tuple[int, ...] | None = None

    def __call__(self) -> Reads:
        with self._lock:
            reads, expired = self._reads, time.monotonic() - self._at >= self.refresh_s
            start = reads is not None and expired and not self._refreshing
            if start:
                self._refreshing = True
        if reads is None:
            with self._lock:  # one replay at a time, the first one waited for
                if self._reads is None:
                    mark = self.store.change_mark()
                    self._reads, self._at, self._mark = self._replay(), time.monotonic(), mark
                return self._reads
        if start:
            threading.Thread(target=self._refresh, name="view-replay", daemon=True).start()
        return reads

    def expire(self) -> None:
        """Replay again on the next request (in the background): a person's verdict changed
        what the tallies count."""
        with self._lock:
            self._at, self._mark = -float("inf"), None

    def _refresh(self) -> None:
        from groundwatch.runtime.view.index import warm

        try:
            # a replay of a big store is a minute of the one core the pages share: made only
            # when the store holds other judgements (or verdicts) than the last one read
            mark = self.store.change_mark()
            with self._lock:
                same = mark == self._mark
                if same:
                    self._at = time.monotonic()
            if same:
                return
            fresh = self._replay()
            warm(fresh.tagger)  # the first page of the fresh replay waits for no pass over it
            with self._lock:
                self._reads, self._at, self._mark = fresh, time.monotonic(), mark
        finally:
            with self._lock:
                self._refreshing = False

    def _replay(self) -> Reads:
        from groundwatch.runtime.view import Reads

        tagger: Any
        try:
            tagger = self.store.replay(self.series, self.window_runs).tagger
        except NothingStored:
            from groundwatch.core.tagging import Tagger

            tagger = Tagger()  # no cycle yet: an empty table that fills on a poll
        return Reads(tagger, self.store.evidence(), self.store.engine)


def view_app(store: Store, auth: ViewAuth, *, series: str | None, window_runs: int) -> FastAPI:
    """The local view: the pages at ``/ui`` over ``store``, ``/`` sending there."""
    from fastapi import FastAPI
    from fastapi.responses import RedirectResponse

    from groundwatch.runtime.service import add_input_guards
    from groundwatch.runtime.view import add_view

    app = FastAPI(title="groundwatch view", docs_url=None, redoc_url=None, openapi_url=None)
    add_input_guards(app)

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=307)

    reads = StoreReads(store, series, window_runs)
    runs = StoreRuns(store)
    add_view(app, reads, auth, after_verdict=reads.expire, runs=lambda _engine: runs)
    return app


def export_labels(store: Store, out: Path) -> int:
    """Write people's verdicts to ``out`` as a result file ``judge-agreement`` reads; how
    many were written."""
    import orjson

    from groundwatch.adapters.db import human_verdicts as hv

    items = hv.labelled_items(store.engine) if hv.has_table(store.engine) else []
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(items, option=orjson.OPT_INDENT_2) + b"\n")
    return len(items)


def has_human_verdicts(store: Store) -> bool:
    from groundwatch.adapters.db import human_verdicts as hv

    return hv.has_table(store.engine)


def serve_view(app: FastAPI, host: str, port: int) -> None:
    """Serve the view until interrupted (uvicorn; Ctrl-C stops it)."""
    import sys

    import uvicorn

    # a replay of the store runs beside the requests (a thread of pure Python): at the
    # interpreter's default 5 ms a request waits that long for the GIL after each query it
    # makes, ~10x a page's own time; at 0.5 ms the replay yields sooner, and takes ~as long
    sys.setswitchinterval(SWITCH_S)

    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


class StoreRuns:
    """The trends and comparison pages' numbers over a store: a run's from its own
    judgements (:func:`groundwatch.app.compare.run_side`, what ``diff`` reads), the
    comparison ``diff``'s. A finished run's numbers never change: kept for the next page."""

    KEEP = 64

    def __init__(self, store: Store) -> None:
        self.store = store
        self._points: OrderedDict[str, list[TrendPoint]] = OrderedDict()
        self._lock = threading.Lock()

    def runs(self, series: str | None) -> tuple[str, list[RunRef]]:
        from groundwatch.adapters.db.compare_reads import series_runs
        from groundwatch.adapters.db.runs import latest_cycle
        from groundwatch.runtime.view.runs import RunRef

        name = series
        if name is None:
            latest = latest_cycle(self.store.engine, None)
            if latest is None:
                raise NothingStored("no monitoring cycles in the store")
            name = latest[0]
        found = series_runs(self.store.engine, name)
        if not found:
            raise NothingStored(f"no series {name!r} in the store")
        return name, [RunRef(r.run_id, r.series, r.cycle, r.status) for r in found]

    def trends(self, series: str, runs: Sequence[RunRef]) -> list[TrendPoint]:
        out: list[TrendPoint] = []
        for run in runs:
            with self._lock:
                kept = self._points.get(run.run_id)
            if kept is None:
                kept = self._run_points(run)
                if run.status == "finished":
                    with self._lock:
                        self._points[run.run_id] = kept
                        while len(self._points) > self.KEEP:
                            self._points.popitem(last=False)
            out += kept
        return out

    def _run_points(self, run: RunRef) -> list[TrendPoint]:
        from groundwatch.app.compare import run_side
        from groundwatch.core.compare import figures
        from groundwatch.core.evidence import GroupStatus
        from groundwatch.errors import ConfigError
        from groundwatch.runtime.view.runs import TrendPoint

        try:
            side = run_side(self.store, run.run_id)
        except ConfigError:
            return []  # a run without GRAMMAR groups (scenarios only, nothing judged yet)
        # non-robust groups and undecided forms per (target, cohort): one pass over the run
        extra: dict[tuple[str, str], list[int]] = {}
        for (target, _gid), cohorts in side.groups.items():
            for cohort, c in cohorts.items():
                e = extra.setdefault((target, cohort), [0, 0, 0])
                e[0] += c.status == GroupStatus.NON_ROBUST
                e[1] += c.undecided
                e[2] += c.judged
        points = []
        for target in side.targets:
            for cohort, f in figures(side, target).items():
                non_robust, undecided, judged = extra.get((target, cohort), [0, 0, 0])
                points.append(
                    TrendPoint(
                        run_id=run.run_id,
                        cycle=run.cycle,
                        target=target,
                        cohort=cohort,
                        groups=f.groups,
                        acc_db=f.value("acc_db"),
                        gap_groups=f.gap_groups,
                        non_robust_groups=non_robust,
                        coverage=f.value("coverage"),
                        undecided_share=undecided / judged if judged else None,
                    )
                )
        return points

    def compare(self, a: str, b: str) -> Comparison:
        """``diff A B`` of two runs of the store: named as ``diff`` names them, but never a
        file (a page's visitor does not read the server's files)."""
        from groundwatch.app.compare import add_answers, check_targets, resolve_run, run_side
        from groundwatch.core.compare import compare

        sides = []
        for spec in (a, b):
            run_id = resolve_run(self.store, spec)
            label = run_id if run_id == spec else f"{spec} ({run_id})"
            sides.append(run_side(self.store, run_id, label=label))
        before, after = sides
        check_targets(before, after)
        comparison = compare(before, after)
        add_answers(comparison, before, after, self.store)
        return comparison


def run_pages_for(name: str) -> Callable[[Engine], StoreRuns]:
    """The run pages over a service's store engine (one per engine), for its ``/ui``."""
    made: dict[int, StoreRuns] = {}

    def pages(engine: Engine) -> StoreRuns:
        found = made.get(id(engine))
        if found is None or found.store.engine is not engine:
            found = made[id(engine)] = StoreRuns(Store(str(engine.url), name, engine))
        return found

    return pages
