"""Live group tagging (GRAMMAR-Eval §4.3): the whole interface of the package.

Everything outside ``groundwatch.core.tagging`` imports from here, never from a submodule (an
import-linter contract keeps it so): the modules inside are free to change how a window is kept
— live, stored as plain state, or cold (every encoding is :mod:`groundwatch.core.tagging.codec`'s)
— as long as these names keep their meaning.

* the write model: :class:`Tagger`, fed :class:`Observation` s under a :class:`Window`, giving
  :class:`GroupTally` s, :class:`Transition` s and a :class:`Cause` per failed example;
* the read model: :class:`TaggerView` made by :func:`publish` after each batch, and
  :class:`TallyReads`, what both answer;
* a person's verdict counted instead of the judge's: :meth:`Tagger.override`, its
  :class:`Override` outcome;
* a tally's stored state: :func:`dump_state`, :func:`restore`, :func:`valid`;
* the status rules the tagger applies, for readers that combine statuses themselves, and the
  one mapping of a status to the cause of its wrong forms (:data:`STATUS_CAUSES`), with the
  words every report says a cause and an unsettled status in (:data:`CAUSE_MEANINGS`).
"""

from groundwatch.core.evidence import DECIDED_STATUSES, EvidenceRule, GroupStatus
from groundwatch.core.tagging.attribution import (
    CAUSE_MEANINGS,
    STATUS_CAUSES,
    UNSETTLED_MEANINGS,
    attribution_status,
    cause_of,
    judge_retrieval,
    retrieval_sufficient,
)
from groundwatch.core.tagging.overrides import HUMAN_VERDICTS, Override
from groundwatch.core.tagging.reads import TallyReads
from groundwatch.core.tagging.state import STATE_FORMAT, TallyState, dump_state, restore, valid
from groundwatch.core.tagging.status import flaky_forms, overall_status, status_of
from groundwatch.core.tagging.tagger import Tagger
from groundwatch.core.tagging.values import (
    FACTUAL,
    FLAKY_HISTORY,
    STALE_REASON,
    Cause,
    GroupKey,
    GroupTally,
    Observation,
    RetrievalEvidence,
    Transition,
    Window,
)
from groundwatch.core.tagging.view import TaggerView, publish
from groundwatch.core.tagging.windows import history_entry

__all__ = [
    "CAUSE_MEANINGS",
    "DECIDED_STATUSES",
    "FACTUAL",
    "FLAKY_HISTORY",
    "HUMAN_VERDICTS",
    "STALE_REASON",
    "STATE_FORMAT",
    "STATUS_CAUSES",
    "UNSETTLED_MEANINGS",
    "Cause",
    "EvidenceRule",
    "GroupKey",
    "GroupStatus",
    "GroupTally",
    "Observation",
    "Override",
    "RetrievalEvidence",
    "Tagger",
    "TaggerView",
    "TallyReads",
    "TallyState",
    "Transition",
    "Window",
    "attribution_status",
    "cause_of",
    "dump_state",
    "flaky_forms",
    "history_entry",
    "judge_retrieval",
    "overall_status",
    "publish",
    "restore",
    "retrieval_sufficient",
    "status_of",
    "valid",
]
