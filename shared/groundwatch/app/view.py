"""``groundwatch view``'s use cases: the view's app over a store, and the export of people's
verdicts as labelled data for ``judge-agreement``.

The pages read the store's latest series replayed through the tagger (as ``groups`` and
``show`` do), replayed again at most every ``refresh_s`` seconds, so a cycle a running
``groundwatch run`` stores shows on the next poll without a replay per request.
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
    """The store's latest series replayed, shared by the requests of ``refresh_s`` seconds."""

    def __init__(
        self, store: Store, series: str | None, window_runs: int, refresh_s: float = REFRESH_S
    ) -> None:
        self.store, self.series, self.window_runs, self.refresh_s = (
            store,
            series,
            window_runs,
            refresh_s,
        )
        self._lock = threading.Lock()
        self._at = -float("inf")
        self._reads: Reads | None = None

    def __call__(self) -> Reads:
        from groundwatch.runtime.view import Reads

        with self._lock:
            now = time.monotonic()
            if self._reads is None or now - self._at >= self.refresh_s:
                try:
                    replay = self.store.replay(self.series, self.window_runs)
                    tagger: Any = replay.tagger
                except NothingStored:
                    from groundwatch.core.tagging import Tagger

                    tagger = Tagger()  # no cycle yet: an empty table that fills on a poll
                self._reads = Reads(tagger, self.store.evidence(), self.store.engine)
                self._at = now
            return self._reads


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

    add_view(app, StoreReads(store, series, window_runs), auth)
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
