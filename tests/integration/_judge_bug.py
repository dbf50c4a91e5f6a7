"""Fault injection for the dead-letter tests: the judge raises on every response of the semantic
group named by ``GW_TEST_JUDGE_BUG`` (as a judge bug on an answer nobody tried would), and on
nothing else. ``install()`` patches the judge stage in this process; the CLI test runs the real
``groundwatch`` entry point after it in a child process."""

from __future__ import annotations

import os

from groundwatch.contracts import Judgement, RagResponse
from groundwatch.stages.judge.stage import JudgeStage

_judge_one = JudgeStage._one


async def _failing_one(self: JudgeStage, response: RagResponse) -> Judgement:
    if response.group_id == os.environ.get("GW_TEST_JUDGE_BUG"):
        raise RuntimeError(f"judge bug on group {response.group_id}")
    return await _judge_one(self, response)


def install() -> None:
    JudgeStage._one = _failing_one  # type: ignore[method-assign]


def main() -> None:
    """``python -m tests.integration._judge_bug ARGS``: ``groundwatch ARGS`` with the bug."""
    import sys

    from groundwatch.cli.main import main as groundwatch

    install()
    sys.argv = ["groundwatch", *sys.argv[1:]]
    groundwatch()


if __name__ == "__main__":
    main()
