"""Generate the comparison examples: a baseline run and candidates that regress (or not).

Every run is a real, seeded training run of `generate.py`'s numpy MLP on scikit-learn's
bundled digits, trained by `generate.train` and written by `generate.write_outputs`
(`trainer_state.json` and `metrics.csv`); nothing is edited afterwards. The baseline is the
`healthy` example's recipe (AdamW, warmup then cosine, seed 1), trained again here so that
its wall-clock timings come from the same session as its candidates'. Each candidate
changes one thing:

- `seed_2`: the same model and recipe with seed 2 (other initial weights and data
  order). Not a regression: `trainspotter compare` must stay silent.
- `lr_too_low`: the peak LR 10x lower (2e-4): the eval loss ends far above the baseline's.
- `smaller_model`: a hidden layer of 8 units instead of 64.
- `slow_pipeline`: the data pipeline rebuilds every sample in a Python loop: the same
  numbers reach the model (the losses equal the baseline's), each step takes longer.

    /tmp/examples-venv/bin/python examples/generate_pairs.py           # every run
    /tmp/examples-venv/bin/python examples/generate_pairs.py seed_2    # some runs only
    /tmp/examples-venv/bin/python examples/generate_pairs.py --seed-pairs 20 DIR

`--seed-pairs N DIR` trains N more pairs of the baseline's recipe (seeds s and s + 1000)
into DIR, for `benchmarks/bench_compare_seeds.py`, which measures how often `compare`
stays silent on them.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

import generate
import numpy as np

COMPARE_DIR = "compare"
BASELINE = "baseline"
LOW_PEAK_LR = generate.HEALTHY_PEAK_LR / 10
SMALL_LAYERS = (64, 8, 10)


def recipe(name: str, seed: int = 1) -> generate.RunConfig:
    """The healthy example's recipe under another name (and seed), without TensorBoard."""
    return dataclasses.replace(generate.healthy_config(), name=name, seed=seed, tensorboard=False)


def decode_each_sample(
    step: int, inputs: generate.FloatArray, labels: generate.IntArray
) -> tuple[generate.FloatArray, generate.IntArray]:
    """A slow input pipeline: every sample is rebuilt value by value in Python (as a
    loader that parses each record on the fly), giving back exactly the same numbers."""
    rebuilt = np.array([[float(v) for v in row] for row in inputs.tolist()], dtype=np.float32)
    return rebuilt, labels


def baseline_config() -> generate.RunConfig:
    return dataclasses.replace(
        recipe(f"{COMPARE_DIR}/{BASELINE}"),
        summary="The baseline (a stored run from main): the healthy example's recipe, seed 1.",
    )


def seed_2_config() -> generate.RunConfig:
    return dataclasses.replace(
        recipe(f"{COMPARE_DIR}/seed_2", seed=2),
        summary="The baseline's model and recipe with seed 2: not a regression.",
    )


def lr_too_low_config() -> generate.RunConfig:
    return dataclasses.replace(
        recipe(f"{COMPARE_DIR}/lr_too_low"),
        schedule=generate.warmup_cosine(LOW_PEAK_LR, generate.HEALTHY_WARMUP, 1000),
        summary=f"The baseline with a peak LR of {LOW_PEAK_LR:g} (10x lower): a regression.",
    )


def smaller_model_config() -> generate.RunConfig:
    return dataclasses.replace(
        recipe(f"{COMPARE_DIR}/smaller_model"),
        layer_sizes=SMALL_LAYERS,
        summary=f"The baseline with layers {SMALL_LAYERS} (hidden 8, not 64): a regression.",
    )


def slow_pipeline_config() -> generate.RunConfig:
    return dataclasses.replace(
        recipe(f"{COMPARE_DIR}/slow_pipeline"),
        batch_fault=decode_each_sample,
        summary="The baseline with a per-sample Python decoding step in the data pipeline: "
        "identical losses, slower steps (a throughput regression).",
    )


RUNS: dict[str, Callable[[], generate.RunConfig]] = {
    BASELINE: baseline_config,
    "seed_2": seed_2_config,
    "lr_too_low": lr_too_low_config,
    "smaller_model": smaller_model_config,
    "slow_pipeline": slow_pipeline_config,
}


def seed_pair(seed: int) -> tuple[generate.RunConfig, generate.RunConfig]:
    """Two runs of the baseline's recipe, seeds `seed` and `seed + 1000` (names relative)."""
    return recipe(f"seed_{seed}", seed=seed), recipe(f"seed_{seed + 1000}", seed=seed + 1000)


def write_run(config: generate.RunConfig, data: generate.Digits, root: Path) -> Path:
    """Train `config` and write its logs under `root / config.name` (generate.py's writer)."""
    result = generate.train(config, data)
    saved = generate.EXAMPLES_DIR
    generate.EXAMPLES_DIR = root
    try:
        generate.write_outputs(result)
    finally:
        generate.EXAMPLES_DIR = saved
    print(generate.describe(result))
    return root / config.name


def write_seed_pairs(count: int, root: Path) -> None:
    """`count` seed pairs under `root`, each pair trained back to back (so a busy machine
    slows both runs of a pair alike)."""
    data = generate.load_split_digits()
    for seed in range(1, count + 1):
        for config in seed_pair(seed):
            write_run(config, data, root)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--seed-pairs"] and len(argv) == 3:
        write_seed_pairs(int(argv[1]), Path(argv[2]))
        return 0
    unknown = [name for name in argv if name not in RUNS]
    if unknown:
        print(f"unknown run(s): {', '.join(unknown)}; known: {', '.join(RUNS)}")
        return 2
    data = generate.load_split_digits()
    started = time.perf_counter()
    for name in argv or list(RUNS):
        write_run(RUNS[name](), data, generate.EXAMPLES_DIR)
    print(f"wrote {len(argv or RUNS)} run(s) in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
