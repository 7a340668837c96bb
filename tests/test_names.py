"""Name normalisation: the spellings real tools write map onto the canonical names."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainspotter.names import NOT_MAPPED, is_loss_like, markdown_table, normalize

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


COMMON_SPELLINGS = {
    "throughput": [
        "tokens_per_sec",
        "samples_per_second",
        "train_samples_per_second",
        "it/s",
        "steps_per_sec",
        "samples/sec",
        "tokens/s",
        "throughput",
        "samples_per_sec",
        "train/samples_per_sec",
        "Tokens_Per_Second",
    ],
    "step_time": ["step_time", "time/step", "iter_time", "batch_time", "time_per_iter"],
    "grad_norm": ["gnorm", "global_grad_norm"],
    "eval/loss": ["dev_loss", "test/loss"],
}


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [(raw, canonical) for canonical, raws in COMMON_SPELLINGS.items() for raw in raws],
)
def test_common_throughput_and_step_time_spellings(raw: str, canonical: str) -> None:
    assert normalize(raw) == canonical


@pytest.mark.parametrize(
    "raw", ["eval_samples_per_second", "step_avg_ms", "time/batch", "dt", "time_ms"]
)
def test_look_alikes_are_not_mapped(raw: str) -> None:
    """Eval speed, running averages, counters and generic names are not training timing."""
    assert normalize(raw) == raw
    assert raw in NOT_MAPPED


def test_the_documented_table_is_the_code() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "metric-names.md").read_text()
    assert markdown_table() in doc, "regenerate docs/metric-names.md from names.markdown_table()"
