"""Three real Lightning runs, logged by Lightning's own ``CSVLogger``, for classes seen on
unseen published logs that trainspotter used to miss.

- ``lightning_dice_nan``: a small convolutional segmenter (1-8-1 channels, 3x3 kernels) that
  marks the ink pixels of scikit-learn's bundled 8x8 digits (pixel >= 8 of 16), with 5% of
  the tiles blank (the digit removed, only the sensor noise every tile carries: an empty
  mask). Its Dice score is computed per tile, ``2|P & T| / (|P| + |T|)`` on the thresholded
  prediction, with no smoothing term, and averaged over the batch, the way many hand-written
  Dice metrics are. The output bias starts at +2 (every pixel predicted ink, as a
  foreground-heavy init does), so early on every blank tile gets a prediction and the Dice is
  finite; once the model learns to leave a blank tile empty, that tile's Dice is 0/0 = NaN,
  the batch mean is NaN, and Lightning's epoch mean of ``train_dice`` (and ``val_dice``) is
  NaN from then on, while the loss (BCE with logits) stays finite and keeps falling. The
  model is getting better; the metric is broken. Adam 1e-3, batch 64, 25 epochs.
- ``lightning_bn_eval_spike``: an MLP with BatchNorm (64-64-BN-ReLU-10) on the digits
  (the split and standardisation of ``examples/generate.py``), Adam 1e-2, batch 64, 15 epochs,
  validated after every epoch. The last batch of epoch 1 (global step 39) arrives with a
  constant +100 on every input (a preprocessing bug on one shard): BatchNorm's running mean
  moves a tenth of the way toward it just before the validation of that epoch, so that one
  evaluation's ``val_loss`` is ~30x its neighbours, and the next epoch's batches wash the
  running statistics out again. A spike at the second evaluation: too early for a noise
  baseline.

- ``lightning_shard_burst``: a 64-64-10 MLP on the digits, SGD with momentum, batch 16,
  ``train_loss`` logged at every step; in the 5 batches of steps 300-304 a quarter of the
  labels are shifted by one class (a mislabelled shard). The per-batch loss of a batch of 16
  jumps by several times from batch to batch, so against that noise each of the 5 raised
  points is only a few robust sigmas up (trainspotter's z: 4.6-5.0, under its single-point
  threshold of 8): a burst that only the run of raised points shows.

All on CPU, seeded (``seed_everything``, one torch thread, ``deterministic=True``). The
ground truth is what the modules measured in their hooks (batches whose Dice was NaN, the
validation losses they computed, the validation loss with the running statistics from before
the bad batch), never read back from the CSV.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_metric_gaps.py     # all, ~2 min

Each run replaces its folder's ``lightning_logs/`` and its own entry in
``examples/expected.json``.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import lightning as L
import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lightning_runs  # noqa: E402
from expected_entry import rounded  # noqa: E402
from generate import DATA_SEED, TRAIN_SIZE, Digits  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"
BATCH = 64
STEPS_PER_EPOCH = TRAIN_SIZE // BATCH  # 20


Module = TypeVar("Module", bound=L.LightningModule)


def seeded_fit(
    name: str, module: Callable[[], Module], data: Digits, batch: int, epochs: int
) -> tuple[Module, int]:
    """Seed 0, build the module (its initial weights come from the seed), and train it on
    every training row with `lightning_runs.fit`; the module and the last global step."""
    L.seed_everything(0, workers=True)
    model = module()
    return model, lightning_runs.fit(name, model, data, TRAIN_SIZE, batch, epochs)


def epoch_end_step(epoch: int) -> int:
    """The global step an epoch's logged values carry (the epoch's last training step)."""
    return (epoch + 1) * STEPS_PER_EPOCH - 1


# --- lightning_dice_nan ----------------------------------------------------------------

DICE_EPOCHS = 25
BLANK_SHARE = 0.05
SENSOR_NOISE = 0.3
INK_THRESHOLD = 0.5  # pixel >= 8 of 16
INITIAL_BIAS = 2.0


def ink_tiles() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits scaled to [0, 1] as 1x8x8 tiles, their ink masks, and the train/eval order;
    `BLANK_SHARE` of the tiles have the digit removed (an empty mask), and every tile
    carries Gaussian sensor noise."""
    images = load_digits().data.astype(np.float32).reshape(-1, 1, 8, 8) / 16.0
    rng = np.random.default_rng(DATA_SEED)
    order = rng.permutation(len(images))
    masks = (images >= INK_THRESHOLD).astype(np.float32)
    blank = rng.random(len(images)) < BLANK_SHARE
    images[blank] = 0.0
    masks[blank] = 0.0
    noisy = images + SENSOR_NOISE * rng.standard_normal(images.shape).astype(np.float32)
    return noisy, masks, order


def dice_per_tile_mean(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The batch mean of each tile's Dice on the thresholded prediction, with no smoothing
    term: a blank tile predicted blank is 0/0 = NaN, and so is the mean."""
    predicted = (logits > 0).float()
    overlap = (predicted * target).sum(dim=(1, 2, 3))
    total = predicted.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
    return (2 * overlap / total).mean()


class InkSegmenter(L.LightningModule):
    """Two 3x3 convolutions; logs train_loss/train_dice and val_loss/val_dice per epoch and
    counts, per epoch, the training batches whose Dice was NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1)
        )
        final = self.net[2]
        assert isinstance(final, nn.Conv2d) and final.bias is not None
        nn.init.constant_(final.bias, INITIAL_BIAS)
        self.batch_dice: list[float] = []
        self.nan_batches: list[int] = []  # per training epoch
        self.train_loss: list[float] = []  # per training epoch: the mean batch loss
        self.val_batches: list[tuple[float, int]] = []  # (Dice, tiles) per validation batch
        self.val_dice: list[float] = []  # per validation: the batch mean Lightning logs

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        images, masks = batch
        logits = self.net(images)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, masks)
        dice = dice_per_tile_mean(logits, masks)
        self.batch_dice.append(float(dice))
        self.train_loss.append(float(loss.detach()))
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        self.log("train_dice", dice, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        images, masks = batch
        logits = self.net(images)
        dice = dice_per_tile_mean(logits, masks)
        self.log("val_loss", nn.functional.binary_cross_entropy_with_logits(logits, masks))
        self.log("val_dice", dice)
        self.val_batches.append((float(dice), len(masks)))

    def on_validation_epoch_end(self) -> None:
        tiles = sum(count for _, count in self.val_batches)
        self.val_dice.append(sum(d * count for d, count in self.val_batches) / tiles)
        self.val_batches = []

    def on_train_epoch_end(self) -> None:
        self.nan_batches.append(sum(math.isnan(d) for d in self.batch_dice))
        self.batch_dice = []

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def lightning_dice_nan(_: Digits) -> dict[str, Any]:
    L.seed_everything(0, workers=True)
    images, masks, order = ink_tiles()
    train_rows, eval_rows = order[:TRAIN_SIZE], order[TRAIN_SIZE:]
    tiles = Digits(images[train_rows], masks[train_rows], images[eval_rows], masks[eval_rows])
    model = InkSegmenter()
    steps = lightning_runs.fit("lightning_dice_nan", model, tiles, TRAIN_SIZE, BATCH, DICE_EPOCHS)
    nan_epochs = [e for e, count in enumerate(model.nan_batches) if count]
    first_train = nan_epochs[0]
    first_val = next(e for e, d in enumerate(model.val_dice) if math.isnan(d))
    assert first_train >= 5, model.nan_batches  # finite for a good stretch first
    assert all(model.nan_batches[first_train:]), model.nan_batches  # then NaN every epoch
    assert all(math.isnan(d) for d in model.val_dice[first_val:]), model.val_dice
    assert all(math.isfinite(loss) for loss in model.train_loss), "the loss stays finite"
    return {
        "summary": (
            "Lightning conv segmenter marking the ink of 8x8 digits, 5% of tiles blank (empty "
            "masks); the hand-written Dice (per tile, no smoothing term, batch mean) is 0/0 = "
            "NaN on a blank tile predicted blank, so once the model learns to leave blank "
            f"tiles empty train_dice is NaN at every epoch from step "
            f"{epoch_end_step(first_train)} and val_dice from step "
            f"{epoch_end_step(first_val)}, while the loss stays finite and keeps falling. "
            "CSVLogger, per-epoch values."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "metric_nonfinite",
                "detector": "divergence",
                "metric": "train_dice",
                "first_step": epoch_end_step(first_train),
                "step_range": [epoch_end_step(first_train), steps - 1],
                "criterion": "training batches whose Dice was NaN, counted per epoch in "
                "the module (on_train_epoch_end): 0 before this epoch, at least 1 in every "
                "epoch from it",
                "nan_batches_per_epoch": model.nan_batches,
                "loss_finite": True,
                "min_severity": "warning",
                "max_severity": "warning",
            },
            {
                "kind": "metric_nonfinite",
                "detector": "divergence",
                "metric": "val_dice",
                "first_step": epoch_end_step(first_val),
                "step_range": [epoch_end_step(first_val), steps - 1],
                "criterion": "the Dice the module computed on each validation",
                "loss_finite": True,
                "min_severity": "warning",
                "max_severity": "warning",
            },
        ],
        "may_also_flag": {},
        "must_not_flag": [
            {
                "detector": "*",
                "metric": "train/loss",
                "step_range": [0, steps],
                "why": "the loss is finite and falls at every epoch",
            }
        ],
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": STEPS_PER_EPOCH,
        "eval_steps": STEPS_PER_EPOCH,
        "facts": {
            "step_convention": "Lightning's global_step: an epoch's values are logged at "
            "the epoch's last training step",
            "train_loss_first_epoch": rounded(
                sum(model.train_loss[:STEPS_PER_EPOCH]) / STEPS_PER_EPOCH
            ),
            "train_loss_last_epoch": rounded(
                sum(model.train_loss[-STEPS_PER_EPOCH:]) / STEPS_PER_EPOCH
            ),
            "val_dice": [rounded(d) for d in model.val_dice],
        },
    }


# --- lightning_bn_eval_spike -----------------------------------------------------------

SPIKE_EPOCHS = 15
FAULT_STEP = epoch_end_step(1)  # the last batch before the second validation
FAULT_OFFSET = 100.0


def weighted_mean(sums: list[tuple[float, int]]) -> float:
    """The mean over a validation from (loss x batch size, batch size) per batch."""
    return sum(total for total, _ in sums) / sum(count for _, count in sums)


class BatchNormClassifier(L.LightningModule):
    """64-64-BatchNorm-ReLU-10; the batch of `FAULT_STEP` gets `FAULT_OFFSET` added to every
    input. Records each validation loss, and at the validation right after the fault also
    the loss with the BatchNorm running statistics from before the bad batch."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 10)
        )
        self.val_losses: list[float] = []
        self.val_sums: list[tuple[float, int]] = []
        self.stats_before_fault: dict[str, torch.Tensor] | None = None
        self.sums_with_stats_before_fault: list[tuple[float, int]] = []
        self.val_loss_with_stats_before_fault = math.nan

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        if self.global_step == FAULT_STEP:
            self.stats_before_fault = copy.deepcopy(self.net[1].state_dict())
            inputs = inputs + FAULT_OFFSET
        loss = nn.functional.cross_entropy(self.net(inputs), labels)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> None:
        inputs, labels = batch
        loss = nn.functional.cross_entropy(self.net(inputs), labels)
        self.log("val_loss", loss)
        self.val_sums.append((float(loss) * len(labels), len(labels)))
        if self.stats_before_fault is not None:
            # The same weights with the running statistics from before the bad batch: how
            # much of the jump is BatchNorm's running mean.
            polluted = copy.deepcopy(self.net[1].state_dict())
            self.net[1].load_state_dict(self.stats_before_fault)
            clean = nn.functional.cross_entropy(self.net(inputs), labels)
            self.sums_with_stats_before_fault.append((float(clean) * len(labels), len(labels)))
            self.net[1].load_state_dict(polluted)

    def on_validation_epoch_end(self) -> None:
        self.val_losses.append(weighted_mean(self.val_sums))
        self.val_sums = []
        if self.stats_before_fault is not None:
            self.val_loss_with_stats_before_fault = weighted_mean(self.sums_with_stats_before_fault)
            self.stats_before_fault = None

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def lightning_bn_eval_spike(data: Digits) -> dict[str, Any]:
    model, steps = seeded_fit(
        "lightning_bn_eval_spike", BatchNormClassifier, data, BATCH, SPIKE_EPOCHS
    )
    losses = model.val_losses
    before, peak, after = losses[0], losses[1], losses[2]
    assert peak > 10 * max(before, after), losses  # an order of magnitude off both
    assert max(before, after) < 2 * min(before, after), losses  # the neighbours agree
    return {
        "summary": (
            "Lightning MLP with BatchNorm on digits, Adam 1e-2, 15 epochs; the last batch "
            f"before the second validation (step {FAULT_STEP}) gets +{FAULT_OFFSET:g} on every "
            "input, so BatchNorm's running mean is off at that validation only: val_loss "
            f"{before:.3g}, {peak:.3g}, {after:.3g} at the first three evaluations "
            f"({peak / max(before, after):.0f}x its neighbours), then it falls on. CSVLogger."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "eval_spike",
                "detector": "spikes",
                "metric": "eval/loss",
                "log_column": "val_loss",
                "step": epoch_end_step(1),
                "cause_step": FAULT_STEP,
                "val_loss_before": rounded(before),
                "val_loss_peak": rounded(peak),
                "val_loss_after": rounded(after),
                "val_loss_peak_with_running_stats_before_fault": rounded(
                    model.val_loss_with_stats_before_fault
                ),
                "evaluations_before": 1,
                "min_severity": "warning",
                "max_severity": "warning",
            }
        ],
        "may_also_flag": {},
        "must_not_flag": [
            {
                "detector": "spikes",
                "metric": "eval/loss",
                "step_range": [epoch_end_step(2), steps],
                "why": "after the spike val_loss falls and settles: no other spike",
            }
        ],
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": STEPS_PER_EPOCH,
        "facts": {
            "step_convention": "Lightning's global_step: the first batch is step 0; an "
            "epoch's validation row is logged at the epoch's last training step",
            "val_loss": [rounded(loss) for loss in losses],
        },
    }


# --- lightning_shard_burst -------------------------------------------------------------

BURST_BATCH = 16
BURST_EPOCHS = 6
BURST_START = 300
BURST_STEPS = 5
BURST_SHARE = 0.25


class ShardBurstClassifier(L.LightningModule):
    """64-64-10 MLP, SGD with momentum, batch `BURST_BATCH`, train loss logged every step;
    in the `BURST_STEPS` batches from `BURST_START` a quarter of the labels are shifted by
    one class (a mislabelled shard). Records every batch loss."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        self.losses: list[float] = []

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        inputs, labels = batch
        if BURST_START <= self.global_step < BURST_START + BURST_STEPS:
            shifted = int(BURST_SHARE * len(labels))
            labels = labels.clone()
            labels[:shifted] = (labels[:shifted] + 1) % 10
        loss = nn.functional.cross_entropy(self.net(inputs), labels)
        self.log("train_loss", loss)
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


def lightning_shard_burst(data: Digits) -> dict[str, Any]:
    model, steps = seeded_fit(
        "lightning_shard_burst", ShardBurstClassifier, data, BURST_BATCH, BURST_EPOCHS
    )
    losses = model.losses
    end = BURST_START + BURST_STEPS - 1
    before = sorted(losses[BURST_START - 50 : BURST_START])
    median_before = (before[24] + before[25]) / 2
    burst = losses[BURST_START : end + 1]
    assert min(burst) > 10 * max(before), (burst, max(before))  # above all 50 before
    back = next(i for i in range(end + 1, len(losses)) if losses[i] < 10 * median_before)
    return {
        "summary": (
            f"Lightning MLP on digits, SGD+momentum, batch {BURST_BATCH}, train_loss every "
            f"step (CSVLogger); in the {BURST_STEPS} batches of steps {BURST_START}-{end} a "
            "quarter of the labels are shifted by one class (a mislabelled shard). The "
            f"per-batch loss, median {median_before:.2g} and at most {max(before):.2g} over "
            f"the 50 steps before, is {min(burst):.3g}-{max(burst):.3g} at every one of them, "
            f"and back under 10x that median at step {back}."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "loss_burst",
                "detector": "spikes",
                "metric": "train/loss",
                "log_column": "train_loss",
                "cause_step": BURST_START,
                "step": BURST_START,
                "step_range": [BURST_START, end],
                "criterion": "the batches whose labels the module shifted",
                "burst_losses": [rounded(v) for v in burst],
                "median_loss_50_steps_before": rounded(median_before),
                "max_loss_50_steps_before": rounded(max(before)),
                "back_step": back,
                "min_severity": "warning",
                "max_severity": "warning",
            }
        ],
        "may_also_flag": {},
        "must_not_flag": [
            {
                "detector": "spikes",
                "metric": "train/loss",
                "step_range": [0, BURST_START - 1],
                "why": "ordinary batch-to-batch noise of batch-16 losses",
            },
            {
                "detector": "spikes",
                "metric": "train/loss",
                "step_range": [back + 5, steps],
                "why": "ordinary batch noise after the shard",
            },
        ],
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": None,
        "facts": {
            "step_convention": "Lightning's global_step: the first batch is step 0",
            "initial_train_loss": rounded(losses[0]),
        },
    }


RUNS: dict[str, Callable[[Digits], dict[str, Any]]] = {
    "lightning_dice_nan": lightning_dice_nan,
    "lightning_bn_eval_spike": lightning_bn_eval_spike,
    "lightning_shard_burst": lightning_shard_burst,
}


if __name__ == "__main__":
    lightning_runs.main(sys.argv[1:], RUNS)
