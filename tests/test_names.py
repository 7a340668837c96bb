"""Name normalisation: the spellings real tools write map onto the canonical names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainspotter.analysis import analyze
from trainspotter.names import (
    EVAL_LOSS,
    NOT_MAPPED,
    TRAIN_LOSS,
    adversarial_losses,
    is_error_rate,
    is_eval,
    is_loss_like,
    is_param_group_lr,
    is_rate,
    markdown_table,
    normalize,
    rl_losses,
    train_counterpart,
)
from trainspotter.readers import read_log

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
    "lr": [
        "learning_rate",
        "lr-Adam",
        "lr-AdamW/pg1",
        "train/lr",
        "lr-SGD",
        # One LR per parameter group: ultralytics (YOLO) results.csv, and the same with _ or -.
        "lr/pg0",
        "lr/pg1",
        "lr/pg2",
        "lr_pg0",
        "lr-pg1",
    ],
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


@pytest.mark.parametrize(
    "name",
    [
        # A count or size of what the loss covers: a number-of word, or a count noun as head.
        "num_loss_tokens",  # an SFT loop's target tokens per batch (examples/sft_nll_counts)
        "loss_tokens",
        "n_loss_samples",
        "nll_loss_tokens",
        "num_nll_tokens",
        "loss_count",
        "loss_batch_size",
        "numel_loss",
        # A quantity about a loss, its head a modifier: a weight annealed upward on
        # purpose (`ce_weight` annealed 0.05 -> 1), a gradient statistic, an accuracy.
        "ce_weight",
        "nll_weight",
        "train/bce_weight",
        "loss_weights",
        "kl_loss_coef",
        "lambda_ce_weight",
        "grad_norm_ce",
        "ce_grad_norm",
        "train/mlm_ce_acc",
        "loss_temperature",
        "loss_ratio",
        # fp16's loss scale and the loss times it.
        "loss_scale",
        "scaled_loss",
        # Not a loss at all.
        "policy_entropy",
        "entropy",
        "ppl",
        "eval/perplexity",
        "num_tokens",
    ],
)
def test_counts_and_non_losses_are_not_loss_like(name: str) -> None:
    assert not is_loss_like(name)


@pytest.mark.parametrize(
    "name",
    [
        # A loss of, or per, a count noun stays a loss.
        "loss_per_token",
        "nll_per_n_tokens",
        "token_loss",
        "tokens_loss",
        "count_loss",
        "seq_len_loss",
        "masked_lm_loss",
        # Negative log-likelihoods and cross-entropies, by whole word.
        "train_mean_nll",
        "test/nll",
        "nll_loss",
        "val_categorical_crossentropy",
        "train/cross_entropy",
        "xent",
        "val_ce",
        "bce",
        # Unchanged: plain losses.
        "loss",
        "lossD",
        "trainloss",
        "loss_G_L1",
        "train_loss_step",
        # A number-of word is no count by itself: the N-pair loss, a negative binomial
        # NLL, a tabular generative model's numeric and categorical column losses.
        "n_pair_loss",
        "nb_loss",
        "num_loss",
        "loss_num",
        "loss_cat",
        "train/num_nll",
        # A modifier before the loss word: SAC's temperature loss, the entropy
        # coefficient's loss, Beta-NLL, GradNorm's loss, a weighted cross-entropy.
        "alpha_loss",
        "train/ent_coef_loss",
        "beta_nll",
        "grad_norm_loss",
        "weight_cross_entropy",
    ],
)
def test_losses_by_name_are_loss_like(name: str) -> None:
    assert is_loss_like(name)


@pytest.mark.parametrize(
    ("name", "evaluation"),
    [("train_mean_nll", False), ("test/nll", True), ("val_nll", True), ("eval/xent", True)],
)
def test_an_nll_takes_its_side_from_the_name(name: str, evaluation: bool) -> None:
    assert is_loss_like(name) and is_eval(name) == evaluation


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("lr/pg0", True),
        ("lr_pg1", True),
        ("lr-pg2", True),
        ("lr-AdamW/pg1", True),
        ("lr-Adam", False),
        ("lr", False),
        ("learning_rate", False),
        ("lr-Adam-momentum", False),
    ],
)
def test_parameter_group_lrs_are_recognised(name: str, group: bool) -> None:
    assert is_param_group_lr(name) == group


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


@pytest.mark.parametrize(
    ("name", "rate"),
    [
        ("val_F1_score", True),
        ("BinaryF1Score", True),
        ("train_acc_step_epoch", True),
        ("mean_io_u", True),  # Keras's MeanIoU
        ("val_mean_io_u", True),
        ("dice_loss", True),  # a rate word; callers that want scores exclude losses
        ("grad_accum", False),  # whole words only
        ("radius", False),
        ("io_read_u", False),  # "io" and "u" not adjacent
    ],
)
def test_rate_words_are_whole_words(name: str, rate: bool) -> None:
    assert is_rate(name) is rate


def test_the_documented_table_is_the_code() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "metric-names.md").read_text()
    assert markdown_table() in doc, "regenerate docs/metric-names.md from names.markdown_table()"


@pytest.mark.parametrize(
    ("logged", "players"),
    [
        (["Gen Loss", "Disc Loss"], {"Gen Loss", "Disc Loss"}),
        # pix2pix: the L1 term is supervised and still ought to fall; val_ is judged as eval.
        (
            ["loss_G", "loss_D", "loss_G_adv", "loss_G_l1", "val_loss_G"],
            {"loss_G", "loss_D", "loss_G_adv"},
        ),
        (["generator_loss", "critic_loss"], {"generator_loss", "critic_loss"}),  # WGAN
        (["Loss_D", "Loss_G", "D(x)"], {"Loss_D", "Loss_G"}),  # DCGAN's printed names
        (["lossG", "lossD", "loss_G_L1"], {"lossG", "lossD"}),
        # One player alone, or no player, is no GAN.
        (["train/loss", "d_loss"], set()),
        (["train/loss", "eval/loss", "grad_norm"], set()),
    ],
)
def test_a_gans_player_losses_are_recognised(logged: list[str], players: set[str]) -> None:
    assert adversarial_losses(logged) == players


@pytest.mark.parametrize(
    ("logged", "moving"),
    [
        # Stable-Baselines3 PPO: the total and the three terms; approx_kl, clip_fraction and
        # explained_variance are no losses, and nothing judges them for a rise.
        (
            [
                "rollout/ep_rew_mean",
                "train/loss",
                "train/entropy_loss",
                "train/value_loss",
                "train/policy_gradient_loss",
                "train/approx_kl",
                "train/clip_fraction",
                "train/explained_variance",
            ],
            {"train/loss", "train/entropy_loss", "train/value_loss", "train/policy_gradient_loss"},
        ),
        # SB3 SAC: the actor's, the critics' and the entropy coefficient's losses.
        (
            ["rollout/ep_rew_mean", "train/actor_loss", "train/critic_loss", "train/ent_coef_loss"],
            {"train/actor_loss", "train/critic_loss", "train/ent_coef_loss"},
        ),
        # RLlib, CleanRL and Spinning Up spellings; a world model's terms still ought to fall.
        (
            ["episode_reward_mean", "vf_loss", "policy_loss", "entropy", "model_loss"],
            {"vf_loss", "policy_loss"},
        ),
        (
            ["charts/episodic_return", "losses/pg_loss", "losses/qf1_loss"],
            {"losses/pg_loss", "losses/qf1_loss"},
        ),
        (["AverageEpRet", "LossPi", "LossV", "reward_loss"], {"LossPi", "LossV"}),
        # TRL's PPO: a reward beside a policy loss, no episode metric.
        (
            ["objective/rlhf_reward", "loss/policy_avg", "loss/value_avg"],
            {"loss/policy_avg", "loss/value_avg"},
        ),
        # No RL marks: a supervised value_loss, DPO's rewards beside its loss, an entropy
        # loss alone; an eval loss is never included.
        (["train/loss", "value_loss", "entropy_loss"], set()),
        (["loss", "rewards/chosen", "rewards/margins"], set()),
        (["train/entropy_loss"], set()),
        (["rollout/ep_rew_mean", "train/loss", "eval/loss"], {"train/loss"}),
        # A world model's KL term still ought to fall (Dreamer); a policy's KL need not.
        (
            ["episode/return", "actor_loss", "critic_loss", "kl_loss", "model_loss"],
            {"actor_loss", "critic_loss"},
        ),
        (
            ["rollout/ep_rew_mean", "kl_loss", "policy_kl_loss", "kl_pi_loss", "ref_kl_loss"],
            {"policy_kl_loss", "kl_pi_loss", "ref_kl_loss"},
        ),
        # SB3's rollout/ namespace marks RL even without a reward (no Monitor wrapper).
        (["rollout/ep_len_mean", "train/loss"], {"train/loss"}),
        # An episode length alone is no environment: a sequence model trained on recorded
        # episodes; a `rollout` word outside a namespace is a learned simulator's rollout.
        (["episode_len", "train/loss", "value_loss"], set()),
        (["ep_length", "train/loss", "kl_loss"], set()),
        (["train/loss", "val/rollout_mse", "rollout_loss"], set()),
    ],
)
def test_an_rl_updates_losses_are_recognised(logged: list[str], moving: set[str]) -> None:
    assert rl_losses(logged) == moving


@pytest.mark.parametrize(
    ("eval_metric", "logged", "partner"),
    [
        ("val/box_loss", ["train/box_loss", "train/cls_loss", "train/loss"], "train/box_loss"),
        ("val/box_loss", ["train/cls_loss", "train/loss"], None),  # not another component
        ("val_rpn_loss", ["rpn_loss", "val_rpn_loss"], "rpn_loss"),  # Keras: the bare name
        ("val_rpn_loss", ["train_rpn_loss", "rpn_loss"], "train_rpn_loss"),
        ("Val/Box_Loss", ["TRAIN/BOX_LOSS"], "TRAIN/BOX_LOSS"),
        ("eval/mlm_loss", ["training/mlm_loss"], "training/mlm_loss"),
        (EVAL_LOSS, [TRAIN_LOSS], TRAIN_LOSS),
        (EVAL_LOSS, ["train/box_loss"], None),
        ("box_loss", ["train/box_loss"], None),  # not an eval name
    ],
)
def test_an_eval_metrics_train_counterpart_has_its_name_after_the_prefix(
    eval_metric: str, logged: list[str], partner: str | None
) -> None:
    assert train_counterpart(eval_metric, logged) == partner


@pytest.mark.parametrize(
    ("name", "rate"),
    [
        ("eval/wer", True),
        ("eval_wer", True),
        ("val_cer", True),
        ("test_WER", True),
        ("eval_wer_ortho", True),
        ("top1_err", True),
        ("val/err", True),
        ("eval/error_rate", True),
        ("valErrorRate", True),
        ("top5_err", True),
        ("err", True),
        ("val_err", True),
        ("test_top1_err", True),
        # A "wer" or "cer" inside another word, an unbounded error, a count of errors.
        ("eval/answer_accuracy", False),
        ("eval/lower_bound", False),
        ("val_mean_squared_error", False),
        ("eval/errors", False),
        # An `err` beside a regression or reconstruction word: unbounded, no 0-1 scale
        # (a PDE surrogate's relative L2 error sits near 0.6 without being "mostly wrong").
        ("abs_err", False),
        ("rel_err", False),
        ("val_rel_err", False),
        ("val_abs_err", False),
        ("relative_l2_err", False),
        ("reconstruction_err", False),
        ("mean_err", False),
        ("err_std", False),
        ("val_mse_err", False),
        ("l1_err", False),
        ("rmse_err", False),
    ],
)
def test_error_rates_are_recognised_by_whole_words(name: str, rate: bool) -> None:
    assert is_error_rate(name) is rate


def _write_csv(path: Path, header: list[str], rows: list[list[float]]) -> Path:
    lines = [",".join(header)] + [",".join(f"{v:.6g}" for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_annealed_loss_weight_is_not_judged_as_a_loss(tmp_path: Path) -> None:
    """A cross-entropy weight annealed from 0.05 to 1 beside a falling loss: rising is its
    schedule, not a loss drifting upward, and no fix may tell to "raise the weight"."""
    rng = np.random.default_rng(13)
    steps = np.arange(0, 3000, 10)
    loss = 3.0 * np.exp(-steps / 800) + 0.4 + rng.normal(0, 0.03, steps.size)
    weight = np.minimum(1.0, 0.05 + 0.05 * steps / 10 / 10)
    log = _write_csv(
        tmp_path / "cew.csv",
        ["step", "train/loss", "kl_weight", "ce_weight"],
        [[s, lo, w, w] for s, lo, w in zip(steps, loss, weight, strict=True)],
    )
    found = analyze(read_log(log)).findings
    assert not [f for f in found if "ce_weight" in f.metric + f.message], found


def test_a_relative_error_is_not_read_on_a_0_1_scale(tmp_path: Path) -> None:
    """A PDE surrogate's relative L2 error, flat near 0.62 while the train loss falls: it
    never improved (true), but it has no 0-1 scale, so "most of the output was wrong" is a
    claim the data do not make."""
    rng = np.random.default_rng(7)
    epochs = np.arange(12)
    loss = 0.30 - 0.004 * epochs + rng.normal(0, 0.001, epochs.size)
    val_loss = 0.31 + rng.normal(0, 0.003, epochs.size)
    rel_err = 0.62 + rng.normal(0, 0.01, epochs.size)
    log = _write_csv(
        tmp_path / "relerr.csv",
        ["epoch", "loss", "val_loss", "val_rel_err"],
        [list(row) for row in zip(epochs, loss, val_loss, rel_err, strict=True)],
    )
    found = analyze(read_log(log)).findings
    wrong = [f for f in found if f.evidence.get("most_wrong") == "yes" or "0-1" in f.message]
    assert not wrong, wrong
