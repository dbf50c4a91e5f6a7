"""Fault injection on the real Kafka broker, services as OS processes.

Each test breaks one thing in the middle of a run — a judge process SIGKILLed, the analytics
process SIGKILLed and restarted, the target RAG killed and restarted — and then proves the
delivery promise from the outside: every probe on the probes topic has a judgement, the stored
judgements are exactly the probes (no loss), and the stored tallies and exported gauges equal what
the core :class:`Tagger` computes from the judgements on the topic with duplicates removed (no
double count; duplicate *messages* are allowed under at-least-once, duplicate *counting* is not).

The helpers here are shared by ``test_faults_broker.py``. Figures are printed on one
``FAULT-FIGURES`` line per test (``pytest -s``) and recorded in RELIABILITY.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from sqlalchemy import func, select, text

from groundwatch.adapters.db import make_engine
from groundwatch.adapters.db.tables import JudgementRow, TallyRow
from groundwatch.contracts import Judgement, Topics
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Tagger, Window
from groundwatch.errors import PoisonMessage
from groundwatch.stages.analytics.observe import observation_from_judgement
from tests import waiting
from tests.e2e.procs import ServiceProc, metric_samples, running_pipeline, wait_published

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.kafka, pytest.mark.postgres]


def _demo_forms() -> int:
    from groundwatch.demo import demo_dataset

    return sum(len(g.forms) for g in demo_dataset(3, ("short", "long"))[1])


#: Probes of one cycle of the demo dataset (its semantic groups × 6 text forms, one target).
PROBES_PER_CYCLE = _demo_forms()


# --------------------------------------------------------------------------- reading the truth
UNKNOWN_TOPIC = 3  # Kafka's UNKNOWN_TOPIC_OR_PARTITION error code


async def _described_with_leaders(bootstrap: str, topic: str) -> dict[str, Any] | None:
    """The topic's description once it lists partitions that all have a leader, or None for a
    topic the cluster does not know. A broker answers from its own metadata: right after a topic
    is made, or while a node restarts, that lists no partitions yet, or a leader of -1, or a
    retriable error; reading the partitions from that answer would read a topic short."""

    async def describe() -> tuple[dict[str, Any] | None] | None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            (described,) = await admin.describe_topics([topic])
        finally:
            await admin.close()
        if described["error_code"] == UNKNOWN_TOPIC:
            return (None,)
        parts = described.get("partitions") or []
        if described["error_code"] or not parts or any(p["leader"] < 0 for p in parts):
            return None
        return (described,)

    (described,) = await waiting.until(f"{topic}: every partition led", describe, 60, 0.5)
    return described


async def _read_all(bootstrap: str, topic: str) -> list[bytes]:
    """Every record of a topic from offset 0 to the end offsets taken at the start (no group)."""
    described = await _described_with_leaders(bootstrap, topic)
    if described is None:  # a topic nobody created: nothing in it
        return []
    tps = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        consumer.assign(tps)
        end = await consumer.end_offsets(tps)
        for tp in tps:  # (seek_to_beginning races with the initial "latest" reset)
            consumer.seek(tp, 0)
        out: list[bytes] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pending = [tp for tp in tps if await consumer.position(tp) < end[tp]]
            if not pending:
                return out
            batches = await consumer.getmany(*pending, timeout_ms=500, max_records=5000)
            out.extend(r.value or b"" for recs in batches.values() for r in recs)  # tombstone: b""
        raise AssertionError(f"could not read {topic} to its end offsets {end}")
    finally:
        await consumer.stop()


def read_all(bootstrap: str, topic: str) -> list[bytes]:
    return asyncio.run(_read_all(bootstrap, topic))


async def _group_behind(bootstrap: str, group: str, topic: str) -> int:
    """How many records of ``topic`` the consumer group has not committed yet (a partition it
    never committed counts whole)."""
    described = await _described_with_leaders(bootstrap, topic)
    if described is None:
        return 0
    tps = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await admin.start()
    await consumer.start()
    try:
        committed = await admin.list_consumer_group_offsets(group, partitions=tps)
        end = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
        await admin.close()
    done = {tp: meta.offset for tp, meta in committed.items() if meta.offset >= 0}
    return sum(end[tp] - done.get(tp, 0) for tp in tps)


def group_behind(bootstrap: str, group: str, topic: str) -> int:
    return asyncio.run(_group_behind(bootstrap, group, topic))


def tcp_ports(pid: int) -> set[int]:
    """The local ports of a live process's TCP sockets: its socket inodes in /proc/<pid>/fd,
    found in the kernel's TCP tables."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # an fd closed meanwhile
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def sessions_of(db_url: str, ports: set[int]) -> int:
    """PostgreSQL backends still serving a client on one of ``ports``."""
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            query = text("SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(:ports)")
            return int(conn.execute(query, {"ports": sorted(ports)}).scalar_one())
    finally:
        engine.dispose()


def stored_count(db_url: str) -> int:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(JudgementRow)).scalar_one())
    except Exception:  # the schema is made by analytics at start-up; before that: nothing stored
        return 0
    finally:
        engine.dispose()


def wait_until(what: str, check: Callable[[], bool], timeout: float, step: float = 0.3) -> float:
    """Poll ``check`` until true (tests/waiting.py); returns the seconds it took."""
    started = time.monotonic()
    waiting.wait_until(what, check, timeout, step)
    return time.monotonic() - started


def analytics_lag(analytics: ServiceProc) -> float:
    samples = metric_samples(analytics.get("/metrics").text, "groundwatch_consumer_lag")
    return sum(samples.values())


def wait_settled(db_url: str, analytics: ServiceProc, expected: int, timeout: float) -> float:
    """Until ``expected`` judgements are stored and analytics has consumed its whole topic
    (late duplicates included), so the final comparison sees the final state."""
    took = wait_until(
        f"{expected} stored judgements", lambda: stored_count(db_url) >= expected, timeout
    )
    wait_until("analytics consumer lag 0", lambda: analytics_lag(analytics) == 0, 60)
    return took


@dataclass
class Exactness:
    """What a run left behind, compared with the core's answer from the deduplicated topic."""

    probes: int  # distinct probe ids on the probes topic
    probe_records: int
    judgement_records: int
    judged: int  # distinct probe ids on the judgements topic
    stored: int  # rows in the analytics judgements table
    tally_rows: int
    dead_letters: int
    verdicts: dict[str, int] = field(default_factory=dict)

    @property
    def duplicate_judgements(self) -> int:
        return self.judgement_records - self.judged


def check_exact(
    bootstrap: str, prefix: str, db_url: str, analytics: ServiceProc | None
) -> tuple[Exactness, dict[str, Judgement]]:
    """No loss and no double count, asserted four ways (topic, rows, tallies, gauges)."""
    topics = Topics(prefix)
    probe_raw = read_all(bootstrap, topics.probes.name)
    probe_ids = {str(topics.probes.decode(r).probe_id) for r in probe_raw}
    judgement_raw = read_all(bootstrap, topics.judgements.name)
    first: dict[str, Judgement] = {}
    invalid = 0  # records a test injected as poison (the services never publish one)
    for raw in judgement_raw:
        try:
            j = topics.judgements.decode(raw)
        except PoisonMessage:
            invalid += 1
            continue
        first.setdefault(str(j.probe_id), j)
    letters = read_all(bootstrap, topics.dead_letter.name)

    assert set(first) == probe_ids, (
        f"lost: {len(probe_ids - set(first))} probes never judged; "
        f"{len(set(first) - probe_ids)} judgements of unknown probes"
    )
    # the services' live view: each group over its latest cycle (GW_WINDOW_RUNS=1), in cycle order
    tagger = Tagger(Window(runs=1))
    in_order = sorted(first.values(), key=lambda j: (j.cycle, j.judged_at))
    assert tagger.apply_many(observation_from_judgement(j) for j in in_order) == len(first)

    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            stored_ids = [r[0] for r in conn.execute(select(JudgementRow.probe_id))]
            tally_rows = conn.execute(select(TallyRow)).all()
    finally:
        engine.dispose()
    assert len(stored_ids) == len(set(stored_ids)) == len(probe_ids)
    assert set(stored_ids) == probe_ids, "stored judgements differ from the probes"
    stored = {
        (r.target, r.cohort, r.group_id): (r.correct, r.incorrect, r.error, r.undecided, r.status)
        for r in tally_rows
    }
    expected = {
        (t.target, t.cohort, t.group_id): (
            t.correct,
            t.incorrect,
            t.error,
            t.undecided,
            t.status.value,
        )
        for t in tagger.tallies()
    }
    diff = {k: (stored.get(k), expected.get(k)) for k in stored.keys() | expected.keys()}
    diff = {k: v for k, v in diff.items() if v[0] != v[1]}
    assert not diff, (
        f"{len(diff)} stored tallies differ from the core, e.g. {list(diff.items())[:3]}"
    )
    if analytics is not None:
        exported = metric_samples(analytics.get("/metrics").text, "groundwatch_groups")
        core = {
            (("cohort", c), ("status", s.value), ("target", t)): float(n)
            for (t, c, s), n in tagger.status_counts().items()
        }
        assert {k: v for k, v in exported.items() if v} == core, "exported gauges differ"
    verdicts = Counter(j.verdict.value for j in first.values())
    return (
        Exactness(
            probes=len(probe_ids),
            probe_records=len(probe_raw),
            judgement_records=len(judgement_raw) - invalid,
            judged=len(first),
            stored=len(stored_ids),
            tally_rows=len(tally_rows),
            dead_letters=len(letters),
            verdicts=dict(verdicts),
        ),
        first,
    )


def report(test: str, **figures: Any) -> None:
    """One machine-readable line of observed figures (RELIABILITY.md quotes them)."""
    print(f"\nFAULT-FIGURES {test} {json.dumps(figures, default=str, sort_keys=True)}")


def ok_count(proc: ServiceProc) -> float:
    samples = metric_samples(proc.get("/metrics").text, "groundwatch_messages_total")
    return sum(v for k, v in samples.items() if ("outcome", "ok") in k)


def published(gen: ServiceProc) -> int:
    return int(gen.get("/runs").json()["published"])


# --------------------------------------------------------------------------- 1. judge SIGKILL
JUDGE_RUNS = 5  # 5 x 2,226 = 11,130 probes
JUDGE_RATE = 500  # probes/s published: the run lasts ~22 s, so the kill lands mid-stream


def test_sigkill_one_of_three_judges_mid_run(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    db_url = fresh_pg_url()
    total = JUDGE_RUNS * PROBES_PER_CYCLE
    started = time.monotonic()
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        judges=3,
        runs=JUDGE_RUNS,
        generator_env={"GW_RATE": str(JUDGE_RATE)},
    ) as procs:
        gen, victim = procs["generator"], procs["judge-2"]
        wait_until("a third of the probes published", lambda: published(gen) >= total // 3, 120)
        wait_until("the victim judge has work done", lambda: ok_count(victim) > 0, 30)
        at_kill = published(gen)
        victim.kill(signal.SIGKILL)
        assert victim.proc is not None and victim.proc.returncode == -signal.SIGKILL
        n = wait_published(gen, JUDGE_RUNS, timeout=180)
        assert n == total and at_kill < total, "the kill did not land mid-run"
        drain_s = wait_settled(db_url, procs["analytics"], n, timeout=180)
        survivors = {k: ok_count(procs[k]) for k in ("judge", "judge-3")}
        tallied = metric_samples(
            procs["analytics"].get("/metrics").text, "groundwatch_judgements_total"
        )
        assert int(sum(tallied.values())) == n, "analytics counted a judgement twice (or lost one)"
        ex, _ = check_exact(kafka_bootstrap, unique_prefix, db_url, procs["analytics"])
    assert ex.probes == n and ex.dead_letters == 0
    # Counted from the topic after the kill (not from the victim's metrics before it, which a
    # loaded machine let run ahead: 10,788 + 303 < 11,130): every judgement record is the
    # survivors' or the victim's, and every probe has one.
    victim_published = ex.judgement_records - int(sum(survivors.values()))
    assert victim_published > 0 and ex.judgement_records >= n
    report(
        "test_sigkill_one_of_three_judges_mid_run",
        published_at_kill=at_kill,
        victim_published=victim_published,
        survivors_judged=survivors,
        drain_after_publish_s=round(drain_s, 1),
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
        duplicate_judgements=ex.duplicate_judgements,
    )


# --------------------------------------------------------------------------- 2. analytics SIGKILL
ANALYTICS_RUNS = 1
# slow enough that the generator is still publishing when analytics has stored its first
# share: at 300 probes/s the whole cycle (2,208) was out in 7.4 s, before analytics' first
# batch of up to 1,000 was stored, and the kill landed after the run instead of in it
ANALYTICS_RATE = 100


def test_sigkill_analytics_mid_run_resumes_from_store(
    kafka_bootstrap: str, fresh_pg_url: Callable[[], str], unique_prefix: str, tmp_path: Path
) -> None:
    db_url = fresh_pg_url()
    total = ANALYTICS_RUNS * PROBES_PER_CYCLE
    started = time.monotonic()
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        runs=ANALYTICS_RUNS,
        generator_env={"GW_RATE": str(ANALYTICS_RATE)},
    ) as procs:
        gen, analytics = procs["generator"], procs["analytics"]
        wait_until(
            "analytics stored a first share", lambda: stored_count(db_url) >= total // 8, 120
        )
        assert analytics.proc is not None
        ports = tcp_ports(analytics.proc.pid)  # its connections to the store among them
        assert sessions_of(db_url, ports), "no store session of analytics' found to wait on"
        analytics.kill(signal.SIGKILL)
        stored_at_kill = stored_count(db_url)
        at_kill = published(gen)
        assert stored_at_kill < total and at_kill < total, "the kill did not land mid-run"
        # a backend whose client died ends its statement (a COMMIT that reached it commits),
        # then exits: once none of the dead process's is left, its last transaction settled
        wait_until(
            "the dead process's store sessions to end", lambda: not sessions_of(db_url, ports), 60
        )
        wait_until(
            "probes to pile up while analytics is down", lambda: published(gen) > at_kill, 60
        )
        rows_at_restart = stored_count(db_url)
        restart = time.monotonic()
        analytics.start().wait_ready(90)
        ready_s = time.monotonic() - restart
        # The restarted process rebuilt its tagger from the store before consuming anything.
        rebuilt = metric_samples(analytics.get("/metrics").text, "groundwatch_groups")
        n = wait_published(gen, ANALYTICS_RUNS, timeout=180)
        drain_s = wait_settled(db_url, analytics, n, timeout=180)
        counted_after_restart = int(
            sum(
                metric_samples(
                    analytics.get("/metrics").text, "groundwatch_judgements_total"
                ).values()
            )
        )
        ex, _ = check_exact(kafka_bootstrap, unique_prefix, db_url, analytics)
    assert n == total and ex.probes == n and ex.dead_letters == 0
    assert sum(rebuilt.values()) > 0, "the restarted analytics did not load its stored state"
    # The new process counts exactly what was not yet stored: the uncommitted judgements it is
    # handed again (already stored ones among them) are not counted a second time.
    assert counted_after_restart == n - rows_at_restart
    report(
        "test_sigkill_analytics_mid_run_resumes_from_store",
        stored_at_kill=stored_at_kill,
        stored_at_restart=rows_at_restart,
        published_at_kill=at_kill,
        restart_ready_s=round(ready_s, 1),
        counted_by_new_process=counted_after_restart,
        drain_after_publish_s=round(drain_s, 1),
        wall_s=round(time.monotonic() - started, 1),
        **asdict(ex),
        duplicate_judgements=ex.duplicate_judgements,
    )


# --------------------------------------------------------------------------- 3. target outage
API_TOKEN = "faults-test-api-token-0b9d3c"
BREAKER_RESET_S = 2.0

TARGETS_YAML = f"""\
targets:
  - name: reference
    type: http_json
    url: "${{GW_RUNNER_REFERENCE_URL}}"
    limits:
      concurrency: 32
      timeout_s: 5
      retries: 1
      backoff_initial_s: 0.05
      backoff_max_s: 0.2
      breaker_failures: 5
      breaker_reset_s: {BREAKER_RESET_S}
"""


def start_run(gen: ServiceProc, timeout: float = 120) -> dict[str, Any]:
    """One cycle through ``POST /runs`` (answered 202 at once), polled until it has run; its
    summary."""
    resp = httpx.post(
        f"{gen.url}/runs", headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=30
    )
    assert resp.status_code == 202, resp.text
    poll = resp.json()["poll"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = gen.get(poll).json()
        if state["status"] in ("done", "failed"):
            assert state["status"] == "done", state
            out: dict[str, Any] = state["cycles"][-1]
            return out
        time.sleep(0.2)
    raise AssertionError(f"run {resp.json()['run_id']} not done in {timeout}s")


def group_statuses(analytics: ServiceProc) -> dict[tuple[tuple[str, str], ...], float]:
    samples = metric_samples(analytics.get("/metrics").text, "groundwatch_groups")
    return {k: v for k, v in samples.items() if v}


def breaker_state(runner: ServiceProc) -> str:
    (lane,) = [t for t in runner.get("/targets").json()["targets"] if t["target"] == "reference"]
    return str(lane["breaker"])


def test_target_outage_opens_the_circuit_and_never_makes_a_wrong_answer(
    kafka_bootstrap: str,
    fresh_pg_url: Callable[[], str],
    unique_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    targets_file = tmp_path / "targets.yaml"
    targets_file.write_text(TARGETS_YAML)
    # Read by the runner only; its URL comes from the GW_RUNNER_REFERENCE_URL the pipeline sets.
    monkeypatch.setenv("GW_RUNNER_TARGETS_FILE", str(targets_file))
    db_url = fresh_pg_url()
    started = time.monotonic()
    with running_pipeline(
        bootstrap=kafka_bootstrap,
        prefix=unique_prefix,
        database_url=db_url,
        log_dir=tmp_path,
        runs=0,
        generator_env={"GW_API_TOKEN": API_TOKEN},
    ) as procs:
        gen, rag, runner = procs["generator"], procs["reference-rag"], procs["rag-runner"]
        analytics = procs["analytics"]

        healthy = start_run(gen)
        wait_settled(db_url, analytics, healthy["probes"], timeout=120)
        statuses_healthy = group_statuses(analytics)
        assert breaker_state(runner) == "closed"

        rag.kill(signal.SIGKILL)
        down = start_run(gen)
        wait_settled(db_url, analytics, healthy["probes"] + down["probes"], timeout=120)
        breaker_during = breaker_state(runner)
        statuses_during = group_statuses(analytics)
        page = analytics.get("/metrics").text
        held_during = metric_samples(page, "groundwatch_held_groups")
        answered_during = metric_samples(page, "groundwatch_target_answered_ratio")

        restart = time.monotonic()
        rag.start().wait_ready(60)
        rag_back_s = time.monotonic() - restart
        time.sleep(BREAKER_RESET_S + 0.5)  # the open circuit lets a trial through after this
        back = start_run(gen)
        total = healthy["probes"] + down["probes"] + back["probes"]
        wait_settled(db_url, analytics, total, timeout=120)
        breaker_after = breaker_state(runner)
        statuses_after = group_statuses(analytics)
        ex, judged = check_exact(kafka_bootstrap, unique_prefix, db_url, analytics)

    by_run: dict[str, list[Judgement]] = {}
    for j in judged.values():
        by_run.setdefault(j.run_id, []).append(j)
    during = by_run[down["run_id"]]
    kinds = Counter(j.error_kind for j in during)
    # The outage: every probe of the cycle is an error, none is judged, none is "incorrect".
    assert len(during) == down["probes"]
    assert {j.verdict for j in during} == {Verdict.ERROR}, Counter(j.verdict for j in during)
    assert set(kinds) <= {"connection", "circuit_open"} and kinds["circuit_open"] > 0, kinds
    assert breaker_during == "open"
    # An outage is no evidence either way: every group keeps the status of its last cycle with
    # evidence (held) — the gap list does not vanish while the endpoint is down — and the
    # endpoint's health says it is down.
    assert statuses_during == statuses_healthy
    # every group with evidence is held: the decided ones, and the unknown ones whose evidence
    # was too little (an unknown group that never had a decided verdict is not)
    decided = sum(n for k, n in statuses_healthy.items() if dict(k)["status"] != "unknown")
    assert decided <= sum(held_during.values()) <= sum(statuses_healthy.values())
    assert set(answered_during.values()) == {0.0}  # its newest cycle: nothing answered
    # The target is back: probing resumes, and each form gets the verdict it had before.
    before = {(j.group_id, j.form_id): j.verdict for j in by_run[healthy["run_id"]]}
    after = {(j.group_id, j.form_id): j.verdict for j in by_run[back["run_id"]]}
    assert breaker_after == "closed"
    assert Verdict.ERROR not in set(after.values())
    assert after == before
    assert statuses_after == statuses_healthy
    report(
        "test_target_outage_opens_the_circuit_and_never_makes_a_wrong_answer",
        probes_per_cycle=down["probes"],
        outage_error_kinds=dict(kinds),
        outage_verdicts=dict(Counter(j.verdict.value for j in during)),
        healthy_verdicts=dict(Counter(v.value for v in before.values())),
        recovered_verdicts=dict(Counter(v.value for v in after.values())),
        breaker=[breaker_during, breaker_after],
        rag_restart_ready_s=round(rag_back_s, 1),
        wall_s=round(time.monotonic() - started, 1),
        duplicate_judgements=ex.duplicate_judgements,
        stored=ex.stored,
    )
