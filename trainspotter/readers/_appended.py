"""Logs that hold several runs appended one after another: keep the last run.

Keras' `CSVLogger(append=True)`, a JSONL writer opened in append mode, or `python train.py
>> train.log` run twice all leave one file with two runs in it. Read as one run, the second
run's first points look like the first run getting much worse (a loss back at its starting
value, "rose 7000% above its best"). The CSV/Keras, JSONL and stdout readers therefore
look for a restart and analyse the last run only, saying so in a note. HF
`trainer_state.json` (a resumed run: the last write wins), Lightning's `metrics.csv`
(its `step` column rule) and the event-file formats keep their own rules and do not use this.

Rule: a restart is a point in file order where the step counter drops back to at or below
the first step seen, in every metric at once (each metric with two points or more restarts
the same number of times, so one metric whose step goes backwards is not a restart), and
every run so cut holds at least two points of each metric (a lone point logged out of order
is not a run). Logs
without a step counter (stdout lines numbered by position) use their `epoch` metric as the
clock: a restart is where it drops back into the first epoch (to at or below
max(first epoch seen, 1)), and the last run starts at that step for every metric.

False-positive modes: a run resumed from a checkpoint written in its first epoch or at its
first logged step looks like a new run, and the part before the resume is then not analysed
(the note says so); a metric whose steps restart on their own every epoch (a per-epoch
batch index used as the step) restarts in every metric at once only if the whole log does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from trainspotter.model import IntArray

EPOCH_METRIC = "epoch"


@dataclass(frozen=True)
class LastRun:
    """Where the last of several appended runs starts."""

    runs: int
    """How many runs the log holds."""
    starts: tuple[int, ...] | None
    """Per column (in the order given), the file position where its last run starts;
    None when the cut is a step (`from_step`)."""
    from_step: int | None = None
    """The step where the last run starts, for logs whose epoch metric restarts."""


def _restarts(steps: IntArray) -> list[int]:
    """File positions where `steps` drops back to at or below its first value."""
    if steps.shape[0] < 2:
        return []
    back = (steps[1:] < steps[:-1]) & (steps[1:] <= steps[0])
    restarts = [int(i) + 1 for i in np.flatnonzero(back)]
    bounds = [0, *restarts, steps.shape[0]]
    if any(end - start < 2 for start, end in pairwise(bounds)):
        return []  # a "run" of one point is a step logged out of order, not a run
    return restarts


def find_last_run(
    names: Sequence[str], steps: Sequence[IntArray], epoch_values: np.ndarray | None
) -> LastRun | None:
    """The last run of an appended log, or None when the log holds one run.

    `steps[i]` are column `names[i]`'s steps in file order; `epoch_values` the epoch
    metric's values in file order (its steps are `steps[names.index("epoch")]`).
    """
    counts, starts = [], []
    for column_steps in steps:
        restarts = _restarts(column_steps)
        if column_steps.shape[0] >= 2:
            counts.append(len(restarts))
        starts.append(restarts[-1] if restarts else 0)
    if counts and min(counts) >= 1 and len(set(counts)) == 1:
        return LastRun(runs=counts[0] + 1, starts=tuple(starts))
    if epoch_values is None or EPOCH_METRIC not in names or epoch_values.shape[0] < 2:
        return None
    epoch_steps = steps[list(names).index(EPOCH_METRIC)]
    if bool(np.any(np.diff(epoch_steps) < 0)):
        return None  # the step counter itself goes back: not a clock to cut by
    finite = np.isfinite(epoch_values)
    if not bool(np.all(finite)):
        return None
    first_epoch = max(float(epoch_values[0]), 1.0)
    back = (epoch_values[1:] < epoch_values[:-1]) & (epoch_values[1:] <= first_epoch)
    positions = np.flatnonzero(back)
    if positions.size == 0:
        return None
    return LastRun(
        runs=int(positions.size) + 1,
        starts=None,
        from_step=int(epoch_steps[int(positions[-1]) + 1]),
    )
