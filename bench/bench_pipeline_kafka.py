"""Pipeline over real Kafka: probes/s end to end and probe → tally latency under load, by judges.

The five services run as OS processes on the local broker, exactly as ``make up`` and the e2e
tests start them (``tests/e2e/procs.py``): a generator publishes probe cycles of the demo dataset
(2 226 probes each), the runner asks a fast in-process ``callable`` target (:mod:`fast_target`,
a dictionary lookup, so the target costs nothing), N judge processes share one consumer group,
analytics tallies and stores every batch (SQLite by default, one writer; ``--database-url`` for
PostgreSQL). Each judge count gets fresh processes and a fresh topic prefix.

Per judge count:
* **throughput** — after a warm-up cycle, ``--cycles`` cycles are published as fast as the bus
  takes them; probes/s = probes / (first publish → last tally), read from analytics' own
  ``groundwatch_judgements_total``. ``steady_probes_per_s`` is the slope between 10 % and 90 %
  tallied. CPU seconds of every process (and of the broker, when ``scripts/kafka.sh`` started
  it) over the phase say which stage bounds the rate;
* **latency under load** — a second generator, started after the burst and paced at
  ``--paced-share`` (80 %) of the throughput just measured (the higher of end-to-end and steady),
  publishes whole cycles for about ``--paced-seconds``; probe → tally latency of each of those
  probes is ``tallied_at - probe_created_at`` from the analytics store (exact, not histogram
  buckets). Latency under the saturating burst is reported too, but that is queueing by
  construction.

Baseline: the serialization bound, i.e. what one core could push through the three topics if
encoding and decoding each message were all there was (``bench_serialization.py`` measures it
separately; here it is computed inline from the same contracts so the run is self-contained).

Usage: ``python bench/bench_pipeline_kafka.py [--judges 1,2,3] [--cycles 8] [--paced-share 0.8]
[--paced-seconds 30] [--bootstrap 127.0.0.1:9092] [--database-url URL] [--out FILE]``. Needs the
broker (``bash scripts/kafka.sh start``). Figures: p99 probe → tally at 80 % of the measured
throughput (target ≤ 2 s), probes/s end to end (≥ 1 000).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.e2e.procs: the e2e harness that starts the services

from _common import delete_topics, emit, figure, machine  # noqa: E402
from fast_target import AnswerBook  # noqa: E402

from tests.e2e.procs import ServiceProc, metric_samples  # noqa: E402

TARGET_PROBES_PER_S = 1_000
TARGET_P99_S = 2.0
TARGET_NAME = "fast"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (and its reaped children) from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks


def broker_pid() -> int | None:
    port = os.environ.get("GW_KAFKA_PORT", "9092")
    pidfile = Path(os.environ.get("GW_KAFKA_HOME", f"/tmp/groundwatch-kafka-{port}")) / "broker.pid"
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def kafka_reachable(bootstrap: str) -> bool:
    from groundwatch.adapters.bus import make_bus

    async def ping() -> bool:
        bus = make_bus("kafka", bootstrap=bootstrap)
        try:
            await asyncio.wait_for(bus.start(), 15)
            return bool(await bus.ping())
        except Exception:
            return False
        finally:
            with contextlib.suppress(Exception):
                await bus.stop()

    return asyncio.run(ping())


def tallied(analytics: ServiceProc) -> int:
    samples = metric_samples(analytics.get("/metrics").text, "groundwatch_judgements_total")
    return int(sum(samples.values()))


def post_runs(gen: ServiceProc, token: str, cycles: int) -> list[str]:
    """Publish ``cycles`` cycles one after the other (each request answered 202 at once, then
    polled until its cycle has run); their run ids."""
    ids = []
    with httpx.Client(timeout=300) as client:
        for _ in range(cycles):
            r = client.post(f"{gen.url}/runs", headers={"Authorization": f"Bearer {token}"})
            r.raise_for_status()
            accepted = r.json()
            while (state := client.get(f"{gen.url}{accepted['poll']}").json())["status"] not in (
                "done",
                "failed",
            ):
                time.sleep(0.2)
            if state["status"] != "done":
                raise RuntimeError(f"run {accepted['run_id']} failed: {state['error']}")
            ids.append(str(accepted["run_id"]))
    return ids


def wait_tallied(
    analytics: ServiceProc, count: int, timeout: float, samples: list[tuple[float, int]]
) -> float:
    """Poll until ``count`` judgements are tallied; returns the time it was first seen."""
    deadline = time.monotonic() + timeout
    while True:
        n = tallied(analytics)
        now = time.monotonic()
        samples.append((now, n))
        if n >= count:
            return now
        if now > deadline:
            raise TimeoutError(f"{n} of {count} tallied after {timeout}s:\n{analytics.tail()}")
        time.sleep(0.1)


def steady_rate(samples: list[tuple[float, int]], start: int, total: int) -> float | None:
    """Probes/s between 10 % and 90 % of the phase's probes tallied."""
    lo, hi = start + 0.1 * total, start + 0.9 * total
    t_lo = next((t for t, n in samples if n >= lo), None)
    t_hi = next((t for t, n in samples if n >= hi), None)
    if t_lo is None or t_hi is None or t_hi <= t_lo:
        return None
    return 0.8 * total / (t_hi - t_lo)


def latencies(database_url: str, run_ids: list[str]) -> list[float]:
    from sqlalchemy import select

    from groundwatch.adapters.db import make_engine
    from groundwatch.adapters.db.tables import JudgementRow

    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                select(JudgementRow.probe_created_at, JudgementRow.tallied_at).where(
                    JudgementRow.run_id.in_(run_ids)
                )
            ).all()
    finally:
        engine.dispose()
    return sorted(max(0.0, (tallied_at - created).total_seconds()) for created, tallied_at in rows)


def quantiles(values: list[float]) -> dict[str, float | int]:
    if len(values) < 2:
        return {"n": len(values)}
    q = statistics.quantiles(values, n=100, method="inclusive")
    return {
        "n": len(values),
        "p50_s": round(q[49], 4),
        "p90_s": round(q[89], 4),
        "p99_s": round(q[98], 4),
        "max_s": round(values[-1], 4),
    }


@contextlib.contextmanager
def services(
    *, judges: int, bootstrap: str, database_url: str, work: Path, token: str
) -> Iterator[tuple[dict[str, ServiceProc], dict[str, str]]]:
    """The services (without the paced generator) and the generator's environment."""
    run = uuid.uuid4().hex[:8]
    # Fresh topics *and* consumer groups: a group id is broker-wide, so sharing "analytics" with
    # another checkout's services would drag this run through their rebalances.
    common = {
        "GW_BUS": "kafka",
        "GW_KAFKA_BOOTSTRAP": bootstrap,
        "GW_TOPIC_PREFIX": f"gwbench{run}.",
        "GW_DATABASE_URL": database_url,
        "GW_LOG_LEVEL": "INFO",
        "GW_ANALYTICS_GROUP": f"analytics-{run}",
        "GW_JUDGE_GROUP": f"judge-{run}",
        "GW_RUNNER_GROUP": f"rag-runner-{run}",
    }
    targets = work / "targets.yaml"
    targets.write_text(
        "targets:\n"
        f"  - name: {TARGET_NAME}\n"
        "    type: callable\n"
        "    callable: fast_target:answer\n"
        "    in_thread: false\n"
        "    limits: {concurrency: 256, queue_size: 5000, timeout_s: 10}\n"
    )
    runner_env = {
        **common,
        "GW_RUNNER_TARGETS_FILE": str(targets),
        "GW_RUNNER_REFERENCE_URL": "off",
        "GW_BENCH_ANSWERS": str(work / "answers.json"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "bench"), os.environ.get("PYTHONPATH", "")]),
    }
    gen_env = {**common, "GW_RUNS": "0", "GW_TARGETS": f'["{TARGET_NAME}"]', "GW_API_TOKEN": token}
    procs: dict[str, ServiceProc] = {"analytics": ServiceProc("analytics", common, work)}
    for i in range(judges):
        procs[f"judge-{i + 1}"] = ServiceProc("judge", common, work)
    procs["rag-runner"] = ServiceProc("rag-runner", runner_env, work)
    procs["generator"] = ServiceProc("generator", gen_env, work)
    try:
        for p in procs.values():
            p.start()
        for p in procs.values():
            p.wait_ready(120)
        yield procs, gen_env
    finally:
        for p in reversed(list(procs.values())):
            p.kill()
        delete_topics(bootstrap, common["GW_TOPIC_PREFIX"])


def run_config(args: argparse.Namespace, judges: int, work: Path) -> dict[str, Any]:
    token = secrets.token_hex(16)
    database_url = args.database_url or f"sqlite:///{work / f'analytics-{judges}.db'}"
    per_cycle = int((work / "per_cycle").read_text())
    with services(
        judges=judges,
        bootstrap=args.bootstrap,
        database_url=database_url,
        work=work,
        token=token,
    ) as (procs, gen_env):
        analytics, gen = procs["analytics"], procs["generator"]
        samples: list[tuple[float, int]] = []
        post_runs(gen, token, 1)  # warm-up: group assignment, connections, caches
        wait_tallied(analytics, per_cycle, 180, samples)

        pids = {name: p.proc.pid for name, p in procs.items() if p.proc is not None}
        bpid = broker_pid()
        if bpid is not None:
            pids["kafka-broker"] = bpid
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        start = tallied(analytics)
        total = args.cycles * per_cycle
        samples = [(time.monotonic(), start)]
        burst_ids: list[str] = []
        poster = threading.Thread(
            target=lambda: burst_ids.extend(post_runs(gen, token, args.cycles)), daemon=True
        )
        t0 = time.monotonic()
        poster.start()
        t1 = wait_tallied(analytics, start + total, 600, samples)
        poster.join(60)
        cpu = {name: round(cpu_seconds(pid) - cpu0[name], 2) for name, pid in pids.items()}
        elapsed = t1 - t0

        rate = total / elapsed
        steady = steady_rate(samples, start, total)
        max_rate = max(rate, steady or 0.0)
        # Latency under load: a generator paced at 80 % of the throughput just measured, for
        # about --paced-seconds (whole cycles), started after the burst so it knows the rate.
        paced_rate = round(args.paced_share * max_rate, 1)
        paced_cycles = max(2, round(args.paced_seconds * paced_rate / per_cycle))
        paced = ServiceProc("generator", {**gen_env, "GW_RATE": str(paced_rate)}, work)
        procs["generator-paced"] = paced
        paced.start()
        paced.wait_ready(120)
        before_paced = tallied(analytics)
        paced_total = paced_cycles * per_cycle
        paced_ids = post_runs(paced, token, paced_cycles)
        wait_tallied(analytics, before_paced + paced_total, 300, [])
        dead = metric_samples(analytics.get("/metrics").text, "groundwatch_messages_total")
        dead_letters = sum(v for k, v in dead.items() if ("outcome", "dead_letter") in k)
    paced_lat = latencies(database_url, paced_ids)
    burst_lat = latencies(database_url, burst_ids)
    return {
        "judges": judges,
        "probes": total,
        "seconds": round(elapsed, 3),
        "probes_per_s": round(rate, 1),
        "steady_probes_per_s": _round(steady),
        "cpu_seconds": cpu,
        "cpu_us_per_probe": {k: round(1e6 * v / total, 1) for k, v in cpu.items()},
        "paced": {
            "share_of_max": args.paced_share,
            "rate_per_s": paced_rate,
            "probes": paced_total,
            **quantiles(paced_lat),
        },
        "burst_latency": quantiles(burst_lat),
        "dead_letters": int(dead_letters),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def serialization_bound() -> float:
    """Probes/s one core could carry if encode + decode of the three messages were all."""
    from bench_serialization import per_probe_seconds

    return 1.0 / per_probe_seconds(repeat=3, n=3000)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cycles", type=int, default=8, help="burst cycles (2 226 probes each)")
    ap.add_argument("--judges", default="1", help="judge process counts, comma separated")
    ap.add_argument("--paced-share", type=float, default=0.8, help="of the measured throughput")
    ap.add_argument("--paced-seconds", type=float, default=30.0)
    ap.add_argument("--quick", action="store_true", help="2 burst cycles, 4 s paced")
    ap.add_argument("--bootstrap", default=os.environ.get("GW_KAFKA_BOOTSTRAP", "127.0.0.1:9092"))
    ap.add_argument("--database-url", default=None, help="default: SQLite in a temp directory")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.quick:
        args.cycles, args.paced_seconds = 2, 4.0
    if not kafka_reachable(args.bootstrap):
        raise SystemExit(f"no Kafka broker at {args.bootstrap} (bash scripts/kafka.sh start)")

    from groundwatch.demo import demo_dataset

    _, groups = demo_dataset()
    book = AnswerBook.from_groups(groups)
    per_cycle = sum(len(g.forms) for g in groups)
    configs = []
    with tempfile.TemporaryDirectory(prefix="gw-bench-kafka-") as tmp:
        work = Path(tmp)
        book.dump(work / "answers.json")
        (work / "per_cycle").write_text(str(per_cycle))
        for judges in (int(j) for j in args.judges.split(",")):
            configs.append(run_config(args, judges, work))
    one = next((c for c in configs if c["judges"] == 1), configs[0])
    bound = serialization_bound()
    result: dict[str, Any] = {
        "bench": "pipeline_kafka",
        **machine(),
        "database": "sqlite (one analytics writer)" if not args.database_url else "given URL",
        "note": "kafka-broker CPU counts every client of the broker, not only this benchmark's; "
        "it is measured only when scripts/kafka.sh runs the broker",
        "probes_per_cycle": per_cycle,
        "configs": configs,
        "serialization_bound_probes_per_s": round(bound, 1),
        "figures": {
            "p99_at_80pct_s": figure(
                f"pipeline over Kafka: probe → tally latency p99 at {args.paced_share:.0%} of"
                f" the measured throughput ({one['judges']} judge)",
                one["paced"].get("p99_s"),
                unit=" s",
                target=TARGET_P99_S,
                goal="<=",
                measured=one["paced"].get("p50_s"),
                baseline=one["paced"]["rate_per_s"],
                baseline_name="paced at, probes/s",
                absolute_unit="(p50 s / rate)",
                bound="batching and queueing: the generator publishes 500 probes at a time,"
                " each consumer polls, produces and commits per batch, analytics stores per"
                " batch; near saturation a burst queues behind the slowest stage",
                digits=3,
            ),
            "probes_per_s": figure(
                f"pipeline over Kafka: probes/s end to end ({one['judges']} judge)",
                one["probes_per_s"],
                target=TARGET_PROBES_PER_S,
                measured=one["steady_probes_per_s"],
                baseline=round(bound, 1),
                baseline_name="steady rate / serialization bound on one core",
                absolute_unit="probes/s",
                bound=_kafka_bound(one),
                digits=0,
            ),
        },
    }
    if len(configs) > 1:
        result["markdown"] = judges_markdown(configs)
    emit(result, args.out)
    return result


def _kafka_bound(c: dict[str, Any]) -> str:
    per = {n: v for n, v in c["cpu_us_per_probe"].items() if n != "kafka-broker"}
    top = max(per, key=lambda n: per[n]) if per else "?"
    return (
        f"CPU: 2 cores shared by five service processes and the broker; {sum(per.values()):.0f}"
        f" µs of service CPU per probe (most: {top}, {per.get(top, 0):.0f} µs) +"
        f" {c['cpu_us_per_probe'].get('kafka-broker', 0):.0f} µs in the broker"
    )


def judges_markdown(configs: list[dict[str, Any]]) -> str:
    lines = [
        "## Pipeline over Kafka by judge count (one run)",
        "",
        "| judges | probes/s | steady probes/s | p50 / p99 at 80 % (s) | service CPU µs/probe"
        " | broker µs/probe |",
        "|---|---|---|---|---|---|",
    ]
    for c in configs:
        per = {n: v for n, v in c["cpu_us_per_probe"].items() if n != "kafka-broker"}
        detail = ", ".join(f"{n} {v:.0f}" for n, v in sorted(per.items()))
        lines.append(
            f"| {c['judges']} | {c['probes_per_s']:,.0f} | {c['steady_probes_per_s'] or 0:,.0f} |"
            f" {c['paced'].get('p50_s', '—')} / {c['paced'].get('p99_s', '—')} |"
            f" {sum(per.values()):.0f} ({detail}) |"
            f" {c['cpu_us_per_probe'].get('kafka-broker', 0):.0f} |"
        )
    lines += [
        "",
        "More judges add no throughput on this machine: the five services and the broker share"
        " two cores, the judge is not the slowest stage (analytics and the runner cost as much),"
        " and each extra judge process adds its own polling, fetch and commit overhead and the"
        " broker's work for one more consumer. On more cores judges scale by consumer group and"
        " analytics by partition.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
    sys.exit(0)
