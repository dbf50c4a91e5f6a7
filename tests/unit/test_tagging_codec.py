"""Every encoding of a window round-trips (groundwatch.core.tagging.codec): an observation as a
row, a live tally as its stored state and as its cold form, back to an equal live tally — over
hand-picked windows and over random ones (property-style, hypothesis) — and each encoding refuses
a format it did not write."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundwatch.core.model import Verdict
from groundwatch.core.scores import NO_SCORES, AnswerScores, Scores
from groundwatch.core.tagging import Observation, Tagger, Window, codec
from groundwatch.core.tagging.counts import CohortSums
from groundwatch.core.tagging.windows import Tally
from groundwatch.core.window_blobs import MemoryBlobs

pytestmark = pytest.mark.unit


def observation(**kw: Any) -> Observation:
    base: dict[str, Any] = {
        "probe_id": "p1",
        "target": "t",
        "cohort": "short",
        "group_id": "g",
        "form_id": "f0",
        "verdict": Verdict.CORRECT,
        "cycle": 1,
    }
    return Observation(**(base | kw))


def parts(t: Tally) -> tuple[object, ...]:
    """Everything a tally holds, comparable (a cycle as its number, closed flag, arrival sequence
    and observations in arrival order)."""
    return (
        t.key,
        t.dataset_id,
        t.scenario,
        t.group_forms,
        t.series,
        [(c, cy.closed, cy.seq, list(cy.observations())) for c, cy in t.cycles.items()],
        t.status,
        t.latest,
        t.reshaped,
        (t.correct, t.incorrect, t.error, t.undecided),
        t.history,
        t.flaky,
        dict(t.causes),
        t.counted_last.cycle if t.counted_last is not None else None,
        t.last_closed,
        t.conclusive,
        t.held,
        t.evicted_before,
        t.answers_open_domain,
        t.fence,
    )


# ---------------------------------------------------------------------------- strategies

_texts = st.text(st.characters(codec="utf-8"), max_size=12)
_ids = st.text("abcdefgh0123456789-", min_size=1, max_size=8)
_scores = st.one_of(
    st.just(NO_SCORES),
    st.builds(
        lambda k, em, f1: Scores(answer=AnswerScores(k, exact_match=em, token_f1=f1)),
        st.integers(1, 10),
        st.sampled_from((None, 0.0, 1.0)),
        st.one_of(st.none(), st.floats(0, 1)),
    ),
)
_observations = st.builds(
    observation,
    probe_id=_ids,
    form_id=st.sampled_from(("f0", "f1", "f2")),
    verdict=st.sampled_from(list(Verdict)),
    run_id=_texts,
    dataset_id=_texts,
    scenario=st.sampled_from(("factual", "S2")),
    group_forms=st.integers(1, 4),
    retrieved_ids=st.lists(_ids, max_size=3).map(tuple),
    relevant_doc_ids=st.lists(_ids, max_size=3).map(tuple),
    retrieval_ok=st.one_of(st.none(), st.booleans()),
    at=st.floats(0, 2e9),
    latency_s=st.floats(0, 100),
    stale=st.booleans(),
    series=_texts,
    cycle=st.integers(0, 2**31 - 1),
    truth_version=st.integers(1, 5),
    error_kind=st.one_of(st.none(), _texts),
    context_has_answer=st.one_of(st.none(), st.booleans()),
    scores=_scores,
)


@st.composite
def windows(draw: st.DrawFn) -> Tagger:
    """A tagger fed a random stream of one group's judgements: cycles out of order, repeats,
    late verdicts, every verdict, outages, a changing form count, a window of any size."""
    runs = draw(st.one_of(st.none(), st.integers(1, 4)))
    tagger = Tagger(Window(runs=runs) if runs is not None else None, open_domain_baseline="t")
    target = draw(st.sampled_from(("t", "t2")))
    n = draw(st.integers(1, 40))
    for i in range(n):
        o = observation(
            probe_id=f"p{draw(st.integers(0, n + 3))}" if i else "p0",
            target=target,
            form_id=f"f{draw(st.integers(0, 3))}",
            verdict=draw(st.sampled_from(list(Verdict))),
            group_forms=draw(st.sampled_from((1, 2, 3, 3))),
            cycle=draw(st.integers(1, 9)),
            truth_version=draw(st.sampled_from((1, 1, 1, 2))),
            retrieved_ids=draw(st.sampled_from(((), ("d1",), ("d1", "d2")))),
            relevant_doc_ids=draw(st.sampled_from(((), ("d1",)))),
            at=float(i),
            scores=draw(_scores),
        )
        tagger.apply(o)
        if draw(st.integers(0, 4)) == 0:
            tagger.refresh_causes()
    tagger.refresh_causes()
    tagger.set_fence((target, "short", "g"), draw(st.integers(0, 2**40)))
    return tagger


def live_tally(tagger: Tagger) -> Tally:
    (key,) = list(tagger._tallies)
    return tagger._live_tally(key)


_PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)

# ---------------------------------------------------------------------------- observation rows


@_PROPERTY
@given(_observations)
def test_an_observation_round_trips_as_a_row(o: Observation) -> None:
    row = codec.observation_row(o)
    back = codec.row_observation(row, o.target, o.cohort, o.group_id, o.cycle)
    assert back == o
    # the stored state's rows go through JSON, the cold form's through marshal: both the same
    json_row = orjson.loads(orjson.dumps(row))
    assert codec.row_observation(json_row, o.target, o.cohort, o.group_id, o.cycle) == o
    assert codec.row_observation(row, o.target, o.cohort, o.group_id, o.cycle, shared=False) == o


# ---------------------------------------------------------------------------- the stored state


@_PROPERTY
@given(windows())
def test_a_window_round_trips_through_its_stored_state(tagger: Tagger) -> None:
    t = live_tally(tagger)
    state = codec.encode_state(t, reports_ids=True)
    assert codec.valid_state(state) and state[0] == codec.STATE_FORMAT
    decoded = codec.decode_state(orjson.loads(orjson.dumps(state)))
    assert decoded is not None
    target, cohort, group_id = t.key
    assert [
        (c, closed, [codec.row_observation(r, target, cohort, group_id, c) for r in rows])
        for c, closed, rows in decoded.cycles
    ] == [(c, cy.closed, list(cy.observations())) for c, cy in t.cycles.items()]
    assert decoded.history == t.history
    assert decoded.causes == dict(t.causes)
    assert decoded.conclusive is t.conclusive
    assert decoded.evicted_before == t.evicted_before
    assert decoded.reports_ids is True
    assert (decoded.dataset_id, decoded.scenario, decoded.group_forms, decoded.series) == (
        t.dataset_id,
        t.scenario,
        t.group_forms,
        t.series,
    )
    # encoding the decoded parts again gives the same state
    assert codec.encode_state(t, reports_ids=True) == state


@pytest.mark.parametrize(
    "state",
    [
        None,
        {},
        [],
        [codec.STATE_FORMAT - 1, "", "", 1, "", None, None, False, [], [], {}],
        [codec.STATE_FORMAT + 1, "", "", 1, "", None, None, False, [], [], {}],
        [codec.STATE_FORMAT, "", "", 1, "", None, None, False, [], []],
    ],
)
def test_a_state_of_another_format_is_not_decoded(state: object) -> None:
    assert not codec.valid_state(state)
    assert codec.decode_state(state) is None


# ---------------------------------------------------------------------------- the cold form


def _cold_round_trip(t: Tally, *, shared: bool) -> Tally:
    store = MemoryBlobs()
    fields, extras, window = codec.encode_cold(t.key, t)
    record = codec.pack_record(fields, store.put(window))
    slot = codec.RECORD_FIELDS["slot"]
    blob = store.get(slot[1].unpack_from(record, slot[0])[0])
    return codec.decode_cold(t.key, record, extras, blob, CohortSums(), shared=shared)


@_PROPERTY
@given(windows(), st.booleans())
def test_a_window_round_trips_through_its_cold_form(tagger: Tagger, shared: bool) -> None:
    t = live_tally(tagger)
    back = _cold_round_trip(t, shared=shared)
    assert parts(back) == parts(t)
    # the counted cycle is the decoded tally's own, not a copy beside it
    if back.counted_last is not None:
        assert back.counted_last is back.cycles[back.counted_last.cycle]


@_PROPERTY
@given(windows())
def test_the_cold_record_holds_the_snapshot(tagger: Tagger) -> None:
    """What a cold tally answers without decoding its window — its record's fields — are the
    live tally's numbers."""
    (key,) = list(tagger._tallies)
    live = tagger.tally(*key)
    t = live_tally(tagger)
    fields, _extras, _window = codec.encode_cold(key, t)
    record = codec.pack_record(fields, 7)
    v = codec.RECORD.unpack(record)
    assert live is not None
    assert v[:6] == (
        live.group_forms,
        live.forms_judged,
        live.correct,
        live.incorrect,
        live.error,
        live.undecided,
    )
    assert codec.STATUS_LIST[v[11]] is live.status
    assert v[-1] == 7 and v[-2] == t.fence


def test_a_number_beyond_its_field_is_an_overflow_before_anything_is_deflated() -> None:
    tagger = Tagger(Window(runs=2))
    tagger.apply(observation(cycle=2**40))
    t = live_tally(tagger)
    with pytest.raises(OverflowError):
        codec.encode_cold(t.key, t)


def test_a_cold_window_of_another_format_is_refused() -> None:
    tagger = Tagger(Window(runs=2))
    tagger.apply(observation())
    t = live_tally(tagger)
    fields, extras, window = codec.encode_cold(t.key, t)
    other = bytes([(codec.COLD_FORMAT + 1) << 1 | codec.used_dictionary(window)]) + window[1:]
    record = codec.pack_record(fields, 0)
    with pytest.raises(ValueError, match="format"):
        codec.decode_cold(t.key, record, extras, other, CohortSums(), shared=True)
