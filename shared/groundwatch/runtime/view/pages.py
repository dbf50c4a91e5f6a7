"""The view's routes: pages, the table's partial, people's verdicts, the labels export."""

from __future__ import annotations

import asyncio
import math
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy import Engine

from groundwatch.adapters.db import human_verdicts as hv
from groundwatch.contracts import HumanVerdict
from groundwatch.core.tagging import GroupStatus, TallyReads
from groundwatch.errors import BusUnavailable
from groundwatch.report.document import GroupResult
from groundwatch.report.groups import (
    FAILING,
    Evidence,
    one_group,
    page_results,
)
from groundwatch.runtime.auth import require_token
from groundwatch.runtime.view.index import ViewIndex, index_of
from groundwatch.runtime.view.runs import RunPages, compare_context, trends_context

_HERE = Path(__file__).parent
#: Rows of the groups table a page shows.
PAGE_SIZE = 50
#: The longest note a person may give with a verdict.
MAX_NOTE = 2_000
#: How often the groups table asks for a fresh copy of itself.
POLL_S = 5
_COOKIE = "gw_read_token"
_STATUSES = [s.value for s in GroupStatus]
#: Puts a person's verdict, once stored, on the ``human-verdicts`` topic.
PublishVerdict = Callable[[HumanVerdict], Awaitable[None]]


@dataclass(frozen=True)
class Reads:
    """What a page reads: the tallies (a published, unchanging view), the texts beside
    them, and the store (dead letters, people's verdicts)."""

    tagger: TallyReads
    evidence: Evidence
    engine: Engine


@dataclass(frozen=True)
class ViewAuth:
    """``read_token``: reads need it where set; ``write_token``: a person's verdict needs it
    (none: verdicts are closed); ``reviewer``: the name a verdict is given under by default."""

    read_token: str | None = None
    write_token: str | None = None
    reviewer: str | None = None


def _templates() -> Jinja2Templates:
    t = Jinja2Templates(directory=str(_HERE / "templates"))
    t.env.globals["statuses"] = _STATUSES
    t.env.globals["poll_s"] = POLL_S
    return t


def _read_guard(token: str | None) -> Callable[[Request], None]:
    def check(request: Request) -> None:
        if not token:
            return
        given = request.cookies.get(_COOKIE, "")
        scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = bearer
        if not secrets.compare_digest(given.encode(), token.encode()):
            raise HTTPException(401, "read token required: log in at /ui/login")

    return check


def _statuses(spec: str) -> list[GroupStatus] | None:
    if not spec:
        return None
    if spec == "failing":
        return sorted(FAILING)
    try:
        return [GroupStatus(spec)]
    except ValueError:
        raise HTTPException(
            400, f"unknown status {spec!r}; one of {', '.join(_STATUSES)} or failing"
        ) from None


def _known(value: str, known: list[str], what: str) -> str | None:
    if not value:
        return None
    if value not in known:
        raise HTTPException(400, f"no {what} {value!r} (there are: {', '.join(known) or 'none'})")
    return value


@dataclass(frozen=True)
class _Filters:
    target: str = ""
    cohort: str = ""
    status: str = ""
    held: str = ""
    q: str = ""
    page: int = 1

    def query(self, **change: Any) -> str:
        from urllib.parse import urlencode

        values = {k: getattr(self, k) for k in ("target", "cohort", "status", "held", "q")}
        values |= {"page": self.page} | change
        return urlencode({k: v for k, v in values.items() if v not in ("", None)})


def _filters(
    target: str = "",
    cohort: str = "",
    status: str = "",
    held: str = "",
    q: str = "",
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> _Filters:
    return _Filters(target, cohort, status, held, q, page)


def _table(reads: Reads, index: ViewIndex, f: _Filters) -> dict[str, Any]:
    """The groups table's page ``f.page`` with its filters (blocking: run in a thread)."""
    tagger = reads.tagger
    target = _known(f.target, index.targets, "target")
    cohort = _known(f.cohort, index.cohorts_of(target), "cohort")
    wanted = _statuses(f.status)
    if f.held not in ("", "yes", "no"):
        raise HTTPException(400, f"held must be yes or no, not {f.held!r}")
    if len(f.q) > 200:
        raise HTTPException(400, "a search is at most 200 characters")

    q = f.q.strip()
    ids = hv.search_group_ids(reads.engine, q) if q else None
    held = None if not f.held else f.held == "yes"
    key = (target, cohort, f.status, f.held, q)
    picked = index.pick(
        target=target, cohort=cohort, status=wanted, held=held, group_ids=ids, key=key
    )
    total = len(picked)
    pages = max(1, math.ceil(total / PAGE_SIZE))
    if f.page > pages:
        raise HTTPException(404, f"page {f.page} is beyond the last ({pages}: {total} groups)")
    offset = (f.page - 1) * PAGE_SIZE
    rows = page_results(tagger, picked, cohort, reads.evidence, offset, PAGE_SIZE)
    return {
        "rows": rows,
        "total": total,
        "page": f.page,
        "pages": pages,
        "f": f,
        "targets": index.targets,
        "cohorts": index.cohorts_of(target),
        "questions": {r.group_id: _shortest(r) for r in rows},
    }


def _shortest(r: GroupResult) -> str:
    qs = [f.question for f in r.forms if f.question]
    return min(qs, key=len) if qs else ""


def _group(reads: Reads, index: ViewIndex, group_id: str, target: str) -> dict[str, Any]:
    t = _known(target, index.targets, "target")
    rows = one_group(
        reads.tagger,
        group_id,
        t,
        reads.evidence,
        targets=index.targets,
        cohorts=index.cohorts,
    )
    if not rows:
        raise HTTPException(404, f"no group {group_id!r} in the current window")
    people = (
        hv.newest(reads.engine, [f.probe_id for r in rows for f in r.forms])
        if hv.has_table(reads.engine)
        else {}
    )
    disagree = sum(
        1
        for r in rows
        for f in r.forms
        if (p := people.get(f.probe_id)) is not None and p.verdict != p.judge
    )
    return {"groups": rows, "group_id": group_id, "people": people, "disagree": disagree}


def add_view(
    app: FastAPI,
    reads: Callable[[], Reads],
    auth: ViewAuth,
    prefix: str = "/ui",
    *,
    after_verdict: Callable[[], None] | None = None,
    publish_verdict: PublishVerdict | None = None,
    runs: Callable[[Engine], RunPages] | None = None,
) -> None:
    """Mount the view's pages under ``prefix`` on ``app``, reading ``reads()`` per request;
    ``after_verdict`` is called once a person's verdict is stored (the tallies it changes are
    recounted there); ``publish_verdict`` puts it on the ``human-verdicts`` topic once stored
    (the live tallies analytics keeps count it from there); ``runs`` gives the trends and
    comparison pages their numbers (None: those pages are not served)."""
    templates = _templates()
    guard = [Depends(_read_guard(auth.read_token))]
    write = require_token(auth.write_token)
    router = APIRouter(prefix=prefix, include_in_schema=False)

    def page(request: Request, name: str, ctx: dict[str, Any], code: int = 200) -> Response:
        ctx = {"prefix": prefix, "reviewer": auth.reviewer or "", "has_runs": bool(runs), **ctx}
        return templates.TemplateResponse(request, name, ctx, status_code=code)

    def with_index(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        r = reads()
        return fn(r, index_of(r.tagger), *args)

    async def in_thread(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        return await asyncio.to_thread(with_index, fn, *args)

    @router.get("/", response_class=HTMLResponse, dependencies=guard)
    async def groups(request: Request, f: Annotated[_Filters, Depends(_filters)]) -> Response:
        return page(request, "groups.html", await in_thread(_table, f))

    @router.get("/groups-table", response_class=HTMLResponse, dependencies=guard)
    async def groups_table(request: Request, f: Annotated[_Filters, Depends(_filters)]) -> Response:
        return page(request, "_table.html", await in_thread(_table, f))

    @router.get("/groups/{group_id}", response_class=HTMLResponse, dependencies=guard)
    async def group(request: Request, group_id: str, target: str = "") -> Response:
        return page(request, "group.html", await in_thread(_group, group_id, target))

    @router.get("/dead-letters", response_class=HTMLResponse, dependencies=guard)
    async def dead_letters(request: Request) -> Response:
        def letters(r: Reads, _index: ViewIndex) -> dict[str, Any]:
            from groundwatch.adapters.db.dead_letters import DeadLetterStore

            if not _has(r.engine, "dead_letters"):
                return {"letters": [], "total": 0, "missing": True}
            store = DeadLetterStore(r.engine)
            return {"letters": store.newest(limit=200), "total": store.count(), "missing": False}

        return page(request, "dead_letters.html", await in_thread(letters))

    if runs is not None:
        run_pages = runs

        @router.get("/trends", response_class=HTMLResponse, dependencies=guard)
        async def trends(request: Request, series: str = "", target: str = "") -> Response:
            def ctx(r: Reads, _index: ViewIndex) -> dict[str, Any]:
                return trends_context(run_pages(r.engine), series, target)

            return page(request, "trends.html", await in_thread(ctx))

        @router.get("/compare", response_class=HTMLResponse, dependencies=guard)
        async def compare(request: Request, series: str = "", a: str = "", b: str = "") -> Response:
            def ctx(r: Reads, _index: ViewIndex) -> dict[str, Any]:
                return compare_context(run_pages(r.engine), series, a.strip(), b.strip())

            return page(request, "compare.html", await in_thread(ctx))

    @router.post("/verdicts", response_class=HTMLResponse, dependencies=[Depends(write)])
    async def verdict(
        request: Request,
        probe_id: str = Form(..., max_length=36),
        verdict: str = Form(...),
        note: str = Form(""),
        who: str = Form(""),
    ) -> Response:
        """A person's verdict on one judged answer: ``correct`` or ``incorrect``."""
        if verdict not in hv.HUMAN_VERDICTS:
            raise HTTPException(422, f"verdict must be correct or incorrect, not {verdict!r}")
        if len(note) > MAX_NOTE:
            raise HTTPException(422, f"a note is at most {MAX_NOTE} characters ({len(note)} given)")
        name = (who or auth.reviewer or "").strip()
        if not name or len(name) > 128:
            raise HTTPException(422, "say who you are (a name of 1 to 128 characters)")
        r = await asyncio.to_thread(reads)
        if not await asyncio.to_thread(hv.has_table, r.engine):
            raise HTTPException(
                409, "this store keeps no people's verdicts yet: run `groundwatch db-upgrade`"
            )
        judged = await asyncio.to_thread(hv.judged_answer, r.engine, probe_id)
        if judged is None:
            raise HTTPException(404, f"no judged answer {probe_id!r} in the store")
        given = await asyncio.to_thread(
            hv.add, r.engine, probe_id, verdict, note.strip(), name, judged.verdict
        )
        if publish_verdict is not None:
            try:
                await publish_verdict(_message(judged, given))
            except BusUnavailable as exc:
                raise HTTPException(
                    503,
                    f"the verdict is stored, but the bus is unavailable ({exc}): the live"
                    " tallies count it when analytics next restores them; give it again to"
                    " count it now",
                ) from exc
        if after_verdict is not None:
            after_verdict()
        return page(request, "_human.html", {"h": given, "probe_id": probe_id})

    @router.get("/labels.json", dependencies=guard)
    async def labels() -> Response:
        """People's verdicts as a result file ``groundwatch judge-agreement`` reads."""
        r = await asyncio.to_thread(reads)
        items = (
            await asyncio.to_thread(hv.labelled_items, r.engine) if hv.has_table(r.engine) else []
        )
        return JSONResponse(items)

    if auth.read_token:

        @router.get("/login", response_class=HTMLResponse)
        async def login_page(request: Request) -> Response:
            return page(request, "login.html", {})

        @router.post("/login")
        async def login(token: str = Form(..., max_length=512)) -> Response:
            assert auth.read_token is not None
            if not secrets.compare_digest(token.encode(), auth.read_token.encode()):
                raise HTTPException(401, "wrong read token")
            out = RedirectResponse(f"{prefix}/", status_code=303)
            out.set_cookie(_COOKIE, token, httponly=True, samesite="strict", path=prefix)
            return out

    app.include_router(router)
    app.mount(f"{prefix}/static", StaticFiles(directory=str(_HERE / "static")), name="ui-static")


def _message(judged: hv.JudgedAnswer, given: hv.HumanVerdict) -> HumanVerdict:
    """The ``human-verdicts`` message of a person's verdict just stored."""
    return HumanVerdict(
        probe_id=uuid.UUID(judged.probe_id),
        dataset_id=judged.dataset_id,
        target=judged.target,
        cohort=judged.cohort,
        group_id=judged.group_id,
        verdict="correct" if given.verdict == "correct" else "incorrect",
        revision=given.revision,
        who=given.who,
        at=given.at,
    )


def _has(engine: Engine, table: str) -> bool:
    from sqlalchemy import inspect

    return inspect(engine).has_table(table)
