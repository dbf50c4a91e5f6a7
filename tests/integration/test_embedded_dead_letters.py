"""In one process (``groundwatch run``, the demo) a message no stage can process is dead-lettered,
stored and counted, and the cycle ends: it used to wait for a judgement that would never come
(until ``--timeout``, an hour by default), and the letter lived only in memory."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from sqlalchemy import create_engine

from groundwatch.adapters.db import create_schema, make_engine
from groundwatch.adapters.db.dead_letters import DeadLetterStore
from groundwatch.adapters.targets import CallableTarget, TargetLimits
from groundwatch.app.embedded import EmbeddedPipeline
from groundwatch.contracts import DeadLetter, RagResponse
from groundwatch.core.tagging import GroupStatus
from groundwatch.demo import demo_dataset
from groundwatch.stages.runner.lanes import Runner
from tests.integration import _judge_bug

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]


def knows_nothing(query: str) -> dict[str, object]:
    return {"answer": "I don't know."}


async def test_a_probe_the_judge_fails_on_is_stored_counted_and_the_cycle_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, groups = demo_dataset()
    groups = groups[:40]
    victim = groups[3]
    monkeypatch.setenv("GW_TEST_JUDGE_BUG", victim.group_id)
    _judge_bug.install()
    monkeypatch.setattr("groundwatch.stages.judge.stage.JudgeStage._one", _judge_bug._failing_one)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    runner = Runner({"t": CallableTarget(knows_nothing)}, {"t": TargetLimits(concurrency=8)})
    pipeline = EmbeddedPipeline(groups, runner, database_url=url)
    await pipeline.start()
    try:
        first = await pipeline.run(1, timeout_s=120)
        second = await pipeline.run(1, timeout_s=120)
        registry = pipeline.registry
        tagger = pipeline.analytics.tagger
    finally:
        await pipeline.stop()
    forms = len(victim.forms)
    # every probe settled: tallied, or dead-lettered (the victim's forms), per call
    assert first.published == second.published == sum(len(g.forms) for g in groups)
    assert first.dead_letters == second.dead_letters == forms
    assert "judge: RuntimeError: judge bug on group" in first.dead_letter_errors[-1]
    # the others are judged (a target that knows nothing: gaps); the victim has no verdict
    statuses = {t.group_id: t.status for t in tagger.tallies()}
    assert victim.group_id not in statuses
    assert len(statuses) == len(groups) - 1
    assert set(statuses.values()) == {GroupStatus.GAP}
    # the services' series, so the DeadLetters alert reads a `run` as a deployment
    sample = registry.get_sample_value(
        "groundwatch_messages_total",
        {"service": "judge", "topic": "gw.responses", "outcome": "dead_letter"},
    )
    assert sample == 2 * forms
    # kept after the process's bus is gone: whole, with the probe and group they carried
    engine = make_engine(url)
    rows = DeadLetterStore(engine).newest(limit=100)
    engine.dispose()
    assert len(rows) == 2 * forms
    assert {r.service for r in rows} == {"judge"}
    assert {r.group_id for r in rows} == {victim.group_id}
    assert len({r.probe_id for r in rows}) == 2 * forms
    response = RagResponse.model_validate_json(base64.b64decode(rows[0].raw_b64))
    assert str(response.probe_id) == rows[0].probe_id
    assert response.group_id == victim.group_id


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'letters.db'}"
    factory: Callable[[], str] = request.getfixturevalue("fresh_pg_url")
    return factory()


def letter(offset: int, raw: bytes = b"{not json") -> DeadLetter:
    return DeadLetter(
        error="probes: <root>: Invalid JSON",
        source_topic="gw.probes",
        partition=2,
        offset=offset,
        key="g1",
        raw_b64=base64.b64encode(raw).decode(),
        service="rag-runner",
        group_id="g1",
    )


def test_a_redelivered_letter_is_stored_once(store_url: str) -> None:
    engine = make_engine(store_url)
    create_schema(engine)
    store = DeadLetterStore(engine)
    big = bytes(range(256)) * 2048  # 512 KiB: the most a letter keeps
    store.save([letter(7), letter(8, big)])
    store.save([letter(7)])  # the batch came again after a crash
    rows = store.newest()
    engine.dispose()
    assert [r.offset for r in rows] == [8, 7]
    assert base64.b64decode(rows[0].raw_b64) == big


def test_run_once_says_what_was_not_judged_exits_3_and_lists_the_letters(tmp_path: Path) -> None:
    dataset = tmp_path / "demo.jsonl"
    cli = str(Path(sys.executable).with_name("groundwatch"))
    subprocess.run([cli, "gen", "--demo", "--out", str(dataset)], check=True, timeout=120)
    first = orjson.loads(dataset.read_bytes().splitlines()[0])
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n  - name: clueless\n    type: callable\n"
        "    callable: tests.e2e.targets_fixture:knows_nothing\n"
    )
    url = f"sqlite:///{tmp_path / 'store.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GW_TEST_JUDGE_BUG": first["group_id"]}
    env.pop("GW_DATABASE_URL", None)
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.integration._judge_bug", "run", "--dataset", str(dataset),
         "--targets", str(targets), "--once", "--quiet", "--database-url", url,
         "--json", str(report), "--timeout", "120"],
        capture_output=True, text=True, timeout=240, cwd=ROOT, env=env,
    )  # fmt: skip
    forms = len(first["forms"])
    assert proc.returncode == 3, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    (warning,) = [line for line in lines if line.startswith("warning:")]
    error = lines[-1]
    assert warning.startswith(f"warning: {forms} probes not judged: dead-lettered (newest: judge:")
    assert "groundwatch dead-letters --database-url" in warning
    assert error.startswith("error: the report is incomplete:")
    assert report.exists()  # the outputs are written before the exit
    listed = subprocess.run(
        [cli, "dead-letters", "--database-url", url, "--json"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    letters = orjson.loads(listed.stdout)
    assert len(letters) == forms
    assert {d["group_id"] for d in letters} == {first["group_id"]}
    assert all(d["error"].startswith("RuntimeError: judge bug") for d in letters)
    table = subprocess.run(
        [cli, "dead-letters", "--database-url", url, "--limit", "2"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert table.returncode == 0 and f"2 newest of {forms}" in table.stdout
    assert "judge" in table.stdout and "gw.responses" in table.stdout
    other = subprocess.run(
        [cli, "dead-letters", "--database-url", url, "--service", "analytics"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert f"no dead letters from analytics ({forms} from other stages" in other.stdout
    bogus = subprocess.run(
        [cli, "dead-letters", "--database-url", url, "--service", "jugde"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert bogus.returncode == 2
    assert bogus.stderr.startswith("error: --service 'jugde': not a stage that dead-letters")


def test_dead_letters_on_a_store_from_before_them_says_so(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE judgements (probe_id TEXT PRIMARY KEY)")
    engine.dispose()
    cli = str(Path(sys.executable).with_name("groundwatch"))
    proc = subprocess.run(
        [cli, "dead-letters", "--database-url", f"sqlite:///{path}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "groundwatch db-upgrade" in proc.stdout
