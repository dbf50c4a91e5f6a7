"""``groundwatch view`` in a real browser: Debian's headless Chromium through chromedriver.

A store the demo wrote (real judgements, SQL, gold answers), the view served over it by
uvicorn on loopback: filter the groups, search, open a group, mark an answer wrong with a
note, see it beside the judge's verdict and in the labels ``judge-agreement`` reads; the
table refreshes itself; bad input is a clear 4xx that changes nothing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from groundwatch.app.store import Store, open_store
from groundwatch.app.view import export_labels, view_app
from groundwatch.cli.judge_agreement import load_results
from groundwatch.core.model import Verdict
from groundwatch.runtime.view import ViewAuth
from tests.integration.test_report_browser import driver  # noqa: F401  (the browser fixture)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CLI = str(Path(sys.executable).with_name("groundwatch"))
TOKEN = "view-test-token-0123456789"
#: Seconds a page may take to change in the browser (a bound on a loaded machine, not a claim).
PATIENCE = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store of two demo cycles (gaps, non-robust and robust groups, SQL, gold answers)."""
    home = tmp_path_factory.mktemp("view")
    url = f"sqlite:///{home / 'store.db'}"
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    proc = subprocess.run(
        [CLI, "demo", "--runs", "2", "--database-url", url, "-q"],
        capture_output=True,
        text=True,
        timeout=500,
        cwd=home,
        env=env,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return url


@pytest.fixture(scope="module")
def served(store_url: str) -> Iterator[tuple[str, Store]]:
    import uvicorn

    store = open_store(store_url, "--database-url", writable=True)
    app = view_app(store, ViewAuth(write_token=TOKEN, reviewer="ada"), series=None, window_runs=1)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(timeout=60) as client:
        for _ in range(600):
            try:
                if client.get(f"{base}/ui/static/view.css").status_code == 200:
                    break
            except httpx.TransportError:
                threading.Event().wait(0.1)
    try:
        yield base, store
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        store.close()


def _verdicts(store: Store) -> int:
    from groundwatch.adapters.db import human_verdicts as hv

    return hv.count(store.engine)


def _wait(browser: Any, what: Any) -> Any:
    """Until ``what`` holds: htmx swaps parts of the page while the test reads them, so an
    element found a moment ago may be gone (stale) — looked up again, not a failure."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, PATIENCE, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(what)


def _js(browser: Any, script: str) -> Any:
    """Read the page in one script: the polled table may be swapped between two reads."""
    return browser.execute_script(script)


def _statuses(browser: Any) -> list[str]:
    return list(
        _js(
            browser,
            "return [...document.querySelectorAll('tr.group-row')]"
            ".map(r => r.cells[2].innerText.trim().split(/\\s/)[0])",
        )
    )


def _count(browser: Any) -> str:
    return str(_js(browser, "return document.getElementById('groups-count').innerText"))


def _agreement(store: Store, out: Path) -> str:
    """What ``groundwatch judge-agreement`` says of the people's verdicts exported now."""
    export_labels(store, out)
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    agree = subprocess.run(
        [CLI, "judge-agreement", str(out)], capture_output=True, text=True, timeout=300, env=env
    )
    assert agree.returncode == 0, agree.stderr[-2000:]
    return agree.stdout


def test_filter_open_mark_see_and_export(
    driver: Any,  # noqa: F811  (the fixture)
    served: tuple[str, Store],
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, store = served
    driver.get(f"{base}/ui/#token={TOKEN}")  # the token arrives in the fragment, as printed
    assert "groundwatch view" in driver.title, driver.page_source[:500]
    assert "#token" not in driver.current_url  # taken out of the address bar
    everything = _count(driver)
    assert set(_statuses(driver)) > {"gap"}

    # filter: only gaps; htmx swaps the table in place
    Select(driver.find_element(By.ID, "f-status")).select_by_visible_text("gap")
    _wait(driver, lambda d: _count(d) != everything)
    gaps = _statuses(driver)
    assert gaps and set(gaps) == {"gap"}

    # search by the gold of the first gap: the table narrows to groups holding it
    gold = _js(driver, "return document.querySelector('tr.group-row td.gold').innerText.trim()")
    assert gold and gold != "–"
    counted = _count(driver)
    driver.find_element(By.ID, "q").send_keys(gold)
    _wait(driver, lambda d: _count(d) != counted)
    golds = _js(driver, "return [...document.querySelectorAll('td.gold')].map(e => e.innerText)")
    assert golds and gold in golds

    # the table refreshes itself: the polled section is replaced by a fresh copy
    _js(driver, "window.gwOld = document.getElementById('groups')")
    _wait(driver, lambda d: _js(d, "return document.getElementById('groups') !== window.gwOld"))
    assert set(_statuses(driver)) == {"gap"}  # with the filters it was polled with

    # open the group (a click on the first row's link)
    _js(driver, "document.querySelector('tr.group-row a').click()")
    _wait(driver, lambda d: "/ui/groups/" in d.current_url)

    # its page: the SQL, gold and every form's answer with the judge's verdict
    assert driver.find_element(By.CSS_SELECTOR, "pre.sql").text.upper().startswith("SELECT")
    assert gold in driver.find_element(By.CSS_SELECTOR, "dd.gold").text
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.form-row")
    assert rows
    row = rows[0]
    probe = row.get_attribute("data-probe")
    judge = row.find_element(By.CSS_SELECTOR, "td .v").text
    mine = "incorrect" if judge == "correct" else "correct"
    assert driver.find_element(By.ID, "gw-who").get_attribute("value") == "ada"

    # what the tallies and judge-agreement say before a person's verdict
    counts = driver.find_element(By.CSS_SELECTOR, "dd.counts").text
    agreement_before = _agreement(store, tmp_path / "before.json")

    # mark it: the person's verdict shows beside the judge's
    before = _verdicts(store)
    row.find_element(By.NAME, "note").send_keys("the gold names another <b>city</b>")
    row.find_element(By.CSS_SELECTOR, f"button[value={mine}]").click()
    cell = f"#human-{probe}"
    _wait(driver, lambda d: "by ada" in d.find_element(By.CSS_SELECTOR, cell).text)
    shown = driver.find_element(By.CSS_SELECTOR, cell)
    assert mine in shown.text and "the gold names another <b>city</b>" in shown.text  # escaped
    assert _verdicts(store) == before + 1

    # it counts: the group's tallies are recounted with the person's verdict (a reload shows
    # them once the store's replay has been refreshed), the judge's verdict still shown
    def recounted(d: Any) -> bool:
        d.refresh()
        return bool(d.find_element(By.CSS_SELECTOR, "dd.counts").text != counts)

    _wait(driver, recounted)
    assert "by ada" in driver.find_element(By.CSS_SELECTOR, cell).text
    assert "disagrees" in driver.find_element(By.ID, "disagree").text
    judged = driver.find_element(By.CSS_SELECTOR, f"tr[data-probe='{probe}'] td.judge").text
    assert judged.startswith(judge) and f"counted: {mine}" in judged

    # without a token the browser is told why, and nothing is stored
    driver.execute_script("sessionStorage.removeItem('gw-token')")
    driver.refresh()
    # a click as the page's own script gives it: right after a reload the layout may still
    # move, and a pointer click at a point the page has not settled on lands elsewhere
    _js(driver, "document.querySelector('tr.form-row button[value=correct]').click()")
    _wait(driver, lambda d: d.find_element(By.ID, "gw-error").is_displayed())
    assert driver.find_element(By.ID, "gw-error").text.startswith("401")
    assert _verdicts(store) == before + 1

    # exported, the correction is a labelled item judge-agreement reads and checks the judge by
    out = tmp_path / "labels.json"
    assert export_labels(store, out) >= 1
    items = {i.query: i for i in load_results(out)}
    first = driver.find_element(By.CSS_SELECTOR, f"tr[data-probe='{probe}']")
    question = first.find_elements(By.TAG_NAME, "td")[2].text
    assert items[question].judgement is Verdict(mine)
    agreement = _agreement(store, tmp_path / "after.json")
    assert "agreement on decided" in agreement and agreement != agreement_before
    assert not [
        e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "401" not in e["message"]
    ]


def _counts(page: str) -> list[str]:
    """The tallies a group's page shows, section by section."""
    return [part.split("</dd>", 1)[0] for part in page.split('<dd class="counts">')[1:]]


def test_trends_and_the_comparison_of_two_runs(
    driver: Any,  # noqa: F811  (the fixture)
    served: tuple[str, Store],
) -> None:
    """The trends chart and table of each run's numbers, a target chosen; the two runs'
    comparison, as ``groundwatch diff`` gives it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from groundwatch.app.compare import diff

    base, store = served
    driver.get(f"{base}/ui/")
    _js(
        driver, "[...document.querySelectorAll('nav a')].find(a => a.innerText == 'Trends').click()"
    )
    _wait(driver, lambda d: "/ui/trends" in d.current_url)
    assert driver.find_element(By.CSS_SELECTOR, "figure.chart svg")
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.trend-row")
    cycles = {r.find_elements(By.TAG_NAME, "td")[2].text for r in rows}
    assert cycles == {"1", "2"}  # the demo's two runs, each by its own judgements
    targets = [o.text for o in Select(driver.find_element(By.ID, "t-target")).options][1:]
    assert targets
    Select(driver.find_element(By.ID, "t-target")).select_by_visible_text(targets[0])
    _wait(driver, lambda d: f"target={targets[0]}" in d.current_url)
    shown = {
        r.find_elements(By.TAG_NAME, "td")[0].text
        for r in driver.find_elements(By.CSS_SELECTOR, "tr.trend-row")
    }
    assert shown == {targets[0]}

    driver.get(f"{base}/ui/compare")
    a = Select(driver.find_element(By.ID, "c-a")).first_selected_option.get_attribute("value")
    b = Select(driver.find_element(By.ID, "c-b")).first_selected_option.get_attribute("value")
    assert a and b and a != b  # the series' last two runs, before and after
    section = driver.find_element(By.ID, "comparison").text
    assert f"Figures, {a} → {b}" in section
    expected = diff(a, b, store)
    counts = expected.counts
    assert f"{counts['regression']} regressed, {counts['recovery']} recovered" in section
    # swapped: B before A
    Select(driver.find_element(By.ID, "c-a")).select_by_value(b)
    Select(driver.find_element(By.ID, "c-b")).select_by_value(a)
    _js(driver, "document.querySelector('form.filters button').click()")
    _wait(driver, lambda d: f"Figures, {b} → {a}" in d.find_element(By.ID, "comparison").text)


def test_bad_input_is_a_clear_4xx_and_changes_nothing(served: tuple[str, Store]) -> None:
    base, store = served
    with httpx.Client(base_url=f"{base}/ui", timeout=120) as c:
        page = c.get("/")
        assert page.status_code == 200
        group = c.get("/", params={"status": "gap"}).text
        gid = group.split('href="/ui/groups/', 1)[1].split("?", 1)[0]
        probe = c.get(f"/groups/{gid}").text.split('data-probe="', 1)[1].split('"', 1)[0]
        before = _verdicts(store)
        tallies = _counts(c.get(f"/groups/{gid}").text)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        cases: list[tuple[httpx.Response, int, str]] = [
            (c.get("/groups/no-such-group"), 404, "no group 'no-such-group'"),
            (c.get("/", params={"page": 100_000}), 404, "beyond the last"),
            (c.get("/", params={"page": 0}), 422, ""),
            (c.get("/", params={"target": "nope"}), 400, "no target 'nope'"),
            (c.get("/", params={"status": "great"}), 400, "unknown status 'great'"),
            (c.get("/", params={"held": "maybe"}), 400, "held must be yes or no"),
            (c.get("/groups/" + "x" * 300), 404, "no group"),
            (c.get("/compare", params={"a": "nope", "b": "nope2"}), 400, "neither a baseline"),
            (c.get("/compare", params={"a": "nope"}), 400, "say both runs"),
            (c.get("/trends", params={"target": "nope"}), 400, "no target 'nope'"),
            (c.get("/trends", params={"series": "nope"}), 404, "no series 'nope'"),
            (c.post("/verdicts", data={"probe_id": probe, "verdict": "correct"}), 401, "bearer"),
            (
                c.post(
                    "/verdicts",
                    data={"probe_id": probe, "verdict": "correct"},
                    headers={"Authorization": "Bearer wrong-token-of-some-length"},
                ),
                401,
                "bearer",
            ),
            (
                c.post(
                    "/verdicts",
                    data={"probe_id": probe, "verdict": "correct", "note": "x" * 1_000_000},
                    headers=auth,
                ),
                422,
                "at most 2000 characters (1000000 given)",
            ),
            (
                c.post(
                    "/verdicts",
                    data={"probe_id": probe, "verdict": "correct", "note": "x" * 2_000_000},
                    headers=auth,
                ),
                413,
                "larger than",
            ),
            (
                c.post(
                    "/verdicts",
                    data={"probe_id": probe, "verdict": "correct", "note": "x" * 2_001},
                    headers=auth,
                ),
                422,
                "at most 2000 characters",
            ),
            (
                c.post("/verdicts", data={"probe_id": probe, "verdict": "maybe"}, headers=auth),
                422,
                "correct or incorrect",
            ),
            (
                c.post(
                    "/verdicts",
                    data={"probe_id": "no-such-probe", "verdict": "correct"},
                    headers=auth,
                ),
                404,
                "no judged answer",
            ),
        ]
        for response, code, says in cases:
            assert response.status_code == code, (response.request.url, response.text[:300])
            assert len(response.text) < 2_000  # said in a line, the input never echoed back
            assert says in response.text, response.text
        assert _verdicts(store) == before
        assert _counts(c.get(f"/groups/{gid}").text) == tallies
        # a note of exactly the limit is taken
        ok = c.post(
            "/verdicts",
            data={"probe_id": probe, "verdict": "correct", "note": "y" * 2_000},
            headers=auth,
        )
        assert ok.status_code == 200 and _verdicts(store) == before + 1


def test_read_token_guards_the_pages(store_url: str) -> None:
    """Behind a read token the pages need it, as a bearer header or the login's cookie."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from groundwatch.app.view import StoreReads
    from groundwatch.runtime.view import add_view

    store = open_store(store_url, "--database-url")
    try:
        app = FastAPI()
        secret = "read-token-0123456789abcdef"
        add_view(app, StoreReads(store, None, 1), ViewAuth(read_token=secret))
        with TestClient(app) as c:
            assert c.get("/ui/").status_code == 401
            assert c.get("/ui/labels.json").status_code == 401
            assert c.get("/ui/", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
            assert c.post("/ui/login", data={"token": "wrong"}).status_code == 401
            login = c.post("/ui/login", data={"token": secret}, follow_redirects=False)
            assert login.status_code == 303
            assert c.get("/ui/").status_code == 200  # the cookie it set
            # verdicts stay closed: no write token was configured
            given = c.post(
                "/ui/verdicts",
                data={"probe_id": "x", "verdict": "correct"},
                headers={"Authorization": f"Bearer {secret}"},
            )
            assert given.status_code == 403
    finally:
        store.close()


def test_a_replay_of_the_store_is_refreshed_in_the_background(store_url: str) -> None:
    """A request past the refresh age is served the last replay while the store is looked
    at in the background: unchanged, the replay is kept (a big store's replay is never made
    for nothing); changed (a person's verdict here), a later request gets a fresh one."""
    import threading as th

    from groundwatch.adapters.db import human_verdicts as hv
    from groundwatch.app.view import StoreReads

    def settle() -> None:
        for t in th.enumerate():
            if t.name == "view-replay":
                t.join(timeout=300)

    store = open_store(store_url, "--database-url", writable=True)
    try:
        reads = StoreReads(store, None, 1, refresh_s=0.0)
        first = reads()
        assert first.tagger.targets()
        again = reads()  # stale at once: served the last replay, the store looked at
        assert again is first
        settle()
        assert reads() is first  # nothing stored since: the same replay
        settle()
        probe = next(iter(first.tagger.observations())).probe_id
        hv.add(store.engine, probe, "incorrect", "", "ada")
        assert reads() is first  # the change is found in the background
        settle()
        fresh = reads()
        assert fresh is not first and fresh.tagger.targets() == first.tagger.targets()
    finally:
        store.close()


def test_people_verdicts_recount_a_replay_of_the_store(store_url: str) -> None:
    """A gap whose every wrong answer a person marks right is a gap no more wherever the
    store is replayed, while the stored judgements keep the judge's verdicts."""
    from groundwatch.adapters.db import human_verdicts as hv
    from groundwatch.core.tagging import GroupStatus, overall_status

    def statuses(store: Store) -> dict[tuple[str, str], GroupStatus]:
        tagger = store.replay(None, 1).tagger
        return {
            (t, gid): overall_status(st, answered=answered)
            for t, gid, _c, st, answered, _h in tagger.group_statuses(scenario="factual")
        }

    store = open_store(store_url, "--database-url", writable=True)
    try:
        before = statuses(store)
        target, gid = next(k for k, s in sorted(before.items()) if s is GroupStatus.GAP)
        tagger = store.replay(None, 1).tagger
        wrong = [
            o.probe_id
            for c in tagger.cohorts(target)
            for o in tagger.group_observations(target, c, gid)
            if o.verdict is Verdict.INCORRECT
        ]
        assert wrong
        for probe in wrong:
            hv.add(store.engine, probe, "correct", "the answer names the gold", "ada")
        after = statuses(store)
        assert after[(target, gid)] is not GroupStatus.GAP
        changed = {k for k in before if before[k] is not after.get(k)}
        assert changed == {(target, gid)}  # no other group moved
        assert {hv.judge_verdict(store.engine, p) for p in wrong} == {"incorrect"}
    finally:
        store.close()
