"""``groundwatch store stats`` and ``store prune``: how big the store is and what retention
removes (settings ``GW_RETAIN_*``, docs/retention.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from groundwatch.cli.common import DatabaseUrlOpt, one_line_errors, open_store, store_url

if TYPE_CHECKING:
    from groundwatch.app.retention import WriteEstimate


def _mb(n: float | None) -> str:
    return "–" if n is None else f"{n / 1e6:,.1f} MB"


def _projection(est: WriteEstimate) -> str:
    """What the newest cycles imply: a day at a continuous run's cadence, else per run."""
    head = (
        f"newest cycles: {est.per_cycle:,} judgements a cycle, ~{est.bytes_per_row:,.0f} bytes"
        f" a row"
    )
    if est.cycles_per_day is not None:
        return (
            f"{head}, a cycle every {86400 / est.cycles_per_day:,.0f} s (GW_INTERVAL_S="
            f"{est.interval_s:g}): {est.cycles_per_day:,.0f} cycles and {_mb(est.per_day_bytes)}"
            f" written a day, ~{_mb(est.retained_bytes)} kept raw by retention"
        )
    kept = round(est.retained_bytes / est.per_cycle_bytes) if est.per_cycle_bytes else 0
    return (
        f"{head}: {_mb(est.per_cycle_bytes)} a cycle; the newest two started {est.gap_s:,.0f} s"
        f" apart, not every GW_INTERVAL_S={est.interval_s:g} s as a continuous run's do: they"
        f" are separate runs (run --once), so no daily rate is projected — a day costs"
        f" {_mb(est.per_cycle_bytes)} per cycle run; retention keeps the newest {kept:,} cycles"
        f" raw (GW_RETAIN_CYCLES), ~{_mb(est.retained_bytes)}"
    )


def _check_settings() -> None:
    """Stop on a bad ``GW_RETAIN_*`` value with the one line naming it (exit 2), before the
    use case builds the same settings and fails with pydantic's multi-line message."""
    from groundwatch.app.settings import RetentionSettings
    from groundwatch.runtime.settings import load_settings

    load_settings(RetentionSettings)


def register(app: typer.Typer) -> None:
    store_app = typer.Typer(help="The store's size and its retention (GW_RETAIN_*).")
    app.add_typer(store_app, name="store")

    @store_app.command("stats")
    @one_line_errors
    def stats(database_url: DatabaseUrlOpt = None) -> None:
        """Store size, rows per table, and what its newest cycles imply a day."""
        from groundwatch.app.retention import store_stats

        _check_settings()
        with open_store(database_url):  # the store exists and holds our tables
            pass
        url, name = store_url(database_url)
        s, est = store_stats(url, name)
        typer.echo(
            f"{s.dialect} store: {_mb(s.size_bytes)}"
            + (f" ({_mb(s.free_bytes)} free pages)" if s.free_bytes else "")
            + (f", {s.partitions} judgement partitions" if s.partitions else "")
        )
        for table, n in s.rows.items():
            typer.echo(f"  {table:<22} {n:>12,} rows")
        if est is not None:
            typer.echo(_projection(est))

    @store_app.command("prune")
    @one_line_errors
    def prune(
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Only say what would be removed.")
        ] = False,
        database_url: DatabaseUrlOpt = None,
    ) -> None:
        """Roll cycles past the retention window up into summaries and remove their rows,
        and bound dead letters, the LLM cache, answer versions and expected answers (what
        analytics' pruner does every GW_PRUNE_INTERVAL_S)."""
        from groundwatch.app.retention import prune_store

        _check_settings()
        with open_store(database_url):
            pass
        url, name = store_url(database_url)
        r, s = prune_store(url, name, dry_run=dry_run)
        would = "would remove" if dry_run else "removed"
        span = f" (cycles {r.cycles[0].cycle}…{r.cycles[-1].cycle})" if r.cycles else ""
        typer.echo(
            f"{len(r.cycles)} cycles past the window{span}: {would} {r.judgements:,} judgements"
            + (f" and {len(r.partitions)} partitions" if r.partitions else "")
        )
        if not dry_run:
            typer.echo(
                f"summaries: {r.summaries_written:,} written, {r.summaries_extended:,} extended"
            )
        typer.echo(
            f"{would}: {r.summaries_expired:,} expired summaries, {r.dead_letters:,} dead"
            f" letters, {r.llm_cache:,} LLM cache entries, {r.answer_versions:,} answer versions,"
            f" {r.expected_answers:,} expected answers no judgement references"
        )
        typer.echo(f"store now {_mb(s.size_bytes)}, {s.rows.get('judgements', 0):,} judgements")
