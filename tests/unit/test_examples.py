"""The shipped examples load: a user copying them starts from a valid file."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwatch.adapters.targets.config import load_targets

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_example_targets_file_is_valid() -> None:
    targets = load_targets(ROOT / "deploy" / "examples" / "targets.yaml")
    assert [t.name for t in targets] == ["prod", "canary", "llm-only"]
    assert {t.type for t in targets} == {"http_json", "openai_chat"}
