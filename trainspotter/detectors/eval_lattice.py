"""The eval set's size read off an accuracy's values, and the noise that size implies.

An accuracy (or exact match, top-k) measured on n eval samples is a fraction k/n: every
value it takes lies on the lattice of multiples of 1/n. The smallest n whose lattice holds
every logged value is the eval set's size or a divisor of it (when every count happened to
be a multiple of 2, say). Each evaluation's accuracy is then a binomial proportion, with a
standard error sqrt(p (1 - p) / n) about the checkpoint's true accuracy: the noise a small
eval set puts on every evaluation, whether or not a jitter estimate from a handful of
quantised evaluations sees it (a median of second differences of values that take three
distinct levels is mostly exact zeros).

Apart from `eval_noise.py` so the detector module stays one readable unit (< 500 lines).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from trainspotter.model import FloatArray

# Fractions of the eval samples: right / all. F1, precision, recall, AUC or IoU are not
# (their denominators change with the predictions, or they are not counts at all).
_COUNT_FRACTION = re.compile(r"acc|top1|top5|top_1|top_5|exact|match")

MAX_SAMPLES = 2000
"""Largest eval set searched for: beyond it a binomial standard error is under 1.2% and a
value's float32 or six-decimal rounding starts to fit lattices by chance."""

LATTICE_TOLERANCE = 1e-6
"""A value lies on the lattice when within this of a multiple of 1/n: float32 round-off
(6e-8 at 1.0) and six printed decimals (5e-7), not four (a log rounded to 0.0001 has no
lattice here: the bound is then not used, never invented)."""

MIN_DISTINCT = 4
"""Distinct values needed before a lattice is believed: with fewer, a coarse lattice (1/2,
1/4) fits by construction and would understate the eval set many times over."""


@dataclass(frozen=True)
class SampleLattice:
    """An accuracy's values on the lattice k/n, and the binomial noise of n samples."""

    samples: int
    """The smallest n whose multiples of 1/n hold every logged value."""
    scale: float
    """1 for a fraction, 100 for a percentage."""
    distinct: int
    """How many distinct values the metric took."""

    @property
    def step(self) -> float:
        """The lattice step, in the metric's units: one eval sample."""
        return self.scale / self.samples

    def standard_error(self, level: float) -> float:
        """Binomial standard error of one evaluation at accuracy `level` (metric units)."""
        p = min(max(level / self.scale, 0.0), 1.0)
        return self.scale * math.sqrt(p * (1.0 - p) / self.samples)


def is_count_fraction(metric: str) -> bool:
    """An accuracy-type metric: right answers over all eval samples."""
    return _COUNT_FRACTION.search(metric.lower()) is not None


def sample_lattice(
    metric: str, values: FloatArray, min_distinct: int = MIN_DISTINCT
) -> SampleLattice | None:
    """The lattice an accuracy-type metric's values lie on, or None (not accuracy-type, out
    of [0, 1] and [0, 100], fewer than `min_distinct` distinct values, or no n up to
    `MAX_SAMPLES` whose lattice holds them all).

    `min_distinct` below `MIN_DISTINCT` (at least 2) is for a caller that only needs a
    lower bound on how many samples a gap spans: the eval set's size is a multiple of the
    n found, so a gap of k steps of 1/n is at least k samples even when so few values
    understate the eval set."""
    if not is_count_fraction(metric):
        return None
    finite = values[np.isfinite(values)]
    if finite.size == 0 or float(finite.min()) < 0:
        return None
    high = float(finite.max())
    scale = 1.0 if high <= 1.0 else 100.0 if high <= 100.0 else None
    if scale is None:
        return None
    fractions = np.unique(finite / scale)
    if fractions.size < max(min_distinct, 2):
        return None
    if fractions.size > MAX_SAMPLES + 1:
        return None  # n samples give at most n + 1 distinct fractions
    # Candidates from a few values at once (vectorised), then each checked on all values.
    sizes = np.arange(2, MAX_SAMPLES + 1, dtype=np.float64)[:, None]
    probe = fractions[:: max(fractions.size // 8, 1)][:8]
    fits = np.all(np.abs(probe - np.round(probe * sizes) / sizes) <= LATTICE_TOLERANCE, axis=1)
    for n in (int(v) for v in sizes[fits, 0]):
        if bool(np.all(np.abs(fractions - np.round(fractions * n) / n) <= LATTICE_TOLERANCE)):
            return SampleLattice(n, scale, int(fractions.size))
    return None
