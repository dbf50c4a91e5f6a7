"""Count the file hops of one semantic group's path from the source database to the gauge.

Runs the two commands a user runs — ``groundwatch gen --db SOURCE`` and ``groundwatch run --once
--source SOURCE`` against an in-process target — in this process under a profiler, and records,
in call order, every groundwatch (or services) file whose function is called with the group in
its arguments: its id (text or a message key's bytes), an object carrying it (``group_id``), or a
collection holding one. The path ends at the first call into the analytics metrics (the gauge's
module). Consecutive calls in one file are one stop; a hop is a move to another file, and a
reversal a change between going down the layers and going up them (layers as in
``pyproject.toml``'s import-linter contract; a hop within a layer keeps the direction).

A coroutine or generator resumed is not a new call. The source is one small table, the dataset
one form per group in one cohort asked of one target, and the path followed the first group's.
The same script measures any checkout (``PYTHONPATH=CHECKOUT/shared:CHECKOUT python
scripts/probe_path.py``), prints the stops with ``-v`` and writes its figures and its table of
the path's steps into docs/architecture.md with ``--docs`` (a test keeps the two equal).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

#: Layer rank of each package (higher imports lower), as the import-linter layers contract.
RANKS = (
    ("groundwatch.core", 0),
    ("groundwatch.contracts", 1),
    ("groundwatch.errors", 1),
    ("groundwatch.adapters", 2),
    ("groundwatch.stages", 3),
    ("groundwatch.report", 3),
    ("groundwatch.demo", 3),
    ("groundwatch.runtime", 4),
    ("groundwatch.reference_rag", 5),
    ("groundwatch.app", 6),
    ("groundwatch.cli", 7),
    ("services", 7),
)
GAUGE = "groundwatch.runtime.analytics_telemetry"
#: CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
RESUMABLE = 0x20 | 0x80 | 0x200


def rank(module: str) -> int:
    return max((r for p, r in RANKS if module == p or module.startswith(p + ".")), default=-1)


def module_of(filename: str) -> str | None:
    path = Path(filename)
    parts = path.with_suffix("").parts
    for root in ("groundwatch", "services"):
        if root in parts:
            i = len(parts) - 1 - parts[::-1].index(root)
            mod = ".".join(parts[i:])
            return mod.removesuffix(".__init__")
    return None


class Tracer:
    """The profiler: the modules called with the group, in order."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.key = group_id.encode()
        self.stops: list[str] = []
        self.done = False
        self._lock = threading.Lock()
        self._modules: dict[str, str | None] = {}
        #: coroutine and generator frames entered once: a resumption is no new call (kept
        #: alive here so that an id is never reused)
        self._entered: dict[int, FrameType] = {}

    def _carries(self, value: Any, depth: int = 0) -> bool:
        if isinstance(value, str):
            return value == self.group_id
        if isinstance(value, bytes | bytearray):
            return bytes(value) == self.key
        if depth < 2 and isinstance(value, list | tuple | set | frozenset):
            return any(self._carries(v, depth + 1) for v in list(value)[:200])
        if depth < 2 and isinstance(value, dict):
            items = list(value.items())[:200]
            return any(self._carries(k, depth + 1) or self._carries(v, depth + 1) for k, v in items)
        with contextlib.suppress(Exception):
            for name in ("group_id", "key"):
                attr = getattr(value, name, None)
                if isinstance(attr, str | bytes) and self._carries(attr, depth):
                    return True
        return False

    def __call__(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or self.done:
            return
        filename = frame.f_code.co_filename
        module = self._modules.get(filename, "?")
        if module == "?":
            module = self._modules[filename] = module_of(filename)
        if module is None:
            return
        code = frame.f_code
        if code.co_flags & RESUMABLE:
            if id(frame) in self._entered:
                return
            self._entered[id(frame)] = frame
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        local = frame.f_locals
        if not any(self._carries(local.get(n)) for n in names):
            return
        with self._lock:
            if not self.stops or self.stops[-1] != module:
                self.stops.append(module)
            if module == GAUGE:
                self.done = True


def figures(stops: list[str]) -> tuple[int, int]:
    """(hops, reversals of direction) of a path of modules."""
    moves = [(rank(b) > rank(a)) - (rank(b) < rank(a)) for a, b in itertools.pairwise(stops)]
    turns = [d for d in moves if d]
    return len(stops) - 1, sum(1 for a, b in itertools.pairwise(turns) if a != b)


def answer(question: str) -> str:
    """The in-process target of the run: it answers every question the same way."""
    return "Oslo"


#: The blocks of docs/architecture.md this script writes (``--docs``) and a test keeps equal: the
#: figures, and the table of the path's steps.
DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
BEGIN, END = "<!-- probe_path -->", "<!-- /probe_path -->"
TABLE_BEGIN, TABLE_END = "<!-- probe_path steps -->", "<!-- /probe_path steps -->"
TABLE_HEAD = "| step | modules, in path order | what happens |\n|---|---|---|"

#: Where each step of the table opens: the first place after the previous step's opening where
#: the path goes through these modules in a row (the consume loop opens four steps, so the module
#: after it tells them apart). The modules of a step are the path's up to the next opening; what
#: happens in it is the doc's own third column.
STEPS: tuple[tuple[str, ...], ...] = (
    ("groundwatch.core.generation.pipeline",),
    ("groundwatch.runtime.refresh",),
    ("groundwatch.runtime.refresh",),
    ("groundwatch.adapters.bus.encode",),
    ("groundwatch.runtime.consume", "groundwatch.stages.runner.stage"),
    ("groundwatch.runtime.consume", "groundwatch.adapters.bus.encode"),
    ("groundwatch.runtime.consume", "groundwatch.stages.judge.stage"),
    ("groundwatch.runtime.consume", "groundwatch.adapters.bus.encode"),
    ("groundwatch.runtime.consume", "groundwatch.stages.analytics.stage"),
    (GAUGE,),
)


def measure() -> tuple[int, list[str]]:
    """The dataset's groups and the files of its first group's path, in call order."""
    from typer.testing import CliRunner

    from groundwatch.cli.main import app

    work = Path(tempfile.mkdtemp(prefix="probe-path-"))
    source = work / "source.db"
    con = sqlite3.connect(source)
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT UNIQUE, city TEXT)")
    con.executemany(
        "INSERT INTO people (name, city) VALUES (?, ?)",
        [("Ann Lee", "Oslo"), ("Bo Chen", "Lima"), ("Cy Diaz", "Pune"), ("Di Evans", "Kyiv")],
    )
    con.commit()
    con.close()
    dataset = work / "d.jsonl"
    targets = work / "t.yaml"
    targets.write_text(
        "targets:\n  - name: t\n    type: callable\n    callable: probe_path:answer\n"
    )
    if str(Path(__file__).parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).parent))
    url = f"sqlite:///{source}"
    gen = ["gen", "--db", url, "--out", str(dataset), "--forms", "1", "--cohorts", "short", "-q"]
    run = ["run", "--dataset", str(dataset), "--targets", str(targets), "--once", "-q",
           "--source", url, "--database-url", f"sqlite:///{work / 'store.db'}"]  # fmt: skip
    runner = CliRunner()
    first = runner.invoke(app, gen)
    assert first.exit_code == 0, first.output
    lines = dataset.read_text().splitlines()
    import orjson

    group_id = orjson.loads(lines[0])["group_id"]
    tracer = Tracer(group_id)
    os.environ.setdefault("GW_SEMANTIC_METRICS", "off")
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            runner.invoke(app, gen)
            result = runner.invoke(app, run)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert result.exit_code in (0, 1), result.output
    return len(lines), tracer.stops


def doc_block(stops: list[str]) -> str:
    """What docs/architecture.md says of the path, between its markers."""
    hops, reversals = figures(stops)
    return (
        f"{BEGIN}\nA probe's path crosses **{len(stops)} files**: **{hops} hops**, "
        f"**{reversals} reversals** (written by `python scripts/probe_path.py --docs`).\n{END}"
    )


def documented(text: str, begin: str = BEGIN, end: str = END) -> str:
    """The block between the markers of ``text`` (markers included)."""
    start = text.index(begin)
    return text[start : text.index(end, start) + len(end)]


def steps(stops: list[str]) -> list[list[str]]:
    """The path cut where each of :data:`STEPS` opens; a clear error if one is not on it."""
    starts: list[int] = []
    for n, opening in enumerate(STEPS, 1):
        after = starts[-1] + 1 if starts else 0
        at = next(
            (
                i
                for i in range(after, len(stops) - len(opening) + 1)
                if tuple(stops[i : i + len(opening)]) == opening
            ),
            None,
        )
        if at is None:
            raise ValueError(
                f"step {n} opens at {' → '.join(opening)}, which the path does not go through "
                f"after step {n - 1}'s opening: edit STEPS in scripts/probe_path.py (run with -v)"
            )
        starts.append(at)
    if starts[0] != 0:
        raise ValueError(f"the path starts at {stops[0]}, before step 1's opening")
    return [stops[a:b] for a, b in itertools.pairwise([*starts, len(stops)])]


def table_block(text: str, stops: list[str]) -> str:
    """The doc's table of steps with its second column from ``stops``; the third is the doc's."""
    rows = documented(text, TABLE_BEGIN, TABLE_END).splitlines()[3:-1]
    what = [row.strip().strip("|").split("|", 2)[2].strip() for row in rows]
    cut = steps(stops)
    if len(what) != len(cut):
        raise ValueError(
            f"docs/architecture.md's table has {len(what)} steps, STEPS in scripts/probe_path.py "
            f"{len(cut)}: add or remove a row (its third column says what happens) or an opening"
        )
    lines = [
        f"| {n} | {' → '.join(f'`{m}`' for m in modules)} | {said} |"
        for n, (modules, said) in enumerate(zip(cut, what, strict=True), 1)
    ]
    return "\n".join([TABLE_BEGIN, TABLE_HEAD, *lines, TABLE_END])


def rewritten(text: str, stops: list[str]) -> str:
    """``text`` (docs/architecture.md) with both blocks as ``stops`` makes them."""
    text = text.replace(documented(text), doc_block(stops))
    return text.replace(documented(text, TABLE_BEGIN, TABLE_END), table_block(text, stops))


def main() -> None:
    verbose = "-v" in sys.argv
    groups, stops = measure()
    hops, reversals = figures(stops)
    if verbose:
        for n, modules in enumerate(steps(stops), 1):
            for stop in modules:
                print(f"  {n:>2} {rank(stop)} {stop}")
    print(f"groups {groups}; files {len(stops)}; hops {hops}; reversals {reversals}")
    if "--docs" in sys.argv:
        DOC.write_text(rewritten(DOC.read_text(), stops))
        print(f"{DOC.name} updated")


if __name__ == "__main__":
    main()
