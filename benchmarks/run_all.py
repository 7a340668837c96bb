"""Every trainspotter benchmark, one table: `make bench` (or `python benchmarks/run_all.py`).

Run on demand only, never by the test suite. Each measurement runs in a fresh Python
process, so wall time includes the interpreter start and imports (what a user waits for)
and the peak RSS is that process' own (`os.wait4`'s rusage). The machine is shared, so
each case runs `--repeat` times (default 3) and the best is reported; CPU seconds (user +
system) are printed beside the wall time because they vary less under contention.

Cases (logs from `benchmarks/logs.py`, cached between runs):

1. `trainspotter analyze LOG` for CSV, JSONL, trainer_state.json, TensorBoard (each
   layout: one `simple_value` per event, TF1 merged summaries, TF2 tensor scalars) and
   printed (stdout) logs of 10k, 100k and 1M steps;
2. where the time of the 1M-step CSV analysis goes: reading, then each detector;
3. TensorBoard at 1M steps: tbparse (the first reader) against the direct TFRecord reader;
   JSON Lines at 1M lines: json against orjson;
4. `watch`: one poll after 100 rows are appended to a 1M-step log (each format), and the
   first poll (reading and analysing the whole log);
5. 1,000 small runs (300 steps each) with `analyze --jobs 1` and `--jobs N`;
6. `Monitor`: detection latency on the pathological examples, and the cost of
   `Monitor.log` on a 1M-step run (benchmarks/bench_monitor.py; in this process); the same
   latency for `watch` following each example as a growing file, 1 and 10 points per poll
   (benchmarks/bench_watch_latency.py).

Options: `--quick` (no 1M-step cases, one repeat: a smoke test), `--repeat K`,
`--json FILE` (also write the raw figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import logs  # noqa: E402  (benchmarks/logs.py, beside this file)
from bench_monitor import case_monitor, monitor_table  # noqa: E402
from bench_reports import case_reports, reports_table  # noqa: E402
from bench_watch_latency import watch_latency, watch_latency_table  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
TB_TAGS = (("train/loss", "loss"), ("train/lr", "lr"), ("train/grad_norm", "grad_norm"))
CASES = ("analyze", "profile", "readers", "watch", "batch", "monitor", "reports")
Result = dict[str, float]


# --------------------------------------------------------------------------- measuring


def run_child(command: Sequence[str], *, cwd: Path | None = None) -> Result:
    """Run `command` in a fresh process: wall seconds, CPU seconds and peak RSS (MiB) from
    the child's own rusage, plus the `key=value` numbers of a last line `bench: ...`."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )
    # Read the pipes to the end first (a full pipe would block the child), then reap the
    # child ourselves with wait4 to get its rusage.
    assert process.stdout is not None and process.stderr is not None
    stdout = process.stdout.read()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode not in (0, 1):
        raise RuntimeError(
            f"{' '.join(command)} exited {process.returncode}: {stderr.decode()[-2000:]}"
        )
    result: Result = {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,  # KiB on Linux
    }
    lines = stdout.decode(errors="replace").strip().splitlines()
    if lines and lines[-1].startswith("bench:"):
        for part in lines[-1][len("bench:") :].split():
            key, value = part.split("=")
            result[key] = float(value)
    return result


def best(runs: list[Result], key: str = "wall") -> Result:
    """The run with the lowest `key` (the least disturbed one on a shared machine)."""
    return min(runs, key=lambda r: r[key])


def repeat(times: int, make: Callable[[], Result], key: str = "wall") -> Result:
    runs = [make() for _ in range(times)]
    chosen = dict(best(runs, key))
    chosen["repeats"] = len(runs)
    return chosen


# --------------------------------------------------------------------------- child modes


def child_read(path: str, how: str) -> None:
    """Child process: read one log with `how` (direct | tbparse | json | orjson)."""
    started = time.perf_counter()
    if how == "tbparse":
        import warnings

        from tbparse import SummaryReader

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = SummaryReader(path, pivot=False, extra_columns={"wall_time"})
            points = len(reader.scalars) + len(reader.tensors)
    else:
        from trainspotter.readers import jsonl, read_log

        if how == "json":
            jsonl._fast_loads = None
        run = read_log(path)
        points = sum(len(s) for s in run.metrics.values())
    print(f"bench: seconds={time.perf_counter() - started:.4f} points={points}")


def child_profile(path: str) -> None:
    """Child process: CPU seconds of reading and of each detector on one log."""
    from trainspotter.analysis import link_findings, order_findings
    from trainspotter.detectors import DETECTORS
    from trainspotter.readers import read_log

    parts = []
    started = time.process_time()
    run = read_log(path)
    parts.append(f"read={time.process_time() - started:.4f}")
    findings = []
    for name, detector in DETECTORS.items():
        started = time.process_time()
        findings.extend(detector.detect(run, detector.Params()))
        parts.append(f"{name}={time.process_time() - started:.4f}")
    started = time.process_time()
    link_findings(run, order_findings(findings))
    parts.append(f"link={time.process_time() - started:.4f}")
    print("bench: " + " ".join(parts))


def child_watch(path: str, fmt: str, steps: str) -> None:
    """Child process: watch a copy of a 1M-step log; time the first poll, then one poll
    after 100 rows (steps) are appended, three times."""
    import io

    from trainspotter.config import load_config
    from trainspotter.watch import Watcher, WatchOptions

    target = Path(path)
    options = WatchOptions(patterns=(target.name,), config=load_config(None), base=target.parent)
    watcher = Watcher(options, io.StringIO(), io.StringIO())
    started = time.perf_counter()
    watcher.poll()
    first = time.perf_counter() - started
    polls = []
    analyses_before = sum(log.analyses for log in watcher.logs.values())
    for attempt in range(3):
        start = int(steps) + 1 + 100 * attempt
        if fmt == "hf":  # rewriting a big JSON costs memory: not the watcher's, so elsewhere
            subprocess.run(
                [sys.executable, __file__, "--child", "append", path, fmt, str(start)], check=True
            )
        else:
            append_steps(target, fmt, start, 100)
        started = time.perf_counter()
        watcher.poll()
        polls.append(time.perf_counter() - started)
    analyses = sum(log.analyses for log in watcher.logs.values()) - analyses_before
    print(f"bench: first={first:.4f} poll={min(polls):.5f} analyses_during_polls={analyses}")


def append_steps(target: Path, fmt: str, start: int, count: int) -> None:
    """Append `count` more steps of the benchmark curves to a log, as its writer would."""
    curves = logs.curves(count, seed=start, start=start, spike=False)
    if fmt == "csv":
        with target.open("a") as handle:
            handle.write(logs.csv_rows(curves))
    elif fmt == "jsonl":
        with target.open("a") as handle:
            handle.write(logs.jsonl_rows(curves))
    elif fmt == "hf":
        state = json.loads(target.read_text())
        extra = json.loads(logs.hf_state(curves))["log_history"]
        state["log_history"].extend(extra)
        partial = target.with_suffix(".tmp")
        partial.write_text(json.dumps(state, indent=2, sort_keys=True))
        partial.replace(target)
    elif fmt == "tensorboard":
        (event_file,) = target.glob("events.out.tfevents*")
        with event_file.open("ab") as handle:
            handle.write(tensorboard_records(curves))
    else:
        raise ValueError(fmt)


def tensorboard_records(curves: dict[str, object]) -> bytes:
    """TFRecord-framed scalar events, laid out as tensorboardX writes them."""
    import struct

    import numpy as np
    from tensorboard.compat.proto import event_pb2

    from trainspotter.readers._tfrecord import masked_crc32c

    out = bytearray()
    steps = np.asarray(curves["step"]).astype(np.int64).tolist()
    for i, step in enumerate(steps):
        for tag, key in (
            ("train/loss", "loss"),
            ("train/lr", "lr"),
            ("train/grad_norm", "grad_norm"),
        ):
            event = event_pb2.Event(wall_time=1.7e9 + step * 0.25, step=step)
            event.summary.value.add(tag=tag, simple_value=float(np.asarray(curves[key])[i]))
            payload = event.SerializeToString()
            length = struct.pack("<Q", len(payload))
            out += length + struct.pack("<I", masked_crc32c(length)) + payload
            out += struct.pack("<I", masked_crc32c(payload))
    return bytes(out)


def child_batch_make(folder: str, count: int) -> None:
    """Write `count` small CSV runs (300 steps) into `folder`."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        curves = logs.curves(300, seed=index)
        (target / f"run{index:04d}.csv").write_text(logs.CSV_HEADER + logs.csv_rows(curves))


# --------------------------------------------------------------------------- the cases


def python() -> list[str]:
    return [sys.executable]


def case_analyze(sizes: Sequence[int], times: int) -> list[dict[str, object]]:
    rows = []
    for fmt in (*logs.FORMATS, *logs.MORE_FORMATS):
        for steps in sizes:
            path = logs.log_path(fmt, steps)
            target = path.parent if fmt in logs.TB_LAYOUTS else path
            command = [*python(), "-m", "trainspotter", "analyze", str(target)]
            result = repeat(times, lambda command=command: run_child(command))
            rows.append(
                {
                    "format": fmt,
                    "steps": steps,
                    "mb": round(sum(f.stat().st_size for f in target_files(target)) / 1e6, 1),
                    **result,
                }
            )
            print(f"  analyze {fmt:11s} {steps:>9,}: {fmt_result(result)}", file=sys.stderr)
    return rows


def target_files(target: Path) -> list[Path]:
    return [p for p in target.iterdir() if p.is_file()] if target.is_dir() else [target]


def case_profile(times: int) -> dict[str, float]:
    path = logs.log_path("csv", 1_000_000)
    command = [*python(), str(HERE / "run_all.py"), "--child", "profile", str(path)]
    runs = [run_child(command) for _ in range(times)]
    keys = [k for k in runs[0] if k not in ("wall", "cpu", "rss")]
    return {key: min(run[key] for run in runs) for key in keys}


def case_readers(times: int, quick: bool) -> list[dict[str, object]]:
    rows = []
    steps = 100_000 if quick else 1_000_000
    tb = logs.log_path("tensorboard", steps)
    jl = logs.log_path("jsonl", steps)
    for label, path, how, n in (
        ("TensorBoard: tbparse SummaryReader", tb.parent, "tbparse", 1),
        ("TensorBoard: direct TFRecord + event_pb2", tb.parent, "direct", times),
        ("JSONL: json (stdlib)", jl, "json", times),
        ("JSONL: orjson, json fallback", jl, "orjson", times),
    ):
        command = [*python(), str(HERE / "run_all.py"), "--child", "read", str(path), how]
        result = repeat(n, lambda command=command: run_child(command), key="seconds")
        rows.append({"reader": label, "steps": steps, **result})
        print(f"  read {label}: {fmt_result(result)}", file=sys.stderr)
    return rows


def case_watch(times: int, quick: bool) -> list[dict[str, object]]:
    rows = []
    steps = 100_000 if quick else 1_000_000
    for fmt in logs.FORMATS:
        source = logs.log_path(fmt, steps)
        runs = []
        for _ in range(times):
            with tempfile.TemporaryDirectory() as folder:
                if fmt == "tensorboard":
                    target = Path(folder) / "tb"
                    shutil.copytree(source.parent, target)
                else:
                    target = Path(folder) / source.name
                    shutil.copyfile(source, target)
                command = [
                    *python(),
                    str(HERE / "run_all.py"),
                    "--child",
                    "watch",
                    str(target),
                    fmt,
                    str(steps),
                ]
                runs.append(run_child(command))
        result = dict(best(runs, "poll"))
        rows.append({"format": fmt, "steps": steps, **result})
        print(f"  watch {fmt}: {fmt_result(result)}", file=sys.stderr)
    return rows


def case_batch(times: int, count: int) -> list[dict[str, object]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        child_batch_make(folder, count)
        jobs_options = sorted({1, os.cpu_count() or 1})
        for jobs in jobs_options:
            command = [*python(), "-m", "trainspotter", "analyze", "*.csv", "--jobs", str(jobs)]
            result = repeat(times, lambda command=command: run_child(command, cwd=Path(folder)))
            rows.append({"runs": count, "jobs": jobs, **result})
            print(f"  batch --jobs {jobs}: {fmt_result(result)}", file=sys.stderr)
    return rows


# --------------------------------------------------------------------------- output


def fmt_result(result: Result) -> str:
    parts = []
    for key, value in result.items():
        parts.append(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}")
    return " ".join(parts)


def machine() -> list[str]:
    """nproc, the first lines of lscpu, memory, and the library versions."""
    import numpy
    import pandas

    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        lscpu = ""
    memory = "?"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        first = meminfo.read_text().splitlines()[0].split()
        memory = f"{int(first[1]) / 1024 / 1024:.1f} GiB"
    return [
        f"- nproc: {len(os.sched_getaffinity(0))}; load average at start: "
        f"{os.getloadavg()[0]:.1f} (the machine is shared with other work)",
        f"- memory: {memory}",
        f"- Python {platform.python_version()}, numpy {numpy.__version__}, "
        f"pandas {pandas.__version__}",
        "- lscpu (first lines):",
        "",
        *[f"      {line}" for line in lscpu.splitlines()[:10]],
    ]


def table(results: dict[str, object]) -> str:
    out = ["## Machine", "", *results["machine"], ""]  # type: ignore[misc]
    out += [
        "## analyze (fresh process, end to end)",
        "",
        "| format | steps | file MB | wall s | CPU s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in results["analyze"]:  # type: ignore[attr-defined]
        out.append(
            f"| {row['format']} | {row['steps']:,} | {row['mb']} | {row['wall']:.2f} | "
            f"{row['cpu']:.2f} | {row['rss']:.0f} |"
        )
    profile = results.get("profile")
    if profile:
        out += ["", "## 1M-step CSV: CPU seconds per phase (best of runs)", ""]
        out += ["| phase | CPU s |", "|---|---:|"]
        out += [f"| {k} | {v:.2f} |" for k, v in profile.items()]  # type: ignore[attr-defined]
    out += [
        "",
        "## readers",
        "",
        "| reader | steps | read s | peak RSS MB |",
        "|---|---:|---:|---:|",
    ]
    for row in results["readers"]:  # type: ignore[attr-defined]
        out.append(
            f"| {row['reader']} | {row['steps']:,} | {row['seconds']:.2f} | {row['rss']:.0f} |"
        )
    out += [
        "",
        "## watch: one poll after 100 new steps on a long log",
        "",
        "| format | steps | poll ms | analyses in those polls | first poll s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in results["watch"]:  # type: ignore[attr-defined]
        out.append(
            f"| {row['format']} | {row['steps']:,} | {row['poll'] * 1000:.1f} | "
            f"{row['analyses_during_polls']:.0f} | {row['first']:.2f} | {row['rss']:.0f} |"
        )
    out += ["", "## many runs: analyze over 300-step CSV runs", ""]
    out += ["| runs | --jobs | wall s | CPU s (all processes) |", "|---:|---:|---:|---:|"]
    for row in results["batch"]:  # type: ignore[attr-defined]
        out.append(f"| {row['runs']:,} | {row['jobs']} | {row['wall']:.2f} | {row['cpu']:.2f} |")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no 1M-step cases, one repeat")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--only", help=f"comma-separated cases: {','.join(CASES)}")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        if mode == "read":
            child_read(rest[0], rest[1])
        elif mode == "profile":
            child_profile(rest[0])
        elif mode == "watch":
            child_watch(rest[0], rest[1], rest[2])
        elif mode == "append":
            append_steps(Path(rest[0]), rest[1], int(rest[2]), 100)
        return 0
    times = 1 if args.quick else args.repeat
    sizes = SIZES[:2] if args.quick else SIZES
    only = set(args.only.split(",")) if args.only else set(CASES)
    results: dict[str, object] = {"machine": machine()}
    print("generating or reusing the logs in", logs.cache_dir(), file=sys.stderr)
    if "analyze" in only:
        results["analyze"] = case_analyze(sizes, times)
    if "profile" in only and not args.quick:
        results["profile"] = case_profile(times)
    if "readers" in only:
        results["readers"] = case_readers(times, args.quick)
    if "watch" in only:
        results["watch"] = case_watch(times, args.quick)
    if "batch" in only:
        results["batch"] = case_batch(times, 100 if args.quick else 1000)
    if "monitor" in only:
        results["monitor"] = {**case_monitor(args.quick), "watch_latency": watch_latency()}
    if "reports" in only:
        results["reports"] = case_reports(args.quick)
    for key in ("analyze", "readers", "watch", "batch"):
        results.setdefault(key, [])
    text = table(results)
    if "monitor" in results:
        monitor: dict[str, Any] = results["monitor"]  # type: ignore[assignment]
        lines = monitor_table(monitor) + watch_latency_table(monitor["watch_latency"])
        text += "\n".join(lines) + "\n"
    if "reports" in results:
        text += "\n".join(reports_table(results["reports"])) + "\n"  # type: ignore[arg-type]
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
