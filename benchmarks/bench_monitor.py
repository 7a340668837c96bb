"""`trainspotter.Monitor` benchmarks for `make bench` (run_all.py's `monitor` case).

1. **Detection latency**: each pathological example's `trainer_state.json` (the example
   generator's real runs; `metrics.csv` where a pathology is visible only there) is
   replayed point by point through a Monitor (`trainspotter.monitor.replay`, one `log`
   call per point, with the planned length). For
   each pathology in `examples/expected.json`, the onset is its recorded step (`step`,
   `first_step`, `first_step_below_1e-3`, `best_step`, else the start of its
   `step_range`); the latency is the step of the first point whose `log` call returned a
   finding of the pathology's detector covering a step at or after the onset, minus the
   onset. "finish" means the finding came only from `finish()` (a whole-run verdict).
2. **Cost of `Monitor.log`**: a synthetic run of `points` steps (benchmarks/logs.py's
   curves: loss, lr, grad_norm, step_time, an eval loss every 500 steps) logged one step
   per call, timed over the whole loop: mean microseconds per call, amortised analyses
   included, and how many full analyses ran.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import logs  # noqa: E402  (benchmarks/logs.py, beside this file)

if TYPE_CHECKING:
    from trainspotter.model import Finding

ONSET_KEYS = ("step", "first_step", "first_step_below_1e-3", "best_step")


def onset(pathology: dict[str, Any]) -> int:
    """The step the example generator recorded as the pathology's start."""
    for key in ONSET_KEYS:
        if isinstance(pathology.get(key), int):
            return int(pathology[key])
    return int(pathology["step_range"][0])


def pathological_examples() -> Iterator[tuple[str, dict[str, Any], Path]]:
    """Each pathological example of `examples/expected.json`: its name, its entry, and the
    log the latency replays (the one that shows every pathology: a throughput drop needs
    wall times, so `visible_in` wins over `trainer_state.json`)."""
    expected = json.loads((REPO / "examples" / "expected.json").read_text(encoding="utf-8"))
    for name, example in expected.items():
        if example["healthy"]:
            continue
        shown = [p.get("visible_in", []) for p in example["pathologies"]]
        log = next((v[0] for v in shown if v and "trainer_state.json" not in v), None)
        log = log or example["files"][0].rstrip("/")
        yield name, example, REPO / "examples" / name / log


def latency_rows(
    name: str,
    example: dict[str, Any],
    news: list[tuple[int, Finding]],
    final: list[Finding],
) -> list[dict[str, Any]]:
    """One row per pathology of `example`: `news` are (step reached, finding) in the order
    the replay reported them, `final` the findings of the closing analysis."""
    rows: list[dict[str, Any]] = []
    for pathology in example["pathologies"]:
        start = onset(pathology)
        detector = pathology["detector"]
        found = [step for step, f in news if f.detector == detector and f.step_end >= start]
        in_final = any(f.detector == detector for f in final)
        rows.append(
            {
                "example": name,
                "kind": pathology["kind"],
                "detector": detector,
                "onset": start,
                "reported_at": found[0] if found else ("finish" if in_final else None),
                "latency": found[0] - start if found else None,
            }
        )
    return rows


def latency() -> list[dict[str, Any]]:
    """One row per pathology of every pathological example."""
    import trainspotter
    from trainspotter.monitor import replay

    rows: list[dict[str, Any]] = []
    for name, example, log in pathological_examples():
        run = trainspotter.analyze(log).run
        monitor = trainspotter.Monitor(
            max_steps=run.meta.get("max_steps"), source_format=run.source_format
        )
        news = [(point.step, f) for point in replay(run, monitor) for f in point.news]
        rows += latency_rows(name, example, news, monitor.finish().findings)
    return rows


def log_cost(points: int) -> dict[str, float]:
    """Mean microseconds per `Monitor.log` call over a run of `points` steps."""
    import trainspotter

    c = logs.curves(points)
    columns = {
        "loss": c["loss"].tolist(),
        "lr": c["lr"].tolist(),
        "grad_norm": c["grad_norm"].tolist(),
        "step_time": c["step_time"].tolist(),
    }
    steps = c["step"].astype(int).tolist()
    evals = c["eval_loss"].tolist()
    monitor = trainspotter.Monitor()
    log = monitor.log
    loss, lr, grad, step_time = (columns[k] for k in ("loss", "lr", "grad_norm", "step_time"))
    started = time.perf_counter()
    for i, step in enumerate(steps):
        if math.isnan(evals[i]):
            log(step, loss=loss[i], lr=lr[i], grad_norm=grad[i], step_time=step_time[i])
        else:
            log(
                step,
                loss=loss[i],
                lr=lr[i],
                grad_norm=grad[i],
                step_time=step_time[i],
                eval_loss=evals[i],
            )
    seconds = time.perf_counter() - started
    return {
        "points": points,
        "us_per_log": seconds / points * 1e6,
        "seconds": seconds,
        "analyses": monitor.analyses,
    }


def case_monitor(quick: bool) -> dict[str, Any]:
    """Both measurements (100k steps with --quick, else 1M)."""
    return {"latency": latency(), "cost": log_cost(100_000 if quick else 1_000_000)}


def monitor_table(result: dict[str, Any]) -> list[str]:
    """The markdown lines for run_all's table."""
    out = [
        "",
        "## Monitor: detection latency (examples replayed point by point)",
        "",
        "| example | pathology | detector | onset step | first reported at | steps after onset |",
        "|---|---|---|---:|---:|---:|",
    ]
    for row in result["latency"]:
        at = row["reported_at"]
        late = row["latency"]
        out.append(
            f"| {row['example']} | {row['kind']} | {row['detector']} | {row['onset']} | "
            f"{'not reported' if at is None else at} | {'-' if late is None else late} |"
        )
    cost = result["cost"]
    out += [
        "",
        "## Monitor.log: cost per call",
        "",
        "| steps | metrics per call | mean us per call | total s | full analyses |",
        "|---:|---:|---:|---:|---:|",
        f"| {cost['points']:,} | 4-5 | {cost['us_per_log']:.1f} | {cost['seconds']:.1f} | "
        f"{cost['analyses']} |",
    ]
    return out


if __name__ == "__main__":
    print("\n".join(monitor_table(case_monitor("--quick" in sys.argv))))
