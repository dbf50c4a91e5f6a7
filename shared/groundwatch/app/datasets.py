"""Loading a dataset: a ``groundwatch gen`` JSONL file, the built-in demo domain, or groups
generated from the source database — for ``run``, ``groundwatch.evaluate`` and the generator
service alike.

A file that cannot be read or holds no semantic group is a
:class:`~groundwatch.errors.ConfigError` naming where it came from (exit 2 on the command line).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groundwatch.core.model import SemanticGroup
from groundwatch.errors import ConfigError

if TYPE_CHECKING:
    from groundwatch.app.settings import GeneratorSettings


def load_dataset(path: str | Path, what: str = "--dataset") -> Sequence[SemanticGroup]:
    """The dataset file's groups, validated now and read from disk as cycles walk them (a
    :class:`~groundwatch.adapters.db.datasets.GroupFile`: memory does not grow with the file);
    ``what`` names it in errors (an option or a word)."""
    from groundwatch.adapters.db.datasets import GroupFile

    try:
        groups = GroupFile(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{what} {path}: {' '.join(str(exc).split())[:300]}") from None
    if not groups:
        raise ConfigError(
            f"{what} {path}: no semantic groups in the file (is it the output of"
            " `groundwatch gen`?)"
        )
    return groups


def dataset_groups(dataset: str | Path | Sequence[SemanticGroup]) -> Sequence[SemanticGroup]:
    """A dataset given from Python: a file (as :func:`load_dataset`) or the groups themselves."""
    groups = load_dataset(dataset, "dataset") if isinstance(dataset, str | Path) else list(dataset)
    if not groups:
        raise ConfigError("the dataset has no semantic groups")
    return groups


def write_dataset(groups: Sequence[SemanticGroup], out: Path) -> int:
    """Write the groups as JSONL (one semantic group per line); how many were written."""
    from groundwatch.adapters.db.datasets import write_jsonl

    return write_jsonl(groups, out)


def service_dataset(settings: GeneratorSettings) -> tuple[Sequence[SemanticGroup], str | None]:
    """The dataset the generator service probes — the built-in demo domain, groups generated
    from ``GW_SOURCE_URL`` (steered by the include/exclude/pii settings), or a JSONL file of
    semantic groups — and the source database whose answers cycles re-read (the demo's own, or
    ``GW_SOURCE_URL``)."""
    from dataclasses import replace

    from groundwatch.core.generation.steering import Steering, split_patterns

    steering = Steering(
        include_tables=split_patterns(settings.include_tables),
        exclude_tables=split_patterns(settings.exclude_tables),
        exclude_columns=split_patterns(settings.exclude_columns),
        pii=settings.pii,
    )
    if settings.dataset == "demo":
        from groundwatch.demo import DEMO_RULES, demo_dataset

        domain, groups = demo_dataset(
            k=settings.forms,
            cohorts=tuple(settings.cohorts),
            rule_config=replace(DEMO_RULES, key_ratio=settings.key_ratio),
            steering=steering,
            list_answers=settings.allow_list_answers,
        )
        return list(groups), settings.source_url or domain.db_url
    if settings.dataset == "source":
        from groundwatch.adapters.sources.generate import generate_groups
        from groundwatch.core.generation.rules import RuleConfig

        if not settings.source_url:
            raise ConfigError("GW_DATASET=source needs GW_SOURCE_URL")
        result = generate_groups(
            settings.source_url,
            k=settings.forms,
            cohorts=tuple(settings.cohorts),
            rule_config=RuleConfig(key_ratio=settings.key_ratio),
            steering=steering,
            list_answers=settings.allow_list_answers,
            policy=settings.source_policy(),
        )
        return result.groups, settings.source_url
    from groundwatch.adapters.db.datasets import GroupFile

    return GroupFile(settings.dataset), settings.source_url
