"""``store stats`` projects a day from a continuous run's cadence (``GW_INTERVAL_S``) only; a
CI store of back-to-back ``run --once`` runs, 45 s apart, was projected at "1,919 cycles a day,
12 GB a day" — now it is said to hold separate runs and is projected per cycle run."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.app.retention import continuous_gap, warn_if_large, write_estimate
from groundwatch.app.settings import RetentionSettings
from groundwatch.cli.main import app
from tests.integration._retention_series import write_series

pytestmark = pytest.mark.integration


@pytest.fixture
def once_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Four cycles started 45 s apart, as a CI job's back-to-back ``run --once`` leave them."""
    for name in ("GW_INTERVAL_S", "GW_RETAIN_CYCLES", "GW_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite:///{tmp_path / 'gw.db'}"
    engine = make_engine(url)
    create_schema(engine)
    write_series(engine, cycles=4, groups=20, interval_s=45.0)
    engine.dispose()
    return url


def test_separate_runs_are_projected_per_run_not_per_day(
    once_runs: str, caplog: pytest.LogCaptureFixture
) -> None:
    out = CliRunner().invoke(app, ["store", "stats", "--database-url", once_runs])
    assert out.exit_code == 0, out.output
    (line,) = [x for x in out.output.splitlines() if x.startswith("newest cycles:")]
    assert "120 judgements a cycle" in line
    assert "started 45 s apart, not every GW_INTERVAL_S=60 s" in line
    assert "separate runs (run --once), so no daily rate is projected" in line
    assert "a day," not in line and "cycles a day" not in line
    assert "retention keeps the newest 60 cycles raw" in line

    engine = make_engine(once_runs)
    try:
        settings = RetentionSettings(store_warn_mb_per_day=0.001)
        est = write_estimate(engine, settings)
        assert est is not None and est.cycles_per_day is None and est.per_day_bytes is None
        with caplog.at_level("WARNING", logger="groundwatch.retention"):
            warn_if_large(engine, settings)
        assert "written a day" not in caplog.text  # no daily rate to warn about
    finally:
        engine.dispose()


def test_a_continuous_run_is_projected_at_its_configured_cadence(
    once_runs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_INTERVAL_S", "45")
    out = CliRunner().invoke(app, ["store", "stats", "--database-url", once_runs])
    assert out.exit_code == 0, out.output
    (line,) = [x for x in out.output.splitlines() if x.startswith("newest cycles:")]
    assert "a cycle every 45 s (GW_INTERVAL_S=45): 1,920 cycles and" in line
    assert "written a day" in line


@pytest.mark.parametrize(
    ("gap", "previous", "interval", "continuous"),
    [
        (60.4, 12.0, 60.0, True),  # on the cadence
        (90.3, 90.0, 60.0, True),  # the cycle overran: the next started right after it
        (45.0, 20.0, 60.0, False),  # faster than any continuous run at 60 s
        (3600.0, 20.0, 60.0, False),  # an hourly CI job
        (300.0, None, 60.0, False),  # unfinished, off the cadence
    ],
)
def test_which_gaps_a_continuous_run_leaves(
    gap: float, previous: float | None, interval: float, continuous: bool
) -> None:
    assert continuous_gap(gap, previous, interval) is continuous
