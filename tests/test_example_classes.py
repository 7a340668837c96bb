"""Issue 10's classes of mistake, each pinned on a real example run (examples/README.md).

tests/test_examples.py checks every example generically (the right detector near the right
steps, healthy runs silent). Here each class gets the finer expectation it is about, checked
against the raw values in the log file itself (read with the csv/json modules, not through
trainspotter) or against the ground truth the training script measured (expected.json):
the finding id, its severity, its step range and the numbers its message quotes.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import statistics
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import synth

from trainspotter import names
from trainspotter.analysis import ABSTAINED, RAN, Analysis, analyze
from trainspotter.detectors.eval_lattice import sample_lattice
from trainspotter.detectors.eval_rise import SustainedRise, short_rise, sustained_rise
from trainspotter.detectors.overfitting import OverfittingParams
from trainspotter.detectors.stuck import stuck_finding
from trainspotter.model import Finding, Severity
from trainspotter.readers import read_log
from trainspotter.report import REPORTS, RenderOptions

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED: dict[str, Any] = json.loads((EXAMPLES / "expected.json").read_text())


def log_of(run: str) -> Path:
    return EXAMPLES / run / EXPECTED[run]["files"][0]


@cache
def analysis_of(path: Path) -> Analysis:
    return analyze(read_log(path))


def loud(path: Path) -> list[Finding]:
    return [f for f in analysis_of(path).findings if f.severity >= Severity.WARNING]


def csv_column(path: Path, column: str) -> list[tuple[int, float]]:
    """(step, value) of every row where `column` is logged, as the file holds them (Keras
    logs have no step column: the epoch is the step)."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    step_column = "step" if "step" in rows[0] else "epoch"
    return [(int(row[step_column]), float(row[column])) for row in rows if row.get(column)]


def only(findings: list[Finding], detector: str, metric: str) -> Finding:
    matching = [f for f in findings if f.detector == detector and f.metric == metric]
    assert len(matching) == 1, [f"{f.detector} {f.metric} {f.title}" for f in findings]
    return matching[0]


def texts(finding: Finding) -> str:
    return " ".join((finding.title, finding.message, *finding.fixes))


# --- class 5: short logs with blatant problems ---------------------------------------------


@pytest.mark.parametrize(("column", "metric"), [("val_loss", "eval/loss"), ("loss", "train/loss")])
def test_frozen_keras_model_is_a_stuck_loss_on_six_epochs(column: str, metric: str) -> None:
    """keras_frozen: model.trainable = False on the whole model; 6 CSVLogger rows."""
    path = log_of("keras_frozen")
    rows = csv_column(path, column)
    finding = only(loud(path), "plateau", metric)
    assert finding.severity == Severity.WARNING  # 6 points: a warning, not an error (class 12)
    assert (finding.step_start, finding.step_end) == (rows[0][0], rows[-1][0])
    assert finding.evidence["constant_points"] == len(rows) == 6
    assert "stuck at exactly" in finding.title
    # The value quoted is the logged one (to the digits shown), and the count is the real one.
    assert f"{rows[-1][1]:.7g}" in finding.message
    assert "rests on 6 points" in finding.message


def test_three_epoch_keras_overfitting_is_found_and_says_it_rests_on_three() -> None:
    """keras_short_overfit: val_loss best at epoch 0, higher at each later epoch, +31%."""
    path = log_of("keras_short_overfit")
    val_loss = csv_column(path, "val_loss")
    train_loss = csv_column(path, "loss")
    truth = EXPECTED["keras_short_overfit"]["pathologies"][0]
    finding = only(loud(path), "overfitting", "eval/loss")
    assert finding.severity == Severity.WARNING  # 3 evaluations: never an error (class 12)
    assert (finding.step_start, finding.step_end) == (truth["best_step"], val_loss[-1][0])
    (best_step, best), last = min(val_loss, key=lambda r: r[1]), val_loss[-1][1]
    assert best_step == truth["best_step"] == 0
    message = finding.message
    assert f"bottomed out at {best:.4g} at step {best_step}" in message
    assert f"risen to {last:.4g} (the last evaluation; +{100 * (last / best - 1):.0f}%" in message
    # The train loss kept falling: the two raw values quoted, in falling order.
    first, end = train_loss[0], train_loss[-1]
    assert end[1] < first[1]
    quoted = f"({first[1]:.4g} at step {first[0]}, then {end[1]:.4g} at step {end[0]})"
    assert f"kept falling {quoted}" in message
    assert "rests on only 3 evaluations" in message
    keep = finding.fixes[0]
    assert "Keras" in keep and "load_best_model_at_end" not in texts(finding)


def test_four_epoch_keras_overfitting_rests_on_the_order_of_its_evaluations() -> None:
    """keras_finetune_overfit_4_epochs: val_loss lowest at epoch 0 and higher at each of the
    3 epochs after it, under 25% (the 3-evaluation bar) but 5%+ above it: the order alone
    is chance with probability 1/(4 x 3!) = 0.042, so the short-run rule reports it."""
    path = log_of("keras_finetune_overfit_4_epochs")
    truth = EXPECTED["keras_finetune_overfit_4_epochs"]["pathologies"][0]
    val_loss = csv_column(path, "val_loss")
    values = [v for _, v in val_loss]
    assert len(values) == 4 and all(b > a for a, b in itertools.pairwise(values))
    rise = 100 * (values[-1] / values[0] - 1)
    assert 5 <= rise < 25 and truth["best_step"] == val_loss[0][0]
    finding = only(loud(path), "overfitting", "eval/loss")
    assert finding.severity is Severity.WARNING  # 4 evaluations: never an error (class 12)
    assert (finding.step_start, finding.step_end) == (val_loss[0][0], val_loss[-1][0])
    assert f"bottomed out at {values[0]:.4g} at step {val_loss[0][0]}" in finding.message
    assert f"risen to {values[-1]:.4g} (the last evaluation; +{rise:.0f}%" in finding.message
    assert "rests on only 4 evaluations" in finding.message and "= 0.042" in finding.message
    # The same numbers with 3 evaluations (order chance 1/6) need the 25% effect instead.
    params = OverfittingParams()
    short = np.array(values[1:])
    assert (
        short_rise(
            short,
            min_after=params.min_points_after_min,
            min_rise=params.min_relative_rise,
            few_points_rise=params.few_points_rise,
            alpha=params.trend_alpha,
        )
        is None
    )


# --- eval-side "not learning": an eval that never improves on its first evaluation ----------


def test_a_val_loss_at_ln2_with_a_flat_train_loss_is_not_learning() -> None:
    """keras_binary_chance: the labels shuffled against the images; val_loss never below
    its first epoch, at ln 2 throughout, the train loss within 5%: plateau, chance named."""
    path = log_of("keras_binary_chance")
    val_loss = [v for _, v in csv_column(path, "val_loss")]
    loss = [v for _, v in csv_column(path, "loss")]
    assert min(val_loss) == val_loss[0] and loss[-1] > 0.95 * loss[0]
    finding = only(loud(path), "plateau", "eval/loss")
    assert finding.severity is Severity.WARNING and "chance level" in finding.title
    assert (finding.step_start, finding.step_end) == (0, len(val_loss) - 1)
    median = statistics.median(val_loss)
    assert f"Its median {median:.4g} over all evaluations" in finding.message
    assert "ln 2 = 0.6931" in finding.message and "if it is a cross-entropy" in finding.message
    assert f"{loss[0]:.4g} at step 0, then {loss[-1]:.4g} at step {len(loss) - 1}" in (
        finding.message
    )
    assert not [f for f in loud(path) if f.detector == "overfitting"]  # one finding


def test_an_eval_that_never_improves_while_train_falls_is_no_generalisation() -> None:
    """keras_shuffled_train_labels: training labels shuffled, eval labels right: the train
    loss falls, val_loss is never below its first epoch and worsens: overfitting."""
    path = log_of("keras_shuffled_train_labels")
    val_loss = [v for _, v in csv_column(path, "val_loss")]
    loss = [v for _, v in csv_column(path, "loss")]
    assert min(val_loss) == val_loss[0] and loss[-1] < 0.9 * loss[0]
    finding = only(loud(path), "overfitting", "eval/loss")
    assert "never improved on its first evaluation" in finding.title
    assert (finding.step_start, finding.step_end) == (0, len(val_loss) - 1)
    assert f"was {val_loss[0]:.4g} at its first evaluation (step 0)" in finding.message
    assert "no later evaluation was better" in finding.message
    assert not [f for f in loud(path) if f.detector == "plateau"]  # one finding


def test_a_flat_eval_beside_a_falling_train_loss_alone_is_not_reported() -> None:
    """A model that learned within its first epoch: the eval flat (but not at chance, and
    with later evaluations a little below the first), the train loss still falling."""
    steps = np.arange(1, 6) * 1000.0
    train = (np.arange(50, 5000, 50.0), 0.22 - 0.07 * np.arange(50, 5000, 50.0) / 5000)
    evals = (steps, np.array([0.1988, 0.1947, 0.1953, 0.1920, 0.2005]))
    run = synth.make_run({names.TRAIN_LOSS: train, names.EVAL_LOSS: evals})
    assert not [f for f in analyze(run).findings if f.severity >= Severity.WARNING]


# --- class 6: eval worse while train does not improve --------------------------------------


def test_eval_loss_many_times_its_best_is_reported_though_train_did_not_fall() -> None:
    """eval_worse_train_flat: the labels of the training batches change map at step 500; the
    train loss comes back to about where it was, the eval loss ends ~80x its best."""
    truth = EXPECTED["eval_worse_train_flat"]["pathologies"][0]
    for file in EXPECTED["eval_worse_train_flat"]["files"]:
        path = EXAMPLES / "eval_worse_train_flat" / file
        finding = only(loud(path), "overfitting", "eval/loss")
        assert finding.step_start == truth["best_step"]
        assert "while train/loss falls" not in finding.title  # it does not: words agree
        assert "above its best and stayed there" in finding.title
        match = re.search(
            r"did not keep falling \(median ([\d.e+-]+) of .*?, then median ([\d.e+-]+) of ",
            finding.message,
        )
        assert match, finding.message
        assert float(match[2]) > float(match[1])  # the quoted numbers show it did not fall
        best = f"{truth['best_eval_loss']:.4g} at step {truth['best_step']}"
        assert f"The best evaluation was {best}" in finding.message


def test_eval_degrading_while_train_is_flat_is_reported_from_the_raw_best() -> None:
    """lightning_finetune_lr_too_high: a pretrained model, validated before fit, fine-tuned
    at too high an LR. The eval loss is best at its first epoch and ends well above it while
    the train loss does not fall: reported as degrading while train/loss is flat (not as
    overfitting), with the numbers of the raw log."""
    truth = EXPECTED["lightning_finetune_lr_too_high"]["pathologies"][0]
    path = log_of("lightning_finetune_lr_too_high")
    finding = only(loud(path), "overfitting", "eval/loss")
    assert finding.step_start == truth["best_step"]
    assert finding.title.startswith("eval/loss degrading while train/loss is flat")
    assert "(overfitting)" not in finding.title
    val = csv_column(path, "val_loss")
    values = [value for _, value in val]
    best_step, best = min(val, key=lambda pair: pair[1])
    assert (best_step, f"{best:.4g}") == (truth["best_step"], f"{truth['best_eval_loss']:.4g}")
    recent = int(finding.evidence["evaluations"]) // 2 - 1  # later half of the 9 after it
    end = statistics.median(values[-recent:])
    rise = 100 * (end / best - 1)
    assert f"was best at {best:.4g} at step {best_step} and ends {rise:.0f}% above it" in (
        finding.message
    )
    assert f"the median of its last {recent} evaluations" in finding.message
    assert f"is {end:.4g}" in finding.message
    assert f"even the lowest of the last 3 is {min(values[-3:]):.4g}" in finding.message
    # "flat": its trend test, quoted; the train loss over those steps has no significant fall.
    match = re.search(r"Kendall tau (-?[\d.]+), Mann-Kendall p = ([\d.e-]+)", finding.message)
    assert match, finding.message
    assert float(match[2]) >= 0.05
    assert "Lightning: ModelCheckpoint" in finding.fixes[0]


def test_sustained_rise_reads_the_raw_best_and_stays_silent_on_noise() -> None:
    """The statistic on real logs: the fine-tune's best is its first epoch (a centred median
    would hide it), and neither a healthy run nor an eval set re-sampled at every evaluation
    (noisy_eval: its best is a lucky draw) ends 'well above its best'."""
    params = OverfittingParams()

    def rise_of(run: str, file: str, column: str) -> SustainedRise | None:
        values = np.array([value for _, value in csv_column(EXAMPLES / run / file, column)])
        return sustained_rise(
            values,
            fraction=params.sustained_rise,
            evals=params.sustained_evals,
            alpha=params.trend_alpha,
            smoothing_fraction=params.smoothing_fraction,
        )

    finetune = rise_of(
        "lightning_finetune_lr_too_high",
        EXPECTED["lightning_finetune_lr_too_high"]["files"][0],
        "val_loss",
    )
    truth = EXPECTED["lightning_finetune_lr_too_high"]["pathologies"][0]
    assert finetune is not None and finetune.width == 1
    assert f"{finetune.min_level:.6g}" == f"{truth['best_eval_loss']:.6g}"
    assert finetune.rise >= params.sustained_rise * finetune.min_level
    assert finetune.rise >= finetune.needed_sigmas * finetune.sigma
    for run in ("healthy", "noisy_eval", "sgdr_healthy", "clipping_healthy", "small_init_healthy"):
        assert rise_of(run, "metrics.csv", "eval_loss") is None, run


# --- eval trust: can the best-epoch pick be trusted? (eval_noise) ---------------------------


def test_a_tiny_validation_set_cannot_rank_checkpoints() -> None:
    """keras_tiny_val_set: 24 validation digits. val_accuracy moves in steps of 1/24 and one
    evaluation cannot tell one wrong digit from two: a warning, judged on the error rate."""
    truth = EXPECTED["keras_tiny_val_set"]["pathologies"][0]
    path = log_of("keras_tiny_val_set")
    finding = only(loud(path), "eval_noise", "val_accuracy")
    assert finding.severity is Severity.WARNING
    assert [finding.step_start, finding.step_end] == truth["step_range"]
    late = [value for step, value in csv_column(path, "val_accuracy") if step >= 15]
    assert all(abs(v * 24 - round(v * 24)) < 1e-4 for v in late)  # k/24: 24 digits
    median = statistics.median(late)
    assert f"({1 - median:.3g}: 1 minus its median {median:.3g})" in finding.message
    assert float(finding.evidence["jitter_to_distance"]) >= 0.215
    assert "cannot tell a checkpoint from one with 1.5x its error" in finding.message


def test_an_accuracy_on_eight_samples_is_judged_by_its_binomial_error() -> None:
    """keras_eight_val_samples: 14 epochs (under the 16 a jitter estimate needs) validated
    on 8 digits. val_accuracy only takes values k/8: the lattice gives n = 8 and the
    binomial standard error sqrt(p(1-p)/8) at its late median is the noise floor."""
    truth = EXPECTED["keras_eight_val_samples"]["pathologies"][0]
    path = log_of("keras_eight_val_samples")
    values = [v for _, v in csv_column(path, "val_accuracy")]
    assert len(values) == 14 and all(abs(v * 8 - round(v * 8)) < 1e-6 for v in values)
    finding = only(loud(path), "eval_noise", "val_accuracy")
    assert finding.severity is Severity.WARNING
    assert [finding.step_start, finding.step_end] == truth["step_range"]
    assert finding.evidence["eval_samples_from_lattice"] == 8
    p = statistics.median(values[7:])
    se = (p * (1 - p) / 8) ** 0.5
    assert f"late median {p:.3g} then has a binomial standard error of {se:.3g}" in (
        finding.message
    )
    assert "every one a multiple of 1/8" in finding.message


def test_the_binomial_floor_needs_a_coarse_lattice() -> None:
    """On all 517 eval digits (keras_jittery_val_healthy) the lattice is n = 517, one sample
    is far below the jitter the evaluations show: no floor, no eval_noise warning."""
    path = log_of("keras_jittery_val_healthy")
    values = np.array([v for _, v in csv_column(path, "val_accuracy")])
    lattice = sample_lattice("val_accuracy", values)
    assert lattice is not None and lattice.samples == 517
    assert not [f for f in loud(path) if f.detector == "eval_noise"]
    # A loss, an F1 or values off any lattice get none.
    assert sample_lattice("val_loss", values) is None
    assert sample_lattice("val_f1", values) is None
    assert sample_lattice("val_accuracy", values + 1e-3 * np.sqrt(np.arange(values.size))) is None


def test_ordinary_late_jitter_of_a_short_keras_run_is_no_warning() -> None:
    """keras_jittery_val_healthy: the same training validated on all 517 digits. val_loss
    wobbles around a converged level; its late checkpoints cannot be ranked among
    themselves, but one evaluation resolves well under a 1.5x difference: info only."""
    path = log_of("keras_jittery_val_healthy")
    assert not [f for f in loud(path) if f.detector == "eval_noise"]
    [note] = [f for f in analysis_of(path).findings if f.detector == "eval_noise"]
    assert note.severity is Severity.INFO and note.metric == "eval/loss"
    assert "equal within its jitter" in note.title
    late = [value for step, value in csv_column(path, "val_loss") if step >= 15]
    resolution = float(note.evidence["resolution"])
    assert resolution < 0.5 * statistics.median(late)
    # The same training with a tiny validation set is the warning above: the difference is
    # the eval set, not the training noise.
    assert (
        EXPECTED["keras_tiny_val_set"]["summary"].split(" validated")[0]
        == (EXPECTED["keras_jittery_val_healthy"]["summary"].split(" validated")[0])
    )


# --- class 7: messages that are true --------------------------------------------------------


def test_could_have_stopped_names_the_best_evaluation_step() -> None:
    truth = EXPECTED["eval_worse_train_flat"]["pathologies"][0]
    said = [
        text
        for f in analysis_of(log_of("eval_worse_train_flat")).findings
        for text in (f.message, *f.fixes)
        if "could have stopped" in text
    ]
    assert said
    assert all(f"stopped near step {truth['best_step']}," in text for text in said), said


def test_lightning_overfitting_names_both_best_checkpoints_in_lightning_words() -> None:
    """lightning_overfit_acc: val_loss and val_acc are best at different epochs."""
    path = log_of("lightning_overfit_acc")
    truth = EXPECTED["lightning_overfit_acc"]["pathologies"][0]
    val_loss = csv_column(path, "val_loss")
    val_acc = csv_column(path, "val_acc")
    best_step, best = min(val_loss, key=lambda r: r[1])
    acc_step, acc = max(val_acc, key=lambda r: r[1])  # the first of equal maxima, as min/max
    assert (best_step, acc_step) == (truth["best_step"], truth["best_val_acc_step"])
    finding = only(loud(path), "overfitting", "eval/loss")
    assert finding.step_start <= best_step <= finding.step_end
    assert f"The best evaluation was {best:.4g} at step {best_step}." in finding.message
    assert f"By val_acc the best evaluation was {acc:.4g} at step {acc_step}" in finding.message
    keep = finding.fixes[0]
    assert f"Load the checkpoint at step {best_step}" in keep
    assert f"by val_acc the best checkpoint is step {acc_step}" in keep
    assert "ModelCheckpoint" in keep
    every_text = [t for f in analysis_of(path).findings for t in (f.message, *f.fixes)]
    assert not [t for t in every_text if "load_best_model_at_end" in t]


def all_example_logs() -> list[Path]:
    return [EXAMPLES / run / file for run, spec in EXPECTED.items() for file in spec["files"]]


@pytest.mark.parametrize("path", all_example_logs(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_signs_and_words_agree_and_no_impossible_advice(path: Path) -> None:
    """On every example: no "-3.7% lower" / "+-", no checkpoint before step 0, and no info note
    saying nothing is wrong in a report that warns."""
    analysis = analysis_of(path)
    every_text = [t for f in analysis.findings for t in (f.title, f.message, *f.fixes)]
    assert not [t for t in every_text if re.search(r"-\d[\d.]*% (lower|higher)|\+-", t)]
    assert not [t for t in every_text if re.search(r"before step 0\b", t)]
    if any(f.severity >= Severity.WARNING for f in analysis.findings):
        soothing = [
            t
            for f in analysis.findings
            if f.severity == Severity.INFO
            for t in (f.title, f.message)
            if re.search(r"nothing is wrong", t, re.IGNORECASE)
        ]
        assert not soothing


# --- class 8: root cause first ------------------------------------------------------------


@pytest.mark.parametrize("file", EXPECTED["divergence"]["files"])
def test_the_lr_jump_leads_the_divergence_chain_in_id_order(file: str) -> None:
    """divergence: the LR x100 at step 300 is the root; the blow-up, the grad norm and the
    NaN follow it, in chain order with ids in that order."""
    jump = next(p for p in EXPECTED["divergence"]["pathologies"] if p["kind"] == "lr_jump")
    analysis = analysis_of(EXAMPLES / "divergence" / file)
    assert analysis.chains
    chain = [analysis.by_id(i) for i in analysis.chains[0]]
    root = chain[0]
    assert (root.detector, root.step_start) == ("lr_schedule", jump["step"])
    assert root.cause is None
    assert [f.id for f in chain] == sorted((f.id for f in chain), key=lambda i: int(i[1:]))
    assert all(later.cause == earlier.id for earlier, later in itertools.pairwise(chain))
    assert "divergence" in [f.detector for f in chain]


# --- class 10: never green on nothing -------------------------------------------------------


def render(name: str, analysis: Analysis) -> str:
    return REPORTS[name].render([analysis], RenderOptions())


def test_an_accuracy_only_lightning_log_is_not_called_healthy_in_any_report() -> None:
    """lightning_accuracy_only: a healthy run that logs train_acc and val_acc, no loss."""
    path = log_of("lightning_accuracy_only")
    with path.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert not [column for column in header if "loss" in column]  # really no loss logged
    analysis = analysis_of(path)
    assert analysis.worst is None
    checks = {c.detector: c for c in analysis.checks}
    assert checks["spikes"].status == ABSTAINED and checks["spikes"].reason == "no loss metric"
    assert checks["throughput"].status == ABSTAINED and checks["throughput"].reason
    assert any(c.status == RAN and "val_acc" in c.metrics for c in analysis.checks)
    terminal = render("terminal", analysis)
    assert "healthy" not in terminal and "no loss metric was examined" in terminal
    markdown = render("markdown", analysis)
    assert "healthy" not in markdown and "spikes: no loss metric" in markdown
    html = render("html", analysis)
    assert "looks healthy" not in html and ">healthy<" not in html
    doc = json.loads(render("json", analysis))
    assert {c["detector"]: c["status"] for c in doc["checks"]}["spikes"] == "abstained"
    root = ET.fromstring(render("junit", analysis).encode("utf-8"))
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert cases["spikes"].find("skipped") is not None


# --- class 11: throughput onset within one logging interval -------------------------------


def throughput_cases() -> list[tuple[str, str]]:
    return [
        (run, file)
        for run, spec in EXPECTED.items()
        for pathology in spec.get("pathologies", [])
        if pathology["detector"] == "throughput"
        for file in pathology.get("visible_in", spec["files"])
    ]


@pytest.mark.parametrize(("run", "file"), throughput_cases())
def test_throughput_onset_is_within_one_logging_interval(run: str, file: str) -> None:
    """Logging every 1, 5, 10 or 20 steps, the onset named is the first slow step to within
    one logging interval (issue 10 class 11: it used to move by 100-200 steps)."""
    spec = EXPECTED[run]
    pathology = next(p for p in spec["pathologies"] if p["detector"] == "throughput")
    interval = int(spec["logging_steps"])
    findings = [f for f in loud(EXAMPLES / run / file) if f.detector == "throughput"]
    assert findings
    onset = min(f.step_start for f in findings)
    assert abs(onset - int(pathology["first_step"])) <= interval, (onset, pathology)


# --- train-side trust: a start-up transient does not hide what comes after it ---------------


def test_a_burst_after_a_steep_start_up_is_a_spike_measured_against_the_working_level() -> None:
    """lightning_burst_after_startup: the loss falls 2-5x per log from ~2.6e5 to ~25, then
    the batches of steps 30-34 carry mis-calibrated targets and it bursts to ~100x."""
    path = log_of("lightning_burst_after_startup")
    truth = EXPECTED["lightning_burst_after_startup"]["pathologies"][0]
    rows = dict(csv_column(path, "train_loss"))
    finding = only(loud(path), "spikes", "train/loss")
    assert finding.severity == Severity.WARNING
    lo, hi = truth["step_range"]
    assert lo <= finding.step_start <= finding.step_end <= hi
    assert finding.evidence["peak_step"] == truth["step"]
    assert finding.evidence["peak_value"] == pytest.approx(rows[truth["step"]], rel=1e-6)
    # The level before is the raw median of the 5 logged points before the burst, the
    # working level (not the start-up's ~1e5).
    before = statistics.median(rows[s] for s in range(lo - 5, lo))
    assert finding.evidence["level_before"] == pytest.approx(before, rel=1e-6)
    assert f"jumped from {before:.4g} (median of the 5 points before)" in finding.message
    # Nothing after the burst: ordinary batch noise at the working level.
    assert not [f for f in loud(path) if f.detector == "spikes" and f.step_start > hi]


def test_a_noisy_per_step_loss_that_never_falls_is_not_learning() -> None:
    """lightning_noisy_not_learning: Adam at LR 1e-7, train_loss logged on_step and
    on_epoch every 50 steps (Lightning's default): 36 per-batch losses scattered ~15%
    around a level that does not fall. Its 5-point smoothed minimum dips more than 10%
    below the start by chance; that is the smoothed curve's noise, not learning."""
    path = log_of("lightning_noisy_not_learning")
    truth = EXPECTED["lightning_noisy_not_learning"]["pathologies"][0]
    rows = csv_column(path, "train_loss_step")
    finding = only(loud(path), "plateau", "train/loss")
    assert finding.severity == Severity.WARNING and "not learning" in finding.title
    assert (finding.step_start, finding.step_end) == (rows[0][0], rows[-1][0])
    assert (finding.step_start, finding.step_end) == tuple(truth["step_range"])
    # The raw first and last per-step values, at their steps.
    (first_step, first), (last_step, last) = rows[0], rows[-1]
    assert f"was {first:.4g} at step {first_step} and {last:.4g} at step {last_step}" in (
        finding.message
    )
    # The dip below the start is named as noise, with the scatter it is judged against.
    assert "no more than the smoothed curve's own noise explains" in finding.message
    assert "never 10% below where it started" not in finding.message


def test_a_token_accuracy_in_a_tiny_band_far_below_its_ceiling_is_stuck() -> None:
    """lightning_lm_lr_too_small: a character LM whose weights hardly move; its token
    accuracy, counted over the whole validation text, stays in a narrow band far below 1."""
    path = log_of("lightning_lm_lr_too_small")
    truth = EXPECTED["lightning_lm_lr_too_small"]["pathologies"][0]
    rows = csv_column(path, "val_token_accuracy")
    values = [v for _, v in rows]
    finding = only(loud(path), "plateau", "val_token_accuracy")
    assert finding.severity == Severity.WARNING and "stuck near" in finding.title
    assert (finding.step_start, finding.step_end) == (rows[0][0], rows[-1][0])
    assert len(rows) == truth["evaluations"]
    assert finding.evidence["band_low"] == pytest.approx(min(values), rel=1e-6)
    assert finding.evidence["band_high"] == pytest.approx(max(values), rel=1e-6)
    assert truth["token_accuracy_min"] == pytest.approx(min(values), rel=1e-5)
    assert f"between {min(values):.6g} and {max(values):.6g}" in finding.message
    assert f"at all {len(rows)} logged points" in finding.message


# --- healthy examples are silent in every report format -------------------------------------


SILENT = [
    (run, file)
    for run, spec in EXPECTED.items()
    if spec.get("must_be_silent") and "open_issue" not in spec
    for file in spec["files"]
]


@pytest.mark.parametrize(("run", "file"), SILENT, ids=[f"{r}/{f}" for r, f in SILENT])
def test_healthy_examples_are_silent_in_every_report_format(run: str, file: str) -> None:
    analysis = analysis_of(EXAMPLES / run / file)
    assert sorted(REPORTS) == sorted(
        ["terminal", "json", "html", "markdown", "github", "sarif", "codequality", "junit"]
    )
    terminal = render("terminal", analysis)
    assert not re.search(r"^(WARNING|ERROR)\b|^F\d+ (WARNING|ERROR)\b", terminal, re.MULTILINE)
    doc = json.loads(render("json", analysis))
    assert not re.search(r'"severity": "(warning|error)"', json.dumps(doc, indent=1))
    html = render("html", analysis)  # its stylesheet names every severity: look at elements
    assert not re.search(r'class="[^"]*\bsev-(warning|error)\b', html)
    markdown = render("markdown", analysis)
    assert "🟡 warning" not in markdown and "🔴 error" not in markdown
    github = render("github", analysis)
    assert "::warning" not in github and "::error" not in github
    sarif = json.loads(render("sarif", analysis))
    levels = {r.get("level") for run_ in sarif["runs"] for r in run_.get("results", [])}
    assert not levels & {"warning", "error"}
    issues = json.loads(render("codequality", analysis))
    assert not [i for i in issues if i["severity"] in ("major", "critical", "blocker")]
    junit = render("junit", analysis)  # a warning is not a failure there, but it is listed
    root = ET.fromstring(junit.encode("utf-8"))
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert not re.search(r"\bF\d+ (warning|error) steps", junit)


def test_an_accuracy_at_exactly_zero_throughout_is_reported_but_not_a_loss() -> None:
    """A 0.0 is too short a value for the exact-repeat rule (it repeats by rounding), except
    for an accuracy-like metric that is 0 at every point: never right once."""
    x = np.arange(5, dtype=np.float64)
    zeros = np.zeros(5)
    kwargs = {"min_points": 3, "min_fraction": 0.5, "tolerance": 1e-6}
    found = stuck_finding("plateau", "eval/f1", x, zeros, **kwargs)
    assert found is not None and "never right once" in found.message
    assert stuck_finding("plateau", "eval/aux_loss", x, zeros, **kwargs) is None
    rising = np.array([0.1, 0.0, 0.0, 0.0, 0.0])
    assert stuck_finding("plateau", "eval/f1", x, rising, **kwargs) is None


def test_overfitting_on_a_noisy_eval_loss_is_found_by_its_trend() -> None:
    """keras_noisy_val_overfit: 40 epochs validated on 50 digits. val_loss wanders over a
    wide range after its minimum and drifts up; no single evaluation clears the noise tests
    (steps 2 and 5), the trend over the evaluations after the minimum does (step 6). The
    medians the message quotes are recomputed here from the raw log."""
    path = log_of("keras_noisy_val_overfit")
    truth = EXPECTED["keras_noisy_val_overfit"]["pathologies"][0]
    val_loss = csv_column(path, "val_loss")
    steps = np.array([s for s, _ in val_loss], dtype=np.float64)
    values = np.array([v for _, v in val_loss])
    params = OverfittingParams()
    # The class: the single-point noise rule (step 5) alone does not see it.
    kwargs = {"evals": params.sustained_evals, "alpha": params.trend_alpha}
    assert (
        sustained_rise(values, fraction=params.sustained_rise, smoothing_fraction=0.1, **kwargs)
        is None
    )
    finding = only(loud(path), "overfitting", "eval/loss")
    assert finding.severity is Severity.WARNING and "(overfitting)" in finding.title
    assert "Mann-Kendall" in finding.message and finding.step_end == val_loss[-1][0]
    first = int(np.searchsorted(steps, int(re.findall(r"from step (\d+) to", finding.message)[0])))
    judged = values[first:]
    third = judged.size // 3
    early, late = statistics.median(judged[:third]), statistics.median(judged[-third:])
    assert late >= 1.05 * early and late - early == pytest.approx(finding.evidence["rise"])
    assert f"the median of the last {third} (steps {val_loss[-third][0]}-" in finding.message
    assert f"is {late:.4g}, {100 * (late / early - 1):.0f}% above" in finding.message
    assert f"the first {third} (steps {val_loss[first][0]}-" in finding.message
    assert f"{early:.4g};" in finding.message
    assert finding.evidence["best_step"] == truth["best_step"]
    assert float(finding.evidence["trend_p"]) < params.trend_alpha
    # The same evaluations after the minimum in reverse order trend down: not reported.
    reversed_run = synth.make_run(
        {
            names.TRAIN_LOSS: (steps, np.array([v for _, v in csv_column(path, "loss")])),
            names.EVAL_LOSS: (steps, np.concatenate((values[:first], judged[::-1]))),
        }
    )
    assert not [f for f in analyze(reversed_run).findings if "trend_p" in f.evidence]
