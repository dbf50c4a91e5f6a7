"""The HTML report is one self-contained, well-formed page with its four plots."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation
from groundwatch.report.build import build_report
from groundwatch.report.html import render_html

pytestmark = pytest.mark.unit

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "source", "wbr", "area", "base"}
SVG_LEAVES = {"rect", "line", "circle", "path"}


class Balance(HTMLParser):
    """Checks every non-void element is closed in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def observations() -> list[Observation]:
    out = []
    C, W, E = Verdict.CORRECT, Verdict.INCORRECT, Verdict.ERROR
    for target in ("prod", "canary <b>"):  # markup in a name must come out escaped
        for g in range(12):
            for cohort, vs in (("short", [C, C, C]), ("long", [C, W, E])):
                if g < 3:
                    vs = [W, W, W]
                for i, v in enumerate(vs):
                    out.append(
                        Observation(
                            probe_id=f"{target}{g}{cohort}{i}",
                            target=target,
                            cohort=cohort,
                            group_id=f"g{g}",
                            form_id=f"{cohort}{i}",
                            verdict=v,
                            group_forms=3,
                            retrieved_ids=(f"d{i}",),
                        )
                    )
    return out


def test_page_is_self_contained_and_well_formed() -> None:
    obs = observations()
    pids = [o.probe_id for o in obs]
    page = render_html(
        build_report(
            obs,
            evaluators={"ragas": dict.fromkeys(pids, True)},
            human_ratings={p: float(1 + i % 5) for i, p in enumerate(pids)},
        )
    )
    assert page.startswith("<!DOCTYPE html>")
    lowered = page.lower()
    for forbidden in ("http://", "https://", "<link", "@import", "src="):
        assert forbidden not in lowered, forbidden
    # one inline script (the failing-facts table), nothing loaded from anywhere
    assert lowered.count("<script") == 1 and "<script>" in lowered
    parser = Balance()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    titles = [re.search(r"<title>(.*?)</title>", s).group(1) for s in svgs]  # type: ignore[union-attr]
    assert "Semantic groups by status" in titles
    assert "Accuracy vs refined accuracy" in titles
    assert "Cohort comparison" in titles
    assert any("attribution" in t for t in titles)
    assert "canary &lt;b&gt;" in page and "canary <b>" not in page
    for heading in ("Target comparison", "Reference-free evaluators", "human ratings"):
        assert heading in page


def test_bars_are_proportional_to_counts() -> None:
    page = render_html(build_report(observations()))
    status_svg = re.search(
        r"<svg[^>]*aria-label=\"Semantic groups by status\".*?</svg>", page, re.S
    )
    assert status_svg
    widths = {
        m.group(2): float(m.group(1))
        for m in re.finditer(
            r'width="([\d.]+)" height="20" fill="[^"]+"><title>prod · short: '
            r"(\w[\w-]*) \d+</title>",
            status_svg.group(0),
        )
    }
    # prod/short: 3 gap groups and 9 robust ones on a 600 px bar
    assert widths == {"gap": pytest.approx(150.0), "robust": pytest.approx(450.0)}


def test_empty_report_renders() -> None:
    page = render_html(build_report([]))
    assert "GRAMMAR group report" in page and "</html>" in page
