"""Balancing gap examples (GRAMMAR 002 §4.3, Table 3 "Balance Gap Examples"; 000 §4.2).

Accuracy = R × (1 − λ): when the compared cohorts carry different shares λ of examples in gap
groups, plain accuracy compares knowledge gaps rather than robustness. The authors balance λ by
generation — an equal number of text queries in every semantic group ("stratified sampling") — so
that with the gap groups identified over both cohorts (the *mutual* gap groups, as their
``MetricsForHypothesis.mutual_gap_tags``) λ is the same on both sides by construction. Results
collected without that control (a production dataset, the authors' own unbalanced files, forms
that erred or stayed undecided) are balanced here after the fact, by resampling: every semantic
group shared by the compared cohorts contributes exactly ``k`` forms to each cohort — drawn without
replacement when it has at least ``k``, all of them plus draws with replacement when it has fewer.

The draw is seeded and the seed reported, so a balanced number is reproducible. Answer numbers
(Acc, R, λ) are over the groups decided in every cohort; the retrieval number over the groups with
a retrieval judgement in every cohort (so files without answer judgements still balance their
retrieval accuracy).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GroupSample:
    """One semantic group in one cohort: its decided verdicts (True = correct), its forms'
    retrieval judgements (True = sufficient), and whether the group's status is decided and gap."""

    verdicts: tuple[bool, ...] = ()
    retrieval: tuple[bool, ...] = ()
    decided: bool = False
    gap: bool = False


@dataclass(frozen=True, slots=True)
class BalancedSide:
    """One cohort's numbers over the resampled examples."""

    examples: int = 0
    correct: int = 0
    gap_examples: int = 0
    retrieval_judged: int = 0
    retrieval_ok: int = 0

    @property
    def refined_n(self) -> int:
        return self.examples - self.gap_examples

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.examples if self.examples else None

    @property
    def refined_accuracy(self) -> float | None:
        return self.correct / self.refined_n if self.refined_n else None

    @property
    def lambda_(self) -> float | None:
        return self.gap_examples / self.examples if self.examples else None

    @property
    def retrieval_accuracy(self) -> float | None:
        return self.retrieval_ok / self.retrieval_judged if self.retrieval_judged else None


@dataclass(frozen=True, slots=True)
class Balanced:
    """The balanced numbers of the compared cohorts and how they were drawn."""

    seed: int
    forms_per_group: int
    groups: int  # shared groups decided in every cohort (the answer numbers)
    mutual_gap_groups: int
    retrieval_groups: int  # shared groups with a retrieval judgement in every cohort
    sides: dict[str, BalancedSide] = field(default_factory=dict)


def draw(rng: random.Random, items: Sequence[T], k: int) -> list[T]:
    """``k`` of ``items``: without replacement when there are enough, else every item once and
    the rest drawn with replacement (each group weighs exactly ``k``)."""
    if not items or k <= 0:
        return []
    first = items[0]
    if all(x == first for x in items):
        return [first] * k  # every draw gives the same: no need to spend random numbers
    if len(items) >= k:
        return rng.sample(list(items), k)
    return [*items, *(rng.choice(items) for _ in range(k - len(items)))]


def balance(
    samples: Mapping[str, Mapping[str, GroupSample]],
    *,
    seed: int = 0,
    forms_per_group: int | None = None,
) -> Balanced:
    """Resample ``samples`` (cohort → group id → sample) so every shared group weighs the same
    ``k`` forms in every cohort; ``k`` defaults to the most forms any shared group has in any
    cohort (nothing is thrown away from the best-covered group)."""
    cohorts = list(samples)
    # the first cohort's groups kept where every other cohort has them too: a set of every
    # cohort's group ids (and their intersection) was ~4 MB each at 500k probes
    shared = (
        sorted(g for g in samples[cohorts[0]] if all(g in samples[c] for c in cohorts[1:]))
        if cohorts
        else []
    )
    answer_groups = [
        g for g in shared if all(samples[c][g].decided and samples[c][g].verdicts for c in cohorts)
    ]
    retrieval_groups = [g for g in shared if all(samples[c][g].retrieval for c in cohorts)]
    k = forms_per_group
    if k is None:
        k = max(
            max((len(samples[c][g].verdicts) for g in answer_groups for c in cohorts), default=0),
            max(
                (len(samples[c][g].retrieval) for g in retrieval_groups for c in cohorts), default=0
            ),
        )
    mutual = {g for g in answer_groups if all(samples[c][g].gap for c in cohorts)}
    rng = random.Random(f"groundwatch-balance:{seed}")
    sides: dict[str, BalancedSide] = {}
    for c in cohorts:
        examples = correct = gap_examples = judged = ok = 0
        for g in answer_groups:
            drawn = draw(rng, samples[c][g].verdicts, k)
            examples += len(drawn)
            correct += sum(drawn)
            if g in mutual:
                gap_examples += len(drawn)
        for g in retrieval_groups:
            drawn = draw(rng, samples[c][g].retrieval, k)
            judged += len(drawn)
            ok += sum(drawn)
        sides[c] = BalancedSide(examples, correct, gap_examples, judged, ok)
    return Balanced(
        seed=seed,
        forms_per_group=k,
        groups=len(answer_groups),
        mutual_gap_groups=len(mutual),
        retrieval_groups=len(retrieval_groups),
        sides=sides,
    )
