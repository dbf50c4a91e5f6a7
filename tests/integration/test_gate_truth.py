"""Gate truth: a cycle's target health comes from that cycle's probes only, whatever the store
holds. A reused store keeps the groups' statuses through an outage (held), and the run against a
dead endpoint must still fail the CI gate (exit 3), its JSON report saying the target answered
nothing; an endpoint failing part of the probes breaks ``--max target_error_share`` (exit 1)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.integration._http_rag import answers_of, serve
from tests.integration.test_cli_failures import company_db, gw, knows_half, one_line_error

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("gate")
    company_db(d / "company.db")
    out = d / "groups.jsonl"
    proc = gw("gen", "--db", "sqlite:///company.db", "--out", str(out), cwd=d)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def targets_file(path: Path, url: str) -> Path:
    # a breaker whose streak never opens: each probe's error is its own (the rate, over
    # semantic groups, stays below its share when a fifth of the facts fail in all forms)
    path.write_text(
        "targets:\n"
        "  - name: mine\n"
        "    type: http_json\n"
        f"    url: {url}\n"
        "    limits: {concurrency: 8, timeout_s: 5, retries: 0, breaker_failures: 100000}\n"
    )
    return path


def closed_port() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/ask"


def run_once(dataset: Path, targets: Path, cwd: Path, *extra: str) -> Any:
    return gw(
        "run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet",
        "--database-url", "sqlite:///store.db", *extra, cwd=cwd,
    )  # fmt: skip


def test_a_dead_endpoint_fails_the_gate_on_a_store_with_earlier_cycles(
    dataset: Path, tmp_path: Path
) -> None:
    with serve(answers_of(dataset, knows_half)) as url:
        good = run_once(dataset, targets_file(tmp_path / "up.yaml", url), tmp_path)
    assert good.returncode == 0, good.stderr[-3000:]
    out = tmp_path / "down.json"
    down = run_once(
        dataset, targets_file(tmp_path / "down.yaml", closed_port()), tmp_path,
        "--json", str(out), "--max", "target_error_share=0.05",
    )  # fmt: skip
    assert down.returncode == 3, down.stderr[-3000:]
    assert "target mine: all" in one_line_error(down)
    report = orjson.loads(out.read_bytes())
    health = report["target_health"]["mine"]
    forms = sum(len(orjson.loads(line)["forms"]) for line in dataset.read_bytes().splitlines())
    assert health["all_failed"] and health["answered"] == 0
    assert health["probes"] == health["errors"] == forms
    assert health["cycle"] == 2
    # the statuses are those of cycle 1, held: the outage is the target's news, not the facts'
    shown = gw("groups", "--json", "-", "--database-url", "sqlite:///store.db", cwd=tmp_path)
    groups = orjson.loads(shown.stdout)["groups"]
    assert groups and all(g["held"] and g["evidence_cycle"] == 1 for g in groups)
    assert {g["status"] for g in groups} == {"gap", "robust"}
    # `show` says it is held and that the answers it shows are cycle 1's
    g = groups[0]
    shown = gw("show", g["group_id"], "--database-url", "sqlite:///store.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "held: kept from cycle 1" in shown.stdout
    assert "answers: of cycle 1 (the group's newest cycle is 2)" in shown.stdout
    lines = [ln for ln in shown.stdout.splitlines() if "1 (held)" in ln]
    assert len(lines) == len(g["forms"]), shown.stdout


def test_show_says_since_when_a_group_is_unknown_and_what_it_was(
    dataset: Path, tmp_path: Path
) -> None:
    """The endpoint answers, but unrelated sentences: no outage, so nothing is held — the
    groups are unknown since cycle 2, and `show` says what they were."""
    with serve(answers_of(dataset, knows_half)) as url:
        good = run_once(dataset, targets_file(tmp_path / "up.yaml", url), tmp_path)
    assert good.returncode == 0, good.stderr[-3000:]
    unrelated = "Please see the help centre for the frequently asked questions."
    with serve({}, reply=lambda _a: {"answer": unrelated}) as url:
        broken = run_once(dataset, targets_file(tmp_path / "b.yaml", url), tmp_path)
    assert broken.returncode == 0, broken.stderr[-3000:]
    page = gw("groups", "--json", "-", "--database-url", "sqlite:///store.db", cwd=tmp_path)
    groups = orjson.loads(page.stdout)["groups"]
    assert {(g["status"], g["held"]) for g in groups} == {("unknown", False)}
    robust = next(g for g in groups if knows_half(g["group_id"]))
    shown = gw("show", robust["group_id"], "--json", "-", "--database-url", "sqlite:///store.db",
               cwd=tmp_path)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    since = orjson.loads(shown.stdout)["status_since"]
    assert since and all(
        (s["status"], s["since_cycle"], s["was"]) == ("unknown", 2, "robust") for s in since
    )
    text = gw("show", robust["group_id"], "--database-url", "sqlite:///store.db", cwd=tmp_path)
    assert "unknown since cycle 2, was robust" in text.stdout, text.stdout
    assert "answers: of cycle 2" in text.stdout and "newest cycle is" not in text.stdout


def test_an_error_share_above_the_threshold_breaks_the_gate_on_a_reused_store(
    dataset: Path, tmp_path: Path
) -> None:
    answers = answers_of(dataset, lambda _gid: True)
    rows = [orjson.loads(line) for line in dataset.read_bytes().splitlines()]
    # every form of a fifth of the groups fails: those groups are held, and their errors must
    # still count in this cycle's error share
    failing = {f["text"] for g in rows[::5] for f in g["forms"]}
    with serve(answers) as url:
        good = run_once(dataset, targets_file(tmp_path / "up.yaml", url), tmp_path)
    assert good.returncode == 0, good.stderr[-3000:]
    out = tmp_path / "part.json"
    with serve(answers, failing=frozenset(failing)) as url:
        part = run_once(
            dataset, targets_file(tmp_path / "part.yaml", url), tmp_path,
            "--json", str(out), "--max", "target_error_share=0.05",
        )  # fmt: skip
    assert part.returncode == 1, part.stderr[-3000:]
    assert "target_error_share" in part.stderr
    health = orjson.loads(out.read_bytes())["target_health"]["mine"]
    assert health["errors"] == len(failing) and not health["all_failed"]
    assert health["answered"] == health["probes"] - len(failing)
    with serve(answers) as url:
        again = run_once(
            dataset, targets_file(tmp_path / "up.yaml", url), tmp_path,
            "--max", "target_error_share=0.05",
        )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]


def test_the_breaker_lets_a_recovered_endpoint_answer_in_the_first_cycle_after_an_outage(
    dataset: Path, tmp_path: Path
) -> None:
    """Cycle 1: HTTP 503 to everything, and the circuit opens (for an hour, by its reset);
    cycle 2: the endpoint is back. The new cycle starts the circuit half-open: one trial, then
    every probe is asked — cycle 2 answers every probe (it said "answered nothing" twice)."""
    import asyncio

    import httpx

    from groundwatch.adapters.db.datasets import read_jsonl
    from groundwatch.adapters.targets.http_json import HttpJsonTarget
    from groundwatch.adapters.targets.limits import TargetLimits
    from groundwatch.app.embedded import EmbeddedPipeline
    from groundwatch.core.tagging import Window
    from groundwatch.stages.runner.lanes import Runner

    groups = read_jsonl(dataset)
    answers = answers_of(dataset, knows_half)
    state = {"down": True}

    def handle(request: httpx.Request) -> httpx.Response:
        if state["down"]:
            return httpx.Response(503, text="upstream unavailable")
        query = orjson.loads(request.content)["query"]
        return httpx.Response(200, json={"answer": answers.get(query, "I don't know.")})

    async def drive() -> list[tuple[int, int, int, int]]:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
        target = HttpJsonTarget(
            client, "http://reader.test/ask", retrieved_ids_path=None, contexts_path=None
        )
        limits = TargetLimits(concurrency=4, retries=0, breaker_failures=3, breaker_reset_s=3600)
        runner = Runner({"rag": target}, {"rag": limits})
        p = EmbeddedPipeline(
            groups, runner, database_url=f"sqlite:///{tmp_path / 's.db'}", series="gate",
            window=Window(runs=1), on_stop=[client.aclose],
        )  # fmt: skip
        health = []
        await p.start()
        try:
            for down in (True, False, False):
                state["down"] = down
                await p.run(1)
                health.append(p.analytics.tagger.target_health()["rag"])
        finally:
            await p.stop()
        return health

    forms = sum(len(g.forms) for g in groups)
    outage, back, after = asyncio.run(drive())
    assert outage == (1, forms, 0, 0)
    assert back == (2, forms, forms, 0)
    assert after == (3, forms, forms, 0)


def test_all_groups_puts_every_groups_row_in_the_json_report(dataset: Path, tmp_path: Path) -> None:
    """`--json` holds the groups that are not robust (failing_groups), as its help says;
    `--all-groups` adds every group's row, robust ones too, under groups — for `run` and
    `report` alike."""
    ids = {orjson.loads(line)["group_id"] for line in dataset.read_bytes().splitlines()}
    out = tmp_path / "run.json"
    with serve(answers_of(dataset, knows_half)) as url:
        proc = run_once(
            dataset, targets_file(tmp_path / "up.yaml", url), tmp_path,
            "--json", str(out), "--all-groups",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    ran = orjson.loads(out.read_bytes())
    assert {g["group_id"] for g in ran["groups"]} == ids
    assert {g["status"] for g in ran["groups"]} == {"gap", "robust"}
    assert {g["group_id"] for g in ran["failing_groups"]} == {i for i in ids if not knows_half(i)}
    plain, every = tmp_path / "plain.json", tmp_path / "every.json"
    for path, extra in ((plain, ()), (every, ("--all-groups",))):
        rep = gw("report", "--json", str(path), "--quiet", "--database-url", "sqlite:///store.db",
                 *extra, cwd=tmp_path)  # fmt: skip
        assert rep.returncode == 0, rep.stderr[-3000:]
    assert orjson.loads(plain.read_bytes())["groups"] == []
    rows = orjson.loads(every.read_bytes())["groups"]
    assert {g["group_id"] for g in rows} == ids and all(g["forms"] for g in rows)
    helped = gw("report", "--help", cwd=tmp_path)
    assert "--all-groups" in helped.stdout and "failing_groups" in helped.stdout


def default_breaker_targets(path: Path, url: str) -> Path:
    """The breaker's defaults and two retries, with short backoffs: what a new user runs."""
    path.write_text(
        "targets:\n"
        "  - name: mine\n"
        "    type: http_json\n"
        f"    url: {url}\n"
        "    limits: {concurrency: 8, timeout_s: 5, retries: 2, backoff_initial_s: 0.01,"
        " backoff_max_s: 0.05}\n"
    )
    return path


def test_an_endpoint_failing_30_percent_at_random_is_answered_and_gated_on_its_figures(
    dataset: Path, tmp_path: Path
) -> None:
    """HTTP 500 on 30 % of requests at random (seeded): the circuit stays closed, the retries
    answer almost every probe, and the gate passes or fails on its thresholds alone."""
    answers = answers_of(dataset, knows_half)
    out = tmp_path / "flaky.json"
    with serve(answers, fail_share=0.3, seed=30) as url:
        targets = default_breaker_targets(tmp_path / "t.yaml", url)
        passed = run_once(dataset, targets, tmp_path, "--json", str(out),
                          "--fail-under", "acc_db=0.2")  # fmt: skip
        strict = run_once(dataset, targets, tmp_path, "--fail-under", "acc_db=0.95")
    assert passed.returncode == 0, passed.stderr[-3000:]
    health = orjson.loads(out.read_bytes())["target_health"]["mine"]
    assert "circuit_open" not in health["error_kinds"], health
    assert health["answered"] >= 0.9 * health["probes"], health
    assert strict.returncode == 1, strict.stderr[-3000:]
    assert "acc_db" in strict.stderr and "--min-answered" not in strict.stderr, strict.stderr


def test_an_endpoint_failing_95_percent_fails_the_gate_saying_how_many_were_shed(
    dataset: Path, tmp_path: Path
) -> None:
    """HTTP 500 on 95 % of requests: the circuit opens and sheds the rest of the cycle, and a
    gate whose only threshold holds (acc_db >= 0) still fails, naming the shed and the failed."""
    draws: list[bool] = []
    out = tmp_path / "down.json"
    with serve(answers_of(dataset, knows_half), fail_share=0.95, seed=8, draws=draws) as url:
        targets = default_breaker_targets(tmp_path / "t.yaml", url)
        proc = run_once(dataset, targets, tmp_path, "--json", str(out), "--fail-under",
                        "acc_db=0")  # fmt: skip
    # seed 8 answers one of the first 20 requests, which the circuit lets through before it
    # opens: the target answered something, so this is the floor's failure, not a dead target's
    assert not all(draws[:20])
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if "--min-answered" in ln]
    assert len(lines) == 1, proc.stderr[-3000:]
    health = orjson.loads(out.read_bytes())["target_health"]["mine"]
    shed = health["error_kinds"].get("circuit_open", 0)
    assert shed > 0 and 0 < health["answered"] < 0.9 * health["probes"], health
    assert f"answered {health['answered']} of {health['probes']} probes" in lines[0]
    assert f"{shed} shed by the open circuit" in lines[0], lines[0]
    assert f"{health['errors'] - shed} failed" in lines[0], lines[0]
