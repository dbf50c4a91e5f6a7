"""The README stays true: its configuration table is the settings classes' own listing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundwatch.cli.settings_doc import markdown

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_settings_table_is_generated_from_the_settings_classes() -> None:
    text = README.read_text()
    block = re.search(r"<!-- settings-table:[^\n]*-->\n(.*?)<!-- /settings-table -->", text, re.S)
    assert block, "README lost its settings table markers"
    assert block.group(1).strip() == markdown().strip(), (
        "README's configuration table is stale: paste `groundwatch settings --markdown`"
    )


def test_readme_shows_the_two_setup_commands_first() -> None:
    text = README.read_text()
    first_block = text[text.index("```") : text.index("```", text.index("```") + 3)]
    assert "make demo" in first_block and "make test" in first_block
