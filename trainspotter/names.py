"""Canonical metric names and the spellings real tools write for them.

Detectors look metrics up by canonical name only (`train/loss`, `eval/loss`, `lr`,
`grad_norm`, `step_time`, `throughput`, `epoch`), so a reader never has to know a detector.
Names that match no rule pass through unchanged (`eval/bleu` stays `eval/bleu`), so custom
metrics still reach the detectors that look at every loss-like or eval metric
(`is_loss_like`: a name that says loss, nll or cross-entropy, and is no count of what the
loss covers, `num_loss_tokens`, nor its weight, `ce_weight`). Several columns may map to
one canonical name (one LR per optimizer parameter group: `lr/pg0`, `lr/pg1`); the
readers then read the first as it and keep the others under their own names.

This module does not read files; readers call `normalize` on each column or tag name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import pairwise

TRAIN_LOSS = "train/loss"
EVAL_LOSS = "eval/loss"
LR = "lr"
GRAD_NORM = "grad_norm"
STEP_TIME = "step_time"
THROUGHPUT = "throughput"
EPOCH = "epoch"

CANONICAL = (TRAIN_LOSS, EVAL_LOSS, LR, GRAD_NORM, STEP_TIME, THROUGHPUT, EPOCH)

# Exact spellings (compared after lower-casing), one table so a new spelling is one line.
# docs/metric-names.md is generated from it (`markdown_table`; a test keeps them equal).
_SPELLINGS: dict[str, tuple[str, ...]] = {
    TRAIN_LOSS: (
        "loss",
        "train_loss",
        "training_loss",
        "train_loss_step",
        "train/loss",
        "train/loss_step",
        "train/loss_iter",
        "loss/train",
        "loss/training",
        "trainloss",
        "train-loss",
        "training/loss",
    ),
    EVAL_LOSS: (
        "eval_loss",
        "eval/loss",
        "val_loss",
        "val/loss",
        "valid_loss",
        "valid/loss",
        "validation_loss",
        "validation/loss",
        "loss/val",
        "loss/eval",
        "loss/valid",
        "loss/validation",
        "test_loss",
        "test/loss",
        "dev_loss",
        "dev/loss",
        "val_loss_epoch",
        "valloss",
    ),
    LR: (
        "lr",
        "learning_rate",
        "learningrate",
        "learning-rate",
        "train/lr",
        "train/learning_rate",
        "optimizer/lr",
        "optim/lr",
        "lr/train",
    ),
    GRAD_NORM: (
        "grad_norm",
        "gradient_norm",
        "train/grad_norm",
        "total_norm",
        "grad-norm",
        "gradnorm",
        "gnorm",
        "train/gnorm",
        "global_grad_norm",
        "train/gradient_norm",
        "grad_norm/total",
        "optimizer/grad_norm",
    ),
    STEP_TIME: (
        "step_time",
        "time/step",
        "train/step_time",
        "time_per_step",
        "time_per_iter",
        "iter_time",
        "iteration_time",
        "train/iter_time",
        "batch_time",
        "sec_per_step",
        "seconds_per_step",
        "s/it",
        "sec/it",
    ),
    THROUGHPUT: (
        "throughput",
        "train/throughput",
        "samples_per_second",
        "samples_per_sec",
        "samples/s",
        "samples/sec",
        "train/samples_per_second",
        "train/samples_per_sec",
        "throughput/samples_per_sec",
        "examples_per_second",
        "examples_per_sec",
        "tokens_per_second",
        "tokens_per_sec",
        "tokens/s",
        "tokens/sec",
        "tok/s",
        "train/tokens_per_second",
        "train/tokens_per_sec",
        "throughput/tokens_per_sec",
        "steps_per_second",
        "steps_per_sec",
        "steps/s",
        "steps/sec",
        "it/s",
        "iters_per_sec",
        "throughput/batches_per_sec",
        "images_per_sec",
        "img/s",
        "wps",
        "ups",
        "train_samples_per_second",
        "train_steps_per_second",
    ),
    EPOCH: ("epoch", "train/epoch", "epochs"),
}

# Spellings that look like one of the above but are not mapped, and why (documented).
NOT_MAPPED: dict[str, str] = {
    "train_samples_per_second": "mapped, except in trainer_state.json's last entry (the one "
    "with `train_runtime`): that is a run average, not a curve, and the HF reader keeps it out",
    "eval_samples_per_second": "evaluation speed, not training throughput (read as "
    "`eval/samples_per_second`)",
    "step_avg_ms": "a running average since the start: it smooths a regression away",
    "time/batch": "Composer's batch counter, not a duration",
    "dt": "too generic in a table (a PINN's time step); the stdout reader maps `dt` and "
    "`time` printed with a unit (`time 12.3ms`) to `step_time`",
    "time_ms": "a clock or a per-step time: the name does not say which",
}
"""Names that look like a canonical metric but are not mapped (or only sometimes), and why."""

_EXACT: dict[str, str] = {
    spelling: canonical for canonical, spellings in _SPELLINGS.items() for spelling in spellings
}

# Lightning's LearningRateMonitor writes `lr-<Optimizer>` and `lr-<Optimizer>/pg<N>`.
_LIGHTNING_LR = re.compile(r"^lr-[a-z0-9_]+(?:/pg\d+)?$")
# One LR per optimizer parameter group: ultralytics (YOLO) writes `lr/pg0`, `lr/pg1`, ...
_PARAM_GROUP_LR = re.compile(r"^lr[/_-]pg\d+$")


def normalize(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """Map one metric name to its canonical name, or return it unchanged.

    User `aliases` (from `.trainspotter.yml`'s `metrics.aliases`) are matched first and
    exactly, so a user can override any built-in rule.
    """
    if aliases and name in aliases:
        return aliases[name]
    stripped = name.strip()
    key = stripped.lower()
    if key in _EXACT:
        return _EXACT[key]
    if _LIGHTNING_LR.match(key) or _PARAM_GROUP_LR.match(key):
        return LR
    return stripped


def is_param_group_lr(name: str) -> bool:
    """True for the LR of one optimizer parameter group (`lr/pg1`, `lr_pg0`, `lr-pg2`,
    Lightning's `lr-AdamW/pg1`). A log with several groups has several such columns; the
    readers read the first in the log as `lr` and keep the others under their own names."""
    key = name.strip().lower()
    return bool(_PARAM_GROUP_LR.match(key)) or (bool(_LIGHTNING_LR.match(key)) and "/pg" in key)


# Whole words that name a loss besides "loss" itself: a negative log-likelihood and the
# cross-entropies (Keras's `categorical_crossentropy`, `bce`, `ce`, `xent`).
_LOSS_WORDS = frozenset({"nll", "xent", "crossentropy", "bce", "ce"})
# Heads (`is_loss_like`) that make a name a count or size: plural units and size words.
_COUNT_NOUNS = frozenset(
    {"count", "counts", "cnt", "size", "len", "length", "tokens", "toks", "samples"}
    | {"examples", "items", "elements", "elems", "sequences", "seqs", "words", "chars"}
    | {"characters", "pixels", "frames", "images", "sentences", "batches"}
)
# Heads that make a name a quantity about a loss: a weight, a gradient, an accuracy.
_LOSS_MODIFIERS = frozenset(
    {"weight", "weights", "coef", "coeff", "coefficient", "lambda", "alpha", "beta"}
    | {"norm", "grad", "acc", "accuracy", "temperature", "temp", "ratio"}
)
_NOT_LOSS_HEADS = _COUNT_NOUNS | _LOSS_MODIFIERS
_GRADIENT_WORDS = frozenset({"grad", "grads", "gradient", "gradients", "gnorm"})


def is_loss_like(name: str) -> bool:
    """True for the canonical losses and for any other metric whose name says loss.

    A name says loss when it contains `loss`, or holds `nll` (a negative log-likelihood),
    `cross_entropy`/`crossentropy`, `xent`, `bce` or `ce` as a whole word (`name_words`):
    `train_mean_nll`, `test/nll`, `val_categorical_crossentropy`, and its head (its last
    word among loss words, count nouns and modifiers, before any `per`: `loss_per_token`
    is a loss) is a loss word. Not a loss: a name holding "scale" (fp16's `loss_scale`, a
    multiplier, and `scaled_loss`); a quantity about a loss, its head a modifier
    (`weight`, `coef`, `lambda`, `alpha`, `beta`, `norm`, `grad`, `acc`, `temperature`,
    `ratio`...: `ce_weight`, annealed upward on purpose, `mlm_ce_acc`); a gradient
    statistic of a term (a gradient word and no head holding `loss`: `grad_norm_ce`, but
    GradNorm's `grad_norm_loss` is a loss); a count or size of what the loss covers, its
    head a count or size noun (`num_loss_tokens`, `n_loss_samples`, `loss_batch_size`) or
    holding `numel` (torch's element count). A count varies with the batch and is never
    optimised: judged as a loss it is "not learning". Losses: `alpha_loss` (SAC),
    `ent_coef_loss`, `beta_nll`, `token_loss`, `count_loss`, and a number-of word is no
    count by itself: `n_pair_loss`, `nb_loss` (negative binomial), `num_loss`/`loss_num`
    (a tabular model's numeric columns).
    Perplexity (`ppl`, `perplexity`) is not loss-like: it is exp(loss), with a floor at 1
    and every change of the loss magnified exponentially; detectors that judge eval
    quality metrics still see it as lower-is-better (`eval_noise.higher_is_better`).
    """
    if name in (TRAIN_LOSS, EVAL_LOSS):
        return True
    if "scale" in name.lower():
        return False  # fp16's `loss_scale`, `scaled_loss` (loss times the loss scale)
    words = name_words(name)
    if "per" in words:
        words = words[: words.index("per")]
    loss_words = [i for i, word in enumerate(words) if "loss" in word or word in _LOSS_WORDS]
    loss_words += [i for i, pair in enumerate(pairwise(words), 1) if pair == ("cross", "entropy")]
    if "numel" in words or not ("loss" in name.lower() or loss_words):
        return False
    heads = [i for i, word in enumerate(words) if word in _NOT_LOSS_HEADS]
    head = max(heads + loss_words, default=None)
    if head is None:
        return True  # "loss" only after a "per", or split at a case change (`losS`)
    head_word = words[head]
    return head_word not in _NOT_LOSS_HEADS and (
        "loss" in head_word or not _GRADIENT_WORDS.intersection(words)
    )


def is_eval(name: str) -> bool:
    """True for evaluation/validation metrics (canonical `eval/*` or val/valid/test prefixes)."""
    lowered = name.lower()
    return lowered.startswith(("eval/", "eval_", "val/", "val_", "valid", "validation", "test"))


_EVAL_PREFIX = re.compile(r"^(?:eval|val|valid|validation|test|dev)([/_.-])(.+)$", re.IGNORECASE)
_TRAIN_PREFIXES = ("train", "training")


def train_counterpart(eval_metric: str, metrics: Iterable[str]) -> str | None:
    """The train metric of `eval_metric`'s own name after its eval prefix, among `metrics`:
    `train/loss` for `eval/loss`; `train/box_loss` (or `train_box_loss`, `training/...`, the
    same separator first) for `val/box_loss`; Keras's bare `box_loss` for `val_box_loss`.
    Compared case-insensitively; None when the run logs none of them (a component eval loss
    is then not paired with another component's train loss)."""
    available = list(metrics)
    if eval_metric == EVAL_LOSS:
        return TRAIN_LOSS if TRAIN_LOSS in available else None
    match = _EVAL_PREFIX.match(eval_metric.strip())
    if match is None:
        return None
    separator, stem = match.group(1), match.group(2)
    separators = [separator, *(s for s in "/_.-" if s != separator)]
    wanted = [prefix + s + stem for s in separators for prefix in _TRAIN_PREFIXES] + [stem]
    by_key = {name.lower(): name for name in available if name != eval_metric}
    for candidate in wanted:
        if candidate.lower() in by_key:
            return by_key[candidate.lower()]
    return None


_WORDS = re.compile(r"[A-Z]?[a-z]+\d*|[A-Z]+\d*(?![a-z])|\d+")
_GENERATOR = frozenset({"g", "gen", "generator"})
_DISCRIMINATOR = frozenset({"d", "dis", "disc", "discriminator", "critic"})
_ADVERSARIAL = _GENERATOR | _DISCRIMINATOR | {"adv", "adversarial", "gan"}
_SUPERVISED_TERM = frozenset(
    {
        "l1",
        "l2",
        "mse",
        "mae",
        "rec",
        "recon",
        "reconstruction",
        "pixel",
        "cycle",
        "identity",
        "idt",
        "perceptual",
        "vgg",
        "content",
        "feat",
        "fm",
        "kl",
        "kld",
    }
)


def name_words(name: str) -> list[str]:
    """The lower-case words of a metric name, split at separators and case changes, digits
    kept with the word they follow: `loss_G_adv` -> loss, g, adv; `lossD` -> loss, d;
    `Gen Loss` -> gen, loss; `loss_G_L1` -> loss, g, l1."""
    return [word.lower() for word in _WORDS.findall(name)]


_TIMING_WORDS = frozenset(
    {"time", "times", "runtime", "timestamp", "elapsed", "clock", "eta", "secs", "seconds"}
    | {"fps", "speed", "throughput", "flos", "memory", "mem"}
)
_RATE_UNITS = frozenset({"s", "sec", "second"})


def is_timing(name: str) -> bool:
    """A timing, throughput or resource metric (`step_time`, `eval_runtime`,
    `train/samples_per_second`, `it/s`, `time/fps`, `total_flos`, `memory_allocated`): it
    measures the machine, not the model, and a +Inf there is a zero-length timer. Judged by
    whole name words (`name_words`), so `val_sentiment_f1` (no word "time") and
    `f1_per_class` (a "per" that is not per second) are model metrics."""
    words = name_words(name)
    if _TIMING_WORDS.intersection(words) or name.lower().endswith("/s"):
        return True
    return any(a == "per" and b in _RATE_UNITS for a, b in pairwise(words))


RATE_WORDS = frozenset(
    {"acc", "accuracy", "f1", "iou", "miou", "dice", "jaccard", "precision", "recall", "auc"}
)
"""Name words of a rate of right answers: a score with a fixed range, [0, 1] (or [0, 100]
logged as a percentage)."""


def is_rate(name: str) -> bool:
    """A metric named like a rate of right answers (`acc`, `val_accuracy`, `F1_score`,
    `train_acc_step_epoch`, `dice`, Keras's `val_mean_io_u`...), train or eval side. Whole
    name words only (`name_words`): `grad_accum` is no accuracy, `f1_per_class` is an F1.
    A loss named after a rate (`dice_loss`) is a rate word too: callers that want scores
    only exclude `is_loss_like` names."""
    words = name_words(name)
    if RATE_WORDS.intersection(words):
        return True
    # Keras writes MeanIoU as `mean_io_u`: "IoU" split at its case change.
    return any(a == "io" and b == "u" for a, b in pairwise(words))


_ERROR_RATE_WORDS = frozenset({"wer", "cer", "errorrate"})
# Words that make an `err` a regression or reconstruction error, unbounded (`rel_err`).
_UNBOUNDED_ERROR_WORDS = frozenset(
    {"abs", "absolute", "rel", "relative", "mean", "squared", "sq", "reconstruction"}
    | {"recon", "rec", "l1", "l2", "std", "mse", "mae", "rmse", "rms", "max"}
)


def is_error_rate(name: str) -> bool:
    """An error rate: lower is better, 0 is perfect, bounded (a fraction 0-1, or a
    percentage 0-100; a WER or CER can pass its bound when a model inserts words). Judged
    by whole name words (`name_words`): `wer`, `cer` (word and character error rates),
    `error` followed by `rate` (`error_rate`, `ErrorRate`), or `err` as a top-k or
    classification error (`top1_err`, `val_err`, a bare `err`). Not one: a "wer" inside
    a word (`eval/answer_accuracy`), an unbounded error (`val_mean_squared_error`), an
    `err` beside a word of a regression or reconstruction error (`abs`, `rel`, `mean`,
    `reconstruction`, `l2`, `std`, `mse`...: `rel_err`, `err_std`, no 0-1 scale)."""
    words = name_words(name)
    if _ERROR_RATE_WORDS.intersection(words):
        return True
    if "err" in words and not _UNBOUNDED_ERROR_WORDS.intersection(words):
        return True
    return any(a == "error" and b == "rate" for a, b in pairwise(words))


def adversarial_losses(metrics: Iterable[str]) -> frozenset[str]:
    """The train-side losses of a GAN's two players, which need not fall: each player's
    loss moves with the other's skill (a generator's loss rising while the discriminator
    improves is the game, not a divergence).

    A run is a GAN when it logs a loss named for a generator (`g`, `gen`, `generator`) and
    one named for a discriminator or critic (`d`, `dis`, `disc`, `discriminator`,
    `critic`). Its adversarial losses are then the non-eval losses that name either
    player or `adv`/`adversarial`/`gan`, except a supervised term (`loss_G_l1`, a
    reconstruction, cycle, perceptual or KL term), which still ought to fall. One player's
    loss alone (a `d_loss` in a run without a generator) says nothing.
    """
    losses = {name: set(name_words(name)) for name in metrics if is_loss_like(name)}
    if not (
        any(words & _GENERATOR for words in losses.values())
        and any(words & _DISCRIMINATOR for words in losses.values())
    ):
        return frozenset()
    return frozenset(
        name
        for name, words in losses.items()
        if words & _ADVERSARIAL and not _supervised(words) and not is_eval(name)
    )


# Reinforcement learning: the marks of a run that acts in an environment, and the words of
# its policy-optimisation terms (PPO/A2C/SAC/DQN as SB3, RLlib, CleanRL, Spinning Up and TRL
# name them).
_RL_ROLLOUT = frozenset({"rollout", "rollouts"})
_RL_EPISODE = frozenset({"ep", "episode", "episodes", "episodic"})
_RL_OUTCOME = frozenset({"rew", "reward", "rewards", "ret", "return", "returns"})
_RL_REWARD = frozenset({"rew", "reward", "rewards", "return", "returns"})
_RL_POLICY = frozenset({"policy", "pg", "actor", "pi", "surrogate"})
_RL_VALUE = frozenset({"value", "vf", "critic", "q", "qf", "v", "td"})
_RL_ENTROPY = frozenset({"entropy", "ent"})
_RL_TERM = _RL_POLICY | _RL_VALUE | _RL_ENTROPY | {"approxkl"}
# A KL is the policy's when a word says so (`approx_kl`, `ref_kl`; `kl_pi` names the policy).
_RL_KL_OF_POLICY = frozenset({"approx", "ref", "reference", "old"})
_TOTAL_WORDS = frozenset({"train", "training", "loss", "total", "mean", "avg"})


def rl_losses(metrics: Iterable[str]) -> frozenset[str]:
    """The train-side losses of a reinforcement-learning update, which need not fall: the
    data are the agent's own rollouts, so the targets move as it learns. An entropy loss
    (minus the policy's entropy, as SB3 logs it) rises towards 0 as the policy sharpens; a
    value or Q loss grows as the returns it must predict grow, and jumps when a rollout
    brings returns it has not seen; a policy-gradient surrogate, measured on fresh data at
    each update, sits near 0; a policy's KL penalty grows as it moves from its reference.

    A run is reinforcement learning when it logs an episode outcome (a metric in SB3's
    `rollout/` namespace, or an episode or rollout word and a reward or return word:
    `episode_reward_mean`, `charts/episodic_return`, `AverageEpRet`), or a reward or
    return beside a policy, value or entropy loss (TRL's PPO: `objective/rlhf_reward`,
    `loss/policy_avg`). Not marks: an episode length alone (`episode_len`, a sequence
    model trained on recorded episodes), a `rollout` outside a namespace
    (`val/rollout_mse`, a learned simulator's), DPO's `rewards/chosen`. Its RL losses are
    the non-eval losses that name a policy term (`policy`, `pg`, `actor`, `pi`,
    `surrogate`), a value term (`value`, `vf`, `critic`, `q`, `qf`, `v`, `td`), an
    entropy term (`entropy`, `ent`) or the policy's KL (`kl` beside `approx`, `ref`,
    `reference`, `old` or a policy word: `kl_pi_loss`), and the total loss (`train/loss`,
    `total_loss`: SB3's sums the terms, DQN's is the TD error). Other losses (a world
    model's reconstruction and its plain `kl_loss`, a reward predictor's `reward_loss`,
    behaviour cloning) still ought to fall. Non-losses (`approx_kl`, `clip_fraction`,
    `explained_variance`) are never judged for a rise and need no place here.
    """
    names = list(metrics)
    words = {name: _stems(name) for name in names}
    losses = [n for n in names if is_loss_like(n) and not is_eval(n)]
    policy_terms = [n for n in losses if words[n] & (_RL_POLICY | _RL_VALUE | _RL_ENTROPY)]
    episodic = _RL_EPISODE | _RL_ROLLOUT
    acts = any(
        _in_rollout_namespace(n) or (w & episodic and w & _RL_OUTCOME) for n, w in words.items()
    )
    rewarded = bool(policy_terms) and any(
        words[n] & _RL_REWARD for n in names if n not in policy_terms
    )
    if not (acts or rewarded):
        return frozenset()
    policy_kl = {n for n in losses if "kl" in words[n] and words[n] & _RL_KL_OF_POLICY}
    totals = {n for n in losses if n == TRAIN_LOSS or words[n] <= _TOTAL_WORDS}
    return frozenset(n for n in losses if words[n] & _RL_TERM) | policy_kl | totals


def _in_rollout_namespace(name: str) -> bool:
    """A metric under a `rollout/` namespace (SB3's `rollout/ep_len_mean`)."""
    return any(part in _RL_ROLLOUT for part in name.lower().split("/")[:-1])


def _stems(name: str) -> set[str]:
    """A name's words with a trailing index dropped (`qf1` -> `qf`)."""
    return {word.rstrip("0123456789") or word for word in name_words(name)}


def _supervised(words: set[str]) -> bool:
    return any(
        word in _SUPERVISED_TERM or word.rstrip("0123456789") in _SUPERVISED_TERM for word in words
    )


def markdown_table() -> str:
    """The spellings table of docs/metric-names.md (generated from this module)."""
    lines = ["| canonical name | spellings recognised (case-insensitive) |", "| --- | --- |"]
    for canonical, spellings in _SPELLINGS.items():
        extra = (
            ", `lr-<Optimizer>`, `lr-<Optimizer>/pg<N>` (Lightning), `lr/pg<N>`, `lr_pg<N>`, "
            "`lr-pg<N>` (one per parameter group: ultralytics writes `lr/pg0`...; the first "
            "in the log is read as `lr`)"
            if canonical == LR
            else ""
        )
        lines.append(f"| `{canonical}` | " + ", ".join(f"`{x}`" for x in spellings) + extra + " |")
    lines += ["", "| not mapped | why |", "| --- | --- |"]
    lines += [f"| `{name}` | {why} |" for name, why in NOT_MAPPED.items()]
    return "\n".join(lines) + "\n"
