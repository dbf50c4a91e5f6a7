"""A batch run's analytics publishes no read model per batch (``publish_views=False``): the
view made when first read afterwards is the one a stage publishing after every batch ends
with, and the tagger keeps no list of the groups changed meanwhile."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.analytics_store import AnalyticsStore
from groundwatch.core.tagging import Window
from groundwatch.report.build import report_from_tagger
from groundwatch.stages.analytics.stage import AnalyticsStage

from .test_analytics_state import cycle_judgements, view

pytestmark = pytest.mark.integration


async def test_a_stage_without_views_per_batch_reads_the_same(tmp_path: Path) -> None:
    stages = []
    for name, publish_views in (("every", True), ("once", False)):
        engine = make_engine(f"sqlite:///{tmp_path}/{name}.db")
        create_schema(engine)
        stage = AnalyticsStage(
            AnalyticsStore(engine), window=Window(runs=3), publish_views=publish_views
        )
        stage.reload()
        stages.append(stage)
    every, once = stages
    rng = random.Random(7)
    for cycle in range(1, 8):
        js = cycle_judgements(rng, cycle, down=cycle == 4)
        for i in range(0, len(js), 11):
            for stage in stages:
                await stage.handle(js[i : i + 11])
            assert not once.tagger._changed and not once.tagger._removed
            assert once._view is None
    assert view(once.tagger) == view(every.tagger)
    # the read model made on demand reads as the one published batch after batch
    assert view(once.view) == view(every.view)  # type: ignore[arg-type]
    assert once.view is once.view  # made once, kept until the next batch
    drop = {"generated_at"}
    assert report_from_tagger(once.view).model_dump(exclude=drop) == report_from_tagger(
        every.view
    ).model_dump(exclude=drop)
