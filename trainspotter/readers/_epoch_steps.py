"""A step column that starts again at every epoch: counted across epochs.

Hand-written training loops often log the batch index within the epoch as `step` beside an
`epoch` column (`1,299,...`, `1,599,...`, `2,299,...`). Read as global steps, every epoch
after the first lands on the steps of the one before, and the last-wins rule for a step
logged twice keeps only the final epoch's points: a 50-epoch log became 2 points. When the
step goes back exactly where the epoch goes up, and nowhere else, the step is per epoch, and
the point's place in the run is (epoch - first epoch) x L + step, with L one more than the
largest step any epoch logged (so epochs are evenly spaced, a short last epoch included).

Not a per-epoch counter, and left to the other rules (`_appended.py`, last-wins): a step
that goes back while the epoch stays or goes back too (a resumed run, appended runs), a
step that goes back fewer than twice, an epoch that goes up while the step keeps rising (a
global step: Lightning's `metrics.csv`), rows with a step but no epoch, and a fractional
epoch (a progress fraction, not a counter).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from trainspotter.model import FloatArray, IntArray

BoolArray = npt.NDArray[np.bool_]

MIN_RESTARTS = 2
"""A step that starts again once is a resumed run; twice, each at a new epoch, is a
counter that resets."""


def steps_across_epochs(
    steps: IntArray, has_step: BoolArray, epoch: FloatArray, has_epoch: BoolArray
) -> tuple[IntArray, int] | None:
    """Global steps for a per-epoch step counter (module docstring) and the per-epoch
    length used, or None when the step column is not one."""
    if not bool(np.all(has_epoch[has_step])):
        return None
    rows = np.flatnonzero(has_step)
    step, ep = steps[rows], epoch[rows]
    if not bool(np.all(np.isfinite(ep))) or bool(np.any(ep != np.floor(ep))):
        return None
    step_move, epoch_move = np.diff(step), np.diff(ep)
    back, new_epoch = step_move < 0, epoch_move > 0
    if int(np.count_nonzero(back)) < MIN_RESTARTS or bool(np.any(epoch_move < 0)):
        return None
    if not bool(np.array_equal(back, new_epoch)):
        return None
    length = int(step.max()) + 1
    first = int(ep.min())
    out = steps.copy()
    out[rows] = (ep.astype(np.int64) - first) * length + step
    return out, length
