"""Write `run/events.out.tfevents.*` with PyTorch's own `SummaryWriter`, no framework.

The plain-PyTorch baseline for the framework evidence the TensorBoard reader records: a
tiny linear regression (CPU, seeded) trained with plain SGD at a learning rate far too
high for its inputs, so the loss grows every step until it overflows to inf/NaN (the
divergence detector's clipping fix must come out in plain-PyTorch words). `loss` and `lr`
are logged every step, as a hand-written loop would.

Regenerate (from the repository root, in an environment with the CPU build of torch and
tensorboard)::

    pip install torch==2.13.0 tensorboard
    python tests/data/tb_writers/pytorch/make_fixture.py

Generated with torch 2.13.0+cpu and tensorboard 2.21.0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter

HERE = Path(__file__).resolve().parent
STEPS = 40
LR = 0.6


def main() -> None:
    torch.manual_seed(0)
    target = HERE / "run"
    shutil.rmtree(target, ignore_errors=True)
    x = 3.0 * torch.randn(256, 8)
    y = x @ torch.randn(8, 1) + 0.1 * torch.randn(256, 1)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    writer = SummaryWriter(log_dir=str(target))
    for step in range(1, STEPS + 1):
        batch = torch.randint(0, 256, (32,))
        loss = nn.functional.mse_loss(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        writer.add_scalar("loss", loss.item(), step)
        writer.add_scalar("lr", optimizer.param_groups[0]["lr"], step)
    writer.close()
    print(sorted(p.name for p in target.iterdir()))


if __name__ == "__main__":
    main()
