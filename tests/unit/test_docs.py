"""The README and the reference in docs/ stay true: the configuration table is the settings
classes' own listing, every module they name exists, the README stays a newcomer's page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundwatch.cli.settings_doc import markdown

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"
CONFIGURATION = README.parent / "docs" / "configuration.md"


def test_settings_table_is_generated_from_the_settings_classes() -> None:
    text = CONFIGURATION.read_text()
    block = re.search(r"<!-- settings-table:[^\n]*-->\n(.*?)<!-- /settings-table -->", text, re.S)
    assert block, "docs/configuration.md lost its settings table markers"
    assert block.group(1).strip() == markdown().strip(), (
        "docs/configuration.md's table is stale: paste `groundwatch settings --markdown`"
    )


def test_readme_is_a_newcomers_page() -> None:
    """What a newcomer reads first stays short; the reference lives in docs/."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move reference to docs/"


def test_every_local_link_resolves() -> None:
    for doc in (README, *sorted((README.parent / "docs").glob("*.md"))):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_readme_shows_the_two_setup_commands_first() -> None:
    text = README.read_text()
    first_block = text[text.index("```") : text.index("```", text.index("```") + 3)]
    assert "make demo" in first_block and "make test" in first_block


ROOT = README.parent
DOCS = [README, ROOT / "RELIABILITY.md", *sorted((ROOT / "docs").glob("*.md"))]


def _module_exists(dotted: str) -> bool:
    parts = dotted.split(".")
    base = ROOT / "shared" if parts[0] == "groundwatch" else ROOT
    path = base.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_the_docs_name_exists(doc: Path) -> None:
    """A module named in backticks (``groundwatch.x.y``) or a source path (`shared/…py`,
    `services/…py`) must exist: a move that leaves the docs behind fails here."""
    text = doc.read_text()
    dotted = set(re.findall(r"`(groundwatch(?:\.[a-z_]+)+)`", text))
    dotted |= {m.rstrip(".") for m in re.findall(r"`((?:groundwatch|services)\.[a-z_.]+)`", text)}
    paths = set(
        re.findall(r"`((?:shared|services|tests|bench|scripts)/[\w/.-]+\.(?:py|sh))`", text)
    )
    # `groundwatch.tier` is a span attribute's name, `groundwatch.xml` a file: a module path is
    # one that starts with a subpackage or module the library has
    top = {
        p.stem for p in (ROOT / "shared" / "groundwatch").iterdir() if not p.name.startswith("_")
    }
    dotted = {m for m in dotted if m.split(".")[0] != "groundwatch" or m.split(".")[1] in top}
    missing = [m for m in sorted(dotted) if not _module_exists(m) and not _is_attribute(m)]
    missing += [p for p in sorted(paths) if not (ROOT / p).exists()]
    assert not missing, f"{doc.name} names modules that do not exist: {missing}"


def _is_attribute(dotted: str) -> bool:
    """``groundwatch.x.func``: the module part exists and the last part is a name in it."""
    module, _, name = dotted.rpartition(".")
    if not module or not _module_exists(module):
        return False
    parts = module.split(".")
    base = ROOT / "shared" if parts[0] == "groundwatch" else ROOT
    path = base.joinpath(*parts)
    source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    return re.search(rf"\b{re.escape(name)}\b", source.read_text()) is not None


def test_the_readme_layout_names_every_layer() -> None:
    text = README.read_text()
    layers = sorted(
        p.name
        for p in (ROOT / "shared" / "groundwatch").iterdir()
        if p.is_dir() and (p / "__init__.py").is_file()
    )
    missing = [name for name in layers if f"`{name}/`" not in text]
    assert not missing, f"README's layout section does not mention {missing}"


def test_the_readme_prometheus_snippet_loads_the_shipped_rules_and_scrapes_run() -> None:
    """Example 3's config for a local ``run`` is its own (the shipped one scrapes compose
    hostnames): its rule glob must find every shipped rules file, its target ``run``'s default
    port, with the labels the alerts select on."""
    import glob
    import inspect

    import yaml

    from groundwatch.cli.run import run

    block = re.search(r"cat > prom-local\.yml <<EOF[^\n]*\n(.*?)\nEOF\n", README.read_text(), re.S)
    assert block, "README lost its local Prometheus snippet"
    root = README.parent
    config = yaml.safe_load(block.group(1).replace("$PWD", str(root)))
    found = {Path(p) for g in config["rule_files"] for p in glob.glob(g)}
    assert found == set((root / "deploy" / "prometheus" / "rules").glob("*.yml"))
    (job,) = config["scrape_configs"]
    (static,) = job["static_configs"]
    port = inspect.signature(run).parameters["port"].default
    assert static["targets"] == [f"127.0.0.1:{port}"]
    assert static["labels"]["system"] == "groundwatch"
