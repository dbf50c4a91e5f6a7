"""People's verdicts and the view's search on PostgreSQL: the demo's store in a fresh
database, a group found by its gold and by a question's word, a verdict stored, superseded
and exported as a labelled item."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from groundwatch.adapters.db import human_verdicts as hv
from groundwatch.app.store import open_store
from groundwatch.app.view import StoreReads
from groundwatch.report.groups import group_results
from tests.integration.test_cli_serve import CLI

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def test_search_verdicts_and_labels_on_postgres(
    fresh_pg_url: Callable[[], str], tmp_path: Path
) -> None:
    url = fresh_pg_url()
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    demo = subprocess.run(
        [CLI, "demo", "--runs", "1", "--database-url", url, "-q"],
        capture_output=True, text=True, timeout=500, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert demo.returncode in (0, 1), demo.stderr[-2000:]
    store = open_store(url, "--database-url", writable=True)
    try:
        reads = StoreReads(store, None, 1)()
        _, rows = group_results(reads.tagger, evidence=reads.evidence, limit=1)
        g = rows[0]
        assert g.gold_text and g.forms[0].question
        by_gold = hv.search_group_ids(store.engine, g.gold_text.upper())
        assert g.group_id in by_gold
        word = max(g.forms[0].question.split(), key=len)
        assert g.group_id in hv.search_group_ids(store.engine, word.lower())
        assert not hv.search_group_ids(store.engine, "no such words anywhere 9f8e7d")

        probe = g.forms[0].probe_id
        assert hv.has_table(store.engine) and hv.is_judged(store.engine, probe)
        hv.add(store.engine, probe, "correct", "", "ada")
        hv.add(store.engine, probe, "incorrect", "the office moved", "ada")
        assert hv.newest(store.engine, [probe])[probe].verdict == "incorrect"
        items = hv.labelled_items(store.engine)
        assert [(i["probe_id"], i["judgement"], i["note"]) for i in items] == [
            (probe, "Incorrect", "the office moved")
        ]
        assert items[0]["query"] == g.forms[0].question and items[0]["expected"]["values"]
    finally:
        store.close()
