"""`TrainspotterCallback` for `transformers.Trainer`: findings while it trains.

    trainer = Trainer(..., callbacks=[TrainspotterCallback(stop_on="error")])

`on_log` feeds what the Trainer logs (the entries of `trainer_state.json`'s
`log_history`, named as the Hugging Face reader names them: `loss` -> `train/loss`,
`eval_loss` -> `eval/loss`) to a `trainspotter.Monitor` at `state.global_step`; the run
summary entry (`train_runtime`, the run-average `train_loss`) is not a point and is
skipped, as the reader skips it. Each new finding is one line through the transformers
logger (warning level for warnings and errors, info for info). With `stop_on`, a finding
at or above that severity sets `control.should_training_stop`: the Trainer stops after
the current step. At `on_train_end` the final analysis (exactly `trainspotter.analyze` on
the same points) is written to `<output_dir>/trainspotter-report.json` and `.html` by
the main process.

Note: the Trainer's `logging_nan_inf_filter` (on by default) logs the running average in
place of a NaN or infinite loss, so a run whose loss went NaN shows it in `grad_norm` (or,
with the filter off, in the loss itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainspotter.integrations._live import CallbackBase, missing_framework
from trainspotter.model import Severity
from trainspotter.readers.hf import hf_spelling, is_summary_entry

try:
    from transformers import TrainerCallback
    from transformers.utils import logging as hf_logging
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise missing_framework(__name__, "transformers", "transformers") from exc

logger = hf_logging.get_logger(__name__)


def _say(severity: Severity, line: str) -> None:
    if severity >= Severity.WARNING:
        logger.warning(line)
    else:
        logger.info(line)


class TrainspotterCallback(CallbackBase, TrainerCallback):
    """Run trainspotter on the Trainer's logs (see the module docstring).

    `config`: a trainspotter Config, the path of a `.trainspotter.yml`, or None for the
    defaults. `stop_on`: stop training at the first finding at or above this severity
    (`"error"`, `"warning"`, `"info"`); None only reports. `write_reports`: write the JSON
    and HTML reports into `output_dir` at the end."""

    source_format = "hf"

    say = staticmethod(_say)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.live.name = str(args.output_dir)
        self.live.start(getattr(state, "max_steps", None))
        self.analysis = None

    def on_log(
        self,
        args: Any,
        state: Any,
        control: Any,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not logs or is_summary_entry(logs):
            return
        metrics = {hf_spelling(key): value for key, value in logs.items()}
        if self.live.record(int(state.global_step), metrics):
            control.should_training_stop = True

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) if state.is_world_process_zero else None
        self.analysis = self.live.finish(folder)


__all__ = ["TrainspotterCallback"]
