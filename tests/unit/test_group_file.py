"""A dataset read from its file as cycles walk it (``GroupFile``) is the list it replaced: the
same groups in the same order, the same picks when sampled, the same errors for a bad file —
and it keeps reading what was validated even when the file is rewritten under a running
monitor."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest

from groundwatch.adapters.db.datasets import GroupFile, read_jsonl, write_jsonl
from groundwatch.app.datasets import load_dataset
from groundwatch.core.model import Expected, SemanticGroup, TextForm
from groundwatch.errors import ConfigError
from groundwatch.stages.generator.planner import WithFresh, sample_groups


def _group(i: int) -> SemanticGroup:
    return SemanticGroup(
        group_id=f"g{i}",
        dataset_id="d",
        sql="SELECT city FROM clients WHERE name = :name",
        params={"name": f"Client {i}"},
        answer=Expected(values=[f"City {i}"]),
        forms=[
            TextForm(form_id=f"g{i}-s", cohort="short", text=f"City of Client {i}?"),
            TextForm(form_id=f"g{i}-l", cohort="long", text=f"Where is Client {i} located?"),
        ],
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "groups.jsonl"
    write_jsonl([_group(i) for i in range(40)], path)
    # a blank line and a last line without its newline: both as a file may come
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n\n", 1).rstrip(b"\n"))
    return path


def test_a_group_file_is_the_list_it_replaces(dataset: Path) -> None:
    groups = GroupFile(dataset)
    listed = read_jsonl(dataset)
    assert len(groups) == len(listed) == 40
    assert list(groups) == listed
    assert list(groups) == listed  # a second walk reads it again
    assert groups[0] == listed[0] and groups[-1] == listed[-1] and groups[17] == listed[17]
    assert groups[3:9:2] == listed[3:9:2]
    with pytest.raises(IndexError):
        groups[40]
    walk = iter(groups)
    assert next(walk) == listed[0]
    assert groups[5] == listed[5]  # a lookup in the middle of a walk does not move it
    assert next(walk) == listed[1]


def test_sampling_a_group_file_picks_what_sampling_the_list_picked(dataset: Path) -> None:
    groups, listed = GroupFile(dataset), read_jsonl(dataset)
    for seed in range(5):
        assert sample_groups(groups, 7, random.Random(seed)) == sample_groups(
            listed, 7, random.Random(seed)
        )
    assert sample_groups(groups, 0, random.Random(1)) is groups  # all: not copied into memory


def test_fresh_versions_replace_only_their_groups(dataset: Path) -> None:
    groups = GroupFile(dataset)
    newer = _group(3).model_copy(update={"answer": Expected(values=["Elsewhere"], version=2)})
    view = WithFresh(groups, {"g3": newer})
    assert len(view) == 40
    assert view[3] == newer and list(view)[3] == newer
    assert [g.group_id for g in view] == [g.group_id for g in groups]
    assert list(view)[4] == groups[4]


def test_the_file_rewritten_after_loading_does_not_change_what_cycles_read(
    dataset: Path,
) -> None:
    groups = GroupFile(dataset)
    before = list(groups)
    write_jsonl([_group(100)], dataset)
    assert list(groups) == before and len(groups) == 40


def test_walks_read_in_chunks_whatever_the_line_lengths(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = read_jsonl(dataset)
    for chunk in (1, 100, 350, 1 << 20):  # smaller than a line, a few lines, the whole file
        monkeypatch.setattr(GroupFile, "CHUNK", chunk)
        assert list(GroupFile(dataset)) == listed


@pytest.fixture
def spools(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the temporary files made while the test runs."""
    made: list[str] = []
    mkstemp = tempfile.mkstemp

    def recorded(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, name = mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        made.append(name)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", recorded)
    return made


def test_the_spool_is_unlinked_at_once_and_closed_with_the_object(
    dataset: Path, spools: list[str]
) -> None:
    groups = GroupFile(dataset)
    # a process killed outright leaves nothing behind: the name is gone, the descriptor reads
    assert spools and not os.path.exists(spools[0])
    assert len(list(groups)) == 40
    fd = groups._fd
    groups.close()
    with pytest.raises(OSError):
        os.fstat(fd)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b'{"group_id": "x"', "line 3, column"),
        (b'{"group_id": "x"}', "line 3: not a semantic group"),
    ],
)
def test_a_bad_line_fails_at_load_naming_it_and_leaves_no_spool(
    tmp_path: Path, spools: list[str], line: bytes, said: str
) -> None:
    import gc

    path = tmp_path / "bad.jsonl"
    write_jsonl([_group(0), _group(1)], path)
    path.write_bytes(path.read_bytes() + line + b"\n")
    with pytest.raises(ValueError, match=said):
        GroupFile(path)
    with pytest.raises(ConfigError, match=f"--dataset {path}: {said}"):
        load_dataset(path)
    gc.collect()
    assert len(spools) == 2 and not any(os.path.exists(p) for p in spools)
