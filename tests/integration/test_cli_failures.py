"""Issue 16: every failure exits non-zero and says why in one line; the CI gate; per-group results.

A new user's path: their own SQLite database, their own endpoint (omitting some facts, some
fields), `gen`, `run --once`, then `groups`/`show`. Each silent-zero case of the issue is here
with its exit code and the reason it must print.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import orjson
import pytest

from tests.integration._http_rag import answers_of, serve

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("groundwatch"))


def gw(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
    )


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line; there must be one and no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert lines, proc.stderr[-2000:]
    return lines[0]


def company_db(path: Path, rows: bool = True) -> None:
    """A user's own small database: 30 people with a city and a team."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, city TEXT, team TEXT)")
    if rows:
        cities = ["Espoo", "Lisbon", "Valletta", "Ghent", "Tartu", "Porto"]
        teams = ["Finance", "Research", "Sales", "Support", "Legal"]
        for i in range(30):
            con.execute(
                "INSERT INTO people (name, city, team) VALUES (?, ?, ?)",
                (f"Person {chr(65 + i % 26)}{i}", cities[i % 6], teams[i % 5]),
            )
    con.commit()
    con.close()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("user")
    company_db(d / "company.db")
    out = d / "groups.jsonl"
    proc = gw("gen", "--db", "sqlite:///company.db", "--out", str(out), cwd=d)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(out.read_text().splitlines()) >= 20
    return out


def targets_file(path: Path, url: str, extra: str = "") -> Path:
    path.write_text(
        "targets:\n"
        "  - name: mine\n"
        "    type: http_json\n"
        f"    url: {url}\n"
        f"{extra}"
        "    limits: {concurrency: 8, timeout_s: 5, retries: 0, breaker_failures: 5}\n"
    )
    return path


def knows_half(group_id: str) -> bool:
    return int(group_id, 16) % 2 == 0


def test_reply_without_ids_or_contexts_is_answered_and_gaps_are_named(
    dataset: Path, tmp_path: Path
) -> None:
    """The endpoint returns only {"answer": …}: probes are answered (not bad_payload); the gap
    groups are listed by `groups`, with questions, SQL, gold and the endpoint's answers."""
    with serve(answers_of(dataset, knows_half)) as url:
        targets = targets_file(tmp_path / "t.yaml", url)
        out = tmp_path / "report.json"
        proc = gw(
            "run", "--dataset", str(dataset), "--targets", str(targets), "--once",
            "--json", str(out), "--database-url", "sqlite:///store.db", cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(run " in proc.stdout and "stored in sqlite:///store.db" in proc.stdout
    report = orjson.loads(out.read_bytes())
    assert report["target_health"]["mine"]["errors"] == 0
    short = report["targets"]["mine"]["cohorts"]["short"]
    assert short["examples"] > 0 and 0 < short["acc_db"] < 1
    unknown_facts = {
        orjson.loads(line)["group_id"]
        for line in dataset.read_bytes().splitlines()
        if not knows_half(orjson.loads(line)["group_id"])
    }
    page = gw("groups", "--status", "gap", "--json", "--database-url", "sqlite:///store.db",
              cwd=tmp_path)  # fmt: skip
    assert page.returncode == 0, page.stderr
    listed = orjson.loads(page.stdout)
    assert {g["group_id"] for g in listed["groups"]} == unknown_facts
    assert listed["total"] == len(unknown_facts)
    g = listed["groups"][0]
    assert g["sql"].startswith("SELECT") and g["gold"] and g["knowledge_gap"]
    assert all(f["question"] and f["answer"] == "I don't know." for f in g["forms"])
    assert {f["cause"] for f in g["forms"]} == {"gap"}
    shown = gw("show", g["group_id"][:10], "--database-url", "sqlite:///store.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert g["sql"] in shown.stdout and g["gold_text"] in shown.stdout
    assert g["forms"][0]["question"][:40] in shown.stdout


def test_fail_under_exits_1_naming_the_figure_and_junit_lists_groups(
    dataset: Path, tmp_path: Path
) -> None:
    with serve(answers_of(dataset, knows_half)) as url:
        targets = targets_file(tmp_path / "t.yaml", url)
        junit = tmp_path / "junit.xml"
        broken = gw(
            "run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet",
            "--fail-under", "acc_db=0.99", "--max", "non_robust_share=0.5",
            "--junit", str(junit), "--database-url", "sqlite:///s.db", cwd=tmp_path,
        )  # fmt: skip
        met = gw(
            "run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet",
            "--fail-under", "acc_db=0.2", "--max", "target_error_share=0.05",
            "--database-url", "sqlite:///s.db", cwd=tmp_path,
        )  # fmt: skip
    assert broken.returncode == 1, broken.stderr[-3000:]
    assert "threshold broken: mine/short: acc_db = 0." in broken.stderr
    assert "< 0.99 (--fail-under)" in broken.stderr
    assert met.returncode == 0, met.stderr[-3000:]
    root = ET.parse(junit).getroot()
    suite = next(s for s in root if s.get("name") == "groundwatch.mine")
    cases = suite.findall("testcase")
    groups = len(dataset.read_text().splitlines())
    assert len(cases) == groups
    failures = [c for c in cases if c.find("failure") is not None]
    assert 0 < len(failures) < groups
    text = failures[0].find("failure").text or ""
    assert "SQL: SELECT" in text and "gold:" in text and "I don't know." in text
    thresholds = next(s for s in root if s.get("name") == "groundwatch.thresholds")
    assert thresholds.get("failures") != "0"


def test_unknown_figure_is_a_usage_error(dataset: Path, tmp_path: Path) -> None:
    proc = gw("run", "--dataset", str(dataset), "--targets", str(tmp_path), "--once",
              "--fail-under", "acc_dbb=0.9", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "acc_dbb" in proc.stderr and "Traceback" not in proc.stderr


def test_misspelt_placeholder_is_a_config_error(dataset: Path, tmp_path: Path) -> None:
    targets = targets_file(
        tmp_path / "t.yaml", "http://127.0.0.1:9/ask", '    body: {"question": "{qurey}"}\n'
    )
    proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--once",
              "--database-url", "sqlite:///s.db", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert "target mine" in line and "{qurey}" in line and "{query}" in line


def test_wrong_answer_path_exits_3_with_the_first_error(dataset: Path, tmp_path: Path) -> None:
    with serve(answers_of(dataset, knows_half), reply=lambda a: {"data": {"answer": a}}) as url:
        targets = targets_file(tmp_path / "t.yaml", url, "    answer_path: data.answr\n")
        out = tmp_path / "r.json"
        html = tmp_path / "r.html"
        proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--once",
                  "--json", str(out), "--html", str(html), "--database-url", "sqlite:///s.db",
                  cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-3000:]
    line = one_line_error(proc)
    assert "target mine: all" in line and "bad_payload" in line
    assert "data.answr: key 'answr' missing (keys: answer)" in line
    health = orjson.loads(out.read_bytes())["target_health"]["mine"]
    assert health["all_failed"] and set(health["error_kinds"]) == {"bad_payload"}
    from html import unescape

    assert "key 'answr' missing" in unescape(html.read_text())


@pytest.mark.parametrize("failure", ["http_500", "refused"])
def test_dead_endpoint_names_the_cause_behind_circuit_open(
    dataset: Path, tmp_path: Path, failure: str
) -> None:
    if failure == "http_500":
        with serve({}, status=500) as url:
            targets = targets_file(tmp_path / "t.yaml", url)
            proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--once",
                      "--json", str(tmp_path / "r.json"), "--database-url", "sqlite:///s.db",
                      cwd=tmp_path)  # fmt: skip
        cause = "http_5xx: HTTP 500"
    else:
        import socket

        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        targets = targets_file(tmp_path / "t.yaml", f"http://127.0.0.1:{port}/ask")
        proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--once",
                  "--json", str(tmp_path / "r.json"), "--database-url", "sqlite:///s.db",
                  cwd=tmp_path)  # fmt: skip
        cause = "connection: "
    assert proc.returncode == 3, proc.stderr[-3000:]
    line = one_line_error(proc)
    if failure == "refused":  # the kind and the HTTP client's own exception class, whatever it is
        import re

        named = re.search(r"first error: (connection: [A-Za-z_]\w*)", line)
        assert named, line
        cause = named.group(1)
    assert "all" in line and cause in line, line
    kinds = orjson.loads((tmp_path / "r.json").read_bytes())["target_health"]["mine"]
    assert "circuit_open" in kinds["error_kinds"]
    store = tmp_path / "s.db"
    con = sqlite3.connect(store)
    reasons = {r for (r,) in con.execute("SELECT reason FROM judgements WHERE error_kind = "
                                        "'circuit_open'")}  # fmt: skip
    con.close()
    assert reasons and all(f"(opened by {cause}" in r for r in reasons), reasons


def test_generation_that_yields_nothing_says_why(tmp_path: Path) -> None:
    company_db(tmp_path / "empty.db", rows=False)
    empty = gw("gen", "--db", "sqlite:///empty.db", "--out", "x.jsonl", cwd=tmp_path)
    assert empty.returncode == 2
    assert "hold no rows" in one_line_error(empty)
    dry = gw("gen", "--db", "sqlite:///empty.db", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 2 and "0 SQL templates" in dry.stderr
    company_db(tmp_path / "full.db")
    too_many = gw("gen", "--db", "sqlite:///full.db", "--forms", "9", "--out", "x.jsonl",
                  cwd=tmp_path)  # fmt: skip
    assert too_many.returncode == 2
    line = one_line_error(too_many)
    assert "--forms 9" in line and "use --forms" in line
    assert not (tmp_path / "x.jsonl").exists() or not (tmp_path / "x.jsonl").read_text()


def test_empty_dataset_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text("")
    targets = targets_file(tmp_path / "t.yaml", "http://127.0.0.1:9/ask")
    proc = gw("run", "--dataset", "d.jsonl", "--targets", str(targets), "--once",
              "--database-url", "sqlite:///s.db", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "no semantic groups" in one_line_error(proc)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("groundwatch.db", "not a database URL"),
        ("postgress://u@h/db", "unknown database backend or driver 'postgress'"),
        ("mysql://u@127.0.0.1/db", "pip install 'groundwatch[mysql]'"),
        ("postgresql+psycopg://u@127.0.0.1:1/db", "cannot connect"),
        ("sqlite:////nonexistent-dir/x/y.db", "cannot connect"),
    ],
)
def test_bad_database_urls_are_one_line_exit_2(tmp_path: Path, url: str, says: str) -> None:
    for args in (
        ["groups", "--database-url", url],
        ["report", "--database-url", url],
        ["runs", "--database-url", url],
        ["gen", "--db", url, "--out", "x.jsonl"],
    ):
        proc = gw(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        line = one_line_error(proc)
        opt = "--db" if args[0] == "gen" else "--database-url"
        assert opt in line, line
        if args[0] != "gen" or "connect" not in says:
            assert says in line, line
        assert "u@" not in line or args[0] == "gen", line  # never the URL itself


def test_bad_database_url_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    env = {**os.environ, "GW_DATABASE_URL": "postgress://u@h/db"}
    proc = subprocess.run([CLI, "groups"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert "GW_DATABASE_URL" in one_line_error(proc)


def test_unverifiable_backend_needs_the_flag() -> None:
    """Backends groundwatch cannot make read-only are refused unless the user accepts the risk
    (checked before any driver is loaded)."""
    from groundwatch.adapters.sources.connect import readonly_engine
    from groundwatch.errors import ConfigError

    with pytest.raises(ConfigError, match="--allow-unverified-readonly"):
        readonly_engine("mssql+pymssql://u@127.0.0.1/db")
    with pytest.raises(ImportError):  # accepted: only the missing driver stops it now
        readonly_engine("mssql+pymssql://u@127.0.0.1/db", allow_unverified=True)


def test_a_shared_store_reports_only_this_runs_series_and_targets(
    dataset: Path, tmp_path: Path
) -> None:
    """Two users' runs in the default store: each report, and its gate, judges its own groups."""
    with serve(answers_of(dataset, knows_half)) as url:
        first = targets_file(tmp_path / "a.yaml", url)
        proc = gw("run", "--dataset", str(dataset), "--targets", str(first), "--once",
                  "--quiet", "--series", "one", cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        second = tmp_path / "b.yaml"
        second.write_text(first.read_text().replace("name: mine", "name: other"))
        out = tmp_path / "r.json"
        proc = gw("run", "--dataset", str(dataset), "--targets", str(second), "--once",
                  "--quiet", "--series", "two", "--json", str(out), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "groundwatch.db").exists()  # the default store, in the working directory
    assert list(orjson.loads(out.read_bytes())["targets"]) == ["other"]
    runs = gw("runs", cwd=tmp_path)
    assert runs.returncode == 0 and " one " in runs.stdout and " two " in runs.stdout


def test_gen_out_into_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    proc = gw("gen", "--demo", "--out", "nope/x.jsonl", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "--out" in proc.stderr and "does not exist" in proc.stderr


def test_template_file_errors_name_their_own_option(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    company_db(db)
    proc = gw("gen", "--db", f"sqlite:///{db}", "--templates", "nope.yaml", "--out", "x.jsonl",
              cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert one_line_error(proc).startswith("error: --templates:"), proc.stderr


def test_negative_interval_is_refused(tmp_path: Path, dataset: Path) -> None:
    targets = tmp_path / "t.yaml"
    targets.write_text("targets: []\n")
    proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--interval", "-1",
              cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "--interval" in proc.stderr


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_out_of_range_port_is_refused(tmp_path: Path, dataset: Path, port: str) -> None:
    # 99999 used to be taken modulo 2**16 (a socket on 34463) while the banner announced
    # :99999/metrics, and the monitor ran on without the endpoint it named
    targets = tmp_path / "t.yaml"
    targets.write_text("targets:\n  - name: c\n    type: callable\n    callable: json:dumps\n")
    proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--interval", "5",
              "--port", port, cwd=tmp_path, timeout=20)  # fmt: skip
    assert proc.returncode == 2 and "--port" in proc.stderr, proc.stderr


def test_continuous_run_on_a_taken_port_is_one_usage_error(tmp_path: Path, dataset: Path) -> None:
    import socket

    targets = tmp_path / "t.yaml"
    targets.write_text("targets:\n  - name: c\n    type: callable\n    callable: json:dumps\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--interval", "5",
                  "--port", str(port), cwd=tmp_path, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert one_line_error(proc).startswith(f"error: --port {port}: cannot listen"), proc.stderr
    assert "probing every" not in proc.stderr


@pytest.mark.parametrize("command", ["groups", "runs", "report", "dead-letters"])
def test_reading_commands_never_write_the_file_they_are_pointed_at(
    tmp_path: Path, command: str
) -> None:
    """A source database (or an empty file) given as the store by mistake is refused, and left
    byte for byte as it was: connecting used to switch it to WAL (a new header, -wal/-shm
    files), and made a 0-byte file a 4 KB database."""
    source = tmp_path / "shop.db"
    con = sqlite3.connect(source)
    con.execute("CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT)")
    con.execute("INSERT INTO books VALUES (1, 'Dune')")
    con.commit()
    con.close()
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for path in (source, empty):
        before = path.read_bytes()
        proc = gw(command, "--database-url", f"sqlite:///{path}", cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "holds no groundwatch judgements" in one_line_error(proc)
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "shop.db"]


def test_view_and_store_refuse_bad_input_in_one_usage_line(tmp_path: Path, dataset: Path) -> None:
    """A taken port, a short token and a bad GW_RETAIN_* value are usage errors (exit 2) said in
    one line, before the view prints addresses it will not serve."""
    import socket

    targets = tmp_path / "t.yaml"
    targets.write_text("targets:\n  - name: c\n    type: callable\n    callable: json:dumps\n")
    store = f"sqlite:///{tmp_path / 'gw.db'}"
    ran = gw("run", "--dataset", str(dataset), "--targets", str(targets), "--once", "--quiet",
             "--database-url", store, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = gw("view", "--database-url", store, "--port", str(port), cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert one_line_error(proc).startswith(f"error: --port {port}: cannot listen"), proc.stderr
    assert "groundwatch view:" not in proc.stdout
    proc = gw("view", "--database-url", store, "--token", "short", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "--token" in one_line_error(proc)
    env = {k: v for k, v in os.environ.items() if k != "GW_DATABASE_URL"}
    for command in ("stats", "prune"):
        proc = subprocess.run(
            [CLI, "store", command, "--database-url", store],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
            env={**env, "GW_RETAIN_CYCLES": "0"},
        )  # fmt: skip
        assert proc.returncode == 2
        line = one_line_error(proc)
        assert line.startswith("error: invalid configuration: GW_RETAIN_CYCLES"), line
        assert len(proc.stderr.strip().splitlines()) == 1
