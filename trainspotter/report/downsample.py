"""Shape-preserving downsampling of a long series for drawing (the M4 method).

A chart `buckets` pixels wide cannot show more than a few points per pixel column. M4
(Jugel et al., "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB 2014)
keeps, for each pixel column, the first, last, smallest and largest point: the polyline
through them draws the same pixels as the full series, so a one-step spike survives
(an average or every-n-th point would erase it). At most 4 points per column are kept.

Vectorised: one pass of numpy reductions (`reduceat`) over the points, no Python loop
per point, so a 1,000,000-point series takes tens of milliseconds. This module selects
indices only: it does not decide the axis or draw.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IndexArray = npt.NDArray[np.int64]


def m4_indices(
    x: npt.NDArray[np.float64] | npt.NDArray[np.int64],
    y: npt.NDArray[np.float64],
    buckets: int,
) -> IndexArray:
    """Sorted indices of the points to draw: all of them when there are at most
    `4 * buckets`, else the first, last, minimum and maximum of each bucket of `x`.

    `x` must be sorted ascending and `y` finite (drop NaN/Inf before calling: they are
    marked separately, never drawn as values)."""
    n = int(x.shape[0])
    if n <= 4 * buckets or buckets < 1:
        return np.arange(n, dtype=np.int64)
    x_float = x.astype(np.float64)
    span = float(x_float[-1] - x_float[0]) or 1.0
    bucket = np.minimum(((x_float - x_float[0]) * (buckets / span)).astype(np.int64), buckets - 1)
    starts = np.flatnonzero(np.diff(bucket)) + 1
    starts = np.concatenate(([0], starts)).astype(np.int64)
    ends = np.concatenate((starts[1:] - 1, [n - 1])).astype(np.int64)
    counts = ends - starts + 1
    segment = np.repeat(np.arange(starts.shape[0]), counts)
    mins = np.minimum.reduceat(y, starts)
    maxs = np.maximum.reduceat(y, starts)
    argmins = _first_in_segment(y == mins[segment], segment)
    argmaxs = _first_in_segment(y == maxs[segment], segment)
    chosen = np.concatenate((starts, ends, argmins, argmaxs))
    return np.unique(chosen).astype(np.int64)


def _first_in_segment(mask: npt.NDArray[np.bool_], segment: IndexArray) -> IndexArray:
    """For each segment, the index of its first True in `mask` (every segment has one)."""
    hits = np.flatnonzero(mask)
    hit_segments = segment[hits]
    first = np.ones(hits.shape[0], dtype=bool)
    first[1:] = hit_segments[1:] != hit_segments[:-1]
    return hits[first].astype(np.int64)
