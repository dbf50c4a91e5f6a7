"""The CLI starts fast: ``--help`` and light commands import no heavy library (issue 16: every
call used to take ~4.5 s because scipy and the LLM client were imported eagerly)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

HEAVY = ("scipy", "numpy", "sqlalchemy", "alembic", "openai", "fastapi", "httpx", "aiokafka",
         "uvicorn", "prometheus_client", "sqlglot", "pandas", "rank_bm25")  # fmt: skip


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys\n"
        "from groundwatch.cli.main import app\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert [m for m in HEAVY if m in out] == []


AURP_SHORT = (
    Path(__file__).resolve().parents[2].parent
    / "shared/data/grammar-aurp/eval_results_results_short_balanced.json"
)


def test_report_of_one_cohort_imports_neither_scipy_nor_sqlalchemy() -> None:
    """The cold-start figure itself is a benchmark (bench/bench_cli.py, no timed test); this
    keeps its largest cost, scipy.stats (~1 s), off the path of a plain report."""
    if not AURP_SHORT.exists():
        pytest.skip("GRAMMAR Aurp results not found (../shared absent)")
    code = (
        "import sys\n"
        "from groundwatch.cli.main import main\n"
        f"sys.argv = ['groundwatch', 'report', '-q', '-g', 'short={AURP_SHORT}']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stderr.split()
    assert [m for m in ("scipy", "sqlalchemy") if m in out] == []
