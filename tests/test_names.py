"""Name normalisation: the spellings real tools write map onto the canonical names."""

from __future__ import annotations

import pytest

from trainspotter.names import is_loss_like, normalize

SPELLINGS = {
    "train/loss": [
        "loss",
        "train_loss",
        "training_loss",
        "train_loss_step",
        "train/loss_step",
        "Loss",
    ],
    "eval/loss": ["val_loss", "validation_loss", "eval_loss", "valid/loss", "eval/loss"],
    "lr": ["learning_rate", "lr-Adam", "lr-AdamW/pg1", "train/lr", "lr-SGD"],
    "grad_norm": ["grad_norm", "gradient_norm", "train/grad_norm", "total_norm"],
    "step_time": ["step_time", "time/step"],
    "throughput": ["train_samples_per_second", "samples_per_second"],
    "epoch": ["epoch"],
}


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [(raw, canonical) for canonical, raws in SPELLINGS.items() for raw in raws],
)
def test_known_spellings(raw: str, canonical: str) -> None:
    assert normalize(raw) == canonical


@pytest.mark.parametrize("raw", ["eval/bleu", "train_loss_epoch", "my_custom_metric", "acc"])
def test_unknown_names_pass_through(raw: str) -> None:
    assert normalize(raw) == raw


def test_user_aliases_win() -> None:
    assert normalize("my_loss", {"my_loss": "train/loss"}) == "train/loss"
    assert normalize("loss", {"loss": "eval/loss"}) == "eval/loss"


def test_loss_like_excludes_loss_scale() -> None:
    assert is_loss_like("train/loss") and is_loss_like("train_disc_loss")
    assert not is_loss_like("loss_scale") and not is_loss_like("optimizer/loss_scale")
