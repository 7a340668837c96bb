"""Capture what real training loops print when their step counter restarts every epoch, for
the stdout reader's restart tests (`readers/_stdout_restarts.py`).

Each case is a real, seeded torch training loop on CPU, run in its own process with stdout
and stderr sent to one file as `python train.py > train.log 2>&1` leaves them (tqdm's
carriage-return bars interleave as in a real log). Each prints its batches per epoch
first, as training scripts commonly do, so the tests can check the steps against it:

- `restart_epoch_tag.log`: a fine-tune loop printing `[E1] step 0 loss 2.3456` every 5
  batches (the step is the batch within the epoch) and `Epoch 1 avg-loss 1.0192` after
  each epoch;
- `restart_epoch_iter.log`: `epoch 0 iter 20 loss X` every 4 batches, then `epoch 0 val
  loss Y` after each epoch;
- `restart_epoch_header.log`: a Keras-like `Epoch 2/4` header line, then `  iter 10:
  loss X` lines whose counter restarts;
- `restart_dcgan.log`: the PyTorch DCGAN example's print statement, `[%d/%d][%d/%d]
  Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f` (epoch from 0 of niter,
  batch from 0 of len(dataloader)), from a small DCGAN on 16x16 images;
- `restart_tqdm_bars.log`: a `tqdm(loader)` bar per epoch with `set_postfix(loss=...)` and
  no epoch in its description (the counter's restart is the only sign of a new epoch).

A second run appended to the same file (`>>`) is the same seeded loop printed twice: the
tests append a log to itself.

Regenerate (from the repository root, in a separate environment)::

    python3 -m venv /tmp/restart-gen
    /tmp/restart-gen/bin/pip install torch==2.13.0 numpy==2.4.6 tqdm==4.70.1
    /tmp/restart-gen/bin/python tests/data/stdout/generate_restarts.py

Losses are reproducible on one machine; the tqdm bars' rates and times are wall-clock.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SEED = 7
EPOCHS = 3


def classifier(seed: int, batches: int, batch_size: int = 16) -> tuple[Any, Any, Any]:
    """A small MLP, its optimizer and a seeded loader of a learnable 4-class problem."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(seed)
    count = batches * batch_size
    x = torch.randn(count, 10)
    weights = torch.randn(10, 4)
    y = (x @ weights + 0.8 * torch.randn(count, 4)).argmax(dim=1)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
    return model, optimizer, loader


def train_batch(model: Any, optimizer: Any, batch: Any) -> float:
    from torch import nn

    x, y = batch
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.item())


def epoch_tag() -> None:
    model, optimizer, loader = classifier(SEED, batches=60)
    print(f"batches per epoch: {len(loader)}")
    for epoch in range(1, EPOCHS + 1):
        total = 0.0
        for step, batch in enumerate(loader):
            loss = train_batch(model, optimizer, batch)
            total += loss
            if step % 5 == 0:
                print(f"[E{epoch}] step {step} loss {loss:.4f}")
        print(f"Epoch {epoch} avg-loss {total / len(loader):.4f}")


def epoch_iter() -> None:
    import torch
    from torch import nn

    model, optimizer, loader = classifier(SEED, batches=48)
    val_x = torch.randn(128, 10)
    print(f"batches per epoch: {len(loader)}")
    for epoch in range(EPOCHS):
        for it, batch in enumerate(loader):
            loss = train_batch(model, optimizer, batch)
            if it % 4 == 0:
                print(f"epoch {epoch} iter {it} loss {loss:.4f}")
        with torch.no_grad():
            logits = model(val_x)
            val = nn.functional.cross_entropy(logits, logits.argmax(dim=1).roll(1))
        print(f"epoch {epoch} val loss {float(val):.4f}")


def epoch_header() -> None:
    model, optimizer, loader = classifier(SEED, batches=40)
    print(f"batches per epoch: {len(loader)}")
    for epoch in range(EPOCHS + 1):
        print(f"Epoch {epoch + 1}/{EPOCHS + 1}")
        for it, batch in enumerate(loader):
            loss = train_batch(model, optimizer, batch)
            if it % 10 == 0:
                print(f"  iter {it}: loss {loss:.4f}")


def dcgan() -> None:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(SEED)
    nz, ngf, ndf, niter = 8, 8, 8, EPOCHS
    # Blobs at random places on a 16x16 canvas: a learnable image distribution.
    grid = torch.arange(16.0)
    centres = torch.rand(512, 2) * 10 + 3
    dy = (grid.view(1, 16, 1) - centres[:, 0].view(-1, 1, 1)) ** 2
    dx = (grid.view(1, 1, 16) - centres[:, 1].view(-1, 1, 1)) ** 2
    images = (torch.exp(-(dx + dy) / 8.0) * 2 - 1).unsqueeze(1)
    dataloader = DataLoader(TensorDataset(images), batch_size=32, shuffle=True)
    print(f"batches per epoch: {len(dataloader)}")
    netG = nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
        nn.BatchNorm2d(ngf * 2),
        nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
        nn.BatchNorm2d(ngf),
        nn.ReLU(True),
        nn.ConvTranspose2d(ngf, 1, 4, 2, 1, bias=False),
        nn.Tanh(),
    )
    netD = nn.Sequential(
        nn.Conv2d(1, ndf, 4, 2, 1, bias=False),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
        nn.BatchNorm2d(ndf * 2),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
        nn.Sigmoid(),
    )
    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    real_label, fake_label = 1.0, 0.0
    # The training loop of pytorch/examples dcgan/main.py, print statement as written there.
    for epoch in range(niter):
        for i, (real_cpu,) in enumerate(dataloader, 0):
            netD.zero_grad()
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label)
            output = netD(real_cpu).view(-1)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()
            noise = torch.randn(batch_size, nz, 1, 1)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach()).view(-1)
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()
            netG.zero_grad()
            label.fill_(real_label)
            output = netD(fake).view(-1)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()
            print(
                "[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f"  # noqa: UP031
                % (
                    epoch,
                    niter,
                    i,
                    len(dataloader),
                    errD.item(),
                    errG.item(),
                    D_x,
                    D_G_z1,
                    D_G_z2,
                )
            )


def tqdm_bars() -> None:
    from tqdm import tqdm

    model, optimizer, loader = classifier(SEED, batches=30)
    print(f"batches per epoch: {len(loader)}", flush=True)
    for _ in range(EPOCHS):
        bar = tqdm(loader, mininterval=0, miniters=1)
        for batch in bar:
            bar.set_postfix(loss=f"{train_batch(model, optimizer, batch):.4f}")


CASES = {
    "restart_epoch_tag.log": epoch_tag,
    "restart_epoch_iter.log": epoch_iter,
    "restart_epoch_header.log": epoch_header,
    "restart_dcgan.log": dcgan,
    "restart_tqdm_bars.log": tqdm_bars,
}


def main() -> None:
    if len(sys.argv) == 2:
        CASES[sys.argv[1]]()
        return
    for log in CASES:
        with (HERE / log).open("w", encoding="utf-8") as out:
            subprocess.run([sys.executable, __file__, log], stdout=out, stderr=out, check=True)


if __name__ == "__main__":
    main()
