"""The analytics stage: judgements and people's verdicts in, live group state stored, nothing
produced."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from groundwatch.adapters.bus.base import Consumer
from groundwatch.adapters.db.analytics_store import AlreadyStored, AnalyticsStore, TallyWrite
from groundwatch.adapters.db.faults import Fault, as_outcome, classify
from groundwatch.adapters.tracing import active as active_tracing
from groundwatch.adapters.window_file import FileBlobs
from groundwatch.contracts import HumanVerdict, Judgement, Topic, Topics, _Contract
from groundwatch.core.cycles import SeriesClock
from groundwatch.core.data_quality import GroupSpec
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.tagging import (
    FACTUAL,
    GroupKey,
    GroupStatus,
    GroupTally,
    Observation,
    Override,
    Tagger,
    TaggerView,
    TallyState,
    Transition,
    Window,
    dump_state,
    publish,
    restore,
    valid,
)
from groundwatch.core.window_blobs import MemoryBlobs, WindowBlobs
from groundwatch.errors import Reject, RetryLater
from groundwatch.stages.analytics.data_quality import DataQualityChecker
from groundwatch.stages.analytics.observe import observation_from_judgement

log = logging.getLogger(__name__)

#: Called after each stored batch with the observations it applied, the status transitions they
#: caused and the time it was stored (the service's Prometheus counters, the embedded
#: pipeline's); the stage knows no metrics.
AppliedHook = Callable[[list[Observation], list[Transition], float], None]


class AnalyticsStage:
    """Applies each judgement once (by ``probe_id``), stores it with the touched tallies, and only
    then lets the loop commit the offsets."""

    service = "analytics"
    group = "analytics"
    max_records = 2000
    #: New gap groups given a data-quality label per batch (the rest wait for the next batch).
    quality_per_batch = 200

    def __init__(
        self,
        store: AnalyticsStore,
        *,
        window: Window | None = None,
        on_applied: AppliedHook | None = None,
        quality: DataQualityChecker | None = None,
        specs: Mapping[str, GroupSpec] | None = None,
        open_domain_baseline: str | None = None,
        clock: SeriesClock | None = None,
        windows: WindowBlobs | None = None,
        publish_views: bool = True,
    ) -> None:
        """``clock`` places each judgement's cycle in its series (a restarted numbering
        continues the series, an impossible cycle is dead-lettered: :mod:`groundwatch.core.
        cycles`); ``quality`` labels each new gap group from the corpus (GRAMMAR Appendix I);
        ``specs`` are the groups' specs when the caller has them (the SQL's bound values make
        better entities), else they are read from the stored judgements;
        ``open_domain_baseline`` names the LLM-only target whose correctly answered groups the
        metrics and the report leave out (GRAMMAR §5.2); ``windows`` keeps the cold groups'
        windows (a temporary file unless given: :mod:`groundwatch.adapters.
        window_file`), shared by every tagger the stage builds. ``publish_views=False``: no
        read model after each batch, one made when :attr:`view` is first read after (for a
        batch run whose only reader comes after its cycles, in the consume loop's thread: the
        published maps were ~40 bytes a group, ~7 MB at 500k probes, and a publish per batch)."""
        self.store = store
        self.window = window
        self.on_applied = on_applied
        self.quality = quality
        self.specs = specs or {}
        self.open_domain_baseline = open_domain_baseline
        self.windows: WindowBlobs = windows if windows is not None else _window_store()
        #: The write model: owned by the consume loop, changed by it only.
        self.tagger = Tagger(window, open_domain_baseline=open_domain_baseline, blobs=self.windows)
        #: The read model: what /report, /metrics and /groups read — an immutable view of the
        #: tagger, published after each stored batch (groundwatch.core.tagging.view).
        self.publish_views = publish_views
        self._view: TaggerView | None = publish(self.tagger) if publish_views else None
        self.clock = clock if clock is not None else SeriesClock()
        #: the tagger may differ from the store (not loaded yet, or ahead of it after a failed
        #: write): it is rebuilt from the store before the next batch is applied
        self._needs_reload = True
        # the fence token of each owned tally's stored state (what the next write must find)
        # is kept in the tally (Tagger.fence); here only those of stored tallies the tagger
        # holds none of (a stored tally without observations to restore)
        self._tokens: dict[GroupKey, int] = {}
        self._rng = random.Random()
        # Partition ownership: several analytics instances split the judgements topic (key =
        # group_id); each keeps and exports only the groups of its own partitions, so Prometheus
        # can sum the instances. None = not known yet (one instance, or before the first poll).
        self._owned: frozenset[int] | None = None
        self._partition_of: Callable[[str], int | None] = lambda _gid: None
        self._source_name = ""
        #: verdicts onto their probes' spans (OTLP, Phoenix, Langfuse) once stored; None: off
        self._tracing = active_tracing()

    @property
    def view(self) -> TaggerView:
        """The read model as of the last stored batch (made now, from every group, when the
        stage publishes none per batch)."""
        if self._view is None:
            self._view = publish(self.tagger)
        return self._view

    def source(self, topics: Topics) -> Topic[Any]:
        """The judgements; people's verdicts come beside them (:meth:`also_sources`), in the
        same consumer, so the stage's handler takes both."""
        self._source_name = topics.judgements.name
        return topics.judgements

    def also_sources(self, topics: Topics) -> list[Topic[Any]]:
        """People's verdicts: keyed by group like the judgements, read by the same consumer,
        which owns the same partitions of both (:mod:`groundwatch.adapters.bus.kafka`)."""
        return [topics.human_verdicts]

    def owns(self, group_id: str) -> bool:
        if self._owned is None:
            return True
        partition = self._partition_of(group_id)
        return partition is None or partition in self._owned

    async def on_assignment(self, consumer: Consumer, assigned: frozenset[tuple[str, int]]) -> None:
        """A rebalance moved partitions: rebuild from the store with exactly the owned groups
        (including what the previous owner stored), before any record of the new ones."""
        # the judgements' partitions say which groups are owned (people's verdicts, keyed
        # alike, come from the same partition numbers of their own topic)
        topics = {t for t, _ in assigned}
        topic = self._source_name if self._source_name in topics else next(iter(topics), None)
        self._owned = frozenset(p for t, p in assigned if t == topic)
        if topic is not None:
            self._partition_of = lambda gid: consumer.partition_of(topic, gid.encode())
        try:
            n = await asyncio.to_thread(self.reload)
        except Exception as exc:
            if classify(exc) is not Fault.RETRIABLE:
                raise
            log.warning(
                "state reload after rebalance failed (%s); retrying with the next batch", exc
            )
            self._needs_reload = True
            return
        log.info(
            "partitions %s: %d stored judgements of owned groups loaded", sorted(self._owned), n
        )

    def reload(self) -> int:
        """Recover the owned groups' state from the store: on start-up, after a rebalance,
        after a failed write. Each tally is restored from the state stored with it
        (:mod:`groundwatch.core.tagging.state`); a tally stored without one (a store from
        before states) is rebuilt by replaying its judgements. Returns the observations the
        recovered state holds (restored or replayed)."""
        with _no_gc():
            return self._reload()

    def _reload(self) -> int:
        tagger = Tagger(
            self.window, open_domain_baseline=self.open_domain_baseline, blobs=self.windows
        )
        tokens: dict[GroupKey, int] = {}
        stateless: set[GroupKey] = set()
        tallies = 0

        def owned() -> Iterator[tuple[GroupKey, TallyState]]:
            nonlocal tallies
            everything = self._owned is None  # one instance: every group is its own
            for key, state, token in self.store.load_states():
                tallies += 1
                if not everything and not self.owns(key[2]):
                    continue
                tokens[key] = token
                if valid(state):
                    yield key, state
                else:
                    stateless.add(key)

        n = restore(tagger, owned())
        if stateless or not tallies:
            # Tallies without a state of this code's format have their judgements replayed:
            # only theirs when other tallies have states, else every judgement's a rebuild needs
            # (a store from before states; judgements without a tally included)
            some = len(stateless) < len(tokens)
            replay = self.store.load_observations(stateless_only=some)
            n += tagger.rebuild(
                o for o in replay if (not some or o.key in stateless) and self.owns(o.group_id)
            )
        # each restored tally keeps its own token; the map keeps the few without a tally
        tokens = {k: v for k, v in tokens.items() if not tagger.set_fence(k, v)}
        n_people = self._people_again(tagger)
        if n_people:
            log.info("%d people's verdicts counted again from the store", n_people)
        tagger.drain_transitions()  # replayed, not new: they are in the store already
        self.clock.restore(self.store.load_epochs(), self.store.newest_cycles())
        self.tagger = tagger
        self._view = publish(tagger) if self.publish_views else None
        self._tokens = tokens
        self._needs_reload = False
        return n

    def _people_again(self, tagger: Tagger) -> int:
        """Count the store's people's verdicts on the owned groups again (the newest of each
        answer): a restored state holds those it was written with, so each of them is a
        repeat; a tally replayed from its judgements, or a verdict that never reached the
        topic, gets them here (a status change that causes is not stored as a transition: the
        tally's next write stores its state). Returns how many changed a tally."""
        changed = 0
        for answer, verdict, revision in self.store.people_verdicts():
            person = _PERSON.get(verdict)
            if person is None or not self.owns(answer.group_id):
                continue  # the view stores only right or wrong: anything else is no verdict
            key = (answer.target, answer.cohort, answer.group_id)
            outcome = tagger.override(key, answer.probe_id, person, revision)
            changed += outcome is Override.APPLIED
        return changed

    async def handle(
        self, messages: list[Judgement | HumanVerdict]
    ) -> Sequence[_Contract | Reject]:
        """A batch of judgements and people's verdicts: the judgements applied and stored
        first (a person's verdict is on an answer judged before it), then the verdicts."""
        judgements: list[Judgement] = []
        verdicts: list[HumanVerdict] = []
        for m in messages:
            if type(m) is Judgement:
                judgements.append(m)
            else:
                assert isinstance(m, HumanVerdict)  # the two topics the stage reads
                verdicts.append(m)
        out = await self._judgements(judgements) if judgements else []
        if not verdicts:
            return out
        return [*out, *await self._verdicts(verdicts)]

    async def _judgements(self, judgements: list[Judgement]) -> Sequence[_Contract | Reject]:
        try:
            return await self._handle(judgements)
        except AlreadyStored as exc:
            # Another instance applied part of this batch while this one was not the owner (a
            # freeze past the session timeout): nothing was stored or counted. Rebuild from the
            # store, which holds the other's work, and apply only what is not stored yet — so
            # this instance counts exactly what its own transaction commits. (A judgement the
            # rebuilt window does not hold, from an older cycle, is found the same way.)
            log.warning("%s: rebuilding from the store before applying the rest", exc)
            self._needs_reload = True
            try:
                ids = [str(j.probe_id) for j in judgements]
                present = await asyncio.to_thread(self.store.stored_probe_ids, ids)
                rest = [j for j in judgements if str(j.probe_id) not in present]
                return await self._handle(rest) if rest else []
            except AlreadyStored as again:  # the other instance is still writing: back off
                self._needs_reload = True
                raise RetryLater(str(again)) from again
            except Exception as failed:
                outcome = as_outcome(failed, "analytics store")
                if outcome is not None:
                    raise outcome from failed
                raise

    async def _handle(self, judgements: list[Judgement]) -> Sequence[_Contract | Reject]:
        try:
            return await self._apply(judgements)
        except AlreadyStored:
            # memory ran ahead of the store (and behind the other instance)
            self._needs_reload = True
            raise
        except BaseException as exc:
            # Whatever failed (the store, a bug, a cancellation) once the tagger may hold this
            # batch, the tagger is ahead of the store: it is rebuilt from the store before the
            # redelivery, so no tally counts a judgement that was not stored.
            self._needs_reload = True
            outcome = as_outcome(exc, "analytics store") if isinstance(exc, Exception) else None
            if outcome is not None:
                raise outcome from exc
            raise

    async def _apply(self, judgements: list[Judgement]) -> Sequence[_Contract | Reject]:
        if self._needs_reload:
            n = await asyncio.to_thread(self.reload)
            log.info("analytics state rebuilt from %d stored judgements", n)
        tagger = self.tagger
        fresh: list[Judgement] = []
        # probe id → judgement, in order: each id formatted once (the dedup and the observation)
        seen: dict[str, Judgement] = {}
        for j in judgements:
            pid = str(j.probe_id)
            if pid not in tagger and pid not in seen:
                seen[pid] = j
                fresh.append(j)
        if not fresh:
            return []
        apply = tagger.apply
        applied: list[Observation] = []
        kept: list[Judgement] = []  # what is stored: the applied judgements, cycles placed
        rejects: list[Reject] = []
        behind: list[tuple[Judgement, str]] = []
        now = time.time()
        for pid, j in seen.items():
            cycle = await self._place(j, now)
            if isinstance(cycle, Reject):
                rejects.append(cycle)
                continue
            placed = j if cycle == j.cycle else j.model_copy(update={"cycle": cycle})
            obs = observation_from_judgement(placed, pid)
            if apply(obs):
                applied.append(obs)
                kept.append(placed)
            else:
                behind.append((j, self._behind(obs)))
        if behind:
            # A judgement older than its group's window may be one this store holds already —
            # redelivered after a rebuild, which keeps only each group's window: a duplicate to
            # skip, not a letter. Only what the store lacks is too late to count.
            stored = await asyncio.to_thread(
                self.store.stored_probe_ids, [str(j.probe_id) for j, _ in behind]
            )
            rejects.extend(Reject(j, why) for j, why in behind if str(j.probe_id) not in stored)
        if not kept:
            return rejects
        writes = self._writes({o.key for o in applied})
        transitions = tagger.drain_transitions()
        # A refusal of the data (a value, a constraint) becomes Unstorable in ``_handle``: the
        # database is up and says no, waiting would loop for ever (it did, 63,770 retries on one
        # NUL); the loop finds the message and dead-letters it. A store that is down or busy
        # becomes StoreUnavailable: the batch waits, nothing is dead-lettered.
        await asyncio.to_thread(self.store.save, kept, writes, transitions)
        self._after_store(writes, applied, transitions)
        if self._tracing is not None:
            status = tagger.status
            self._tracing.verdicts(kept, lambda j: status(j.target, j.cohort, j.group_id).value)
        if self.quality is not None and self.quality.configured:
            await self.check_quality({(o.target, o.cohort, o.group_id) for o in applied})
        return rejects

    async def _verdicts(self, verdicts: list[HumanVerdict]) -> list[Reject]:
        try:
            return await self._apply_verdicts(verdicts)
        except AlreadyStored as exc:
            # another instance wrote one of these tallies meanwhile: rebuilt from the store
            # before the batch comes again (its judgements are then repeats, its verdicts too
            # where the other instance counted them)
            self._needs_reload = True
            raise RetryLater(str(exc)) from exc
        except BaseException as exc:
            self._needs_reload = True  # the tagger may be ahead of the store
            outcome = as_outcome(exc, "analytics store") if isinstance(exc, Exception) else None
            if outcome is not None:
                raise outcome from exc
            raise

    async def _apply_verdicts(self, verdicts: list[HumanVerdict]) -> list[Reject]:
        """Each person's verdict counted in its group's tally instead of the judge's
        (idempotent by its revision: :meth:`Tagger.override`), the changed tallies stored with
        their states; a verdict on an answer the store never judged (or judged in another
        group) is rejected, one on an answer judged but gone from the window changes nothing
        live (a replay of the store counts it)."""
        if self._needs_reload:
            n = await asyncio.to_thread(self.reload)
            log.info("analytics state rebuilt from %d stored judgements", n)
        tagger = self.tagger
        touched: set[GroupKey] = set()
        rejects: list[Reject] = []
        unknown: list[HumanVerdict] = []
        for v in verdicts:
            if not self.owns(v.group_id):
                rejects.append(
                    Reject(
                        v,
                        f"group {v.group_id} is on a partition of the judgements this analytics"
                        " instance does not own: its people's verdicts and its judgements must"
                        " be assigned together (the same partition count on both topics)",
                    )
                )
                continue
            key = (v.target, v.cohort, v.group_id)
            verdict = _PERSON[v.verdict] if v.verdict is not None else None
            outcome = tagger.override(key, str(v.probe_id), verdict, v.revision, v.at.timestamp())
            if outcome is Override.APPLIED:
                touched.add(key)
            elif outcome is Override.UNKNOWN:
                unknown.append(v)
        if unknown:
            ids = [str(v.probe_id) for v in unknown]
            stored = await asyncio.to_thread(self.store.judged_keys, ids)
            for v in unknown:
                key = (v.target, v.cohort, v.group_id)
                found = stored.get(str(v.probe_id))
                if found is None:
                    why = f"no judged answer {v.probe_id} in the store: a verdict on nothing"
                elif found != key:
                    why = (
                        f"answer {v.probe_id} was judged in {'/'.join(found)}, not in"
                        f" {'/'.join(key)}"
                    )
                else:
                    continue  # judged, older than the group's window: nothing live to change
                rejects.append(Reject(v, why))
        if touched:
            writes = self._writes(touched)
            transitions = tagger.drain_transitions()
            await asyncio.to_thread(self.store.save, [], writes, transitions)
            self._after_store(writes, [], transitions)
        return rejects

    def _after_store(
        self, writes: list[TallyWrite], applied: list[Observation], transitions: list[Transition]
    ) -> None:
        """A batch is stored: the fence tokens it wrote kept, quiet tallies compressed, the
        read model published and the applied hook told."""
        tagger = self.tagger
        tokens = self._tokens
        for w in writes:
            key = _key(w.tally)
            if tagger.set_fence(key, w.token):
                tokens.pop(key, None)
            else:  # not in the tagger (a written tally is): kept beside it all the same
                tokens[key] = w.token
        tagger.refresh_causes(max_groups=1000)  # context comparison, off the scrape path
        # untouched groups made cold (stored above, attributed, cycle closed): memory follows the
        # groups in flight, not every group seen (groundwatch.core.tagging.cold)
        tagger.make_cold()
        # the batch is stored: its state is what the readers see from now on (the hook's
        # metrics read it too)
        if self.publish_views:
            self._view = publish(tagger, self._view)
        else:
            self._view = None
            tagger.forget_changes()
        if self.on_applied is not None:
            self.on_applied(applied, transitions, time.time())

    def _writes(self, keys: set[GroupKey]) -> list[TallyWrite]:
        """The touched tallies as the store writes them: numbers, whole state, and a fresh
        fence token over the one this instance restored or wrote last."""
        tagger = self.tagger
        tokens = self._tokens
        bits = self._rng.getrandbits
        out = []
        for key in keys:
            tally = tagger.tally(*key)
            if tally is None:
                continue
            expected = tagger.fence(key) or tokens.get(key, 0)
            out.append(TallyWrite(tally, dump_state(tagger, key), 1 + bits(62), expected))
        return out

    async def _place(self, j: Judgement, now: float) -> int | Reject:
        """The cycle ``j`` counts in (its series' clock), or its rejection. A restarted numbering
        opens an epoch: stored first (the first instance to store one sets its offset for all),
        then said in a log line, and ``j`` placed by the stored epoch."""
        started = j.cycle_started_at.timestamp() if j.cycle_started_at is not None else None
        stamp = j.series_epoch.timestamp() if j.series_epoch is not None else None
        placement = self.clock.place(j.series, j.cycle, started, now, stamp)
        if placement.cycle is None:
            return Reject(j, placement.reason)
        epoch = placement.epoch
        if epoch is None:
            return placement.cycle
        stored = await asyncio.to_thread(self.store.save_epoch, epoch)
        for e in stored:
            self.clock.adopt(e)
        again = self.clock.place(j.series, j.cycle, started, now, stamp)
        log.warning(
            "series %r restarted its cycle numbering (a generator on a fresh store?): cycle %d"
            " started after the newest cycle; its cycles count on as cycle %s onwards",
            j.series,
            j.cycle,
            again.cycle,
        )
        return again.cycle if again.cycle is not None else Reject(j, again.reason)

    def _behind(self, obs: Observation) -> str:
        t = self.tagger.tally(obs.target, obs.cohort, obs.group_id)
        window = f"cycles {t.window_from_cycle}–{t.cycle}" if t is not None else "newer cycles"
        return (
            f"cycle {obs.cycle} of series {obs.series!r} is older than group {obs.group_id}'s"
            f" window ({obs.target}/{obs.cohort} keeps {window}): a judgement too late to count"
        )

    async def check_quality(self, keys: set[tuple[str, str, str]]) -> int:
        """Label the gap groups among ``keys`` not labelled yet (at most ``quality_per_batch``);
        returns how many were checked. A failure here never fails the batch: the labels are a
        diagnosis, the tallies are stored already."""
        quality = self.quality
        if quality is None:
            return 0
        todo = sorted(
            {
                gid
                for target, cohort, gid in keys
                if (t := self.tagger.tally(target, cohort, gid)) is not None
                and t.status is GroupStatus.GAP
                and t.scenario == FACTUAL  # a RAGProbe scenario item is no fact of the corpus
                and quality.known(gid, self._version(gid)) is None
            }
        )[: self.quality_per_batch]
        if not todo:
            return 0
        try:
            specs = [s for s in await asyncio.to_thread(self._specs, todo) if s is not None]
            await quality.check_many(specs)
        except Exception as exc:  # a diagnosis must not stop the tallies
            log.warning("data-quality check of %d gap groups failed: %s", len(todo), exc)
            return 0
        return len(specs)

    async def check_all_gaps(self) -> int:
        """Label every current gap group not labelled yet (a batch run's final sweep)."""
        keys = {
            (t.target, t.cohort, t.group_id) for t in self.tagger.tallies(status=GroupStatus.GAP)
        }
        total = 0
        while n := await self.check_quality(keys):
            total += n
        return total

    def _version(self, group_id: str) -> int:
        spec = self.specs.get(group_id)
        return spec.expected.version if spec is not None else 1

    def _specs(self, group_ids: Sequence[str]) -> list[GroupSpec | None]:
        return [self.specs.get(g) or self._stored_spec(g) for g in group_ids]

    def _stored_spec(self, group_id: str) -> GroupSpec | None:
        """A group's spec from its stored judgements: every asked question and the expected
        answer (entities: the questions' quoted names)."""
        rows = self.store.group_judgements(group_id, limit=_SPEC_ROWS)
        if not rows:
            return None
        newest = max(rows, key=lambda r: (r.cycle, r.tallied_at))  # the current truth
        expected = Expected.model_validate(newest.expected)
        return GroupSpec(
            group_id=group_id,
            questions=tuple(dict.fromkeys(r.query for r in rows)),
            expected=expected.model_copy(update={"version": 1}),
            relevant_doc_ids=tuple(str(d) for d in newest.relevant_doc_ids or ()),
        )


#: A person's verdict as the tagger counts it.
_PERSON = {"correct": Verdict.CORRECT, "incorrect": Verdict.INCORRECT}

#: Stored judgements read to rebuild a group's spec: every form of its recent cycles.
_SPEC_ROWS = 2000


def _window_store() -> WindowBlobs:
    """A temporary file for the cold groups' windows; the heap when none can be made (a
    read-only file system without a writable temporary directory): the same reads, more
    memory, said once."""
    try:
        return FileBlobs()
    except OSError as exc:
        log.warning(
            "no temporary file for the cold groups' windows (%s): they are kept in memory;"
            " set TMPDIR to a writable directory",
            exc,
        )
        return MemoryBlobs()


def _key(t: GroupTally) -> GroupKey:
    return (t.target, t.cohort, t.group_id)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a partition's state is built: its containers are
    all alive (nothing to collect), and every collection walks all of them so far — a full
    collection every few thousand tallies doubled a restore's time. (Objects of the state die
    by their reference counts when a group leaves: no cycles among them.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # What was built lives as long as the partition is owned: out of the collector's
        # generations for good (a first collection after re-enabling walked every object
        # allocated meanwhile: a second per 100k groups), as state that is never scanned again
        gc.freeze()
        if enabled:
            gc.enable()
