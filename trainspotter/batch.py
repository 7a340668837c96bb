"""Checking logs: one log (`check_run`, `check_target`), or many on every core.

`check_run(run, config)` is the check every front end runs on a Run (`analyze`, `gate`,
`watch`, the Action): detect, order, link, then apply the config's `ignore` rules.
`check_target(target, config)` reads one discovered log as the config says and checks it.
`analyze_targets(targets, config, jobs=...)` checks each `discover.LogTarget` in a
process pool and yields one entry per target, in the targets' order, as each is ready:
its analyses, or the `TrainspotterError` that target raised (an unreadable log), so a
caller can report every log and decide itself (the gate lists every failure; `analyze`
stops at the first), and a sweep keeps only what its reports need of each log.
`analyze_paths(paths, config, jobs=...)` is `trainspotter analyze`'s front end: expand the
paths and globs as the gate does, analyse in parallel, raise the first error in path order.
`parallel_map` (results yielded in order) is the generic part, for any picklable
module-level function.

Why processes: the readers and detectors are numpy and pandas code that holds the GIL for
most of its Python-level glue, so threads would not use a second core; one process per
core does. Workers are started with `fork` where the platform has it (Linux): they inherit
the already-imported modules, so a pool of two starts in milliseconds instead of paying the
~1 s import of numpy/pandas per worker; elsewhere the platform default is used. Work is
handed out in chunks (about eight per worker, at most CHUNK_MAX logs each) so a thousand
small logs do not pay a round-trip each, and only IN_FLIGHT chunks per worker are handed
out ahead of the caller, so finished analyses do not pile up in memory; results come back
in order, so the output does not depend on which worker finished first. With one job, or
one target, nothing is forked.

Past one machine, `dask_map` is `parallel_map` on a Dask cluster (an existing scheduler,
or a LocalCluster started here); `analyze_targets(engine="dask")` sends each log as bytes
to the pure per-log check `sweep.check_log_bytes`, so a worker needs no access to our
disk. Dask does the scheduling; this module only submits chunks and gathers them in order.

On a TTY (`progress` given) a progress bar is drawn on it once the work has taken longer
than `PROGRESS_AFTER` seconds, and erased at the end. This module formats no report.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TextIO, TypeVar

from trainspotter.analysis import Analysis, analyze
from trainspotter.config import Config
from trainspotter.discover import LogTarget, expand_patterns
from trainspotter.errors import InputError, TrainspotterError, UsageError
from trainspotter.model import Run
from trainspotter.readers import read_runs
from trainspotter.readers.base import ReadOptions

T = TypeVar("T")
R = TypeVar("R")

PROGRESS_AFTER = 0.5
"""Seconds of work before a progress bar appears (short work stays quiet)."""
CHUNKS_PER_WORKER = 8
CHUNK_MAX = 64
"""Logs per task at most (a task's round trip costs milliseconds; a chunk of small logs
amortises it, and a bounded chunk keeps work spread over the workers and bounds how many
finished analyses wait in memory for the caller)."""
IN_FLIGHT = 4
"""Chunks per worker submitted ahead of the one being gathered."""
DASK_CONNECT_TIMEOUT = "10s"
BAR_WIDTH = 30


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


class _Failure:
    """A TrainspotterError carried back from a worker (exceptions with custom __init__
    arguments do not survive pickling as themselves)."""

    def __init__(self, exc: TrainspotterError) -> None:
        self.kind = type(exc)
        self.message = str(exc)
        self.path = getattr(exc, "path", None)
        self.problem = getattr(exc, "problem", None)

    def rebuild(self) -> TrainspotterError:
        if issubclass(self.kind, InputError) and self.path is not None:
            return InputError(self.path, self.problem or self.message)
        try:
            return self.kind(self.message)
        except TypeError:
            return TrainspotterError(self.message)


def _guarded(func: Callable[[T], R], item: T) -> R | _Failure:
    try:
        return func(item)
    except TrainspotterError as exc:
        return _Failure(exc)


class _Progress:
    """A one-line progress bar on a TTY, drawn only once work has taken a while."""

    def __init__(self, stream: TextIO | None, total: int, label: str) -> None:
        self.stream = stream
        self.total = total
        self.label = label
        self.started = time.monotonic()
        self.drawn = False

    def update(self, done: int) -> None:
        if self.stream is None or time.monotonic() - self.started < PROGRESS_AFTER:
            return
        filled = BAR_WIDTH * done // max(self.total, 1)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        self.stream.write(f"\r\x1b[2K[{bar}] {done}/{self.total} {self.label}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.stream is not None and self.drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def _executor(jobs: int) -> Executor:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context)


def _chunk_size(total: int, slots: int) -> int:
    """Items per task: about CHUNKS_PER_WORKER tasks per worker, at most CHUNK_MAX."""
    return max(1, min(CHUNK_MAX, total // (slots * CHUNKS_PER_WORKER)))


def parallel_map(
    func: Callable[[T], R],
    items: Sequence[T],
    *,
    jobs: int | None = None,
    progress: TextIO | None = None,
    label: str = "",
) -> Iterator[R | TrainspotterError]:
    """`func(item)` for each item on `jobs` processes (default: every core), each result
    yielded in order as soon as it and those before it are done; an item whose call
    raised a TrainspotterError gets that error in its place. Any other exception (a bug)
    propagates. `func` and the items must pickle. At most IN_FLIGHT chunks per worker are
    handed out ahead of the one being read, so results never pile up faster than the
    caller takes them."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    jobs = min(jobs, len(items))
    bar = _Progress(progress, len(items), label)
    try:
        if jobs <= 1:
            for done, item in enumerate(items, 1):
                yield _rebuilt(_guarded(func, item))
                bar.update(done)
            return
        call = functools.partial(_guarded_chunk, func)
        with _executor(jobs) as pool:
            submit = functools.partial(pool.submit, call)
            yield from _windowed(submit, _chunks(items, _chunk_size(len(items), jobs)), jobs, bar)
    finally:
        bar.close()


def _windowed(
    submit: Callable[[list[T]], Any], batches: Iterable[list[T]], slots: int, bar: _Progress
) -> Iterator[R | TrainspotterError]:
    """Submit the batches, at most `slots * IN_FLIGHT` ahead of the one being gathered
    (each a future of `_guarded_chunk`'s list), and yield their results in order."""
    window: collections.deque[Any] = collections.deque()
    done = 0

    def gathered() -> Iterator[R | TrainspotterError]:
        nonlocal done
        outputs: list[R | _Failure] = window.popleft().result()
        done += len(outputs)
        bar.update(done)
        yield from (_rebuilt(output) for output in outputs)

    for batch in batches:
        window.append(submit(batch))
        if len(window) >= slots * IN_FLIGHT:
            yield from gathered()
    while window:
        yield from gathered()


def dask_map(
    func: Callable[[T], R],
    items: Iterable[T],
    total: int,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: TextIO | None = None,
    label: str = "",
) -> Iterator[R | TrainspotterError]:
    """`parallel_map` on a Dask cluster: the one at `scheduler` (`tcp://host:port`), or a
    LocalCluster of `workers` processes (default: every core) started here and stopped
    when the iteration ends. Items are sent in chunks, a bounded number in flight (the
    items, e.g. logs' bytes, are made as they are sent), and the results come back in
    the items' order."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--engine dask needs the 'dask' extra: pip install 'trainspotter[dask]'"
        ) from None
    bar = _Progress(progress, total, label)
    with contextlib.ExitStack() as stack:
        stack.callback(bar.close)
        if scheduler is None:
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers or default_jobs(),
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",  # this machine's cluster listens on loopback only
                    dashboard_address=":0",  # any free port, never a clash on 8787
                    silence_logs=logging.ERROR,
                )
            )
            client = stack.enter_context(Client(cluster))
        else:
            try:
                client = stack.enter_context(Client(scheduler, timeout=DASK_CONNECT_TIMEOUT))
            except (OSError, ValueError) as exc:
                raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        slots = max(1, sum(client.nthreads().values()))
        call = functools.partial(_guarded_chunk, func)
        submit = functools.partial(client.submit, call, pure=False)
        yield from _windowed(submit, _chunks(items, _chunk_size(total, slots)), slots, bar)


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _guarded_chunk(func: Callable[[T], R], items: list[T]) -> list[R | _Failure]:
    return [_guarded(func, item) for item in items]


def _rebuilt(output: R | _Failure) -> R | TrainspotterError:
    return output.rebuild() if isinstance(output, _Failure) else output


def check_run(run: Run, config: Config) -> Analysis:
    """Detect, order, link, then apply the config's `ignore` rules: what every front end
    runs on a log (a suppressed finding stays, marked with its reason)."""
    return config.suppress(analyze(run, config.analysis_settings()))


def check_target(
    target: LogTarget, config: Config, fmt: str | None = None, run_name: str | None = None
) -> list[Analysis]:
    """Read one log with the config's format and aliases (`fmt` forces a reader) and
    check every run it holds (`readers.read_runs`: each run of a multi-run W&B export is
    a log of its own in the report; one Analysis for most logs); a log discovery already
    sniffed is read with the reader it found (`LogTarget.detected`), not sniffed again.
    Raises TrainspotterError when the log cannot be read."""
    forced = fmt or config.format_for(target.pattern, target.display)
    chosen = forced or target.detected
    options = ReadOptions(
        run_name=run_name, aliases=dict(config.aliases), display_path=target.display
    )
    runs = read_runs(target.path, fmt=chosen, options=options)
    return [check_run(run, config) for run in runs]


def analyze_targets(
    targets: Sequence[LogTarget],
    config: Config,
    *,
    fmt: str | None = None,
    run_name: str | None = None,
    jobs: int | None = None,
    progress: TextIO | None = None,
    engine: str = "processes",
    scheduler: str | None = None,
) -> Iterator[list[Analysis] | TrainspotterError]:
    """`check_target` for each target on `jobs` processes; per target, in the targets'
    order, its analyses (one per run the log holds) or the TrainspotterError, each
    yielded as soon as it is ready (a sweep's caller keeps only what it needs of each).
    With `engine="dask"`, each log is packed as bytes and checked by
    `sweep.check_log_bytes` on a Dask cluster (`dask_map`: `scheduler`, else a
    LocalCluster of `jobs` workers)."""
    if engine == "dask":
        return _analyze_on_dask(targets, config, fmt, run_name, jobs, scheduler, progress)
    work = functools.partial(check_target, config=config, fmt=fmt, run_name=run_name)
    return parallel_map(work, targets, jobs=jobs, progress=progress, label="logs")


def _analyze_on_dask(
    targets: Sequence[LogTarget],
    config: Config,
    fmt: str | None,
    run_name: str | None,
    jobs: int | None,
    scheduler: str | None,
    progress: TextIO | None,
) -> Iterator[list[Analysis] | TrainspotterError]:
    from trainspotter import sweep

    def packed() -> Iterator[sweep.LogBytes | _Failure]:
        for target in targets:
            try:
                yield sweep.pack(target)
            except TrainspotterError as exc:  # unreadable here: its error, in its place
                yield _Failure(exc)

    check = functools.partial(sweep.check_log_bytes, config=config, fmt=fmt, run_name=run_name)
    return dask_map(
        functools.partial(_unless_failed, check),
        packed(),
        len(targets),
        scheduler=scheduler,
        workers=jobs,
        progress=progress,
        label="logs",
    )


def _unless_failed(func: Callable[[T], R], item: T | _Failure) -> R:
    """`func(item)`, or the error of an item that could not be packed (sent along to keep
    its place in the order)."""
    if isinstance(item, _Failure):
        raise item.rebuild()
    return func(item)


def analyze_paths(
    paths: Sequence[str],
    config: Config,
    *,
    jobs: int | None = None,
    fmt: str | None = None,
    run_name: str | None = None,
    base: Path | None = None,
    progress: TextIO | None = None,
) -> list[Analysis]:
    """`trainspotter analyze`: each PATH (a file, a folder or a glob pattern) read and
    analysed with the config on `jobs` processes, in path order; the first unreadable log
    (in that order) or empty pattern raises."""
    base = base or Path(".")
    collected = expand_patterns(paths, base=base, allow_empty=config.allow_empty, config=config)
    if collected.failures:
        first = collected.failures[0]
        raise InputError(first.display, first.reason)
    analyses: list[Analysis] = []
    for result in analyze_targets(
        collected.targets, config, fmt=fmt, run_name=run_name, jobs=jobs, progress=progress
    ):
        if isinstance(result, TrainspotterError):
            raise result
        analyses.extend(result)
    return analyses


__all__ = [
    "analyze_paths",
    "analyze_targets",
    "check_run",
    "check_target",
    "default_jobs",
    "parallel_map",
]
