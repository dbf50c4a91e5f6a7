"""The service layer (issue 33): the entry points call ``groundwatch.app``, whose use cases raise
typed errors that each command ends with one line and its exit code, and whose one generator
wiring records a series' cycles for the service and the embedded pipeline alike."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from groundwatch.app.bootstrap import CycleBook, generator
from groundwatch.app.settings import documented
from groundwatch.app.store import NothingStored, open_store
from groundwatch.cli import groups as groups_cli
from groundwatch.cli.settings_doc import rows
from groundwatch.errors import ConfigError
from groundwatch.stages.generator.stage import RunSummary

pytestmark = pytest.mark.unit


def _app() -> typer.Typer:
    """The commands as a test or another program registers them: without ``main()``."""
    a = typer.Typer()
    groups_cli.register(a)
    return a


def test_a_store_without_cycles_is_one_line_and_exit_3(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url, "--database-url", create=True).close()
    res = CliRunner().invoke(_app(), ["groups", "--database-url", url])
    assert res.exit_code == 3, res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert errors == [
        "error: no monitoring cycles in the store; run `groundwatch run --once` or"
        " `groundwatch demo` first"
    ]


def test_a_store_that_is_not_there_is_a_usage_error_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    with pytest.raises(ConfigError, match="no such database file"):
        open_store(f"sqlite:///{missing}", "--database-url")
    assert not missing.exists()
    res = CliRunner().invoke(_app(), ["runs", "--database-url", f"sqlite:///{missing}"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert not missing.exists()


def test_the_use_case_raises_what_the_store_lacks(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url, "--database-url", create=True) as store, pytest.raises(NothingStored):
        store.replay("nightly", 1)


def test_the_cycle_book_records_finishes_and_aborts_cycles(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    started: list[str] = []
    with open_store(url, "--database-url", create=True) as store:
        book = CycleBook(store.engine, lambda s: started.append(s.run_id))

        def summary(run_id: str, cycle: int) -> RunSummary:
            return RunSummary(
                run_id=run_id, groups=1, probes=2, started_at=time.time(), series="s",
                cycle=cycle, dataset_id="d", targets=["t"],
            )  # fmt: skip

        async def cycles() -> list[str]:
            await book.started(summary("r1", 1))
            await book.started(summary("r2", 2))
            await book.finished(summary("r1", 1))
            return await book.abort_open()

        assert asyncio.run(cycles()) == ["r2"]
        assert started == ["r1", "r2"]
        assert {r.run_id: r.status for r in store.runs(series="s")} == {
            "r1": "finished",
            "r2": "aborted",
        }
        assert book.open_runs == {}


def test_one_generator_wiring_continues_a_series_and_stores_its_groups(tmp_path: Path) -> None:
    """The generator service and the embedded pipeline build their generator here: the groups'
    SQL truth is stored and the cycles continue the store's numbering."""
    from prometheus_client import CollectorRegistry

    from groundwatch.adapters.bus.memory import MemoryBus
    from groundwatch.contracts import Topics
    from groundwatch.demo import demo_dataset

    _, groups = demo_dataset(1, ("short",))
    groups = groups[:3]
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url, "--database-url", create=True) as store:

        async def two_cycles() -> list[int]:
            bus = MemoryBus(partitions=1)
            stage, _ = generator(
                bus, Topics("gw."), groups, ["t"], store.engine, CollectorRegistry(), series="s"
            )
            await bus.ensure_topics(Topics("gw.").all())
            return [(await stage.run_cycle()).cycle for _ in range(2)]

        assert asyncio.run(two_cycles()) == [1, 2]
        # a restarted generator (a new process, a new `run`) numbers on from the store
        assert asyncio.run(two_cycles()) == [3, 4]
        keys = [(g.dataset_id, g.group_id) for g in groups]
        stored = store.evidence().sources(keys)
        assert {k: row.sql for k, row in stored.items()} == {
            (g.dataset_id, g.group_id): g.sql for g in groups
        }


def test_the_settings_table_lists_every_service_from_the_library() -> None:
    """``groundwatch settings`` reads the classes the library lists; the services' own
    settings modules are the same classes (no import of the services by the library)."""
    from services.analytics.settings import AnalyticsSettings
    from services.generator.settings import GeneratorSettings
    from services.judge.settings import JudgeServiceSettings
    from services.rag_runner.settings import RunnerSettings

    classes = {cls for _, cls in documented()}
    assert {AnalyticsSettings, GeneratorSettings, JudgeServiceSettings, RunnerSettings} <= classes
    variables = {row[0] for row in rows()}
    assert {"GW_DATASET", "GW_RUNNER_BATCH", "GW_JUDGE_GROUP", "GW_WINDOW_RUNS"} <= variables
