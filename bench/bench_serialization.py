"""Serialization benchmark: encode + decode of each topic contract per second, on one core.

Every message on Kafka is encoded once by its producer and decoded — parsed *and validated*
against its contract (extra fields forbidden, sizes capped, schema version checked) — once by
each consumer group, so this is the ceiling of everything on the bus: a probe crosses three
topics (probe, response, judgement), and ``probes_per_s_bound`` is what one core could carry if
those three round trips were all it did.

Per contract, with realistic sizes (a demo query, a one-sentence answer, three retrieved ids,
one context):
* ``ours`` — ``message.to_bytes()`` (pydantic's serializer straight to JSON bytes) and
  ``Topic.decode`` (``validate_json``: parse and validate in one pass, in Rust);
* ``baseline`` — the encoding this replaced, ``orjson.dumps(message.model_dump(mode="json"))``
  (a Python dict in between), with the same ``model_validate_json`` decode;
* ``unvalidated`` — ``orjson`` dumps/loads of the same dict, no contract at all: what skipping
  validation would buy (it is not an option — the consumer edge must validate).

Usage: ``python bench/bench_serialization.py [--n 20000] [--repeat 5] [--out FILE]``; JSON on
stdout (and in ``--out``).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from _common import emit, figure, machine

from groundwatch.contracts import (
    DeadLetter,
    Judgement,
    Probe,
    RagResponse,
    TargetStatus,
    Topic,
    Topics,
    _Contract,
)
from groundwatch.core.model import AnswerType, Expected, Verdict
from groundwatch.core.scores import AnswerScores, RetrievalScores, RulesScores, Scores


def samples() -> dict[str, _Contract]:
    probe = Probe(
        probe_id=uuid.uuid4(),
        run_id="3f2a9c1e0b7d",
        dataset_id="demo",
        group_id="9c2f4e1a7b3d5e6f",
        form_id="a1b2c3d4e5f6",
        cohort="long",
        target="support-bot",
        query="Which industry does the client Harrowgate Rail Partners operate in, according "
        "to the account records?",
        expected=Expected(values=["Transport"], types=[AnswerType.TEXT]),
        group_forms=3,
        relevant_doc_ids=["clients/harrowgate-rail-partners"],
    )
    answer = "According to the records, Harrowgate Rail Partners operates in Transport."
    response = RagResponse.for_probe(
        probe,
        status=TargetStatus.OK,
        answer=answer,
        retrieved_ids=[
            "clients/harrowgate-rail-partners",
            "projects/juniper-masterplan",
            "employees/aldric-ashgrove",
        ],
        contexts=[answer],
        latency_s=0.0123,
    )
    # what the judge ships for an answered factual probe: the rules' detail, the answer's
    # text scores and (the target reports its ranking) the IR scores
    scores = Scores(
        answer=AnswerScores(5, 0.0, 0.4, 0.4, 0.1),
        retrieval=RetrievalScores(5, 1.0, 0.5, 1.0, 1.0, 1.0),
        rules=RulesScores(0.25, 1.0, 0.4),
    )
    judgement = Judgement.for_response(
        response, verdict=Verdict.CORRECT, tier="contains", reason="gold found", scores=scores
    )
    letter = DeadLetter(
        error="responses: status: Input should be 'ok' or 'error'",
        source_topic="gw.responses",
        partition=3,
        offset=12345,
        key=probe.group_id,
        raw_b64="eyJzdGF0dXMiOiAibWF5YmUifQ==",
        service="judge",
        group_id=probe.group_id,
    )
    return {"probe": probe, "response": response, "judgement": judgement, "dead_letter": letter}


def rate(n: int, repeat: int, fn: Callable[[], Any]) -> float:
    """Best-of-``repeat`` calls per second over ``n`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def measure(message: _Contract, topic: Topic[Any], n: int, repeat: int) -> dict[str, Any]:
    raw = message.to_bytes()
    model = type(message)
    assert topic.decode(raw) == message  # the round trip is lossless

    def ours() -> None:
        topic.decode(message.to_bytes())

    def baseline() -> None:
        model.model_validate_json(orjson.dumps(message.model_dump(mode="json")))

    plain = orjson.loads(raw)

    def unvalidated() -> None:
        orjson.loads(orjson.dumps(plain))

    return {
        "bytes": len(raw),
        "encode_per_s": round(rate(n, repeat, message.to_bytes)),
        "decode_per_s": round(rate(n, repeat, lambda: topic.decode(raw))),
        "roundtrip_per_s": round(rate(n, repeat, ours)),
        "baseline_roundtrip_per_s": round(rate(n, repeat, baseline)),
        "unvalidated_roundtrip_per_s": round(rate(n, repeat, unvalidated)),
    }


def per_probe_seconds(repeat: int = 5, n: int = 20_000) -> float:
    """Encode + decode of one probe, one response and one judgement, in seconds."""
    msgs = samples()
    topics = Topics("gw.")
    pairs = [
        (msgs["probe"], topics.probes),
        (msgs["response"], topics.responses),
        (msgs["judgement"], topics.judgements),
    ]
    total = 0.0
    for message, topic in pairs:

        def roundtrip(m: _Contract = message, t: Topic[Any] = topic) -> None:
            t.decode(m.to_bytes())

        total += 1.0 / rate(n, repeat, roundtrip)
    return total


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    msgs = samples()
    topics = Topics("gw.")
    by_name = {
        "probe": topics.probes,
        "response": topics.responses,
        "judgement": topics.judgements,
        "dead_letter": topics.dead_letter,
    }
    contracts = {
        name: measure(msgs[name], topic, args.n, args.repeat) for name, topic in by_name.items()
    }
    per_probe = per_probe_seconds(args.repeat, args.n)
    baseline_per_probe = sum(
        1.0 / contracts[k]["baseline_roundtrip_per_s"] for k in ("probe", "response", "judgement")
    )
    result = {
        "bench": "serialization",
        **machine(),
        "contracts": contracts,
        "probes_per_s_bound": round(1.0 / per_probe),
        "baseline_probes_per_s_bound": round(1.0 / baseline_per_probe),
        "speedup_vs_baseline": round(baseline_per_probe / per_probe, 2),
        "note": "one core; a probe = probe + response + judgement, each encoded once and decoded "
        "once (decode = parse + validate against the contract)",
        "figures": {
            "speedup": figure(
                "serialization: probes/s bound (probe + response + judgement, encode + validate),"
                " ratio to model_dump + orjson",
                round(baseline_per_probe / per_probe, 3),
                unit="×",
                measured=round(1.0 / per_probe),
                baseline=round(1.0 / baseline_per_probe),
                baseline_name="model_dump + orjson",
                absolute_unit="probes/s",
                bound="pydantic-core validation in Rust, one core",
            )
        },
    }
    emit(result, args.out)
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
