"""Real Lightning GANs on a 2-D toy distribution, logged by Lightning's own ``CSVLogger``: a
GAN player's loss moves with its opponent's skill and need not fall.

The data: eight Gaussians on a ring of radius 2 (standard deviation 0.05 each, equal
weights), the usual toy for GANs: 20,480 training points and 2,048 held-out points drawn
with a seeded numpy generator. A generator MLP (8-d standard normal noise -> 128 -> 128 ->
2, ReLU) and a discriminator MLP (2 -> 128 -> 128 -> 1, LeakyReLU 0.2) in one
``LightningModule`` with manual optimisation and two Adam optimisers (betas 0.5, 0.999),
batch 256 (80 steps per epoch), on CPU, seeded (``seed_everything``, one torch thread,
``deterministic=True``). Each training step updates the discriminator once, then the
generator once; ``d_loss`` (real and fake terms summed, 2 ln 2 = 1.386 at chance) and
``g_loss`` (the non-saturating loss, ln 2 = 0.693 at chance) of that step are logged per
step (``log_every_n_steps=1``). After every epoch the module measures the generator's
quality on the held-out points with a fixed noise batch and logs it as validation metrics:
``val_swd``, the sliced Wasserstein-1 distance between 2,048 generated and the 2,048
held-out points (mean over 128 fixed random directions; lower is better), and
``val_modes``, how many of the 8 modes hold at least 2% of the generated points within 3
standard deviations of their centre.

- ``lightning_gan_healthy``: the standard recipe (the non-saturating loss through
  ``BCEWithLogitsLoss``, both players at LR 1e-3), 25 epochs, 2,000 steps. The generator
  learns the ring (``val_swd`` 1.27 at step 79, 0.09 at step 1999; all 8 modes covered)
  while the players' losses move with each other's skill: the discriminator's loss rises
  from 0.84 (median of steps 80-159) to 1.32 (median of steps 1920-1999), towards chance,
  as the generator improves; the generator's rises from 0.74 (median of steps 240-319) to
  1.08 (steps 1040-1119) as the discriminator learns, then eases. Must be silent. Before
  ``names.adversarial_losses`` trainspotter called its ``d_loss`` "drifting upward
  (diverging)" (error) and "stalled far from convergence" (warning).
- ``lightning_gan_nan``: the same GAN with the textbook losses written by hand,
  ``-log(sigmoid(logits))`` with no clamp (instead of the logits form), and the
  discriminator at LR 5e-2 against the generator's 1e-3, 4 epochs: the discriminator
  swings, and at step 103 it gives a fake point a logit of 22, whose float32 ``sigmoid``
  is exactly 1: ``log(1 - 1)`` is ``-inf``, ``d_loss`` is ``+inf``, and the update it
  drives makes the discriminator's weights NaN. The first non-finite loss is counted in
  ``training_step``; the checks a GAN keeps (non-finite values) must still speak.

Environment (see examples/README.md; the framework venv)::

    /tmp/examples-frameworks/bin/pip install -r examples/lightning_input_spike/requirements.txt
    /tmp/examples-frameworks/bin/python examples/lightning_gan.py                  # both, ~1 min
    /tmp/examples-frameworks/bin/python examples/lightning_gan.py lightning_gan_nan

The ground truth each run writes into ``examples/expected.json`` (its own entry; its
folder's ``lightning_logs/`` is replaced) is what the module measured in ``training_step``
and ``validation_step``, never what the CSV says.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expected_entry import rounded, write_runs  # noqa: E402
from lightning_not_learning import fit  # noqa: E402

LOG_FILE = "lightning_logs/version_0/metrics.csv"
SEED = 0
DATA_SEED = 0
MODES = 8
RADIUS = 2.0
MODE_STD = 0.05
NOISE_DIM = 8
BATCH = 256
STEPS_PER_EPOCH = 80  # 20,480 training points in batches of 256
CENTRES = torch.tensor(
    [
        [RADIUS * math.cos(2 * math.pi * k / MODES), RADIUS * math.sin(2 * math.pi * k / MODES)]
        for k in range(MODES)
    ],
    dtype=torch.float32,
)


def ring(count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` points of the eight-Gaussian ring."""
    centres = CENTRES.numpy()[rng.integers(0, MODES, size=count)]
    return (centres + MODE_STD * rng.standard_normal((count, 2))).astype(np.float32)


def sliced_w1(a: torch.Tensor, b: torch.Tensor, directions: torch.Tensor) -> float:
    """Sliced Wasserstein-1 distance of two equal-size samples: the mean over the
    directions of the 1-D W1 distance of their projections (sorted differences)."""
    pa = torch.sort(a @ directions.T, dim=0).values
    pb = torch.sort(b @ directions.T, dim=0).values
    return float((pa - pb).abs().mean())


def modes_covered(points: torch.Tensor) -> int:
    """Modes holding at least 2% of the points within 3 standard deviations of the centre."""
    distance = torch.cdist(points, CENTRES)
    nearest, index = distance.min(dim=1)
    close = index[nearest < 3 * MODE_STD]
    counts = torch.bincount(close, minlength=MODES)
    return int((counts >= 0.02 * len(points)).sum())


class Gan(L.LightningModule):
    """Two MLP players, manual optimisation; measures the generator after every epoch."""

    def __init__(self, lr_g: float, lr_d: float, logits_loss: bool) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.generator = nn.Sequential(
            nn.Linear(NOISE_DIM, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2)
        )
        self.discriminator = nn.Sequential(
            nn.Linear(2, 128),
            nn.LeakyReLU(0.2),
            nn.Linear(128, 128),
            nn.LeakyReLU(0.2),
            nn.Linear(128, 1),
        )
        self.lr_g, self.lr_d, self.logits_loss = lr_g, lr_d, logits_loss
        generator = torch.Generator().manual_seed(SEED + 1)
        self.fixed_noise = torch.randn(2048, NOISE_DIM, generator=generator)
        directions = torch.randn(128, 2, generator=generator)
        self.directions = directions / directions.norm(dim=1, keepdim=True)
        # Lightning's global_step counts optimiser steps (two per batch here); the logged
        # step counts batches, so the module counts them itself.
        self.batches = 0
        self.g_losses: dict[int, float] = {}  # logged step -> the g_loss logged there
        self.d_losses: dict[int, float] = {}
        self.quality: dict[int, tuple[float, int]] = {}  # last step of epoch -> swd, modes
        # step -> (lowest logit on real points, highest on fakes) of the discriminator's step
        self.logit_extremes: dict[int, tuple[float, float]] = {}

    def _d_loss(self, real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
        if self.logits_loss:
            bce = nn.functional.binary_cross_entropy_with_logits
            return bce(real_logits, torch.ones_like(real_logits)) + bce(
                fake_logits, torch.zeros_like(fake_logits)
            )
        # The textbook formula written by hand: no clamp, no logits form.
        return -(
            torch.log(torch.sigmoid(real_logits)).mean()
            + torch.log(1 - torch.sigmoid(fake_logits)).mean()
        )

    def _g_loss(self, fake_logits: torch.Tensor) -> torch.Tensor:
        """The non-saturating generator loss, -log D(G(z))."""
        if self.logits_loss:
            return nn.functional.binary_cross_entropy_with_logits(
                fake_logits, torch.ones_like(fake_logits)
            )
        return -torch.log(torch.sigmoid(fake_logits)).mean()

    def training_step(self, batch: list[torch.Tensor], _: int) -> None:
        (real,) = batch
        opt_g, opt_d = self.optimizers()  # type: ignore[misc]
        fake = self.generator(torch.randn(len(real), NOISE_DIM))
        real_logits, fake_logits = self.discriminator(real), self.discriminator(fake.detach())
        d_loss = self._d_loss(real_logits, fake_logits)
        self.logit_extremes[self.batches] = (real_logits.min().item(), fake_logits.max().item())
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        g_loss = self._g_loss(self.discriminator(fake))
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.d_losses[self.batches] = d_loss.item()
        self.g_losses[self.batches] = g_loss.item()
        self.batches += 1
        self.log("d_loss", d_loss)
        self.log("g_loss", g_loss)

    def validation_step(self, batch: list[torch.Tensor], _: int) -> None:
        (held_out,) = batch
        generated = self.generator(self.fixed_noise)
        swd = sliced_w1(generated, held_out, self.directions)
        modes = modes_covered(generated)
        if not self.trainer.sanity_checking:
            self.quality[self.batches - 1] = (swd, modes)
        self.log("val_swd", swd)
        self.log("val_modes", float(modes))

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        betas = (0.5, 0.999)
        return [
            torch.optim.Adam(self.generator.parameters(), lr=self.lr_g, betas=betas),
            torch.optim.Adam(self.discriminator.parameters(), lr=self.lr_d, betas=betas),
        ]


def train(name: str, model: Gan, epochs: int) -> None:
    """Fit on the ring's training points, validated on its held-out points every epoch."""
    rng = np.random.default_rng(DATA_SEED)
    train_points, held_out = ring(STEPS_PER_EPOCH * BATCH, rng), ring(2048, rng)
    fit(
        name,
        model,
        DataLoader(TensorDataset(torch.from_numpy(train_points)), batch_size=BATCH, shuffle=True),
        DataLoader(TensorDataset(torch.from_numpy(held_out)), batch_size=len(held_out)),
        epochs,
    )


def epoch_medians(losses: dict[int, float]) -> list[float]:
    """The median of each epoch's per-step losses (80 steps an epoch)."""
    steps = sorted(losses)
    return [
        statistics.median(losses[s] for s in steps[i : i + STEPS_PER_EPOCH])
        for i in range(0, len(steps), STEPS_PER_EPOCH)
    ]


def epoch_steps(epoch: int) -> list[int]:
    """The first and last logged step of an epoch (0-based)."""
    return [epoch * STEPS_PER_EPOCH, (epoch + 1) * STEPS_PER_EPOCH - 1]


def log_fields(steps: int, facts: dict[str, Any]) -> dict[str, Any]:
    """The entry's keys about its log, in expected.json's order."""
    return {
        "files": [LOG_FILE],
        "steps": steps,
        "max_steps": steps,
        "logging_steps": 1,
        "eval_steps": STEPS_PER_EPOCH,
        "facts": facts,
    }


def healthy(_: object) -> dict[str, Any]:
    name = "lightning_gan_healthy"
    L.seed_everything(SEED, workers=True)
    lr, epochs = 1e-3, 25
    model = Gan(lr_g=lr, lr_d=lr, logits_loss=True)
    train(name, model, epochs)
    g_epochs, d_epochs = epoch_medians(model.g_losses), epoch_medians(model.d_losses)
    # The generator's loss: its lowest epoch median after the first epochs, then its
    # highest after that; the discriminator's: its lowest, then its last.
    g_low = min(range(1, epochs), key=lambda e: g_epochs[e])
    g_high = max(range(g_low, epochs), key=lambda e: g_epochs[e])
    d_low = min(range(epochs), key=lambda e: d_epochs[e])
    quality = [model.quality[s] for s in sorted(model.quality)]
    swd = [q[0] for q in quality]
    assert g_epochs[g_high] > 1.2 * g_epochs[g_low], g_epochs  # the generator's loss rose
    assert d_epochs[-1] > 1.2 * d_epochs[d_low], d_epochs  # so did the discriminator's
    assert swd[-1] < swd[0] / 5 and quality[-1][1] == MODES, quality  # while G got better
    steps = len(model.g_losses)
    return {
        "summary": (
            "Lightning GAN (two MLPs, manual optimisation, two Adam optimisers at LR "
            f"{lr:g}, the non-saturating loss through BCEWithLogitsLoss) on a ring of 8 "
            f"Gaussians, {steps} steps, d_loss and g_loss logged per step by CSVLogger: the "
            "generator learns the ring (val_swd, a sliced Wasserstein distance to held-out "
            f"points, {swd[0]:.3g} -> {swd[-1]:.3g}; all 8 modes covered) while its loss "
            f"rises for {g_high - g_low} of {epochs} epochs and the discriminator's loss "
            "rises over most of the run, as each player's loss follows the other's skill. "
            "Healthy: a GAN player's loss need not fall."
        ),
        "healthy": True,
        "must_be_silent": True,
        "pathologies": [],
        "may_also_flag": {},
        **log_fields(
            steps,
            {
                "g_loss_epoch_median_low": rounded(g_epochs[g_low]),
                "g_loss_low_epoch_steps": epoch_steps(g_low),
                "g_loss_epoch_median_high": rounded(g_epochs[g_high]),
                "g_loss_high_epoch_steps": epoch_steps(g_high),
                "d_loss_epoch_median_low": rounded(d_epochs[d_low]),
                "d_loss_low_epoch_steps": epoch_steps(d_low),
                "d_loss_epoch_median_last": rounded(d_epochs[-1]),
                "val_swd_first": rounded(swd[0]),
                "val_swd_last": rounded(swd[-1]),
                "val_modes_last": quality[-1][1],
                "chance_level": {
                    "d_loss": rounded(2 * math.log(2)),
                    "g_loss": rounded(math.log(2)),
                },
                "step_convention": "Lightning's logged step counts batches (the first is step "
                "0); global_step counts optimiser steps, two per batch",
            },
        ),
    }


def nan(_: object) -> dict[str, Any]:
    name = "lightning_gan_nan"
    L.seed_everything(SEED, workers=True)
    lr_g, lr_d, epochs = 1e-3, 5e-2, 4
    model = Gan(lr_g=lr_g, lr_d=lr_d, logits_loss=False)
    train(name, model, epochs)
    first = {
        metric: min(s for s, v in losses.items() if not math.isfinite(v))
        for metric, losses in (("d_loss", model.d_losses), ("g_loss", model.g_losses))
    }
    steps = len(model.g_losses)
    onset = first["d_loss"]
    assert onset <= first["g_loss"], first
    assert all(not math.isfinite(model.d_losses[s]) for s in range(onset, steps))
    real_min, fake_max = model.logit_extremes[onset]
    # The cause, checked: float32's sigmoid of the highest fake logit is exactly 1.
    saturated = float(1 - torch.sigmoid(torch.tensor(fake_max))) == 0.0
    assert saturated, (real_min, fake_max)
    return {
        "summary": (
            "The GAN of lightning_gan_healthy with its losses written by hand as "
            "-log(sigmoid(logits)) without a clamp, and the discriminator at LR "
            f"{lr_d:g} against the generator's {lr_g:g}: at step {onset} the discriminator "
            f"gives a fake point a logit of {fake_max:.3g}, float32's sigmoid rounds it to "
            "exactly 1, log(1 - 1) is -inf, and d_loss is +inf; the update it drives makes "
            "the discriminator's weights NaN (g_loss, computed after it, is NaN at the same "
            f"step), and both losses stay non-finite to the end ({steps} steps)."
        ),
        "healthy": False,
        "must_be_silent": False,
        "pathologies": [
            {
                "kind": "nan",
                "detector": "divergence",
                "metric": "d_loss",
                "min_severity": "error",
                "first_step": onset,
                "criterion": "the first step whose d_loss, measured in training_step, is not "
                "finite",
                "first_value": str(model.d_losses[onset]),
                "g_loss_first_nonfinite_step": first["g_loss"],
            }
        ],
        "may_also_flag": {
            "spikes": "d_loss jumps several times before the first non-finite value: the "
            "discriminator's LR is far too high",
        },
        **log_fields(
            steps,
            {
                "last_finite_d_loss": rounded(model.d_losses[onset - 1]),
                "highest_fake_logit_at_onset": rounded(fake_max),
                "lowest_real_logit_at_onset": rounded(real_min),
                "step_convention": "Lightning's logged step counts batches (the first is step "
                "0); global_step counts optimiser steps, two per batch",
            },
        ),
    }


RUNS = {"lightning_gan_healthy": healthy, "lightning_gan_nan": nan}

if __name__ == "__main__":
    write_runs(RUNS, sys.argv[1:], None)
