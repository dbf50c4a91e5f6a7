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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundwatch.app.store import NothingStored, Store

if TYPE_CHECKING:
    from fastapi import FastAPI

    from groundwatch.runtime.view import Reads, ViewAuth

#: Seconds a replay of the store serves the pages before the store is read again.
REFRESH_S = 2.0


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
            reads, stale = self._reads, time.monotonic() - self._at >= self.refresh_s
            start = reads is not None and stale and not self._refreshing
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

    def stale(self) -> None:
        """Replay again on the next request (in the background): a person's verdict changed
        what the tallies count."""
        with self._lock:
            self._at, self._mark = -float("inf"), None

    def _refresh(self) -> None:
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
    add_view(app, reads, auth, after_verdict=reads.stale)
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
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
