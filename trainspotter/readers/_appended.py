"""Logs that hold several runs appended one after another: each run is its own log.

Keras' `CSVLogger(append=True)`, a JSONL writer opened in append mode, or `python train.py
>> train.log` run twice all leave one file with two runs in it. Read as one run, the second
run's first points look like the first run getting much worse (a loss back at its starting
value, "rose 7000% above its best"). The CSV/Keras, JSONL and stdout readers therefore
look for restarts and cut the file into its runs, named "1", "2", ... in file order. One
rule, as for a W&B export of several runs: every run is checked, each as its own log in the
report (`readers.read_runs`, what `analyze` and `gate` call), the latest first, each with a
note saying which run of how many it is and its steps; `--run N` reads run N alone, and a
reader asked for no run gives the latest (what `watch` follows). HF `trainer_state.json` (a
resumed run: the last write wins), Lightning's `metrics.csv` (its `step` column rule) and
the event-file formats keep their own rules and do not use this.

Rule: a restart is a point in file order where the step counter drops back to at or below
the first step seen, in every metric at once (each metric with two points or more restarts
the same number of times, so one metric whose step goes backwards is not a restart), and
every run so cut holds at least two points of each metric (a lone point logged out of order
is not a run). Logs
without a step counter (stdout lines numbered by position) use their `epoch` metric as the
clock: a restart is where it drops back into the first epoch (to at or below
max(first epoch seen, 1)), and each run starts at that step for every metric.

False-positive modes: a run resumed from a checkpoint written in its first epoch or at its
first logged step looks like a new run, and its two parts are then reported as two runs
(each note says so); a metric whose steps restart on their own every epoch (a per-epoch
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
class AppendedRuns:
    """Where each of several appended runs starts, in file order."""

    runs: int
    """How many runs the log holds."""
    starts: tuple[tuple[int, ...], ...] | None
    """Per column (in the order given), the file position where each run starts (the
    first at 0); None when the cut is a step (`step_starts`)."""
    step_starts: tuple[int, ...] | None = None
    """For logs whose epoch metric restarts: the step where each run after the first
    starts (the same for every metric)."""

    def keep(self, column: int, steps: IntArray, run: int) -> np.ndarray:
        """Mask of column `column`'s points (its `steps`, in file order) in run `run`
        (0-based)."""
        if self.starts is not None:
            bounds = (*self.starts[column], steps.shape[0])
            position = np.arange(steps.shape[0])
            inside: np.ndarray = (position >= bounds[run]) & (position < bounds[run + 1])
            return inside
        cuts = self.step_starts or ()
        low = cuts[run - 1] if run > 0 else None
        high = cuts[run] if run < len(cuts) else None
        keep = np.ones(steps.shape[0], dtype=bool)
        if low is not None:
            keep &= steps >= low
        if high is not None:
            keep &= steps < high
        return keep


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


def find_runs(
    names: Sequence[str], steps: Sequence[IntArray], epoch_values: np.ndarray | None
) -> AppendedRuns | None:
    """The runs of an appended log, or None when the log holds one run.

    `steps[i]` are column `names[i]`'s steps in file order; `epoch_values` the epoch
    metric's values in file order (its steps are `steps[names.index("epoch")]`).
    """
    counts, starts = [], []
    for column_steps in steps:
        restarts = _restarts(column_steps)
        if column_steps.shape[0] >= 2:
            counts.append(len(restarts))
        starts.append(restarts)
    if counts and min(counts) >= 1 and len(set(counts)) == 1:
        runs = counts[0] + 1
        # A column with under two points has no restarts of its own: all its points are
        # placed in the run its position falls in, which the other columns cannot tell, so
        # it goes with the latest run (as when only the latest run was read).
        return AppendedRuns(
            runs=runs,
            starts=tuple(
                (0, *found) if found else (0,) * runs
                for found, column in zip(starts, steps, strict=True)
            ),
        )
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
    return AppendedRuns(
        runs=int(positions.size) + 1,
        starts=None,
        step_starts=tuple(int(epoch_steps[int(p) + 1]) for p in positions),
    )
