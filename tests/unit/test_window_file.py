"""The cold tallies' file store (adapters/window_file) and the in-heap default behind one port."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from groundwatch.adapters import window_file
from groundwatch.adapters.window_file import FileBlobs
from groundwatch.core.model import Verdict
from groundwatch.core.tagging import Observation, Tagger
from groundwatch.core.tagging.cold import ColdTally
from groundwatch.core.window_blobs import MemoryBlobs, WindowBlobs


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> WindowBlobs:
    return FileBlobs(tmp_path) if request.param == "file" else MemoryBlobs()


def test_put_get_free_and_reuse(store: WindowBlobs) -> None:
    a = store.put(b"alpha")
    b = store.put(b"\x00" * 1000)
    assert store.get(a) == b"alpha" and store.get(b) == b"\x00" * 1000
    assert store.size(b) == 1000
    store.free(a)
    c = store.put(b"gamma")
    assert c == a  # the freed slot is reused
    assert store.get(c) == b"gamma" and store.get(b) == b"\x00" * 1000


def test_the_file_is_unlinked_and_lives_outside_the_heap(tmp_path: Path) -> None:
    store = FileBlobs(tmp_path)
    store.put(b"x" * 4096)
    assert os.listdir(tmp_path) == []  # gone from the directory from the start
    assert store.file_bytes == 4096
    store.close()


def test_dead_bytes_are_rewritten_away_and_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(window_file, "_MIN_DEAD", 100)
    store = FileBlobs(tmp_path)
    slots = {i: store.put(bytes([i]) * 50) for i in range(20)}
    for i in range(15):
        store.free(slots[i])
    assert store.rewrites == 0  # a free never rewrites (it may run in a finalizer)
    extra = store.put(b"new")
    assert store.rewrites == 1
    assert store.file_bytes == 5 * 50 + 3
    for i in range(15, 20):
        assert store.get(slots[i]) == bytes([i]) * 50
    assert store.get(extra) == b"new"
    assert extra == slots[14]  # the last slot freed is the first reused
    with pytest.raises(KeyError, match="free"):
        store.get(slots[0])


def _observe(tagger: Tagger, g: int, cycle: int) -> None:
    for f in range(3):
        tagger.apply(
            Observation(
                f"p{g}-{f}-{cycle}", "t", "short", f"g{g}", f"f{f}",
                Verdict.CORRECT if (g + f) % 3 else Verdict.INCORRECT, group_forms=3,
                cycle=cycle, series="s",
            )
        )  # fmt: skip


def _cold_groups(tagger: Tagger, groups: int) -> None:
    """``groups`` groups observed in cycle 1, attributed, then made cold."""
    for g in range(groups):
        _observe(tagger, g, 1)
    tagger.refresh_causes()
    tagger.make_cold()
    tagger.make_cold()


def test_a_tagger_on_the_file_store_reads_as_on_the_heap(tmp_path: Path) -> None:
    """Compressed windows in the file read back the same; a thaw frees the slot."""
    store = FileBlobs(tmp_path)
    on_file, in_heap = Tagger(blobs=store), Tagger()
    for tagger in (on_file, in_heap):
        _cold_groups(tagger, 30)
    assert len(store) == 30
    assert all(isinstance(t, ColdTally) for t in on_file._tallies.values())
    assert list(on_file.observations()) == list(in_heap.observations())
    for g in range(30):
        assert on_file.tally("t", "short", f"g{g}") == in_heap.tally("t", "short", f"g{g}")
    for tagger in (on_file, in_heap):
        _observe(tagger, 0, 2)  # a write thaws group 0
    gc.collect()
    assert len(store) == 29  # its cold window was freed with the cold tally
    assert list(on_file.observations()) == list(in_heap.observations())


class _FullDisk(MemoryBlobs):
    """A store that takes a few windows, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def put(self, blob: bytes) -> int:
        if len(self) >= self.room:
            raise OSError(28, "No space left on device")
        return super().put(blob)


def test_a_store_that_cannot_take_a_window_leaves_the_tally_live() -> None:
    full, roomy = Tagger(blobs=_FullDisk(room=4)), Tagger()
    for tagger in (full, roomy):
        _cold_groups(tagger, 10)
    kinds = [isinstance(t, ColdTally) for t in full._tallies.values()]
    assert sum(kinds) == 4 and len(kinds) == 10  # the rest stayed live
    assert list(full.observations()) == list(roomy.observations())
    assert [full.tally("t", "short", f"g{g}") for g in range(10)] == [
        roomy.tally("t", "short", f"g{g}") for g in range(10)
    ]


@pytest.mark.parametrize("cycle", [2**31, 2**70])
def test_a_number_the_packed_record_cannot_hold_leaves_that_tally_live(cycle: int) -> None:
    """A cold tally packs its cycles in 32 bits (its counts in 16, its sequence and fence in
    64): a group whose cycle is beyond that stays live (and reads as before) while the others
    are made cold, and nothing is stored for it."""
    store = MemoryBlobs()
    tagger = Tagger(blobs=store)
    _observe(tagger, 0, cycle)
    _cold_groups(tagger, 3)  # groups 0..2 in cycle 1: group 0 holds both cycles
    before = tagger.tally("t", "short", "g0")
    tagger.make_cold()
    tagger.make_cold()
    kinds = {k[2]: isinstance(t, ColdTally) for k, t in tagger._tallies.items()}
    assert kinds == {"g0": False, "g1": True, "g2": True}
    assert len(store) == 2 and tagger.tally("t", "short", "g0") == before


def test_the_stage_keeps_windows_in_memory_without_a_temporary_directory(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from groundwatch.stages.analytics import stage

    def unwritable(*_a: object, **_k: object) -> FileBlobs:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(stage, "FileBlobs", unwritable)
    with caplog.at_level("WARNING"):
        store = stage._window_store()
    assert isinstance(store, MemoryBlobs)
    assert "TMPDIR" in caplog.text and "Read-only" in caplog.text


def test_a_dropped_store_closes_its_file(tmp_path: Path) -> None:
    store = FileBlobs(tmp_path)
    store.put(b"x")
    fd = store._fd
    os.fstat(fd)  # open
    del store
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)
