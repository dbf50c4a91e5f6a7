"""Grounding users' questions: questions matched per second over a 50k-group dataset, and memory.

Builds a synthetic dataset of ``--entities`` × ``--attributes`` semantic groups (one template per
attribute, one fill per entity, names of two or three made-up words, three forms per group as
the offline realizer writes them), the matcher's index over it (its memory measured by
tracemalloc: what the index holds once built), and matches ``--n`` questions as people type them
— exact names, one typo, a partial name, two facts at once, small talk — on one core. Rates are
the median over ``--repeat`` interleaved passes with their spread. The baseline is the obvious
alternative the index replaces: a rapidfuzz scan of every bound value per question (timed on a
few hundred questions, since it is thousands of times slower). The target is on the CPU-time
rate (``time.process_time``: what a question costs one core, whatever else loads the machine);
the wall-clock rate and the load average are reported beside it.

Usage: ``python bench/bench_traffic.py [--entities 1000] [--attributes 50] [--n 20000]
[--repeat 5] [--out FILE]``. JSON on stdout.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import statistics
import time
import tracemalloc
from pathlib import Path

from _common import emit, figure, machine, spread

from groundwatch.core.model import Expected, SemanticGroup, TextForm, group_id_for
from groundwatch.core.traffic import GroundingIndex

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tos",
    "va",
    "quin",
    "dor",
    "el",
    "sar",
    "bri",
    "ton",
    "mel",
    "gar",
    "fen",
    "lu",
    "sov",
    "arn",
    "pik",
    "zed",
]
_NOUNS = [
    "population",
    "area",
    "altitude",
    "founder",
    "mayor",
    "budget",
    "revenue",
    "capacity",
    "length",
    "width",
    "height",
    "weight",
    "colour",
    "owner",
    "manager",
    "director",
    "captain",
    "rating",
    "score",
    "price",
    "cost",
    "speed",
    "distance",
    "depth",
    "volume",
    "temperature",
    "pressure",
    "voltage",
    "current",
    "frequency",
    "density",
    "salary",
    "bonus",
    "tenure",
    "rank",
    "grade",
    "age",
    "birthplace",
    "language",
    "currency",
    "religion",
    "anthem",
    "motto",
    "climate",
    "elevation",
    "latitude",
    "longitude",
    "genre",
    "publisher",
    "label",
    "studio",
]


def dataset(entities: int, attributes: int, rng: random.Random) -> list[SemanticGroup]:
    names: set[str] = set()
    while len(names) < entities:
        words = [
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
            for _ in range(rng.randint(2, 3))
        ]
        names.add(" ".join(words))
    groups: list[SemanticGroup] = []
    for a in range(attributes):
        attr = _NOUNS[a % len(_NOUNS)] + ("" if a < len(_NOUNS) else f" {a}")
        sql = f"SELECT {attr.replace(' ', '_')} FROM things WHERE name = :name"
        for name in sorted(names):
            params = {"name": name}
            gid = group_id_for(sql, params)
            forms = [
                TextForm(form_id=f"{gid}{i}", cohort="short", text=text)
                for i, text in enumerate(
                    (f"{attr.capitalize()} of '{name}'", f"What is the {attr} of '{name}'?",
                     f"'{name}' {attr}")
                )
            ]  # fmt: skip
            groups.append(
                SemanticGroup(
                    group_id=gid,
                    sql=sql,
                    params=params,
                    answer=Expected(values=[str(rng.randint(1, 10**6))]),
                    forms=forms,
                    template_id=f"t{a}",
                )
            )
    return groups


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 6:
        return word
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1 :]


def questions(groups: list[SemanticGroup], n: int, rng: random.Random) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        g = rng.choice(groups)
        name = str(g.params["name"])
        attr = g.sql.split()[1].replace("_", " ")
        kind = rng.random()
        if kind < 0.4:
            out.append(f"what's the {attr} of {name.lower()}?")
        elif kind < 0.6:
            words = name.split()
            words[-1] = _typo(words[-1], rng)
            out.append(f"{' '.join(words)} {attr}")
        elif kind < 0.75:
            out.append(f"{attr} for {name.split()[-1]}")
        elif kind < 0.85:
            other = rng.choice(groups).sql.split()[1].replace("_", " ")
            out.append(f"{attr} and {other} of {name}")
        else:
            out.append(rng.choice(("hi there", "thanks!", "what can you do?", "who is it")))
    return out


def rate(index: GroundingIndex, qs: list[str]) -> tuple[float, float]:
    """Questions a second by the wall clock and by the process's CPU time: on a machine others
    load, the wall rate counts the time the process waited for a core, the CPU rate what one
    question costs (the figure the target is about)."""
    match = index.match
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    for q in qs:
        match(q)
    return len(qs) / (time.perf_counter() - started), len(qs) / (time.process_time() - cpu)


def scan_rate(groups: list[SemanticGroup], qs: list[str]) -> float:
    """The baseline: every bound value scored against the question by rapidfuzz (per CPU
    second, as the index's figure)."""
    from rapidfuzz import fuzz, process

    values = sorted({str(g.params["name"]).lower() for g in groups})
    cpu = time.process_time()
    for q in qs:
        process.extractOne(q.lower(), values, scorer=fuzz.partial_ratio, score_cutoff=90)
    return len(qs) / (time.process_time() - cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=1000)
    ap.add_argument("--attributes", type=int, default=50)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rng = random.Random(7)
    groups = dataset(args.entities, args.attributes, rng)
    qs = questions(groups, args.n, rng)

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    index = GroundingIndex(groups)
    build_s = time.perf_counter() - started
    index_mb = (tracemalloc.get_traced_memory()[0] - before) / 2**20
    tracemalloc.stop()

    rates: list[float] = []
    cpu_rates: list[float] = []
    scans: list[float] = []
    for _ in range(args.repeat):  # interleaved: the index, then the baseline, then again
        wall, cpu = rate(index, qs)
        rates.append(wall)
        cpu_rates.append(cpu)
        scans.append(scan_rate(groups, qs[:200]))
    matched = sum(index.match(q).matched for q in qs) / len(qs)
    med, base = statistics.median(cpu_rates), statistics.median(scans)
    result_load = os.getloadavg()[0]
    # the whole process's peak (the dataset's groups, the questions and the index together)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "benchmark": "traffic",
        "machine": machine(),
        "groups": index.groups,
        "questions": len(qs),
        "build_s": round(build_s, 2),
        "index_mb": round(index_mb, 1),
        "match_share": round(matched, 3),
        "peak_rss_mb": round(peak_mb, 1),
        "questions_per_s": spread(rates),
        "questions_per_cpu_s": spread(cpu_rates),
        "scan_questions_per_cpu_s": spread(scans),
        "figures": {
            "questions_per_s": figure(
                f"traffic grounding: questions matched per CPU second over {index.groups} groups"
                " (one core)",
                round(med),
                unit="/s",
                target=5000,
                measured=round(med),
                baseline=round(base, 1),
                baseline_name="a rapidfuzz scan of every bound value per question",
                bound=f"the index holds {index_mb:.0f} MB (tracemalloc), built in {build_s:.1f} s;"
                f" wall-clock rate {statistics.median(rates):.0f}/s at load"
                f" {result_load:.1f}",
                digits=0,
            ),
        },
    }
    emit(result, args.out)


if __name__ == "__main__":
    main()
