"""divergence: non-finite losses or gradients, and a loss drifting upward for good."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from trainspotter.detectors import stats
from trainspotter.model import Finding, FloatArray, Run, Series, Severity
from trainspotter.names import EVAL_LOSS, GRAD_NORM, LR, TRAIN_LOSS, is_eval, is_loss_like

NAME = "divergence"


@dataclass(frozen=True)
class DivergenceParams:
    """Parameters of the divergence detector (defaults explained in `DivergenceDetector`)."""

    merge_gap: int = 3
    """Non-finite points separated by at most this many finite points are one episode."""
    max_skip_points: int = 16
    """A gradient-only non-finite episode of at most this many logged points, with the loss
    finite, is a mixed-precision overflow skip (info), not a divergence."""
    frequent_skip_fraction: float = 0.1
    """Overflow skips on more than this fraction of the logged gradient points: warning."""
    drift_min_points: int = 20
    """Abstain from the drift test on a loss with fewer finite points than this."""
    drift_min_tail_points: int = 10
    """The rising stretch (after the loss's smoothed minimum) needs this many points..."""
    drift_min_tail_fraction: float = 0.1
    """...and must cover at least this fraction of the logged span."""
    drift_alpha: float = 0.01
    """Mann-Kendall significance level for a rise to the end of the log."""
    monotone_tau: float = 0.6
    """A climb whose Kendall tau reaches this counts as a trend whatever its p-value (see
    `_rising`)..."""
    monotone_min_points: int = 20
    """...when it has at least this many points (on fewer, the minimum it starts from is
    itself a noise dip often enough to fake order)."""
    drift_min_rise: float = 0.1
    """The Theil-Sen rise must be at least this fraction of the loss's level..."""
    drift_noise_multiple: float = 3.0
    """...and at least this many point-to-point noise sigmas."""
    transient_factor: float = 2.0
    """A climb that came back counts when the smoothed loss reached this multiple of its
    lowest level so far..."""
    transient_noise_multiple: float = 6.0
    """...and this many smoothing errors above it..."""
    transient_alpha: float = 0.01
    """...and the climb is a rank trend at this significance level."""


@dataclass(frozen=True)
class _Episode:
    metric: str
    start: int
    """Index of the first non-finite point."""
    end: int
    """Index of the last non-finite point."""
    series: Series

    @property
    def start_step(self) -> int:
        return int(self.series.steps[self.start])

    @property
    def end_step(self) -> int:
        return int(self.series.steps[self.end])

    @property
    def points(self) -> int:
        return self.end - self.start + 1

    @property
    def to_end(self) -> bool:
        return self.end == len(self.series) - 1

    @property
    def reach(self) -> float:
        """The step of the metric's next finite point (inf if it never has one)."""
        return math.inf if self.to_end else float(self.series.steps[self.end + 1])

    @property
    def is_loss(self) -> bool:
        return is_loss_like(self.metric)


def _is_gradient(name: str) -> bool:
    return name == GRAD_NORM or "grad" in name.lower()


class DivergenceDetector:
    """Finds a run that blew up: non-finite values in a loss or gradient metric, and a loss
    that keeps rising.

    **What it finds.**
    - A non-finite **loss** (train or eval): *error*. One finding per incident, naming the
      first non-finite step and the last finite value before it; a loss that climbed before
      it turned non-finite is dated from the climb's onset.
    - A non-finite **gradient** with the loss finite: *error* only when it persists. An
      isolated one is what a dynamic loss scaler does under fp16 mixed precision: the
      gradients overflow, the optimiser step is skipped, the scale is halved and training
      goes on (Hugging Face's Trainer logs that step's grad_norm as NaN and leaves the LR
      unchanged). That is designed behaviour, so it is *info*; it becomes a *warning* when
      skips are frequent (the scaler keeps overflowing: a sign of activations near the fp16
      range).
    - A loss *rising to the end* of the log (error), or *a climb that came back* (warning).
      A component loss (one term of a multi-term loss) rising to the end while
      `train/loss` is not is a trade-off between terms: a warning, said so.

    **Algorithm.**
    *Non-finite values.* Every loss-like metric (`names.is_loss_like`) and gradient metric
    (`grad_norm`, or a name containing "grad") is scanned for NaN/+-Inf. Runs of
    non-finite points within `merge_gap` finite points of each other are one episode
    (`stats.episodes`), and episodes of different metrics that overlap in steps are one
    finding: a loss that is NaN from step 1 to the end, with its gradient NaN too, is one
    finding, not hundreds. A non-finite gradient (loss finite) is an error when it lasts
    more than `max_skip_points` consecutive logged points, or up to the end of the log;
    otherwise a skip, a warning when skips hit more than `frequent_skip_fraction` of the
    logged gradient points.

    *Sustained rises.* Per train loss (eval losses only when the run has no train loss: an
    eval loss rising while train loss falls is overfitting, the overfitting detector's
    job), on its finite points (at least `drift_min_points`, else abstain), in log10 space
    when the loss is positive (a blow-up is exponential, a straight line in log space, and
    "10% up" is one fixed distance there), linear otherwise:
    - *Rising to the end* (error). Smooth the curve (`stats.smooth_curve`: block medians,
      then a centred rolling median over 5% of the points) and find its minimum; the
      stretch from there to the end (at least `drift_min_tail_points` points and
      `drift_min_tail_fraction` of the span) must pass a Mann-Kendall trend test with an
      autocorrelation correction (`stats.trend_test`: rank-based, so one outlier or a
      heavy tail cannot make a trend; corrected, so autocorrelated minibatch noise does
      not look significant) at p < `drift_alpha`, or have a Kendall tau of at least
      `monotone_tau` over at least `monotone_min_points` points (see `_rising`). Effect
      size, never the p-value alone: the Theil-Sen rise over the stretch must be at least
      `drift_min_rise` of the level and `drift_noise_multiple` point-to-point noise sigmas
      (`stats.noise_scale`), the smoothed end must still be that far above the minimum,
      and the second half of the stretch must not be falling significantly (a loss that
      rose and is coming back down is not diverging). The finding starts where the
      smoothed loss first stands that far above its minimum, and names the lowest
      checkpoint to go back to. The size it reports is the observed one (smoothed end over
      smoothed minimum), not the Theil-Sen slope times the span (which overstates a climb
      that levels off).
    - *A climb that came back* (warning). The smoothed loss rises to at least
      `transient_factor` its lowest level so far, and `transient_noise_multiple`
      smoothing errors above it (`stats.smoothing_error`), then comes back; the climb from
      the minimum to the peak is a rank trend at p < `transient_alpha`. The smoothing
      window sheds anything shorter than half of it, so this is a climb that held, not a
      one-step jump (that is the spikes detector's). A climb that starts with the LR
      jumping back up after it had decayed (a warm restart, a cyclic schedule) is expected
      and not reported.
    - *Before a NaN*: when a loss ends non-finite, the climb before it (the same test as
      for a rise to the end, on the finite points) moves the start of the NaN finding back
      to the climb's onset, and the restart advice with it (a checkpoint between the onset
      and the first NaN already holds a blown-up model).

    Cost: one pass for NaNs, O(n) decimation, and trend tests on <= 400 points.

    **Defaults and why.**
    - `max_skip_points` 16: a scaler starting at 2^16 halves at most 16 times before it
      reaches 1, so a calibration burst at the start is at most that long.
      `frequent_skip_fraction` 0.1: overflow skips on more than a tenth of the logged
      gradient points lose many updates. `merge_gap` 3: non-finite points a few finite
      points apart are one incident.
    - `drift_alpha` 0.01 and `transient_alpha` 0.01: a strict level, and never a verdict
      alone: the effect-size tests below must pass too.
    - `monotone_tau` 0.6 over `monotone_min_points` 20: the autocorrelation correction in
      `stats.trend_test` measures autocorrelation around a straight line, so a smooth,
      curved climb (exponential, or up-and-over) reads as strongly autocorrelated and the
      corrected p-value loses its power exactly when the climb is cleanest. Noise does not
      put 80% of pairs of points in rising order (tau 0.6) over 20 points; on fewer, the
      minimum the climb starts from is itself a noise dip often enough to fake order.
    - `drift_min_rise` 0.1 (10% of the level) and `drift_noise_multiple` 3: a rise a user
      would act on, and clear of the curve's own noise.
    - `transient_factor` 2 (2x the lowest level so far) and `transient_noise_multiple` 6:
      the lowest point of a noisy smoothed curve sits a few smoothing errors low and its
      highest a few high, so noise alone spans about 5.
    - `drift_min_points` 20, `drift_min_tail_points` 10, `drift_min_tail_fraction` 0.1:
      below these a trend test on the loss (or on the stretch after its minimum) is not
      attempted.

    **False-positive modes.** A deliberate rise: a curriculum or data-mixture change that
    makes later batches harder; a run that ends in the middle of a warm-restart cycle whose
    loss has not yet come down (the falling-second-half guard covers the common case);
    adversarial (GAN) and reinforcement-learning losses, which need not decrease; a loss
    logged as a cumulative or running average over something that grows. Non-finite values
    that a logger writes for "not computed at this step" (instead of leaving the cell
    empty) look like NaNs.

    **Example.** `examples/divergence/trainer_state.json`: an error from step 304, where
    train/loss started climbing after the LR jumped at step 300, to +Inf at step 380.
    `examples/missing_warmup/trainer_state.json`: a warning at steps 215-465, a climb that
    came back. Silent on `examples/healthy/trainer_state.json`.
    """

    name = NAME
    causal_rank = 4
    whole_run = False
    drives_same_step = False
    summary = "NaN/Inf in a loss or gradient (error; lone fp16 skips: info) or a rising loss."
    Params = DivergenceParams

    def detect(self, run: Run, params: DivergenceParams) -> list[Finding]:
        """Non-finite episodes (one finding per incident) and sustained rises of losses."""
        episodes: list[_Episode] = []
        for name, series in run.metrics.items():
            if is_loss_like(name) or _is_gradient(name):
                mask = ~series.finite
                episodes.extend(
                    _Episode(name, a, b, series)
                    for a, b in stats.episodes(mask, max_gap=params.merge_gap)
                )
        ends_nonfinite = {e.metric for e in episodes if e.to_end}
        # A loss that climbed before turning non-finite: the NaN finding starts at the climb.
        lead_in = {
            name: rise
            for name in ends_nonfinite
            if is_loss_like(name)
            and (rise := _tail_rise(*_finite(run.metrics[name]), params)) is not None
        }
        findings = [
            _nonfinite_finding(run, group, params, lead_in) for group in _incidents(episodes)
        ]
        has_train_loss = any(is_loss_like(n) and not is_eval(n) for n in run.metrics)
        drifts: dict[str, Finding] = {}
        for name, series in run.metrics.items():
            if not is_loss_like(name) or (is_eval(name) and has_train_loss):
                continue
            x, y = _finite(series)
            if y.size < params.drift_min_points:
                continue
            tail = None if name in ends_nonfinite else _tail_rise(x, y, params)
            if tail is not None:
                drifts[name] = _drift_finding(name, tail, run)
            before = tail.min_step if tail is not None else math.inf
            findings.extend(
                _transient_finding(name, rise)
                for rise in _transient_rises(x, y, run, params)
                if rise.end_step < before
            )
        findings.extend(_component_drifts_as_warnings(run, drifts))
        return findings


def _finite(series: Series) -> tuple[FloatArray, FloatArray]:
    return stats.finite_xy(series.steps, series.values)


def _component_drifts_as_warnings(run: Run, drifts: dict[str, Finding]) -> list[Finding]:
    """A component loss (e.g. one term of a physics-informed or multi-task loss) that rises
    while the run's total `train/loss` does not is a trade-off between terms, not a blow-up:
    a warning, said so. Everything else stays an error."""
    if TRAIN_LOSS not in run.metrics or TRAIN_LOSS in drifts:
        return list(drifts.values())
    out = []
    for name, finding in drifts.items():
        if name in (TRAIN_LOSS, EVAL_LOSS) or is_eval(name):
            out.append(finding)
            continue
        out.append(
            dataclasses.replace(
                finding,
                severity=Severity.WARNING,
                title=f"{name} is drifting upward since step {finding.step_start}",
                message=finding.message
                + f" {TRAIN_LOSS} is not rising: this term is being traded off against the "
                "others (check the loss weights) rather than the whole run diverging.",
                fixes=(
                    f"Rebalance the loss weights: raise the weight of {name} (or lower the "
                    "others) if this term matters.",
                    *finding.fixes[1:],
                ),
            )
        )
    return out


def _incidents(episodes: list[_Episode]) -> list[list[_Episode]]:
    """Group episodes of any metrics whose step ranges overlap into incidents."""
    groups: list[list[_Episode]] = []
    reach = -math.inf
    for ep in sorted(episodes, key=lambda e: (e.start_step, not e.is_loss, e.metric)):
        if groups and ep.start_step < reach:
            groups[-1].append(ep)
            reach = max(reach, ep.reach)
        else:
            groups.append([ep])
            reach = ep.reach
    return groups


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _kind(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def _nonfinite_finding(
    run: Run, group: list[_Episode], params: DivergenceParams, lead_in: dict[str, _Rise]
) -> Finding:
    # The metric the report is about: a loss if any, else the first to go non-finite.
    lead = min(group, key=lambda e: (not e.is_loss, e.start_step, e.metric != TRAIN_LOSS))
    first = min(group, key=lambda e: e.start_step)
    start_step = first.start_step
    end_step = max(e.end_step for e in group)
    to_end = any(e.to_end for e in group)
    values = lead.series.values
    kind = _kind(float(values[lead.start]))
    before = values[: lead.start][np.isfinite(values[: lead.start])]
    last_finite = float(before[-1]) if before.size else float("nan")
    others = sorted({e.metric for e in group} - {lead.metric})
    evidence: dict[str, float | int | str] = {
        "first_nonfinite_step": lead.start_step,
        "first_value": kind,
        "nonfinite_points": lead.points if len(group) == 1 else sum(e.points for e in group),
        "until_end_of_log": "yes" if to_end else "no",
    }
    if math.isfinite(last_finite):
        evidence["last_finite_value"] = last_finite
        evidence["last_finite_step"] = int(lead.series.steps[: lead.start][-1])
    if others:
        evidence["also_nonfinite"] = ", ".join(others)
    span = (
        f"from step {lead.start_step} to the end of the log"
        if lead.to_end
        else f"at step {lead.start_step}"
        if lead.points == 1
        else f"at steps {lead.start_step}-{lead.end_step} ({lead.points} logged points)"
    )
    also = (
        f" {', '.join(others)} {'is' if len(others) == 1 else 'are'} non-finite too."
        if others
        else ""
    )
    previous = (
        f" The last finite value was {_fmt(last_finite)} at step {evidence['last_finite_step']}."
        if math.isfinite(last_finite)
        else " It was never finite."
    )
    if any(e.is_loss for e in group):
        climb = ""
        rise = lead_in.get(lead.metric)
        if rise is not None and rise.onset_step < start_step:
            start_step = rise.onset_step
            climb = _climb_before_nonfinite(rise, lead, last_finite, evidence)
        return Finding(
            detector=NAME,
            title=f"{lead.metric} became {kind} at step {lead.start_step}",
            severity=Severity.ERROR,
            metric=lead.metric,
            step_start=start_step,
            step_end=end_step,
            message=f"{lead.metric} is {kind} {span}.{previous}{also}{climb}",
            evidence=evidence,
            fixes=_nan_fixes(start_step, lead.start_step),
        )
    return _gradient_finding(run, group, lead, span, previous, evidence, params)


def _gradient_finding(
    run: Run,
    group: list[_Episode],
    lead: _Episode,
    span: str,
    previous: str,
    evidence: dict[str, float | int | str],
    params: DivergenceParams,
) -> Finding:
    kind = str(evidence["first_value"])
    persistent = any(
        (e.to_end and e.points >= 2) or e.points > params.max_skip_points for e in group
    )
    start_step = min(e.start_step for e in group)
    end_step = max(e.end_step for e in group)
    if persistent:
        return Finding(
            detector=NAME,
            title=f"{lead.metric} is non-finite from step {lead.start_step} on",
            severity=Severity.ERROR,
            metric=lead.metric,
            step_start=start_step,
            step_end=end_step,
            message=(
                f"{lead.metric} is {kind} {span}.{previous} The loss is still finite, but "
                "no optimiser step with a non-finite gradient is applied (or, worse, it is): "
                "training has stopped making progress."
            ),
            evidence=evidence,
            fixes=_nan_fixes(start_step, lead.start_step),
        )
    series = lead.series
    skipped = series.nonfinite_count()
    fraction = skipped / max(len(series), 1)
    evidence["nonfinite_fraction_of_metric"] = round(fraction, 4)
    frequent = fraction > params.frequent_skip_fraction
    lr_note = _lr_unchanged_note(run, lead)
    message = (
        f"{lead.metric} is {kind} {span} while the loss stays finite: the signature of a "
        "mixed-precision (fp16) overflow, where the loss scaler skips the optimiser step and "
        f"halves its scale.{lr_note} {skipped} of {len(series)} logged {lead.metric} values "
        f"are non-finite ({_fmt(100 * fraction)}%)."
    )
    if frequent:
        message += (
            f" That is more than {_fmt(100 * params.frequent_skip_fraction)}% of the steps: "
            "the scaler keeps overflowing, so many updates are lost."
        )
    return Finding(
        detector=NAME,
        title=f"{lead.metric} non-finite at step {lead.start_step} (fp16 overflow skip?)",
        severity=Severity.WARNING if frequent else Severity.INFO,
        metric=lead.metric,
        step_start=start_step,
        step_end=end_step,
        message=message,
        evidence=evidence,
        fixes=(
            "Nothing to do for an occasional skip: the dynamic loss scaler handles it.",
            "If skips are frequent, train in bf16 instead of fp16 (same speed on Ampere or "
            "newer GPUs, no loss scaling needed).",
            "Look for layers whose activations exceed the fp16 range (attention logits, "
            "unnormalised residual streams) and add normalisation or clamp them.",
        ),
    )


def _lr_unchanged_note(run: Run, ep: _Episode) -> str:
    lr = run.metrics.get(LR)
    if lr is None or ep.to_end:
        return ""
    after_step = int(ep.series.steps[ep.end + 1])
    i_at = np.searchsorted(lr.steps, ep.end_step)
    i_after = np.searchsorted(lr.steps, after_step)
    if (
        i_at < len(lr)
        and i_after < len(lr)
        and lr.steps[i_at] == ep.end_step
        and lr.steps[i_after] == after_step
        and lr.values[i_at] == lr.values[i_after]
        and lr.values[i_at] > 0
    ):
        return (
            f" The LR did not advance between steps {ep.end_step} and {after_step}, as "
            "happens when the scheduler step is skipped with it."
        )
    return ""


def _climb_before_nonfinite(
    rise: _Rise, lead: _Episode, last_finite: float, evidence: dict[str, float | int | str]
) -> str:
    """The sentence (and evidence) for the climb that led up to a loss turning non-finite.

    The climb is dated from where it is clearly under way (its onset), with the minimum
    before it only as the level it rose from; its size is what was observed (the last
    finite value over that minimum). No trend statistics in the message: next to a value
    that overflowed they read as weak evidence; they stay in the evidence."""
    evidence["climb_from_step"] = rise.onset_step
    evidence["climb_from_level"] = rise.min_level
    evidence["min_step"] = rise.min_step
    to_step = int(evidence.get("last_finite_step", lead.start_step))
    growth = ""
    if math.isfinite(last_finite):
        growth = f": {rise.growth(last_finite)} by step {to_step}"
        if rise.in_log and rise.min_level > 0:
            evidence["rise_factor"] = last_finite / rise.min_level
    for key in ("mann_kendall_p", "kendall_tau"):
        evidence[key] = rise.evidence[key]
    return (
        f" It had been climbing since step {rise.onset_step}, up from a level of "
        f"{_fmt(rise.min_level)} (its minimum, at step {rise.min_step}){growth}."
    )


def _nan_fixes(restart_step: int, nonfinite_step: int) -> tuple[str, ...]:
    """`restart_step`: where the trouble began (a climb's onset, or the first non-finite
    value); `nonfinite_step`: the first non-finite value."""
    return (
        f"Restart from the last checkpoint before step {restart_step} with a 2-10x lower "
        "learning rate.",
        "Enable gradient clipping (e.g. max_norm=1.0).",
        "With fp16, switch to bf16 or check the loss scaler; look for log(0), division by "
        "zero or sqrt of a negative in custom loss code (e.g. add eps inside log/sqrt).",
        f"Check the inputs of the batches just before step {nonfinite_step} for NaN/Inf.",
    )


@dataclass(frozen=True)
class _Rise:
    """A sustained rise of one loss: from where, how far, and whether it came back."""

    min_step: int
    """The lowest (smoothed) point before the rise."""
    min_level: float
    onset_step: int
    """The first step at which the rise is already as large as the test requires."""
    peak_step: int
    peak_level: float
    end_step: int
    """The last step still risen (the last logged step for an ongoing rise)."""
    end_level: float
    ongoing: bool
    """Still risen at the end of the log."""
    evidence: dict[str, float | int | str]
    detail: str
    """One sentence with the test's numbers."""
    in_log: bool = True
    """The rise was measured in log space (a positive loss): its size is a ratio."""
    scale: float = 1.0
    """The loss's robust level (`stats.level_scale`), for a linear rise's size."""

    def growth(self, to_level: float) -> str:
        """The observed rise from the minimum to `to_level`: "x65.5" for a positive loss,
        "+0.3 (12% of the level)" otherwise."""
        if self.in_log and self.min_level > 0:
            return f"x{_fmt(to_level / self.min_level)}"
        diff = to_level - self.min_level
        share = f" ({_fmt(100 * diff / self.scale)}% of the level)" if self.scale > 0 else ""
        return f"{diff:+.4g}{share}"


def _rising(trend: stats.Trend, alpha: float, params: DivergenceParams) -> bool:
    """A significant rise: Mann-Kendall p < `alpha`, or a Kendall tau of at least
    `monotone_tau` (80% of all pairs of points in rising order).

    The second clause is there because the autocorrelation correction in
    `stats.trend_test` measures autocorrelation around a straight line: a smooth, curved
    climb (exponential, or up-and-over) leaves curved residuals that read as strong
    autocorrelation, and the corrected p-value loses its power exactly when the climb is
    cleanest. Noise does not put 80% of pairs in order over `monotone_min_points` (20)
    points, and the effect-size tests still apply.
    """
    monotone = trend.n >= params.monotone_min_points and trend.tau >= params.monotone_tau
    return trend.z > 0 and (trend.p_value < alpha or monotone)


def _tail_rise(x: FloatArray, y: FloatArray, params: DivergenceParams) -> _Rise | None:
    """An upward drift from the loss's smoothed minimum to the end of the log.

    In log space for positive losses (a blow-up is exponential: straight in log space,
    and "10% above the level" is a fixed distance there), linear otherwise."""
    if y.size < params.drift_min_points:
        return None
    t, in_log = stats.log_if_positive(y)
    xs, ts = stats.smooth_curve(x, t)
    i_min = int(np.argmin(ts))
    min_step = float(xs[i_min])
    tail = x >= min_step
    n_tail = int(np.count_nonzero(tail))
    if (
        n_tail < params.drift_min_tail_points
        or 1.0 - stats.span_fraction(x, min_step) < params.drift_min_tail_fraction
    ):
        return None
    xt, tt = x[tail], t[tail]
    trend = stats.trend_test(xt, tt)
    if trend is None or not _rising(trend, params.drift_alpha, params):
        return None
    rise = trend.slope * float(xt[-1] - xt[0])
    if in_log:
        by_level = math.log10(1.0 + params.drift_min_rise)
    else:
        by_level = params.drift_min_rise * stats.level_scale(y)
    noise = stats.noise_scale(tt)
    needed = max(by_level, params.drift_noise_multiple * noise)
    tail_smooth = ts[i_min:]
    end_t = float(np.median(tail_smooth[-max(1, tail_smooth.size // 10) :]))
    if rise < needed or end_t - float(ts[i_min]) < needed:
        return None
    half = xt >= xt[0] + 0.5 * float(xt[-1] - xt[0])
    late = stats.trend_test(xt[half], tt[half])
    if late is not None and late.z < 0 and late.p_value < params.drift_alpha:
        return None  # rose, and is coming back down: not diverging
    # Onset: the first smoothed point that is already `by_level` (and clear of the noise
    # before the climb) above the minimum.
    before = t[x < min_step][-max(params.drift_min_tail_points, 3) :]
    onset_needed = max(by_level, params.drift_noise_multiple * stats.noise_scale(before))
    onset = i_min + int(np.argmax(tail_smooth - float(ts[i_min]) >= onset_needed))
    i_peak = i_min + int(np.argmax(tail_smooth))

    min_level, end_level = _to_units(float(ts[i_min]), in_log), _to_units(end_t, in_log)
    sigmas = rise / noise if noise > 0 else float("inf")
    evidence: dict[str, float | int | str] = {
        "min_level": min_level,
        "min_step": int(min_step),
        "end_level": end_level,
        "theil_sen_rise": f"x{10.0**rise:.4g}" if in_log else rise,
        "rise_in_noise_sigmas": sigmas if math.isfinite(sigmas) else "inf",
        "mann_kendall_p": trend.p_value,
        "kendall_tau": trend.tau,
        "points": n_tail,
    }
    if in_log and min_level > 0:
        evidence["rise_factor"] = end_level / min_level
    detail = (
        f"Over the {n_tail} points from step {int(min_step)} on, the rank trend test gives "
        f"p={trend.p_value:.2g} (Kendall tau {trend.tau:.2f}, autocorrelation-corrected)."
    )
    return _Rise(
        min_step=int(min_step),
        min_level=min_level,
        onset_step=int(xs[onset]),
        peak_step=int(xs[i_peak]),
        peak_level=_to_units(float(ts[i_peak]), in_log),
        end_step=int(x[-1]),
        end_level=end_level,
        ongoing=True,
        evidence=evidence,
        detail=detail,
        in_log=in_log,
        scale=stats.level_scale(y),
    )


def _transient_rises(
    x: FloatArray, y: FloatArray, run: Run, params: DivergenceParams
) -> list[_Rise]:
    """Excursions where the smoothed loss rose to `transient_factor` x its lowest level so
    far, held there (the smoothing sheds anything shorter than half a window) and came back.
    Abrupt one-step jumps are the spikes detector's; this is the slow climb."""
    t, in_log = stats.log_if_positive(y)
    xs, ts = stats.smooth_curve(x, t)
    if ts.size < 3:
        return []
    if in_log:
        threshold = math.log10(params.transient_factor)
    else:
        threshold = (params.transient_factor - 1.0) * stats.level_scale(y)
    # The lowest point of a noisy smoothed curve sits a few smoothing errors below its
    # level and its highest a few above, so noise alone spans ~5 of them: ask for 6.
    threshold = max(threshold, params.transient_noise_multiple * stats.smoothing_error(t))
    running_min = np.minimum.accumulate(ts)
    risen = ts - running_min >= threshold
    rises: list[_Rise] = []
    for start, end in stats.episodes(risen, max_gap=1):
        if end == ts.size - 1:
            continue  # still risen at the end: the tail test's case
        i_min = int(np.flatnonzero(ts[: start + 1] == running_min[start])[-1])
        i_peak = start + int(np.argmax(ts[start : end + 1]))
        climb = (x >= xs[i_min]) & (x <= xs[i_peak])
        trend = stats.trend_test(x[climb], y[climb])
        if trend is None or not _rising(trend, params.transient_alpha, params):
            continue
        if _lr_restarted(run, float(xs[i_min]), float(xs[i_peak])):
            continue
        min_level = _to_units(float(ts[i_min]), in_log)
        peak_level = _to_units(float(ts[i_peak]), in_log)
        after = _to_units(float(ts[min(end + 1, ts.size - 1)]), in_log)
        evidence: dict[str, float | int | str] = {
            "min_level": min_level,
            "min_step": int(xs[i_min]),
            "peak_level_smoothed": peak_level,
            "peak_step": int(xs[i_peak]),
            "recovered_by_step": int(xs[min(end + 1, ts.size - 1)]),
            "level_after": after,
            "mann_kendall_p": trend.p_value,
            "kendall_tau": trend.tau,
        }
        factor = peak_level / min_level if in_log and min_level > 0 else float("nan")
        if math.isfinite(factor):
            evidence["rise_factor"] = factor
        detail = (
            f"The climb from step {int(xs[i_min])} to {int(xs[i_peak])} is a significant "
            f"rank trend (p={trend.p_value:.2g}, Kendall tau {trend.tau:.2f}, autocorrelation-"
            "corrected)."
        )
        rises.append(
            _Rise(
                min_step=int(xs[i_min]),
                min_level=min_level,
                onset_step=int(xs[start]),
                peak_step=int(xs[i_peak]),
                peak_level=peak_level,
                end_step=int(xs[end]),
                end_level=after,
                ongoing=False,
                evidence=evidence,
                detail=detail,
            )
        )
    return rises


def _to_units(value: float, in_log: bool) -> float:
    """A (possibly log10) smoothed value back in the loss's own units."""
    return float(10.0**value) if in_log else value


def _lr_restarted(run: Run, start: float, end: float) -> bool:
    """Did the LR jump back up between `start` and `end` after having decayed: at least
    doubling from a value below half of its earlier peak (a warm restart or a cyclic
    schedule, which explains a loss that climbs for a while)? A warmup is no restart."""
    lr = run.metrics.get(LR)
    if lr is None:
        return False
    lx, ly = stats.finite_xy(lr.steps, lr.values)
    if ly.size < 2:
        return False
    decayed = ly < 0.5 * np.maximum.accumulate(ly)
    inside = (lx >= start) & (lx <= end)
    # The lowest decayed LR seen so far (inf before any), compared with each later value.
    low = np.minimum.accumulate(np.where(decayed, ly, np.inf))
    jumped = ly[1:] >= 2.0 * low[:-1]
    return bool(np.any(jumped & inside[1:]))


def _drift_fixes(name: str, rise: _Rise) -> tuple[str, ...]:
    return (
        f"Resume from the checkpoint nearest step {rise.min_step} (lowest {name}, "
        f"{_fmt(rise.min_level)}) with a 2-10x lower learning rate.",
        "Enable gradient clipping (e.g. max_norm=1.0) and check the warmup length.",
        "If the data changed partway (a new shard, a curriculum stage), check that stage for "
        "corrupt or mislabelled samples.",
        "With Adam, weight decay that is too strong or beta2 too high can also make the loss "
        "creep up late in training.",
    )


def _lr_rise_note(run: Run, rise: _Rise) -> str:
    lr = run.metrics.get(LR)
    if lr is None or len(lr) == 0:
        return ""
    lx, ly = stats.finite_xy(lr.steps, lr.values)
    inside = (lx >= rise.min_step) & (lx <= rise.end_step)
    if not np.any(inside):
        return ""
    first, last = float(ly[inside][0]), float(ly[inside][-1])
    if last <= first * 1.05:
        return ""
    rise.evidence["lr_at_min"] = first
    rise.evidence["lr_at_end"] = last
    return f" The LR rose over the same stretch ({_fmt(first)} -> {_fmt(last)})."


def _drift_finding(name: str, rise: _Rise, run: Run) -> Finding:
    message = (
        f"{name} has been rising since step {rise.onset_step}, up from its minimum "
        f"{_fmt(rise.min_level)} at step {rise.min_step}: it ends at {_fmt(rise.end_level)} "
        f"at step {rise.end_step} ({rise.growth(rise.end_level)}). {rise.detail}"
        + _lr_rise_note(run, rise)
    )
    rise.evidence["onset_step"] = rise.onset_step
    return Finding(
        detector=NAME,
        title=f"{name} is drifting upward (diverging) from step {rise.onset_step}",
        severity=Severity.ERROR,
        metric=name,
        step_start=rise.onset_step,
        step_end=rise.end_step,
        message=message,
        evidence=rise.evidence,
        fixes=_drift_fixes(name, rise),
    )


def _transient_finding(name: str, rise: _Rise) -> Finding:
    factor = rise.evidence.get("rise_factor")
    how_far = f" ({_fmt(float(factor))}x)" if isinstance(factor, float) else ""
    message = (
        f"{name} (smoothed) climbed from {_fmt(rise.min_level)} at step {rise.min_step} to "
        f"{_fmt(rise.peak_level)} at step {rise.peak_step}{how_far}, stayed up until step "
        f"{rise.end_step} and came back to {_fmt(rise.end_level)}. {rise.detail} The run "
        "recovered, but a loss that diverges for a while is one LR setting away from not "
        "recovering."
    )
    return Finding(
        detector=NAME,
        title=f"{name} diverged at steps {rise.onset_step}-{rise.end_step} and recovered",
        severity=Severity.WARNING,
        metric=name,
        step_start=rise.onset_step,
        step_end=rise.end_step,
        message=message,
        evidence=rise.evidence,
        fixes=(
            f"Lower the learning rate (2-3x) or add/lengthen warmup: the climb started at "
            f"step {rise.min_step}.",
            "Enable gradient clipping (e.g. max_norm=1.0).",
            f"Inspect the data around steps {rise.min_step}-{rise.peak_step} for a bad shard.",
        ),
    )


DETECTOR = DivergenceDetector()
