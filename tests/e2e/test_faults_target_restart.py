"""A restarted reference RAG answers exactly as before.

The target-outage test compares each form's verdict before and after the target process restarts;
it once failed because a restarted process answered "The job title of Vesna Underhill is…" where
the first had said "…Orrin Thornbury…": the extractive reader summed float scores over a ``set``,
whose order follows the per-process string hash seed, so equal sentences tie-broke differently in
each process. Every process start gets a new seed, so this test runs the whole demo through the
reference pipeline in processes with different ``PYTHONHASHSEED`` values and compares answers.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.e2e]

SCRIPT = """
import asyncio, hashlib
from groundwatch.demo import build_demo, demo_dataset
from groundwatch.reference_rag.app import build_pipeline
from groundwatch.reference_rag.settings import ReferenceRagSettings

_, groups = demo_dataset()
pipeline = build_pipeline(ReferenceRagSettings(), dict(build_demo().documents))

async def main():
    return [(await pipeline.answer(f.text)).answer for g in groups for f in g.forms]

answers = asyncio.run(main())
print(len(answers), hashlib.sha256("\\n".join(answers).encode()).hexdigest())
"""


def answers_digest(seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_reference_rag_answers_do_not_depend_on_the_process() -> None:
    digests = {seed: answers_digest(seed) for seed in (0, 1, 2)}
    assert len(set(digests.values())) == 1, digests
    from groundwatch.demo import demo_dataset

    forms = sum(len(g.forms) for g in demo_dataset(3, ("short", "long"))[1])
    assert digests[0].startswith(f"{forms} ")
