"""The HTML report in a real browser: Debian's headless Chromium driven through chromedriver.

The page must render offline (no network: the browser runs with networking features off and a
fresh profile), its failing-facts table must sort, filter and expand, and the console must stay
free of errors. ``scripts/test.sh`` installs ``chromium`` and ``chromium-driver`` when missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger, Window
from groundwatch.report.build import report_from_tagger
from groundwatch.report.html import render_html
from tests.conftest import need

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


class _Row:
    def __init__(self, query: str, answer: str, gold: str) -> None:
        self.query, self.answer, self.tier = query, answer, "exact"
        self.reason = "refusal" if answer == "I don't know." else "gold named"
        self.expected = {"values": [gold]}


class _Src:
    def __init__(self, gid: str) -> None:
        self.sql = "SELECT city FROM people WHERE name = :name"
        self.params = {"name": f"person {gid}"}


class _Evidence:
    def __init__(self, rows: dict[str, _Row]) -> None:
        self.rows = rows

    def forms(self, probe_ids: Any) -> dict[str, _Row]:
        return {p: self.rows[p] for p in probe_ids if p in self.rows}

    def sources(self, keys: Any) -> dict[tuple[str, str], _Src]:
        return {k: _Src(k[1]) for k in keys}


def report_html() -> str:
    """12 facts in two cohorts of two forms: 4 gaps, 4 non-robust, 4 robust; one a <script>."""
    tagger = Tagger(Window(runs=1))
    rows: dict[str, _Row] = {}
    for i in range(12):
        gid = f"g{i:02d}"
        gold = "<script>alert(1)</script>" if i == 0 else f"City {i}"
        for cohort in ("short", "long"):
            for f in range(2):
                right = (i >= 8) or (4 <= i < 8 and cohort == "short")
                pid = f"{gid}-{cohort}-{f}"
                tagger.apply(
                    Observation(
                        probe_id=pid,
                        target="rag",
                        cohort=cohort,
                        group_id=gid,
                        form_id=f"{cohort}{f}",
                        verdict=Verdict.CORRECT if right else Verdict.INCORRECT,
                        group_forms=2,
                        series="s",
                        cycle=1,
                    )
                )
                rows[pid] = _Row(
                    f"Where does person {gid} live? ({cohort} {f})",
                    gold if right else "I don't know.",
                    gold,
                )
    return render_html(report_from_tagger(tagger, evidence=_Evidence(rows)))


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    chromium = os.environ.get("GW_TEST_CHROMIUM") or shutil.which("chromium")
    chromedriver = os.environ.get("GW_TEST_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chromium or not chromedriver:
        need("chromium and chromedriver are not installed (scripts/test.sh installs them)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        need("selenium is not installed (pip install -e '.[test]')")
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager go online
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in FLAGS:
        options.add_argument(flag)
    profile = Path(os.environ.get("TMPDIR", "/tmp")) / f"gw-chromium-{os.getpid()}"
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=options, service=Service(executable_path=str(chromedriver)))
    try:
        yield d
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_failing_facts_table_renders_sorts_filters_and_expands(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page = tmp_path / "report.html"
    page.write_text(report_html(), encoding="utf-8")
    driver.get(page.as_uri())
    assert "GRAMMAR group report" in driver.title
    assert driver.find_element(By.ID, "failing-facts-title").is_displayed()

    def visible_rows() -> list[Any]:
        return [r for r in driver.find_elements(By.CSS_SELECTOR, "tr.ff-row") if r.is_displayed()]

    count = driver.find_element(By.ID, "ff-count")
    assert len(visible_rows()) == 8  # 4 gaps + 4 non-robust; robust groups are not failing
    assert count.text == "8 of 8 groups"
    details = driver.find_elements(By.CSS_SELECTOR, "tr.ff-detail")
    assert details and not any(d.is_displayed() for d in details)  # collapsed by the script

    # expand one group: its forms, questions and answers appear
    first = visible_rows()[0]
    first.find_element(By.CSS_SELECTOR, "button.ff-toggle").click()
    detail = first.find_element(By.XPATH, "following-sibling::tr[1]")
    assert detail.is_displayed()
    assert "SELECT city FROM people" in detail.text and "I don't know." in detail.text

    # filter by status, then by text
    Select(driver.find_element(By.ID, "ff-status")).select_by_value("non_robust")
    assert len(visible_rows()) == 4 and count.text == "4 of 8 groups"
    Select(driver.find_element(By.ID, "ff-status")).select_by_value("")
    box = driver.find_element(By.ID, "ff-filter")
    box.send_keys("g03")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text.strip("▸▾ ") for r in visible_rows()] == [
        "g03"
    ]
    driver.execute_script(
        "var e = document.getElementById('ff-filter'); e.value = '';"
        " e.dispatchEvent(new Event('input'));"
    )
    assert len(visible_rows()) == 8

    # sort by group, descending on the second click; rows keep their detail rows with them
    header = driver.find_elements(By.CSS_SELECTOR, "#failing-facts > thead th")[1]
    header.click()
    header.click()
    ids = [r.find_elements(By.TAG_NAME, "td")[1].text.strip("▸▾ ") for r in visible_rows()]
    assert ids == sorted(ids, reverse=True)
    body_rows = driver.find_elements(By.CSS_SELECTOR, "#failing-facts > tbody > tr")
    kinds = [r.get_attribute("class").split()[0] for r in body_rows]
    assert kinds == ["ff-row", "ff-detail"] * 8

    # the gold answer "<script>…" is text, never markup; and the console has no errors
    assert "<script>alert(1)</script>" in driver.find_element(By.ID, "failing-facts").text
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
